import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// A transport with no sockets, for exact scheduling tests (Nuke's
/// `MockDataLoader`): it records the order in which transfers start and
/// answers `/img/N.png` with a 4x4 PNG of ``NumberedImage/color(_:)``. While
/// ``isSuspended`` is on (the default), transfers wait until the test
/// ``finish(_:)``es them, so a test decides every order itself.
public final class FakeDataLoader: DataLoading, @unchecked Sendable {
    /// What one transfer answers, when a test scripts it (``script(_:_:)``).
    public enum Answer: Sendable {
        /// The fake's `200` with its PNG.
        case image
        /// The same, with these response headers (names lowercased).
        case imageWithHeaders([String: String])
        /// Fails with the error, before any body byte.
        case failure(AsyncImageError)
        /// Shows the response's head to the observer (as a transport does
        /// with the first body byte), then fails with the error.
        case failureAfterBody(AsyncImageError)
    }

    private final class Transfer: DataLoadingTask, @unchecked Sendable {
        let url: URL
        let owner: FakeDataLoader
        /// Its scripted answer, taken when it started (nil: as before).
        var answer: Answer?
        var observer = DataTransferObserver()
        /// Dropped once used; kept after a cancel, as libcurl's transfers
        /// keep theirs (so a loader that held on to a cancelled task would leak).
        var completion: (@Sendable (Result<DataResponse, AsyncImageError>) -> Void)?
        /// Guarded by the owner's lock.
        var done = false
        var cancelled = false

        init(url: URL, owner: FakeDataLoader, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void) {
            self.url = url
            self.owner = owner
            self.completion = completion
        }

        func cancel() -> Bool { owner.cancel(self) }
    }

    private let lock = NSLock()
    private var suspended = true
    /// Held weakly, as libcurl's loop lets go of a transfer once it ended:
    /// what keeps a transfer alive is the task the loader holds.
    private struct WeakTransfer {
        weak var transfer: Transfer?
    }

    private var weakTransfers: [WeakTransfer] = []
    private var transfers: [Transfer] { weakTransfers.compactMap(\.transfer) }
    private var started: [String] = []
    private var cancelledPaths: [String] = []
    private var waiters: [(count: Int, expectation: XCTestExpectation)] = []
    private var failures: [String: AsyncImageError] = [:]
    private var scripts: [String: [Answer]] = [:]
    private var starts: [Double] = []
    private let queue = DispatchQueue(label: "fake transport", attributes: .concurrent)

    public init() {}

    /// While on, new transfers wait for ``finish(_:)``; turning it off finishes every waiting one.
    public var isSuspended: Bool {
        get { lock.withLock { suspended } }
        set {
            let waiting = lock.withLock { () -> [Transfer] in
                suspended = newValue
                return newValue ? [] : transfers.filter { !$0.done }
            }
            waiting.forEach { complete($0) }
        }
    }

    /// Paths in the order their transfers started.
    public var startedPaths: [String] { lock.withLock { started } }

    /// The requests of the transfers started, in order.
    public var startedRequests: [DataRequest] { lock.withLock { requests } }
    private var requests: [DataRequest] = []

    /// Paths whose transfers were cancelled before they finished.
    public var cancelled: [String] { lock.withLock { cancelledPaths } }

    /// Transfers started and not yet finished or cancelled.
    public var running: [String] { lock.withLock { transfers.filter { !$0.done }.map(\.url.path) } }

    /// The most transfers ever running at once (started, not yet finished or cancelled).
    public var peakRunning: Int { lock.withLock { peak } }
    private var peak = 0

    /// Makes transfers of `url` fail with `error`.
    public func fail(_ url: URL, with error: AsyncImageError) { lock.withLock { failures[url.path] = error } }

    /// The next transfers of `url` answer `answers`, one each in the order
    /// they start; later ones answer as before (``fail(_:with:)``, or the image).
    public func script(_ url: URL, _ answers: [Answer]) { lock.withLock { scripts[url.path, default: []] += answers } }

    /// When each transfer started (`ProcessInfo.systemUptime`), in order.
    public var startTimes: [Double] { lock.withLock { starts } }

