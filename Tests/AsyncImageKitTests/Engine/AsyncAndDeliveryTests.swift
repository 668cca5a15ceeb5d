@testable import AsyncImageKit
import Foundation
import Logging
import TestSupport
import XCTest

/// The async API never waits for the delivery queue; cancellation ends one
/// way; cache hits on the delivery queue are delivered at once; the cache
/// key; the loader's log.
final class AsyncAndDeliveryTests: XCTestCase {
    /// A command-line tool never runs its main queue: `image(for:)` must not need it.
    func testAsyncResultsDoNotWaitForTheDeliveryQueue() async throws {
        let h = FakeHarness()
        h.transport.isSuspended = false
        h.queue.suspend()  // a delivery queue nobody services
        let image = try await h.loader.image(for: h.url(7))
        XCTAssertEqual(image.pixel(x: 0, y: 0), NumberedImage.color(7))
        let cached = try await h.loader.image(for: h.url(7))
        XCTAssertEqual(cached.size, image.size)
        XCTAssertEqual(h.log.events, [], "notifications wait for the queue")
        h.queue.resume()
        h.drainDeliveries()
        XCTAssertEqual(h.log.events, [.notified("/img/7.png", finished: true), .notified("/img/7.png", finished: true)])
    }

    /// Either the task gets the image and the notification is posted, or it
    /// throws CancellationError and nothing is posted: never both, never neither.
    func testACancelledAsyncRequestEndsOneWay() async throws {
        let h = FakeHarness(concurrentLoads: 4, cache: false)
        h.transport.isSuspended = false
        let rounds = 1500
        let results = try await withThrowingTaskGroup(of: (Int, Bool).self) { group in
            for n in 0..<rounds {
                let task = Task { try await h.loader.image(for: h.url(n)) }
                group.addTask {
                    if n % 3 != 0 { await Task.yield() }
                    task.cancel()
                    do {
                        _ = try await task.value
                        return (n, true)
                    } catch is CancellationError {
                        return (n, false)
                    }
                }
            }
            var all: [Int: Bool] = [:]
            for try await (n, delivered) in group { all[n] = delivered }
            return all
        }
        h.drainDeliveries()
        var posted: Set<String> = []
        for case .notified(let path, _) in h.log.events { XCTAssertTrue(posted.insert(path).inserted, "\(path) posted twice") }
        let delivered = Set(results.filter(\.value).keys.map { "/img/\($0).png" })
        XCTAssertEqual(posted, delivered, "posted exactly for the tasks that got their image")
        XCTAssertEqual(results.count, rounds)
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }

    /// A cache hit made on the delivery queue is delivered before `loadImage`
    /// returns (a reused cell never shows its placeholder for a turn).
    func testCacheHitsOnTheDeliveryQueueAreDeliveredAtOnce() {
        let h = FakeHarness()
        h.transport.isSuspended = false
        h.load(5)
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        final class Cell: ImageDisplaying, @unchecked Sendable {
            var image: Image?
            let loader: AsyncImageLoader
            init(_ loader: AsyncImageLoader) { self.loader = loader }
            var imageLoader: AsyncImageLoader { loader }
        }
        let cell = Cell(h.loader)
        let view = AsyncImageView(loader: h.loader)
        h.queue.sync {
            h.load(5, target: Target())
            XCTAssertEqual(h.log.deliveredPaths.count, 2, "delivered inside loadImage")
            cell.imageURL = h.url(5)
            XCTAssertNotNil(cell.image, "assigned before the setter returns")
            view.imageURL = h.url(5)
            XCTAssertEqual(view.state, .loaded(h.url(5)))
        }
        // Off the delivery queue: through the queue as usual (held busy here).
        let busy = DispatchSemaphore(value: 0)
        h.queue.async { busy.wait() }
        h.load(5)
        XCTAssertEqual(h.log.deliveredPaths.count, 2)
        busy.signal()
        wait(for: [h.log.outcomes(3, self)], timeout: 10)
    }

