import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import XCTest

/// Progressive JPEG previews while the file downloads (issue: photo albums
/// and formats, item 6): after the first scans, before the final image,
/// never after it, never cached; through a task handle and the image model.
final class ProgressivePreviewTests: XCTestCase {
    private static let photo = SyntheticImage.photo(width: 480, height: 360, seed: 9)
    private static let progressive = try! JPEGEncoder(quality: 90, progressive: true).encode(photo)

    /// The offsets of the file's scans (`FF DA`).
    private static var scanStarts: [Int] {
        let bytes = [UInt8](progressive)
        return (1..<bytes.count).filter { bytes[$0 - 1] == 0xFF && bytes[$0] == 0xDA }.map { $0 - 1 }
    }

    /// The server sends the file up to the third scan's start, then holds:
    /// two scans are complete, a preview comes, then the final image.
    func testAPreviewComesWhileTheFileIsHeldThenTheFinalImage() throws {
        XCTAssertGreaterThan(Self.scanStarts.count, 4, "a progressive file has several scans")
        let h = try LoaderHarness()
        let resource = RangeResource(body: Self.progressive, contentType: "image/jpeg")
        let url = h.server.serve("/progressive.jpg", resource: resource)
        let gate = Gate()
        defer { gate.open() }
        resource.inject(.hold(after: Self.scanStarts[2] + 2, gate: gate))
        var request = ImageRequest(url: url)
        request.wantsPreviews = true
        let order = Box<[String]>([])
        let previewed = expectation(description: "a preview")
        let previews = Box<[Image]>([])
        let finished = expectation(description: "the final image")
        let task = h.loader.loadImage(
            request, success: ImageAction("final") { _, image, _ in
                order.update { $0 = ($0 ?? []) + ["final"] }
                finished.fulfill()
            })
        task.onPreview { image in
            order.update { $0 = ($0 ?? []) + ["preview"] }
            previews.update { $0 = ($0 ?? []) + [image] }
            if previews.value?.count == 1 { previewed.fulfill() }
        }
        wait(for: [previewed], timeout: 15)
        XCTAssertEqual(task.state, .running, "the final image is still on its way")
        let preview = try XCTUnwrap(previews.value?.first)
        XCTAssertEqual(preview.size, PixelSize(width: 480, height: 360))
        gate.open()
        wait(for: [finished], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(order.value?.last, "final", "no preview after the final image: \(order.value ?? [])")
        let final = try XCTUnwrap(h.cache.image(for: request.cacheKey), "the final image is cached")
        XCTAssertNotEqual(final.pixels, preview.pixels, "a preview is the early scans, not the final image")
        // Close to the final (the first scans hold the DC coefficients and low frequencies).
        var total = 0
        for y in stride(from: 0, to: 360, by: 12) {
            for x in stride(from: 0, to: 480, by: 12) {
                let (p, q) = (preview.pixel(x: x, y: y), final.pixel(x: x, y: y))
                total += abs(Int(p.r) - Int(q.r)) + abs(Int(p.g) - Int(q.g)) + abs(Int(p.b) - Int(q.b))
            }
        }
        XCTAssertLessThan(Double(total) / Double(30 * 40 * 3), 40, "mean difference per channel")
    }

    /// A request that does not ask gets none; a baseline JPEG gives none.
    func testNoPreviewsUnlessAskedAndProgressive() throws {
        let h = try LoaderHarness()
        let baseline = try JPEGEncoder(quality: 90).encode(Self.photo)
        h.server.serve("/baseline.jpg", baseline)
        h.server.serve("/progressive.jpg", Self.progressive)
        let previews = Counter()
        for (path, wants) in [("/baseline.jpg", true), ("/progressive.jpg", false)] {
            var request = ImageRequest(url: h.server.url(path: path))
            request.wantsPreviews = wants
            let task = h.loader.loadImage(request, success: h.log.success, failure: h.log.failure)
            task.onPreview { _ in previews.increment() }
        }
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(previews.value, 0)
    }

    /// The image model shows the preview in its snapshots while loading.
    func testTheModelShowsPreviews() async throws {
        let h = try LoaderHarness()
        let resource = RangeResource(body: Self.progressive, contentType: "image/jpeg")
        let url = h.server.serve("/model.jpg", resource: resource)
        let gate = Gate()
        defer { gate.open() }
        resource.inject(.hold(after: Self.scanStarts[2] + 2, gate: gate))
        let model = ImageModel(url: url, showsPreviews: true, loader: h.loader)
        var sawPreview = false
        for await snapshot in model.snapshots {
            if snapshot.preview != nil, snapshot.image == nil {
                sawPreview = true
                gate.open()
            }
            if snapshot.phase == .loaded {
                XCTAssertNil(snapshot.preview)
                XCTAssertNotNil(snapshot.image)
                break
            }
        }
        XCTAssertTrue(sawPreview)
    }
}
