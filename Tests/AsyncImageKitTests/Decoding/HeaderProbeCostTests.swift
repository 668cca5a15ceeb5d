@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// ``HeaderProbe``, the loader's header probe, shown a body as a transport
/// shows it (the whole body so far, at every write callback): it finds what
/// ``ImageFileProperties/init(prefix:readsColorProfile:)`` finds on the
/// whole prefix, for every format, and its cost (bytes stepped over or
/// read) stays linear in the body, whatever the body holds.
final class HeaderProbeCostTests: XCTestCase {
    /// Shows `body` to a probe `piece` bytes at a time; what it ended with,
    /// the length at which it did, and its cost.
    private func probe(
        _ body: Data, piece: Int, expected: Int? = nil, limit: Int = 1 << 20
    ) -> (step: HeaderProbe.Step, at: Int, cost: Int) {
        let probe = HeaderProbe(limit: limit)
        var end = 0
        var step = HeaderProbe.Step.needsMore
        while end < body.count {
            end = min(body.count, end + piece)
            step = probe.look(at: body.prefix(end), expectedLength: expected)
            if case .needsMore = step { continue }
            break
        }
        return (step, end, probe.cost)
    }

    private func found(_ step: HeaderProbe.Step) -> ImageFileProperties? {
        if case .found(let properties) = step { return properties }
        return nil
    }

    /// Finding A: `FF D8 FF E0` and zeros never reach a frame header. Shown
    /// a kilobyte at a time up to past the limit, the probe steps over each
    /// byte about once (the old probe walked the whole prefix each time:
    /// about 500 million steps for this MiB), and ends at the limit.
    func testAHostileJPEGPrefixCostsLinearTimeAndEndsAtTheLimit() {
        var body = Data([0xFF, 0xD8, 0xFF, 0xE0])
        body.append(Data(count: 2 << 20))
        let limit = 1 << 20
        let result = probe(body, piece: 1024, limit: limit)
        guard case .ended = result.step else { return XCTFail("expected the probe to end, got \(result.step)") }
        XCTAssertEqual(result.at, limit + 1024, "ended once the body passed the limit")
        XCTAssertLessThanOrEqual(result.cost, 2 * limit, "linear: each byte about once")
    }