    /// An expectation fulfilled once `count` transfers have started.
    public func starts(_ count: Int, _ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "\(count) transfers started")
        let done = lock.withLock { () -> Bool in
            if started.count >= count { return true }
            waiters.append((count, expectation))
            return false
        }
        if done { expectation.fulfill() }
        return expectation
    }

    /// Finishes the waiting transfer of `url` (its completion runs on another thread).
    public func finish(_ url: URL) {
        let transfer = lock.withLock { transfers.first { $0.url.path == url.path && !$0.done } }
        guard let transfer else { return XCTFail("no waiting transfer of \(url.path)") }
        complete(transfer)
    }

    public func loadData(
        _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        loadData(request, observer: DataTransferObserver(), completion: completion)
    }

    public func loadData(
        _ request: DataRequest, observer: DataTransferObserver,
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        let url = request.url
        let transfer = Transfer(url: url, owner: self, completion: completion)
        transfer.observer = observer
        let (runNow, ready) = lock.withLock { () -> (Bool, [XCTestExpectation]) in
            weakTransfers.append(WeakTransfer(transfer: transfer))
            if var answers = scripts[url.path], !answers.isEmpty {
                transfer.answer = answers.removeFirst()
                scripts[url.path] = answers
            }
            starts.append(ProcessInfo.processInfo.systemUptime)
            started.append(url.path)
            requests.append(request)
            peak = max(peak, transfers.count { !$0.done })
            let ready = waiters.filter { $0.count <= started.count }.map(\.expectation)
            waiters.removeAll { $0.count <= started.count }
            return (!suspended, ready)
        }
        ready.forEach { $0.fulfill() }
        if runNow { complete(transfer) }
        return transfer
    }

    private func complete(_ transfer: Transfer) {
        let taken = lock.withLock { () -> (Answer, @Sendable (Result<DataResponse, AsyncImageError>) -> Void)? in
            guard !transfer.done, let completion = transfer.completion else { return nil }
            transfer.done = true
            transfer.completion = nil
            let answer = transfer.answer ?? failures[transfer.url.path].map { .failure($0) } ?? .image
            return (answer, completion)
        }
        guard let (answer, completion) = taken else { return }
        let (url, observer) = (transfer.url, transfer.observer)
        queue.async {
            switch answer {
            case .image:
                completion(.success(Self.response(for: url)))
            case .imageWithHeaders(let headers):
                let plain = Self.response(for: url)
                completion(
                    .success(
                        DataResponse(
                            url: url, finalURL: url, statusCode: 200, contentType: plain.contentType, data: plain.data,
                            headers: headers)))
            case .failure(let error):
                completion(.failure(error))
            case .failureAfterBody(let error):
                observer.responseHead?(ResponseHead(statusCode: 200, headers: [:], finalURL: url))
                completion(.failure(error))
            }
        }
    }

    private func cancel(_ transfer: Transfer) -> Bool {
        lock.withLock {
            guard !transfer.done else { return false }
            transfer.done = true
            transfer.cancelled = true
            cancelledPaths.append(transfer.url.path)
            return true
        }
    }

    public static func response(for url: URL) -> DataResponse {
        let name = url.lastPathComponent.replacingOccurrences(of: ".png", with: "")
        let png = try! PNGEncoder().encode(SyntheticImage.solid(width: 4, height: 4, color: NumberedImage.color(Int(name) ?? 0)))
        return DataResponse(url: url, finalURL: url, statusCode: 200, contentType: "image/png", data: png)
    }
}

/// A loader over a ``FakeDataLoader``, with its own cache, notification
/// center and serial delivery queue, and a delivery log.
public struct FakeHarness: Sendable {
    public let transport = FakeDataLoader()
    public let loader: AsyncImageLoader
    public let cache = ImageCache()
    public let center = NotificationCenter()
    public let queue = DispatchQueue(label: "fake harness delivery")
    public let log = DeliveryLog()

    /// `configure`: anything else to set (a disk cache, decoders, a request timeout).
    public init(
        concurrentLoads: Int = 1, cache: Bool = true, prefetchShare: Double = 0.5, queueOrder: QueueOrder = .lifo,
        configure: (inout AsyncImageLoader.Configuration) -> Void = { _ in }
    ) {
        var configuration = AsyncImageLoader.Configuration(
            cache: cache ? self.cache : nil, concurrentLoads: concurrentLoads, deliveryQueue: queue,
            notificationCenter: center, dataLoader: transport, prefetchShare: prefetchShare)
        configuration.queueOrder = queueOrder
        configure(&configuration)
        loader = AsyncImageLoader(configuration: configuration)
        _ = log.observe(center)
        log.checkQueue(queue)
    }

    /// `http://127.0.0.1/img/N.png` (never fetched: the transport is fake).
    public func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1/img/\(n).png")! }

    @discardableResult
    public func load(_ n: Int, target: AnyObject? = nil, priority: ImagePriority = .normal) -> ImageTask {
        loader.loadImage(
            ImageRequest(url: url(n), priority: priority), target: target, success: log.success, failure: log.failure)
    }

    public func drainDeliveries() { queue.sync {} }
}
