import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// A loopback server of generated images for loader tests.
///
/// `/img/N.png` is a 4x4 PNG of a colour that encodes N (see ``color(_:)``).
/// A path can be *held*: its handler waits on a gate until the test releases
/// it, which is how tests order events without sleeping. The server records
/// the order in which requests arrive and how many run at once.
final class ImageServer: @unchecked Sendable {
    private let lock = NSLock()
    private var gates: [String: Gate] = [:]
    private var arrivals: [String] = []
    private var arrivalWaiters: [(path: String, expectation: XCTestExpectation)] = []
    private var connections: [String: HTTPConnection] = [:]
    private var requestHeaders: [String: [String: String]] = [:]
    private var imageHeaders: [(String, String)] = []

    /// Headers added to every generated `/img/N.png` answer (cache headers, say).
    var extraHeaders: [(String, String)] {
        get { lock.withLock { imageHeaders } }
        set { lock.withLock { imageHeaders = newValue } }
    }
    private var active = 0
    private(set) var peakActive = 0
    private var server: LoopbackServer!
    private var bodies: [String: Data] = [:]
    private var handlers: [String: @Sendable (HTTPConnection) -> Void] = [:]
    private var resources: [String: RangeResource] = [:]

    init() throws {
        // Weak: a connection thread may read a request just as the test
        // ends and frees this object (`unowned` crashed the test process then).
        server = try LoopbackServer { [weak self] request, connection in
            guard let self else { return connection.close() }
            self.handle(request, connection)
        }
    }

    deinit { stop() }

    func stop() {
        lock.withLock { gates.values.forEach { $0.open() } }
        server?.stop()
    }

    /// The colour of image N (see ``NumberedImage``).
    static func color(_ n: Int) -> RGBA { NumberedImage.color(n) }

    func url(_ n: Int) -> URL { server.url("/img/\(n).png") }
    func url(path: String) -> URL { server.url(path) }

    /// Serves `data` at `path`.
    func serve(_ path: String, _ data: Data) { lock.withLock { bodies[path] = data } }

    /// Answers requests for `path` with `handler`, which writes what it likes
    /// (a lying or broken response).
    func respond(_ path: String, with handler: @escaping @Sendable (HTTPConnection) -> Void) {
        lock.withLock { handlers[path] = handler }
    }

    /// Serves `resource` at `path`: validators, `Range` and `If-Range`, and
    /// the faults injected into it (cut or held mid-body); see ``RangeResource``.
    @discardableResult
    func serve(_ path: String, resource: RangeResource) -> URL {
        lock.withLock { resources[path] = resource }
        return url(path: path)
    }

    /// Makes requests for `url` wait until ``release(_:)``.
    func hold(_ url: URL) { lock.withLock { gates[url.path] = Gate() } }

    /// Lets held requests for `url` (now and later) answer.
    func release(_ url: URL) { lock.withLock { gates[url.path] }?.open() }

    /// An expectation fulfilled when a request for `url` arrives (or has arrived).
    func arrival(of url: URL, _ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "request for \(url.path) arrives")
        lock.withLock {
            if arrivals.contains(url.path) { expectation.fulfill() } else { arrivalWaiters.append((url.path, expectation)) }
        }
        return expectation
    }

    /// Paths in the order their requests arrived.
    var arrivalOrder: [String] { lock.withLock { arrivals } }

    func requestCount(_ url: URL) -> Int { lock.withLock { arrivals.filter { $0 == url.path }.count } }

    /// The headers (names lowercased) of the latest request for `url`.
    func headers(of url: URL) -> [String: String]? { lock.withLock { requestHeaders[url.path] } }

    /// The connection of the latest request for `url`.
    func connection(_ url: URL) -> HTTPConnection? { lock.withLock { connections[url.path] } }

    private func handle(_ request: HTTPRequest, _ connection: HTTPConnection) {
        let (gate, waiters) = lock.withLock { () -> (Gate?, [XCTestExpectation]) in
            arrivals.append(request.path)
            connections[request.path] = connection
            requestHeaders[request.path] = request.headers
            active += 1
            peakActive = max(peakActive, active)
            let matched = arrivalWaiters.filter { $0.path == request.path }.map(\.expectation)
            arrivalWaiters.removeAll { $0.path == request.path }
            return (gates[request.path], matched)
        }
        waiters.forEach { $0.fulfill() }
        gate?.wait()
        defer { lock.withLock { active -= 1 } }
        if let resource = lock.withLock({ resources[request.path] }) {
            resource.respond(to: request, on: connection)
            return
        }
        if let handler = lock.withLock({ handlers[request.path] }) {
            handler(connection)
            return
        }
        if let body = lock.withLock({ bodies[request.path] }) {
            connection.respond(status: 200, body: body)
            return
        }
        let name = request.path.split(separator: "/").last.map(String.init) ?? ""
        guard request.path.hasPrefix("/img/"), let n = Int(name.replacingOccurrences(of: ".png", with: "")) else {
            connection.respond(status: 404, body: Data("not found".utf8))
            return
        }
        let png = try! PNGEncoder().encode(SyntheticImage.solid(width: 4, height: 4, color: Self.color(n)))
        connection.respond(status: 200, headers: [("Content-Type", "image/png")] + extraHeaders, body: png)
    }
}

/// A loader wired for tests: its own cache, notification center and serial delivery queue.
struct LoaderHarness {
    let server: ImageServer
    let loader: AsyncImageLoader
    let cache: ImageCache
    let center: NotificationCenter
    let queue: DispatchQueue
    let log: DeliveryLog

    init(concurrentLoads: Int = 2, cache: Bool = true, timeout: Double = 60) throws {
        server = try ImageServer()
        self.cache = ImageCache()
        center = NotificationCenter()
        queue = DispatchQueue(label: "test delivery")
        log = DeliveryLog()
        loader = AsyncImageLoader(
            cache: cache ? self.cache : nil, concurrentLoads: concurrentLoads, loadingTimeout: timeout,
            deliveryQueue: queue, notificationCenter: center)
        _ = log.observe(center)
        log.checkQueue(queue)
    }

    func load(_ url: URL, target: AnyObject? = nil) {
        loader.loadImage(ImageRequest(url: url), target: target, success: log.success, failure: log.failure)
    }

    /// Whether the caller runs on the delivery queue.
    var isOnDeliveryQueue: Bool { log.isOnCheckedQueue }

    /// Runs `start` (which loads for `object`), holds the delivery in a
    /// didFinish observer for `object` (on the delivery queue, right before
    /// the action), runs `meanwhile` while it is held, then lets it finish
    /// and waits for the delivery queue.
    func whileDeliveryIsUnderWay(
        for object: AnyObject, start: () -> Void, meanwhile: () -> Void, file: StaticString = #filePath, line: UInt = #line
    ) {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let observer = center.addObserver(forName: .asyncImageLoadDidFinish, object: object, queue: nil) { _ in
            entered.signal()
            release.wait()
        }
        defer { center.removeObserver(observer) }
        start()
        XCTAssertEqual(entered.wait(timeout: .now() + 15), .success, "delivery under way", file: file, line: line)
        meanwhile()
        release.signal()
        drainDeliveries()
    }

    /// Waits until everything already handed to the delivery queue has run.
    func drainDeliveries() { queue.sync {} }
}
