@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The service preset and what a service's shutdown uses: no notifications
/// (the async API then never asks the delivery queue), one memory budget,
/// waiting until idle, draining with a time limit, the async flush.
/// Transfers are held by the fake transport until the test releases them.
final class ServiceConfigurationTests: XCTestCase {
    private let png = FakeDataLoader.response(for: URL(string: "http://x/img/1.png")!).data

    /// The preset's settings, each different from the screen defaults, and
    /// its budget split between the memory cache and the pixel pool.
    func testThePresetSettings() throws {
        let screen = AsyncImageLoader.Configuration()
        let service = AsyncImageLoader.Configuration.service(memoryBudget: 400 << 20)
        XCTAssertEqual(service.queueOrder, .fifo)
        XCTAssertEqual(screen.queueOrder, .lifo)
        XCTAssertNil(service.notificationCenter)
        XCTAssertTrue(screen.notificationCenter === NotificationCenter.default)
        XCTAssertNotEqual(service.deliveryQueue.label, DispatchQueue.main.label)
        XCTAssertEqual(service.urlPolicy, .publicOnly)
        XCTAssertEqual(service.httpCache, .shared)
        XCTAssertEqual(service.maxPendingRequests, 1_000)
        XCTAssertEqual(service.concurrentLoads, 8)
        let cache = try XCTUnwrap(service.cache as? ImageCache)
        XCTAssertFalse(cache === AsyncImageLoader.sharedCache)
        XCTAssertEqual(cache.totalCostLimit, 300 << 20)
        XCTAssertEqual(service.pixelPoolByteLimit, 100 << 20)
        XCTAssertEqual(cache.totalCostLimit + service.pixelPoolByteLimit!, 400 << 20, "one budget")
        XCTAssertNil(screen.pixelPoolByteLimit)

        // Made into a loader, the pool's limit is set (and restored here).
        let before = PixelBufferPool.shared.byteLimit
        defer { PixelBufferPool.shared.byteLimit = before }
        var configuration = service
        configuration.dataLoader = FakeDataLoader()
        _ = AsyncImageLoader(configuration: configuration)
        XCTAssertEqual(PixelBufferPool.shared.byteLimit, 100 << 20)
    }