    /// Byte-sized pieces too (a server that sends one byte per packet).
    func testAHostileJPEGPrefixInOneBytePiecesIsLinear() {
        var body = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00])
        body.append(Data(count: 64 << 10))
        let result = probe(body, piece: 1, limit: 64 << 10)
        guard case .ended = result.step else { return XCTFail("expected the probe to end, got \(result.step)") }
        XCTAssertLessThanOrEqual(result.cost, 3 * (64 << 10))
    }

    /// A segment length no JPEG has (under 2, for a segment that is not
    /// APPn or COM) ends the probe at once.
    func testAMalformedSegmentLengthEndsTheProbe() {
        var body = Data([0xFF, 0xD8, 0xFF, 0xDB, 0x00, 0x01])
        body.append(Data(repeating: 0x11, count: 64))
        let result = probe(body, piece: 32)
        guard case .ended = result.step else { return XCTFail("expected the probe to end, got \(result.step)") }
        XCTAssertEqual(result.at, 32)
    }

    /// Baseline and progressive JPEGs, with EXIF, shown in small pieces:
    /// the properties of the whole file, found at the first scan.
    func testJPEGPropertiesAreFoundAtTheFirstScan() throws {
        let photo = SyntheticImage.photo(width: 320, height: 200, seed: 4)
        for progressive in [false, true] {
            let jpeg = try JPEGEncoder(quality: 85, progressive: progressive, orientation: .right).encode(photo)
            let result = probe(jpeg, piece: 100)
            let properties = try XCTUnwrap(found(result.step), "progressive \(progressive)")
            XCTAssertEqual(properties, ImageFileProperties(prefix: jpeg, readsColorProfile: false))
            XCTAssertEqual(properties.pixelSize, PixelSize(width: 320, height: 200))
            XCTAssertEqual(properties.orientation, .right)
            XCTAssertEqual(properties.jpeg?.process == .progressive, progressive)
            XCTAssertLessThan(result.at, jpeg.count, "before the pixels")
            XCTAssertLessThanOrEqual(result.cost, 3 * result.at)
        }
    }

    /// A JPEG whose metadata passes the limit before its frame header: no
    /// properties from the probe (the decode reads them from the whole body).
    func testAJPEGWithMoreMetadataThanTheLimitEndsTheProbe() throws {
        let jpeg = try JPEGEncoder().encode(SyntheticImage.photo(width: 64, height: 64))
        let padded = Self.withComments(jpeg, bytes: 300_000)
        XCTAssertNotNil(ImageFileProperties(data: padded))
        let result = probe(padded, piece: 4096, limit: 200_000)
        guard case .ended = result.step else { return XCTFail("expected the probe to end, got \(result.step)") }
        XCTAssertLessThanOrEqual(result.cost, 2 * 200_000)
    }

    /// PNG and GIF, whose properties need their last header (the file's
    /// end): found at the announced length, at a cost a few times the body.
    func testPNGAndGIFPropertiesAreFoundAtTheBodysEnd() throws {
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 300, height: 300))
        let gif = try GIFWriter.encode(
            width: 40, height: 30, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)],
            frames: [.filled(0, width: 40, height: 30), .filled(1, width: 40, height: 30)])
        for (name, body) in [("png", png), ("gif", gif)] {
            let result = probe(body, piece: 37, expected: body.count)
            let properties = try XCTUnwrap(found(result.step), name)
            XCTAssertEqual(properties, ImageFileProperties(prefix: body, readsColorProfile: false), name)
            XCTAssertEqual(result.at, body.count, name)
            XCTAssertLessThanOrEqual(result.cost, 10 * body.count, "\(name): a few times the body")
        }
    }

    /// Without an announced length, a body's end is tried within an eighth more bytes.
    func testWithoutALengthTheBodyIsTriedAgainAsItGrows() throws {
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 300, height: 300))
        var longer = png
        longer.append(Data(count: png.count / 8 + 64))  // bytes after IEND
        let result = probe(longer, piece: 37)
        XCTAssertNotNil(found(result.step))
        XCTAssertLessThanOrEqual(result.at, png.count + png.count / 8 + 64)
    }

    /// WebP is never read from a prefix; nor is what is no image.
    func testWebPAndNonImagesEndAtOnce() throws {
        let webp = try WebPEncoder().encode(SyntheticImage.photo(width: 32, height: 32))
        for (name, body) in [("webp", webp), ("text", Data(String(repeating: "<html>", count: 20).utf8))] {
            let result = probe(body, piece: 16)
            guard case .ended = result.step else { return XCTFail("\(name): expected the probe to end, got \(result.step)") }
            XCTAssertEqual(result.at, 16, name)
        }
    }

    /// Every corpus file (valid and broken PNG, JPEG and GIF), shown in
    /// pieces with its length announced: the probe finds properties exactly
    /// when the old probe (the whole prefix read again at each piece) did,
    /// and they are the whole file's, as the loader keeps them.
    func testTheCorpusGivesWhatTheOldProbeGave() throws {
        let corpus = try Corpus.load()
        var found = 0
        for entry in corpus.entries {
            let body = try corpus.data(entry)
            guard body.count >= 16, body.count <= 1 << 20 else { continue }
            let result = probe(body, piece: 1 + body.count / 7, expected: body.count)
            let old = ImageFileProperties(prefix: body, readsColorProfile: false)
            guard let properties = self.found(result.step) else {
                XCTAssertNil(old, "\(entry.path): the probe gave up where the old one found properties")
                continue
            }
            found += 1
            XCTAssertNotNil(old, entry.path)
            let kept = ImageFileProperties(prefix: body.prefix(result.at)) ?? properties
            XCTAssertEqual(kept, ImageFileProperties(data: body), "\(entry.path): not the whole file's")
            XCTAssertLessThanOrEqual(result.cost, 10 * body.count + 64, entry.path)
        }
        XCTAssertGreaterThan(found, 100)
    }

    /// `jpeg` with COM segments of `bytes` in all right after its SOI.
    static func withComments(_ jpeg: Data, bytes: Int) -> Data {
        var padded = Data(jpeg.prefix(2))
        var left = bytes
        while left > 0 {
            let payload = min(left, 65_533)
            padded.append(contentsOf: [0xFF, 0xFE, UInt8((payload + 2) >> 8), UInt8((payload + 2) & 0xFF)])
            padded.append(Data(repeating: 0x20, count: payload))
            left -= payload
        }
        padded.append(jpeg.dropFirst(2))
        return padded
    }
}
