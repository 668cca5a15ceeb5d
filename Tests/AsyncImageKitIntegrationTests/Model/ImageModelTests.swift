import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The image model (issue: display size and processing, item 5; OGImage's
/// `OGImage`): loaded at once from memory, observed by closures and an async
/// loop, the original on request, cancelled when released.
final class ImageModelTests: XCTestCase {
    func testAnImageInMemoryIsThereWhenTheModelIsMade() throws {
        let h = try LoaderHarness()
        let url = h.server.url(3)
        h.load(url)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        let model = ImageModel(url: url, loader: h.loader)
        XCTAssertEqual(model.phase, .loaded, "no turn of any queue needed")
        XCTAssertEqual(model.image?.pixel(x: 0, y: 0), ImageServer.color(3))
        XCTAssertEqual(model.snapshot.response?.source, .memoryCache)
        XCTAssertEqual(model.originalImage?.size, model.image?.size, "full size, no processors: the original")
        XCTAssertEqual(h.server.requestCount(url), 1)
    }

    /// An async loop sees loading, then loaded with the processed image.
    func testAnAsyncLoopSeesEveryState() async throws {
        let h = try LoaderHarness()
        let url = h.server.url(4)
        h.server.hold(url)
        let model = ImageModel(
            url: url, displaySize: PixelSize(width: 8, height: 8), scaling: .enlargesSmallImages,
            processors: [ImageProcessors.Circle()], loader: h.loader)
        var phases: [ImageModel.Phase] = []
        for await snapshot in model.snapshots {
            phases.append(snapshot.phase)
            if snapshot.phase == .loading { h.server.release(url) }
            if snapshot.phase == .loaded {
                XCTAssertEqual(snapshot.image?.size, PixelSize(width: 8, height: 8))
                XCTAssertEqual(snapshot.image?.pixel(x: 0, y: 0).a, 0, "the circle")
                XCTAssertEqual(snapshot.response?.source, .network)
                XCTAssertNil(snapshot.originalImage, "not asked for")
                break
            }
        }
        XCTAssertEqual(phases, [.loading, .loaded])
    }

    /// Closures run on the delivery queue, in order, each from the current
    /// state; a failure is a phase with its error; reload tries again.
    func testObserversSeeChangesInOrderAndFailures() throws {
        let h = try LoaderHarness()
        let url = h.server.url(path: "/missing.png")
        let model = ImageModel(url: url, loader: h.loader)
        let seen = Box<[ImageModel.Phase]>([])
        let failed = expectation(description: "failed")
        let observation = model.observe { snapshot in
            XCTAssertTrue(h.isOnDeliveryQueue)
            seen.update { $0 = ($0 ?? []) + [snapshot.phase] }
            if case .failed = snapshot.phase { failed.fulfill() }
        }
        wait(for: [failed], timeout: 15)
        XCTAssertEqual(seen.value?.first, .loading)
        XCTAssertEqual(withoutHeaders(model.error), .httpStatus(url, code: 404))
        h.server.serve("/missing.png", try PNGEncoder().encode(SyntheticImage.solid(width: 2, height: 2, color: RGBA(r: 1, g: 2, b: 3))))
        let loaded = expectation(description: "loaded after reload")
        let second = model.observe { snapshot in if snapshot.phase == .loaded { loaded.fulfill() } }
        model.reload()
        wait(for: [loaded], timeout: 15)
        XCTAssertEqual(model.image?.pixel(x: 0, y: 0), RGBA(r: 1, g: 2, b: 3))
        h.drainDeliveries()
        XCTAssertEqual(seen.value?.last, .loaded)
        observation.cancel()
        second.cancel()
    }

    /// With `loadsOriginal`, the original comes too, from the same transfer.
    func testTheOriginalOnRequestSharesTheTransfer() throws {
        let h = try LoaderHarness()
        let jpeg = try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 320, height: 240))
        h.server.serve("/photo.jpg", jpeg)
        let url = h.server.url(path: "/photo.jpg")
        h.server.hold(url)
        let model = ImageModel(url: url, displaySize: PixelSize(width: 32, height: 32), loadsOriginal: true, loader: h.loader)
        let loaded = expectation(description: "loaded")
        let observation = model.observe { if $0.phase == .loaded { loaded.fulfill() } }
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        h.server.release(url)
        wait(for: [loaded], timeout: 15)
        XCTAssertEqual(model.image?.size, PixelSize(width: 32, height: 32))
        XCTAssertEqual(model.originalImage?.size, PixelSize(width: 320, height: 240))
        XCTAssertEqual(h.server.requestCount(url), 1)
        observation.cancel()
    }

    /// Nobody holds the model any more: its load is cancelled.
    func testAReleasedModelCancelsItsLoad() throws {
        let h = try LoaderHarness()
        let url = h.server.url(6)
        h.server.hold(url)
        let cancelled = expectation(description: "cancelled")
        h.loader.eventMonitor = { event in if event.kind == .cancelled { cancelled.fulfill() } }
        var model: ImageModel? = ImageModel(url: url, loader: h.loader)
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        XCTAssertEqual(model?.phase, .loading)
        // An observation holds it; cancelling the observation and dropping it lets it go.
        let observation = model!.observe { _ in }
        model = nil
        observation.cancel()
        wait(for: [cancelled], timeout: 15)
        h.server.release(url)
    }

    /// An animation plays from when the model got it, on the model's clock.
    func testAnAnimationPlaysFromWhenTheModelGotIt() throws {
        let h = try LoaderHarness()
        let palette = [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255), RGBA(r: 0, g: 0, b: 0)]
        let frames = (0..<3).map { GIFFrameSpec.filled(UInt8($0), width: 2, height: 2, delay: 10) }
        h.server.serve("/spin.gif", try GIFWriter.encode(width: 2, height: 2, globalPalette: palette, frames: frames))
        let now = Box<Double>(100)
        let model = ImageModel(url: h.server.url(path: "/spin.gif"), loader: h.loader, clock: { now.value! })
        let loaded = expectation(description: "loaded")
        let observation = model.observe { if $0.phase == .loaded { loaded.fulfill() } }
        wait(for: [loaded], timeout: 15)
        let snapshot = model.snapshot
        XCTAssertEqual(snapshot.imageSetAt, 100)
        XCTAssertEqual(snapshot.image?.frames.count, 3)
        XCTAssertEqual(snapshot.displayedImage(at: 100.05)?.pixel(x: 0, y: 0), palette[0])
        XCTAssertEqual(snapshot.displayedImage(at: 100.15)?.pixel(x: 0, y: 0), palette[1])
        XCTAssertEqual(snapshot.displayedImage(at: 100.25)?.pixel(x: 0, y: 0), palette[2])
        XCTAssertEqual(snapshot.displayedImage(at: 100.35)?.pixel(x: 0, y: 0), palette[0], "loops forever")
        now.value = 100.15
        XCTAssertEqual(model.displayedImageNow?.pixel(x: 0, y: 0), palette[1])
        XCTAssertEqual(model.displayedImageNow?.frames.count, 1, "a still frame")
        observation.cancel()
    }
}