    /// Without a notification center nothing is posted, and the async API
    /// delivers while the delivery queue is blocked (it is never asked);
    /// with one, the same load posts its notification on that queue.
    func testNoCenterPostsNothingAndNeverAsksTheDeliveryQueue() async throws {
        let transport = FakeDataLoader()
        transport.isSuspended = false
        let queue = DispatchQueue(label: "blocked delivery")
        let blocked = DispatchSemaphore(value: 0)
        queue.async { blocked.wait() }  // the queue runs nothing until released
        defer { blocked.signal() }
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: queue, notificationCenter: nil, dataLoader: transport)
        configuration.urlPolicy = .unrestricted
        let loader = AsyncImageLoader(configuration: configuration)
        let posted = Box(0)
        let observer = NotificationCenter.default.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) {
            _ in posted.value = (posted.value ?? 0) + 1
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let image = try await loader.image(for: URL(string: "http://127.0.0.1/img/1.png")!)
        XCTAssertEqual(image.width, 4)
        XCTAssertEqual(loader.activity.pendingRequests, 0)
        XCTAssertEqual(loader.activity.delivered, 1)
        XCTAssertNil(loader.notificationCenter)
        XCTAssertEqual(posted.value ?? 0, 0)

        // With a center, the post waits for the queue: released, it comes.
        let center = NotificationCenter()
        loader.notificationCenter = center
        let finished = expectation(forNotification: .asyncImageLoadDidFinish, object: nil, notificationCenter: center)
        _ = try await loader.image(for: URL(string: "http://127.0.0.1/img/2.png")!)
        blocked.signal()
        await fulfillment(of: [finished], timeout: 10)
    }

    /// `waitUntilIdle()` returns only once the held request is delivered;
    /// at once when nothing is pending.
    func testWaitUntilIdleWaitsForTheLastPendingRequest() async throws {
        let h = FakeHarness()
        await h.loader.waitUntilIdle()  // nothing pending: returns
        let started = h.transport.starts(1, self)
        let load = Task { try await h.loader.image(for: h.url(1)) }
        await fulfillment(of: [started], timeout: 10)
        let idle = expectation(description: "idle")
        let waiter = Task {
            await h.loader.waitUntilIdle()
            XCTAssertEqual(h.loader.activity.pendingRequests, 0)
            idle.fulfill()
        }
        // Still held: a second waiter that is cancelled returns at once.
        let cancelled = Task { await h.loader.waitUntilIdle() }
        cancelled.cancel()
        await cancelled.value
        XCTAssertEqual(h.loader.activity.pendingRequests, 1, "the held request is still pending")
        h.transport.finish(h.url(1))
        _ = try await load.value
        await fulfillment(of: [idle], timeout: 10)
        await waiter.value
    }

    /// `drain(timeout:)` returns true when the pending requests finish by
    /// themselves; at its time limit it cancels the rest (each caller gets
    /// `CancellationError`, the transfer is stopped) and returns false.
    func testDrainCancelsWhatIsLeftAtItsTimeLimit() async throws {
        let h = FakeHarness()
        let finished = await h.loader.drain(timeout: 10)
        XCTAssertTrue(finished)

        let started = h.transport.starts(1, self)
        let load = Task { try await h.loader.image(for: h.url(7)) }
        await fulfillment(of: [started], timeout: 10)
        let drained = await h.loader.drain(timeout: 0.05)
        XCTAssertFalse(drained)
        do {
            _ = try await load.value
            XCTFail("the held request was delivered")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(h.transport.cancelled, ["/img/7.png"])
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
        XCTAssertEqual(h.loader.activity.cancelled, 1)
    }

    /// `cancelAll()` ends every pending request once, targets' and async
    /// callers' alike, and the loader serves the next one.
    func testCancelAllEndsEveryPendingRequestOnce() async throws {
        let h = FakeHarness(concurrentLoads: 1)
        let started = h.transport.starts(1, self)
        let target = Target("t")
        h.load(1, target: target)
        h.load(2)
        let load = Task { try await h.loader.image(for: h.url(3)) }
        await fulfillment(of: [started], timeout: 10)
        while h.loader.activity.pendingRequests < 3 { await Task.yield() }
        h.loader.cancelAll()
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
        XCTAssertEqual(h.loader.activity.cancelled, 3)
        do {
            _ = try await load.value
            XCTFail("delivered after cancelAll")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        h.transport.isSuspended = false
        _ = try await h.loader.image(for: h.url(4))
        h.drainDeliveries()
        XCTAssertEqual(h.log.events.map(\.description), ["didFinish(/img/4.png)"], "the targets heard nothing")
        withExtendedLifetime(target) {}
    }

    /// The caller's log metadata rides on the loader's lines about its
    /// request (a deadline) and on those about a transfer it shares (the
    /// first request's), with the URL.
    func testRequestLogMetadataIsOnTheLoadersLines() async throws {
        let logs = LogRecorder(level: .info)
        let h = FakeHarness(configure: { $0.logger = logs.logger })
        var timed = ImageRequest(url: h.url(1))
        timed.timeout = .milliseconds(20)
        timed.logMetadata = ["request-id": "r-1"]
        _ = try? await h.loader.image(for: timed)
        let timedOut = try XCTUnwrap(logs.messages.first { $0.text.hasPrefix("request timed out") })
        XCTAssertEqual(timedOut.metadata["request-id"], "r-1")
        XCTAssertEqual(timedOut.metadata["url"], "\(h.url(1).absoluteString)")

        h.transport.fail(h.url(2), with: .httpStatus(h.url(2), code: 500))
        h.transport.isSuspended = false
        var failing = ImageRequest(url: h.url(2))
        failing.logMetadata = ["request-id": "r-2"]
        _ = try? await h.loader.image(for: failing)
        let failed = try XCTUnwrap(logs.messages.first { $0.text.hasPrefix("transfer failed") })
        XCTAssertEqual(failed.metadata["request-id"], "r-2")
        XCTAssertEqual(failed.metadata["requests"], "1")
        XCTAssertEqual(ImageRequest(url: h.url(2)), failing, "metadata is not part of equality")
    }

    /// The async flush waits for a scheduled disk write: the body is in the
    /// store when it returns.
    func testAsyncFlushWaitsForTheStore() async throws {
        let store = MemoryDataStore()
        let transport = FakeDataLoader()
        transport.isSuspended = false
        let loader = AsyncImageLoader(
            configuration: AsyncImageLoader.Configuration(
                cache: nil, deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil, dataLoader: transport,
                diskCache: store))
        let url = URL(string: "http://127.0.0.1/img/5.png")!
        _ = try await loader.image(for: url)
        await loader.flushDiskWrites()
        XCTAssertFalse(store.keys.isEmpty)
    }
}
