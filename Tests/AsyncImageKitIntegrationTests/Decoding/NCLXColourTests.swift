@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `nclx` colour descriptions (AVIF, HEIC) for SDR: converted to sRGB as the
/// equivalent PNG `cHRM` chunk is (the same transform, so the same pixels);
/// sRGB's own code points change nothing; PQ is reported, not converted.
final class NCLXColourTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools(["avifenc": "libavif-bin", "heif-enc": "libheif-examples"])
    }

    override func tearDown() {
        tools?.remove()
        tools = nil
    }

    /// The PNG of `image` with a `cHRM` chunk of Display P3's primaries (and
    /// no `gAMA`: the sRGB curve), decoded by the PNG decoder.
    private func displayP3Reference(_ image: Image) throws -> Image {
        let values = NCLXColor.chromaticities[12]!.map { UInt32(($0 * 100_000).rounded()) }
        var payload = Data()
        for value in values { payload.append(contentsOf: withUnsafeBytes(of: value.bigEndian, Array.init)) }
        return try ImageDecoder().decode(ColourFixtures.png(image, chunks: [("cHRM", payload)]))
    }

    private func assertSame(_ a: Image, _ b: Image, tolerance: Int, _ message: String, line: UInt = #line) {
        XCTAssertEqual(a.size, b.size, message, line: line)
        var worst = 0
        for y in 0..<min(a.height, b.height) {
            for x in 0..<min(a.width, b.width) {
                let p = a.pixel(x: x, y: y), q = b.pixel(x: x, y: y)
                worst = max(worst, abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)))
            }
        }
        XCTAssertLessThanOrEqual(worst, tolerance, message, line: line)
    }

    func testDisplayP3IsConvertedLikeTheEquivalentPNG() throws {
        let source = SyntheticImage.photo(width: 24, height: 16)
        let reference = try displayP3Reference(source)
        let files: [(String, Data, Int)] = [
            ("avif", try tools.avifenc([source], ["-l", "--cicp", "12/13/0"]), 0),
            // heif-enc 1.15 writes no colr box (its macOS workaround): added here.
            ("heic", try HEIFEditor.addingProperties(
                try tools.heifenc(source, CodecTools.losslessHEIC + ["--no-alpha"]),
                [HEIFEditor.nclx(primaries: 12, transfer: 13, matrix: 0)]), 1),
        ]
        for (name, data, tolerance) in files {
            let properties = try XCTUnwrap(ImageFileProperties(data: data), name)
            XCTAssertEqual(properties.colorProfile?.source, .nclx, name)
            XCTAssertEqual(properties.colorProfile?.isSRGB, false, name)
            XCTAssertFalse(properties.hasICCProfile, name)
            let off = try ImageDecoder().decode(data, options: DecodingOptions(colorManagement: .off))
            assertSame(off, source, tolerance: tolerance, "\(name), colour management off")
            // The same transform as the PNG chunk's, on the same samples: the same pixels.
            assertSame(try ImageDecoder().decode(data), try displayP3Reference(off), tolerance: 0, name)
            if tolerance == 0 { assertSame(try ImageDecoder().decode(data), reference, tolerance: 0, name) }
        }
    }

    /// sRGB's code points change nothing; PQ is tone mapped (HDRFileTests
    /// checks how), and left as stored with colour management off;
    /// primaries with no matrix (10, XYZ) are reported and not converted.
    func testSRGBCodePointsChangeNothingAndPQIsToneMapped() throws {
        let source = SyntheticImage.photo(width: 24, height: 16)
        let sRGB = try tools.avifenc([source], ["-l", "--cicp", "1/13/0"])
        XCTAssertEqual(ImageFileProperties(data: sRGB)?.colorProfile?.isSRGB, true)
        assertSame(try ImageDecoder().decode(sRGB), source, tolerance: 0, "sRGB")
        let pq = try tools.avifenc([source], ["-l", "--cicp", "9/16/0"])
        let properties = try XCTUnwrap(ImageFileProperties(data: pq))
        XCTAssertEqual(properties.colorProfile?.source, .nclx)
        XCTAssertNil(properties.colorProfile?.warning)
        XCTAssertEqual(properties.colorProfile?.hdrToneMapping?.transfer, .pq)
        XCTAssertEqual(properties.colorProfile?.hdrToneMapping?.peakSource, .assumed)
        let off = try ImageDecoder().decode(pq, options: DecodingOptions(colorManagement: .off))
        assertSame(off, source, tolerance: 0, "PQ, colour management off: as stored")
        let mapped = try ImageDecoder().decode(pq)
        XCTAssertNotEqual(mapped.pixel(x: 5, y: 5), source.pixel(x: 5, y: 5), "PQ: tone mapped")
        let xyz = try tools.avifenc([source], ["-l", "--cicp", "10/16/0"])
        XCTAssertNotNil(ImageFileProperties(data: xyz)?.colorProfile?.warning)
        assertSame(try ImageDecoder().decode(xyz), source, tolerance: 0, "XYZ primaries: not converted")
    }
}
