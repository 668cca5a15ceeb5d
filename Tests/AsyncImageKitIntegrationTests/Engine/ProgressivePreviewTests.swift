@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
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

    /// A preview made before the caller added its handler is kept and given
    /// to the first handler added (ImageModel adds its handler right after
    /// making the request; under load the preview could come first, and the
    /// model then waited for a preview that had been dropped).
    func testAPreviewReadyBeforeTheHandlerIsKeptForIt() throws {
        let h = try LoaderHarness(timeout: 20)
        let resource = RangeResource(body: Self.progressive, contentType: "image/jpeg")
        let url = h.server.serve("/early.jpg", resource: resource)
        let gate = Gate()
        defer { gate.open() }
        resource.inject(.hold(after: Self.scanStarts[2] + 2, gate: gate))
        var request = ImageRequest(url: url)
        request.wantsPreviews = true
        let finished = expectation(description: "the final image")
        let task = h.loader.loadImage(request, success: ImageAction("final") { _, _, _ in finished.fulfill() })
        // Waits for a state (the preview made, with no handler), not for time.
        let deadline = Date().addingTimeInterval(15)
        while h.loader.state.withLock({ _ in task.record.unclaimedPreview == nil }), Date() < deadline {
            usleep(2_000)
        }
        XCTAssertTrue(h.loader.state.withLock { _ in task.record.unclaimedPreview != nil }, "a preview was made")
        let previewed = expectation(description: "the kept preview")
        task.onPreview { image in
            XCTAssertEqual(image.size, PixelSize(width: 480, height: 360))
            previewed.fulfill()
        }
        wait(for: [previewed], timeout: 15)
        XCTAssertEqual(task.state, .running)
        gate.open()
        wait(for: [finished], timeout: 15)
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
        // A bounded timeout: if no preview came, the held transfer fails
        // and the loop ends, rather than the test waiting for ever.
        let h = try LoaderHarness(timeout: 20)
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
            if case .failed(let error) = snapshot.phase {
                XCTFail("no preview before the held transfer timed out: \(error)")
                break
            }
        }
        XCTAssertTrue(sawPreview)
    }

    /// The peak signal-to-noise ratio of `a` against `b` (RGB), in dB; infinity when equal.
    static func psnr(_ a: Image, _ b: Image) -> Double {
        var squared = 0.0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let (p, q) = (a.pixel(x: x, y: y), b.pixel(x: x, y: y))
                for (u, v) in [(p.r, q.r), (p.g, q.g), (p.b, q.b)] { squared += pow(Double(u) - Double(v), 2) }
            }
        }
        let mse = squared / Double(a.width * a.height * 3)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// Where each scan of libjpeg's default progressive script ends, and
    /// what a 1/8-scale decode of the file cut there looks like against the
    /// whole file's: the measurement behind the stopping scan.
    func testWhereTheDCCoefficientsEnd() throws {
        let big = try JPEGEncoder(quality: 90, progressive: true).encode(SyntheticImage.photo(width: 1600, height: 1200, seed: 4))
        let bytes = [UInt8](big)
        let starts = (1..<bytes.count).filter { bytes[$0 - 1] == 0xFF && bytes[$0] == 0xDA }.map { $0 - 1 }
        // 64x64: 85x64 filled, twice that (ShrinkOnLoad's margin) within the 1/8 scale's 200x150.
        var options = DecodingOptions(targetSize: PixelSize(width: 64, height: 64))
        let whole = try ImageDecoder().decode(big, options: options)
        XCTAssertEqual(whole.decodeInfo.scaleDenominator, 8)
        options.isProgressivePreview = true
        var report: [String] = []
        for (scan, start) in starts.enumerated().dropFirst() {
            let prefix = try ImageDecoder().decode(Data(bytes[..<start]), options: options)
            let header = Array(bytes[starts[scan - 1]..<(starts[scan - 1] + 14)])
            let count = Int(header[4])
            let (ss, se, a) = (header[5 + 2 * count], header[6 + 2 * count], header[7 + 2 * count])
            report.append(
                String(format: "after scan %d (Ss=%d Se=%d Ah=%d Al=%d): %d of %d bytes (%.0f%%), PSNR %.1f dB",
                       scan, ss, se, a >> 4, a & 15, start, big.count, 100 * Double(start) / Double(big.count),
                       Self.psnr(prefix, whole)))
        }
        print(report.joined(separator: "\n"))
        XCTAssertFalse(report.isEmpty)
    }

    /// At 1/8 scale or smaller, the transfer of a progressive JPEG ends once
    /// its DC coefficients are in (after its first scan): the server is
    /// still holding the rest when the image is delivered, the bytes saved
    /// are reported, and the image matches a decode of the whole file
    /// (PSNR printed).
    func testATransferEndsAtTheDCCoefficientsAtOneEighthScale() throws {
        try endsAtTheDC(withDecoySegment: false)
    }

    /// An APP segment whose payload holds bytes that look like scans (an
    /// EXIF thumbnail's `FF DA`, say) is skipped: the scans counted are the
    /// file's own.
    func testScanLookalikesInAHeaderSegmentAreNotScans() throws {
        try endsAtTheDC(withDecoySegment: true)
    }

    private func endsAtTheDC(withDecoySegment decoy: Bool) throws {
        let h = try LoaderHarness()
        var big = try JPEGEncoder(quality: 90, progressive: true).encode(SyntheticImage.photo(width: 1600, height: 1200, seed: 4))
        let original = [UInt8](big)
        // The real scans' offsets (in the file before any decoy segment).
        var starts = (1..<original.count).filter { original[$0 - 1] == 0xFF && original[$0] == 0xDA }.map { $0 - 1 }
        if decoy {
            // A fake DC scan header for components 1, 2 and 3 (Ss=0, Se=0, Al=0), then a second one.
            let fake: [UInt8] = [0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x00, 0x00]
            let payload = Array("decoy".utf8) + fake + fake
            big = EXIFBuilder.insertingSegments([(0xE5, payload)], into: big)
            starts = starts.map { $0 + 4 + payload.count }
        }
        let resource = RangeResource(body: big, contentType: "image/jpeg")
        let url = h.server.serve("/big-progressive.jpg", resource: resource)
        let gate = Gate()
        defer { gate.open() }
        // The first scan (the DC) and a little of the second, then nothing until the test ends.
        resource.inject(.hold(after: starts[1] + 100, gate: gate))
        // 64x64: decoded at 1/8 (twice 85x64 fits in 200x150), so the DC alone serves it.
        let request = ImageRequest(url: url, targetSize: PixelSize(width: 64, height: 64))
        let response = Box<ImageResponse>()
        let done = expectation(description: "delivered while the server holds the rest")
        h.loader.loadImage(request, success: ImageAction("show", response: { _, answer in
            response.value = answer
            done.fulfill()
        }))
        wait(for: [done], timeout: 15)
        let answer = try XCTUnwrap(response.value)
        let early = try XCTUnwrap(answer.earlyEnd, "the transfer ended early")
        XCTAssertEqual(answer.http?.statusCode, 200, "the response's own head")
        XCTAssertEqual(answer.http?.headers["etag"], resource.etag)
        XCTAssertEqual(early.receivedBytes, starts[1])
        XCTAssertEqual(early.totalBytes, big.count)
        XCTAssertEqual(early.savedBytes, big.count - starts[1])
        let whole = try ImageDecoder().decode(big, options: request.options)
        XCTAssertEqual(answer.image.size, whole.size)
        let psnr = Self.psnr(answer.image, whole)
        print(String(format: "ended at the DC: %d of %d bytes (%.1f%% saved), PSNR %.1f dB against the whole file",
                     early.receivedBytes, big.count, 100 * Double(early.savedBytes ?? 0) / Double(big.count), psnr))
        XCTAssertGreaterThan(psnr, 45, "visually identical")
        // The prefix is never stored as the original.
        XCTAssertNotNil(h.cache.image(for: request.cacheKey))
        // A full-size request still gets the whole file.
        gate.open()
        let full = expectation(description: "full size")
        h.loader.loadImage(ImageRequest(url: url), success: ImageAction("full", response: { _, answer in
            XCTAssertNil(answer.earlyEnd)
            XCTAssertEqual(answer.image.size, PixelSize(width: 1600, height: 1200))
            full.fulfill()
        }))
        wait(for: [full], timeout: 15)
    }
}
