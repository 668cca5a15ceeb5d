import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

final class PNGEncoderTests: XCTestCase {
    /// An encode that fails says so, not "decoding": libjpeg refuses
    /// images wider than 65,500 pixels.
    func testAnEncodingFailureNamesEncoding() {
        let wide = SyntheticImage.solid(width: 70_000, height: 1, color: RGBA(r: 1, g: 2, b: 3))
        XCTAssertThrowsError(try JPEGEncoder().encode(wide)) { error in
            guard case .encoding(let format, let reason) = error as? AsyncImageError else {
                return XCTFail("expected .encoding, got \(error)")
            }
            XCTAssertEqual(format, .jpeg)
            XCTAssertFalse(reason.isEmpty)
            XCTAssertTrue("\(error)".hasPrefix("jpeg encoding failed: "), "\(error)")
        }
    }

    func testRoundTripIsExactIncludingAlpha() throws {
        let original = SyntheticImage.alphaRamp(width: 97, height: 31)
        let png = try PNGEncoder().encode(original)
        XCTAssertEqual(ImageFormat.sniff(png), .png)
        let decoded = try PNGDecoder().decode(png)
        XCTAssertEqual(decoded.size, original.size)
        XCTAssertEqual(decoded.pixels, original.pixels)
    }

    func testCompressionLevelsAllDecodeTheSame() throws {
        let original = SyntheticImage.photo(width: 64, height: 48, seed: 3)
        let fastest = try PNGEncoder(compressionLevel: 0).encode(original)
        let smallest = try PNGEncoder(compressionLevel: 9).encode(original)
        XCTAssertLessThan(smallest.count, fastest.count)
        XCTAssertEqual(try PNGDecoder().decode(fastest).pixels, try PNGDecoder().decode(smallest).pixels)
    }

    func testEncodesAPaddedRowLayout() throws {
        // 5 pixels a row stored in 32-byte rows: the padding must not leak into the file.
        var pixels = Data(count: 32 * 3)
        for y in 0..<3 { for x in 0..<5 { pixels[y * 32 + x * 4] = UInt8(x * 50); pixels[y * 32 + x * 4 + 3] = 255 } }
        let image = Image(width: 5, height: 3, rgba: pixels, bytesPerRow: 32)
        let decoded = try PNGDecoder().decode(try PNGEncoder().encode(image))
        XCTAssertEqual(decoded.bytesPerRow, 20)
        XCTAssertEqual(decoded.pixel(x: 4, y: 2), RGBA(r: 200, g: 0, b: 0, a: 255))
    }
}
