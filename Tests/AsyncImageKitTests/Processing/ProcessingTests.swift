@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import XCTest

/// Processors (issue: display size and processing, items 3 and 4): the
/// built-ins pixel by pixel, chains through the loader under keys that name
/// them, once per key on the decode queue, failures typed; a request's own
/// cache key for URLs that differ only by a token.
final class ProcessingTests: XCTestCase {
    private static let grey = RGBA(r: 128, g: 128, b: 128)

    func testCropTakesARectangleClippedToTheImage() throws {
        let image = SyntheticImage.quadrants(width: 40, height: 20)
        let crop = try ImageProcessors.Crop(x: 15, y: 5, size: PixelSize(width: 10, height: 10)).process(image)
        XCTAssertEqual(crop.size, PixelSize(width: 10, height: 10))
        XCTAssertEqual(crop.pixel(x: 0, y: 0), image.pixel(x: 15, y: 5))
        XCTAssertEqual(crop.pixel(x: 9, y: 9), image.pixel(x: 24, y: 14))
        let clipped = try ImageProcessors.Crop(x: 30, y: -5, size: PixelSize(width: 50, height: 10)).process(image)
        XCTAssertEqual(clipped.size, PixelSize(width: 10, height: 5))
        XCTAssertThrowsError(try ImageProcessors.Crop(x: 50, y: 0, size: PixelSize(width: 5, height: 5)).process(image)) {
            guard case .processing(let name, _) = $0 as? AsyncImageError else { return XCTFail("\($0)") }
            XCTAssertEqual(name, "crop(50,0,5x5)")
        }
    }

    func testCircleAndRoundedCornersMaskWithSoftEdges() throws {
        let image = SyntheticImage.solid(width: 60, height: 40, color: Self.grey)
        let circle = try ImageProcessors.Circle().process(image)
        XCTAssertEqual(circle.size, PixelSize(width: 40, height: 40), "the centred square")
        XCTAssertEqual(circle.pixel(x: 0, y: 0).a, 0)
        XCTAssertEqual(circle.pixel(x: 39, y: 39).a, 0)
        XCTAssertEqual(circle.pixel(x: 20, y: 20), Self.grey)
        XCTAssertEqual(circle.pixel(x: 20, y: 1).a, 255, "inside, near the top")
        let edge = circle.pixel(x: 6, y: 5).a  // its centre 0.19 px inside the circle
        XCTAssertTrue(edge > 100 && edge < 255, "a soft edge: \(edge)")

        let rounded = try ImageProcessors.RoundedCorners(radius: 8).process(image)
        XCTAssertEqual(rounded.size, image.size)
        XCTAssertEqual(rounded.pixel(x: 0, y: 0).a, 0)
        XCTAssertEqual(rounded.pixel(x: 59, y: 39).a, 0)
        XCTAssertEqual(rounded.pixel(x: 30, y: 0), Self.grey, "the middle of an edge is untouched")
        XCTAssertEqual(rounded.pixel(x: 8, y: 8), Self.grey)
        let ramp = rounded.pixel(x: 2, y: 2).a
        XCTAssertLessThan(ramp, 255)
    }

    func testResizeProcessorMatchesADisplaySizeDecode() throws {
        let photo = SyntheticImage.photo(width: 300, height: 200)
        let png = try PNGEncoder().encode(photo)
        let decoded = try ImageDecoder().decode(
            png, options: DecodingOptions(targetSize: PixelSize(width: 64, height: 64), contentMode: .aspectFit))
        let processed = try ImageProcessors.Resize(size: PixelSize(width: 64, height: 64), contentMode: .aspectFit)
            .process(ImageDecoder().decode(png))
        XCTAssertEqual(processed.size, decoded.size)
        XCTAssertEqual(processed.pixels, decoded.pixels)
    }

    /// Through the loader: the chain runs once per key, on the decode
    /// queue, however many requests share it; only the processed image is
    /// cached; a failing processor is a typed failure.
    func testAChainRunsOncePerKeyOnTheDecodeQueue() throws {
        let h = try LoaderHarness()
        let url = h.server.url(7)
        let counter = CountingProcessor()
        h.loader.decodeQueue.setSpecific(key: CountingProcessor.queueName, value: "AsyncImageKit.decode")
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
    static let queueName = DispatchSpecificKey<String>()
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
