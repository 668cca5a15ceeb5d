@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Processor chains through a loader over loopback HTTP: once per key on the
/// decode queue, failures typed; a request's own cache key (the processors
/// themselves: ProcessingTests in AsyncImageKitTests).
final class LoaderProcessingTests: XCTestCase {
    private static let grey = RGBA(r: 128, g: 128, b: 128)

    /// Through the loader: the chain runs once per key, on the decode
    /// queue, however many requests share it; only the processed image is
    /// cached; a failing processor is a typed failure.
    func testAChainRunsOncePerKeyOnTheDecodeQueue() throws {
        let h = try LoaderHarness()
        let url = h.server.url(7)
        let counter = CountingProcessor()
        // A decode's queue names itself (`DecodeScheduler.queueLabel`).
        h.queue.setSpecific(key: CountingProcessor.queueName, value: "the delivery queue")
        h.server.hold(url)
        let request = ImageRequest(
            url: url, targetSize: PixelSize(width: 16, height: 16), scaling: .enlargesSmallImages,
            processors: [counter, ImageProcessors.Circle()])
        let targets = (0..<5).map { _ in Target() }
        for target in targets {
            h.loader.loadImage(request, target: target, success: h.log.success, failure: h.log.failure)
        }
        h.loader.loadImage(request, success: h.log.success, failure: h.log.failure)
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        h.server.release(url)
        wait(for: [h.log.outcomes(6, self)], timeout: 15)
        XCTAssertEqual(counter.runs.value, 1, "once for six requests")
        XCTAssertEqual(counter.queues.value, ["AsyncImageKit.decode"])
        h.loader.loadImage(request, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(7, self)], timeout: 15)
        XCTAssertEqual(counter.runs.value, 1, "then a memory hit")
        XCTAssertTrue(request.cacheKey.processing.hasSuffix("|counting|circle"), request.cacheKey.processing)
        XCTAssertNotNil(h.cache.image(for: request.cacheKey))
        XCTAssertNil(
            h.cache.image(
                for: ImageRequest(url: url, targetSize: PixelSize(width: 16, height: 16), scaling: .enlargesSmallImages).cacheKey),
            "the unprocessed decode is not kept")
        XCTAssertEqual(h.log.images["/img/7.png"]?.pixel(x: 0, y: 0).a, 0, "masked")
        XCTAssertEqual(h.log.images["/img/7.png"]?.pixel(x: 8, y: 8).a, 255)

        let failing = ImageRequest(url: h.server.url(8), processors: [FailingProcessor()])
        h.loader.loadImage(failing, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(8, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.errors["/img/8.png"], .processing("failing", reason: "on purpose"))
        withExtendedLifetime(targets) {}
    }

    /// URLs that differ only by a token share the caches under the
    /// request's own key; cancelling by URL still finds them.
    func testARequestsOwnKeyNamesTheImageInEveryCache() throws {
        let h = try LoaderHarness()
        let folder = temporaryFolder("keyed")
        let disk = try DataCache(directory: folder)
        let image = try PNGEncoder().encode(SyntheticImage.solid(width: 4, height: 4, color: Self.grey))
        h.server.respond("/avatar.png") { connection in
            connection.respond(status: 200, headers: [("Cache-Control", "max-age=600")], body: image)
        }
        let signed = { (token: String) in URL(string: h.server.url(path: "/avatar.png").absoluteString + "?sig=\(token)")! }
        let loader = AsyncImageLoader(
            configuration: .init(cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        loader.loadImage(ImageRequest(url: signed("a"), key: "avatar-42"), success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        loader.loadImage(ImageRequest(url: signed("b"), key: "avatar-42"), success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(signed("a")), 1, "the second token was a memory hit")
        XCTAssertEqual(ImageRequest(url: signed("c"), key: "avatar-42").cacheKey.url, "avatar-42")
        loader.flushDiskWrites()
        // A new loader (empty memory): the disk knows the key, whatever the token.
        let restarted = AsyncImageLoader(
            configuration: .init(cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        restarted.loadImage(ImageRequest(url: signed("d"), key: "avatar-42"), success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(signed("a")), 1, "one transfer in all")

        // Cancelling by URL finds a keyed request.
        let held = signed("e")
        h.server.hold(held)
        let other = ImageRequest(url: held, key: "avatar-43")
        let task = h.loader.loadImage(other, success: h.log.success, failure: h.log.failure)
        wait(for: [h.server.arrival(of: held, self)], timeout: 15)
        h.loader.cancelLoading(url: held)
        XCTAssertEqual(task.state, .cancelled)
        h.server.release(held)
    }
}

/// Counts its runs and the queues it ran on.
private final class CountingProcessor: ImageProcessing, @unchecked Sendable {
    let runs = Box<Int>(0)
    let queues = Box<Set<String>>([])
    /// Set on the queues the test names.
    static let queueName = DecodeScheduler.queueLabel
    var identifier: String { "counting" }

    func process(_ image: Image) throws(AsyncImageError) -> Image {
        runs.update { $0 = ($0 ?? 0) + 1 }
        let label = DispatchQueue.getSpecific(key: Self.queueName) ?? "another queue"
        queues.update { $0 = ($0 ?? []).union([label]) }
        return image
    }
}

private struct FailingProcessor: ImageProcessing {
    var identifier: String { "failing" }
    func process(_ image: Image) throws(AsyncImageError) -> Image {
        throw .processing(identifier, reason: "on purpose")
    }
}
