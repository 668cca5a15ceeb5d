@testable import AsyncImageKit
import Foundation
import Logging
import TestSupport
import XCTest

#if MetricsSupport
    import MetricsTestKit
    import CoreMetrics
#endif
#if ServiceLifecycleSupport
    import ServiceLifecycle
#endif

/// The optional integrations behind package traits (built and run by
/// `./quickstart test`, which enables them): swift-metrics figures from the
/// loader's events, and the swift-service-lifecycle service that drains on
/// shutdown. Transfers are held by the fake transport.
final class IntegrationTraitTests: XCTestCase {
    /// A loader over `transport` with an in-memory disk store.
    private func makeLoader(_ transport: FakeDataLoader, store: MemoryDataStore? = nil) -> AsyncImageLoader {
        AsyncImageLoader(
            configuration: AsyncImageLoader.Configuration(
                cache: ImageCache(), deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil,
                dataLoader: transport, diskCache: store))
    }

    private static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1/img/\(n).png")! }
    private func url(_ n: Int) -> URL { Self.url(n) }

    #if MetricsSupport
        /// Outcomes by source, bytes once per shared transfer, and the stage
        /// timers: a network load shared by two requests, a memory hit, a
        /// disk hit in a second loader, a failure and a cancel.
        func testMetricsCountOutcomesBySourceAndTimeTheStages() async throws {
            let metrics = TestMetrics()
            let transport = FakeDataLoader()
            let store = MemoryDataStore()
            let loader = makeLoader(transport, store: store)
            let seen = Box(0)
            loader.eventMonitor = { _ in seen.value = (seen.value ?? 0) + 1 }  // kept, and called first
            let recorder = LoaderMetrics(loader: loader, factory: metrics)

            let started = transport.starts(1, self)
            let one = url(1)
            async let first = loader.image(for: one)
            await fulfillment(of: [started], timeout: 10)
            async let second = loader.image(for: one)  // joins the running transfer
            while loader.activity.pendingRequests < 2 { await Task.yield() }
            transport.finish(url(1))
            _ = try await (first, second)
            _ = try await loader.image(for: url(1))  // memory
            transport.fail(url(2), with: .httpStatus(url(2), code: 404))
            transport.isSuspended = false
            _ = try? await loader.image(for: url(2))
            transport.isSuspended = true
            let held = transport.starts(3, self)
            let u3 = url(3)
            let cancelled = Task { try await loader.image(for: u3) }
            await fulfillment(of: [held], timeout: 10)
            cancelled.cancel()
            _ = try? await cancelled.value
            await loader.flushDiskWrites()

            let other = makeLoader(transport, store: store)
            let otherMetrics = LoaderMetrics(loader: other, factory: metrics)
            _ = try await other.image(for: ImageRequest(url: url(1), cachePolicy: .cachedOnly))  // disk (stored, no network)

            func count(_ source: String, _ outcome: String) throws -> Int64 {
                try metrics.expectCounter("asyncimage_requests_total", [("source", source), ("outcome", outcome)])
                    .totalValue
            }
            XCTAssertEqual(try count("network", "success"), 2)
            XCTAssertEqual(try count("memory", "success"), 1)
            XCTAssertEqual(try count("disk", "success"), 1)
            XCTAssertEqual(try count("none", "failure"), 1)
            XCTAssertEqual(try count("none", "cancelled"), 1)
            XCTAssertEqual(try count("none", "timeout"), 0)
            let body = Int64(FakeDataLoader.response(for: url(1)).data.count)
            XCTAssertEqual(
                try metrics.expectCounter("asyncimage_network_bytes_total").totalValue, body,
                "one transfer's bytes, though two requests shared it")
            XCTAssertEqual(try metrics.expectTimer("asyncimage_queue_wait_seconds").values.count, 5)
            XCTAssertEqual(try metrics.expectTimer("asyncimage_disk_read_seconds", [("hit", "true")]).values.count, 1)
            XCTAssertGreaterThanOrEqual(
                try metrics.expectTimer("asyncimage_disk_read_seconds", [("hit", "false")]).values.count, 3)
            XCTAssertEqual(try metrics.expectTimer("asyncimage_transfer_seconds").values.count, 3, "1, 1 joined, 2")
            XCTAssertEqual(try metrics.expectTimer("asyncimage_decode_seconds").values.count, 3, "two network, one disk")
            XCTAssertEqual(try metrics.expectTimer("asyncimage_request_seconds", [("outcome", "success")]).values.count, 4)
            XCTAssertGreaterThan(seen.value ?? 0, 0, "the monitor set before is still called")
            withExtendedLifetime((recorder, otherMetrics)) {}
        }

