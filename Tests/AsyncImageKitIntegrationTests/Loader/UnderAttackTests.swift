import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The issue "Under attack and under load": what one hostile or slow origin
/// may cost the other origins' requests, and how long a load that cannot
/// succeed takes to end. Every server is on 127.0.0.1, started and stopped
/// here. Each test prints its figures (`under attack: ...`) for RELIABILITY.md.
final class UnderAttackTests: XCTestCase {
    private let queue = DispatchQueue(label: "UnderAttackTests.delivery")
    /// A 27 KB photo: what another client's request loads meanwhile.
    private var photo = Data()

    override func setUpWithError() throws {
        photo = try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 200, height: 200, seed: 3))
    }

    // MARK: Finding A: a hostile body

    /// A body that claims to be a JPEG and never reaches a frame header
    /// (`FF D8 FF E0`, then zeros), with previews on (the preview watcher
    /// exists), costs the transport thread a linear walk of its first MiB
    /// only: another origin's loads meanwhile take at most twice their
    /// unloaded time (or a floor for a shared machine's noise), and the
    /// hostile load ends with a decoding error, not a timeout.
    func testHostileJPEGBodyDoesNotStallAnotherOrigin() async throws {
        var hostileBody = Data([0xFF, 0xD8, 0xFF, 0xE0])
        hostileBody.append(Data(count: 40_000_000))
        let body = hostileBody
        let started = DispatchSemaphore(value: 0)
        let hostile = try LoopbackServer { _, connection in
            started.signal()
            connection.respond(status: 200, headers: [("Content-Type", "image/jpeg")], body: body)
        }
        defer { hostile.stop() }
        let good = try FaultServer(image: photo, contentType: "image/jpeg")
        defer { good.stop() }
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: 4, loadingTimeout: 30, deliveryQueue: queue, notificationCenter: nil)

        var unloaded: [Double] = []
        for n in 0..<5 { unloaded.append(try await Self.timedLoad(loader, ImageRequest(url: good.imageURL("u\(n)"))).seconds) }
        let bound = max(2 * (unloaded.max() ?? 0), Self.noiseFloor)

        var hostileRequest = ImageRequest(url: hostile.url("/hostile.jpg"))
        hostileRequest.wantsPreviews = true
        let request = hostileRequest
        let finished = Box(false)
        let hostileLoad = Task { () async throws -> Timed in
            let outcome = try await UnderAttackTests.timedLoad(loader, request)
            finished.update { $0 = true }
            return outcome
        }
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success, "the hostile server was asked")
        var loaded: [Double] = []
        // Back to back while the hostile body streams in and is decoded
        // (at least 5 loads; for at most 12 s).
        let began = Date()
        var n = 0
        while n < 5 || (finished.value != true && Date().timeIntervalSince(began) < 12) {
            loaded.append(try await Self.timedLoad(loader, ImageRequest(url: good.imageURL("l\(n)"))).seconds)
            n += 1
        }
        let outcome = try await hostileLoad.value
        print(
            "under attack: hostile JPEG body: other origin unloaded max \(ms(unloaded.max())) ms, "
                + "loaded max \(ms(loaded.max())) ms over \(loaded.count) loads; hostile ended in \(ms(outcome.seconds)) ms "
                + "with \(outcome.error.map { "\($0)".prefix(80) } ?? "success")")
        for (n, seconds) in loaded.enumerated() {
            XCTAssertLessThanOrEqual(seconds, bound, "load \(n) of the other origin delayed")
        }
        guard case .decoding? = outcome.error else {
            return XCTFail("expected a decoding error, got \(String(describing: outcome.error))")
        }
    }

    /// A real JPEG with 1.5 MB of metadata before its frame header (past
    /// the probe's 1 MiB) still loads with previews on: the probe ends, the
    /// decode reads the whole body.
    func testAJPEGWithMoreThanAMebibyteOfMetadataStillLoads() async throws {
        let jpeg = try JPEGEncoder(progressive: true).encode(SyntheticImage.photo(width: 120, height: 80))
        var padded = Data(jpeg.prefix(2))
        for _ in 0..<23 {  // 23 COM segments of 65,535 bytes
            padded.append(contentsOf: [0xFF, 0xFE, 0xFF, 0xFF])
            padded.append(Data(repeating: 0x20, count: 65_533))
        }
        padded.append(jpeg.dropFirst(2))
        XCTAssertGreaterThan(padded.count, 1 << 20)
        let server = try FaultServer(image: padded, contentType: "image/jpeg")
        defer { server.stop() }
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: 2, loadingTimeout: 30, deliveryQueue: queue, notificationCenter: nil)
        var request = ImageRequest(url: server.imageURL())
        request.wantsPreviews = true
        let image = try await loader.image(for: request)
        XCTAssertEqual(PixelSize(width: image.width, height: image.height), PixelSize(width: 120, height: 80))
    }

    /// Below this, a delay is a shared 2-core machine's noise, not a stall.
    private static let noiseFloor = 0.5

    // MARK: Finding B: slow origins

    /// With the service preset, eight requests to an origin that accepts and
    /// never answers, or drips its answers a byte a second, hold at most
    /// their origin's share of the slots: a request to another origin made
    /// after them is answered at once.
    func testSilentOrDrippingOriginLeavesAnotherOriginsRequestFast() throws {
        let faults: [(String, Fault)] = [
            ("silent", .neverStarts), ("dripping, 1 byte/s", .drip(photo, pieces: photo.count, interval: 1)),
        ]
        for (name, fault) in faults {
            let slow = try FaultServer(image: photo, contentType: "image/jpeg")
            defer { slow.stop() }
            let healthy = try FaultServer(image: photo, contentType: "image/jpeg")
            defer { healthy.stop() }
            var configuration = AsyncImageLoader.Configuration.service(concurrentLoads: 8)
            configuration.urlPolicy = .unrestricted
            configuration.loadingTimeout = 5
            configuration.deliveryQueue = queue
            let loader = AsyncImageLoader(configuration: configuration)
            let stalled = (0..<8).map { _ in slow.url(for: fault) }
            let answer = Box<(Result<Image, AsyncImageError>, Double)>()
            let healthyDone = expectation(description: "the healthy origin's image")
            let healthyURL = healthy.imageURL("fresh")
            let start = Date()
            for url in stalled {
                loader.loadImage(ImageRequest(url: url))
            }
            loader.loadImage(
                ImageRequest(url: healthyURL), target: nil,
                success: ImageAction("record") { _, image, _ in
                    answer.value = (.success(image), Date().timeIntervalSince(start))
                    healthyDone.fulfill()
                },
                failure: ImageFailureAction("record") { _, error, _ in
                    answer.value = (.failure(error), Date().timeIntervalSince(start))
                    healthyDone.fulfill()
                })
            wait(for: [healthyDone], timeout: 30)
            let outcome = try XCTUnwrap(answer.value)
            print("under attack: 8 requests to a \(name) origin, then 1 to a healthy one: answered in \(ms(outcome.1)) ms")
            guard case .success = outcome.0 else { return XCTFail("\(name): healthy origin: \(outcome.0)") }
            XCTAssertLessThan(outcome.1, 1.0, "\(name): the healthy origin's request waited for the slow origin's")
            XCTAssertLessThanOrEqual(slow.requestCount, 4, "\(name): at most half the slots to one origin")
            loader.cancelAll()
        }
    }

    /// The low-speed limit ends a transfer that drips its body a byte a
    /// second, with a timeout of the limit's time, long before the
    /// loading timeout (and the timeout is not retried).
    func testLowSpeedLimitEndsADrippingTransfer() throws {
        let server = try FaultServer(image: photo, contentType: "image/jpeg")
        defer { server.stop() }
        let url = server.url(for: .drip(photo, pieces: photo.count, interval: 1))
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: 1, loadingTimeout: 30, deliveryQueue: queue, notificationCenter: nil,
            transport: TransportConfiguration(lowSpeedLimit: 100, lowSpeedTime: 2))
        let outcomes = load([url], with: loader, within: 20)
        let outcome = try XCTUnwrap(outcomes[url])
        print("under attack: a body dripped at 1 byte/s, low-speed limit 100 B/s for 2 s: ended in \(ms(outcome.1)) ms")
        XCTAssertEqual(outcome.0.failure, .timedOut(url, seconds: 2, stage: .transfer))
        XCTAssertGreaterThanOrEqual(outcome.1, 2 * 0.9, "not before the limit's time")
        XCTAssertLessThanOrEqual(outcome.1, 2 + 1.5, "within the limit's time, as libcurl checks it (once a second)")
        XCTAssertEqual(server.requestCount, 1, "not retried")
    }

    /// The defaults: a limit that no answering server is under, a time far
    /// below the loading timeout.
    func testTheLowSpeedLimitsDefaults() {
        let transport = TransportConfiguration()
        XCTAssertEqual(transport.lowSpeedLimit, 100)
        XCTAssertEqual(transport.lowSpeedTime, 10)
        XCTAssertEqual(AsyncImageLoader.Configuration.service().originShare, 0.5)
        XCTAssertEqual(AsyncImageLoader.Configuration().originShare, 1)
    }

    // MARK: Finding C: the card's timeout

    /// With `loadingTimeout` 1 s and the default retry policy, every way a
    /// server can never answer ends the load within the timeout + 1 s
    /// (a timed-out transfer is not retried), and at `concurrentLoads` 1 the
    /// request queued behind it is answered within that too.
    func testNeverAnsweringOriginsEndWithinTheLoadingTimeout() throws {
        let server = try FaultServer(image: photo, contentType: "image/jpeg")
        defer { server.stop() }
        let healthy = try FaultServer(image: photo, contentType: "image/jpeg")
        defer { healthy.stop() }
        let listener = try NonAcceptingListener()
        let cases: [(String, URL)] = [
            ("never answers after accept", server.url(for: .neverStarts)),
            ("drips its head, 1 byte/s", server.url(for: .dripHead(interval: 1))),
            ("endless 100 Continue", server.url(for: .endlessInterim(interval: 0.1))),
            ("never accepts", listener.url("/never.jpg")),
        ]
        let timeout = 1.0
        for (index, (name, url)) in cases.enumerated() {
            let loader = AsyncImageLoader(
                cache: nil, concurrentLoads: 1, loadingTimeout: timeout, deliveryQueue: queue, notificationCenter: nil)
            XCTAssertEqual(loader.retryPolicy, .standard)
            let queued = healthy.imageURL("behind-\(index)")
            let outcomes = load([url, queued], with: loader, within: timeout + 10)
            guard let fault = outcomes[url], let behind = outcomes[queued] else {
                XCTFail("\(name): no outcome")
                continue
            }
            print("under attack: \(name): ended in \(ms(fault.1)) ms; the request behind it in \(ms(behind.1)) ms")
            XCTAssertEqual(fault.0.failure, .timedOut(url, seconds: timeout, stage: .transfer), name)
            XCTAssertLessThanOrEqual(fault.1, timeout + 1, "\(name): past the loading timeout")
            XCTAssertNil(behind.0.failure, "\(name): the request behind it")
            XCTAssertLessThanOrEqual(behind.1, timeout + 1, "\(name): the request behind it waited too long")
        }
    }

    // MARK: Helpers

    fileprivate struct Timed: Sendable {
        let error: AsyncImageError?
        let seconds: Double
    }

    /// Loads `request` with the async API: its error (nil for an image) and how long it took.
    private static func timedLoad(_ loader: AsyncImageLoader, _ request: ImageRequest) async throws -> Timed {
        let start = Date()
        do {
            _ = try await loader.image(for: request)
            return Timed(error: nil, seconds: Date().timeIntervalSince(start))
        } catch let error as AsyncImageError {
            return Timed(error: error, seconds: Date().timeIntervalSince(start))
        }
    }

    /// Asks for every URL in order (so each queues behind the ones before),
    /// and waits up to `limit` seconds for all their outcomes, each with
    /// the seconds from the first request to it.
    private func load(_ urls: [URL], with loader: AsyncImageLoader, within limit: Double) -> [URL: (
        Result<Image, AsyncImageError>, Double
    )] {
        let outcomes = Box<[URL: (Result<Image, AsyncImageError>, Double)]>([:])
        let done = expectation(description: "outcomes")
        done.expectedFulfillmentCount = urls.count
        let start = Date()
        for url in urls {
            loader.loadImage(
                ImageRequest(url: url), target: nil,
                success: ImageAction("record") { _, image, _ in
                    outcomes.update { $0?[url] = (.success(image), Date().timeIntervalSince(start)) }
                    done.fulfill()
                },
                failure: ImageFailureAction("record") { _, error, _ in
                    outcomes.update { $0?[url] = (.failure(error), Date().timeIntervalSince(start)) }
                    done.fulfill()
                })
        }
        wait(for: [done], timeout: limit)
        return outcomes.value ?? [:]
    }

    private func ms(_ seconds: Double?) -> Int { seconds.map { Int(($0 * 1000).rounded()) } ?? -1 }
}

extension Result where Failure == AsyncImageError {
    fileprivate var failure: AsyncImageError? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