    /// AsyncImageCacheKey: on every didFinish whose image is held in a cache
    /// (a fresh load stored in the loader's cache, and a hit); absent only
    /// when caching is off.
    func testTheCacheKeyNamesTheCacheHoldingTheImage() {
        for caching in [true, false] {
            let h = FakeHarness(cache: caching)
            h.transport.isSuspended = false
            let caches = Box<[ObjectIdentifier?]>([])
            let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { note in
                let cache = (note.userInfo?[AsyncImageCacheKey] as? any ImageCaching).map { ObjectIdentifier($0) }
                caches.value = (caches.value ?? []) + [cache]
            }
            h.load(1)
            wait(for: [h.log.outcomes(1, self)], timeout: 10)
            h.load(1)
            wait(for: [h.log.outcomes(2, self)], timeout: 10)
            h.drainDeliveries()
            let expected: ObjectIdentifier? = caching ? ObjectIdentifier(h.cache) : nil
            XCTAssertEqual(caches.value, [expected, expected])
            XCTAssertEqual(h.transport.startedPaths.count, caching ? 1 : 2)
            h.center.removeObserver(observer)
        }
    }

    /// AsyncImageCacheKey is absent where the image is held in no cache: a
    /// request with ``ImageCachePolicy/skipMemoryWrites``, a `no-store`
    /// response; and present for a sequence's member found in the cache.
    func testTheCacheKeyIsAbsentWhereNothingIsHeld() {
        let h = FakeHarness()
        h.transport.isSuspended = false
        let caches = Locked([String: ObjectIdentifier?]())
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { note in
            let url = (note.userInfo?[AsyncImageURLKey] as? URL)?.path ?? "?"
            let cache = (note.userInfo?[AsyncImageCacheKey] as? any ImageCaching).map { ObjectIdentifier($0) }
            caches.withLock { $0[url] = cache }
        }
        defer { h.center.removeObserver(observer) }
        h.loader.loadImage(ImageRequest(url: h.url(1), cachePolicy: .skipMemoryWrites), success: h.log.success, failure: h.log.failure)
        h.transport.script(h.url(2), [.imageWithHeaders(["cache-control": "no-store"])])
        h.load(2)
        h.load(3)
        wait(for: [h.log.outcomes(3, self)], timeout: 10)
        // Image 3 is in the cache now: a sequence of it finds it there.
        h.loader.loadImages([ImageRequest(url: h.url(3))], success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(4, self)], timeout: 10)
        h.drainDeliveries()
        let held = ObjectIdentifier(h.cache)
        XCTAssertEqual(caches.withLock { $0 }, ["/img/1.png": nil, "/img/2.png": nil, "/img/3.png": held])
        XCTAssertNil(h.cache.image(for: ImageRequest(url: h.url(2)).cacheKey), "no-store: in no cache")
        XCTAssertEqual(h.transport.startedPaths.count, 3, "the sequence's member was a hit")
    }

    /// Deliveries to a main queue that is not serviced are reported once in the log.
    func testAnUnservicedMainQueueIsLogged() throws {
        try XCTSkipUnless(Thread.isMainThread, "the test blocks the main thread")
        let logged = LogRecorder()
        let transport = FakeDataLoader()
        transport.isSuspended = false
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: nil, deliveryQueue: .main, notificationCenter: NotificationCenter(), dataLoader: transport,
                logger: logged.logger))
        loader.state.withLock { $0.mainQueueWatch.threshold = 0.2 }
        loader.loadImage(URL(string: "http://127.0.0.1/img/1.png")!)
        loader.loadImage(URL(string: "http://127.0.0.1/img/2.png")!)
        // Block the main thread (so the main queue waits) until the warning comes.
        XCTAssertEqual(logged.firstMessage.wait(timeout: .now() + 10), .success)
        let warnings = logged.messages.filter { $0.level == .warning }
        XCTAssertEqual(warnings.count, 1)
        XCTAssertTrue(warnings[0].text.contains("main queue"), warnings[0].text)
        XCTAssertTrue(warnings[0].text.contains("2 image deliveries"), warnings[0].text)
    }

    func testTransportFailuresAndCancelledTransfersAreLogged() {
        // Without retries (a 503 is retried, and logged so: RetryTests).
        let h = FakeHarness { $0.retryPolicy = .disabled }
        let logged = LogRecorder(level: .debug)
        h.loader.logger = logged.logger
        h.transport.fail(h.url(1), with: .httpStatus(h.url(1), code: 503))
        h.load(1)
        h.transport.finish(h.url(1))
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        h.load(2).cancel()
        h.load(3)
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.loader.cancelLoading(url: h.url(3))
        let texts = logged.messages.map(\.text)
        XCTAssertTrue(texts.contains { $0.contains("transfer failed: HTTP status 503") }, "\(texts)")
        XCTAssertTrue(texts.contains { $0.contains("cancelling the transfer of http://127.0.0.1/img/3.png") }, "\(texts)")
        XCTAssertTrue(AsyncImageLoader.silentLogger.handler is SwiftLogNoOpLogHandler, "silent by default")
    }
}