        /// A thumbnail served as it is stored (no load) still counts: a
        /// disk success, with its disk read.
        func testAStoredAnswerCountsAsADiskSuccess() async throws {
            let metrics = TestMetrics()
            let transport = FakeDataLoader()
            transport.isSuspended = false
            let store = MemoryDataStore()
            let request = ImageRequest(url: url(6), sizing: .fitInside(PixelSize(width: 2, height: 2)))
            let first = makeLoader(transport, store: store)
            _ = try await first.encodedImage(for: request)
            await first.flushDiskWrites()
            let second = makeLoader(transport, store: store)
            let recorder = LoaderMetrics(loader: second, factory: metrics)
            let answer = try await second.encodedImage(for: ImageRequest(url: url(6), sizing: .fitInside(PixelSize(width: 2, height: 2)), cachePolicy: .cachedOnly))
            XCTAssertTrue(answer.isStoredEncoding)
            XCTAssertEqual(
                try metrics.expectCounter("asyncimage_requests_total", [("source", "disk"), ("outcome", "success")])
                    .totalValue, 1)
            XCTAssertEqual(try metrics.expectTimer("asyncimage_request_seconds", [("outcome", "success")]).values.count, 1)
            withExtendedLifetime(recorder) {}
        }

        /// A deadline that passes counts as a timeout, not a failure.
        func testATimedOutRequestCountsAsATimeout() async throws {
            let metrics = TestMetrics()
            let transport = FakeDataLoader()
            let loader = makeLoader(transport)
            let recorder = LoaderMetrics(loader: loader, labelPrefix: "images", factory: metrics)
            var request = ImageRequest(url: url(9))
            request.timeout = .milliseconds(20)
            _ = try? await loader.image(for: request)
            XCTAssertEqual(
                try metrics.expectCounter("images_requests_total", [("source", "none"), ("outcome", "timeout")])
                    .totalValue, 1)
            XCTAssertEqual(try metrics.expectTimer("images_request_seconds", [("outcome", "timeout")]).values.count, 1)
            withExtendedLifetime(recorder) {}
        }
    #endif

    #if ServiceLifecycleSupport
        /// On the group's graceful shutdown the service waits for the held
        /// request (it is delivered, not cancelled), then flushes the disk;
        /// the group ends only after that.
        func testTheServiceDrainsThenFlushesOnGracefulShutdown() async throws {
            let transport = FakeDataLoader()
            let store = MemoryDataStore()
            let loader = makeLoader(transport, store: store)
            let group = ServiceGroup(
                services: [AsyncImageLoaderService(loader: loader, drainTimeout: 600)], logger: Logger(label: "test"))
            let started = transport.starts(1, self)
            let u4 = url(4)
            let load = Task { try await loader.image(for: u4) }
            await fulfillment(of: [started], timeout: 10)
            let running = Task { try await group.run() }
            await group.triggerGracefulShutdown()
            XCTAssertEqual(loader.activity.pendingRequests, 1, "still held: the group waits")
            let flushesBefore = store.flushCount
            transport.finish(url(4))
            _ = try await load.value
            try await running.value
            XCTAssertGreaterThan(store.flushCount, flushesBefore)
            XCTAssertEqual(loader.activity.cancelled, 0)
        }

        /// Past its time limit the service cancels what is left.
        func testTheServiceCancelsWhatIsLeftAtItsTimeLimit() async throws {
            let transport = FakeDataLoader()
            let loader = makeLoader(transport)
            let group = ServiceGroup(
                services: [AsyncImageLoaderService(loader: loader, drainTimeout: 0.05)], logger: Logger(label: "test"))
            let started = transport.starts(1, self)
            let u5 = url(5)
            let load = Task { try await loader.image(for: u5) }
            await fulfillment(of: [started], timeout: 10)
            let running = Task { try await group.run() }
            await group.triggerGracefulShutdown()
            try await running.value
            do {
                _ = try await load.value
                XCTFail("delivered")
            } catch {
                XCTAssertTrue(error is CancellationError, "\(error)")
            }
            XCTAssertEqual(loader.activity.cancelled, 1)
        }
    #endif
}
