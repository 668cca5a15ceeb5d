import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// Decompression bombs are refused from the header, before any pixel buffer exists.
final class PixelLimitTests: XCTestCase {
    func testPNGBombIsRefusedFromTheHeader() {
        // 50,000 x 50,000 RGBA would be 10 GB.
        let failure = assertDecodingFails { try ImageDecoder().decode(CraftedFiles.pngHeader(width: 50_000, height: 50_000)) }
        XCTAssertEqual(failure?.format, .png)
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertTrue(failure?.reason.contains("50000x50000") ?? false, failure?.reason ?? "")
    }

    func testJPEGBombIsRefusedFromTheHeader() throws {
        let real = try JPEGEncoder().encode(SyntheticImage.quadrants(width: 16, height: 16))
        let bomb = CraftedFiles.jpeg(real, patchedTo: 60_000, height: 60_000)
        let failure = assertDecodingFails { try ImageDecoder().decode(bomb) }
        XCTAssertEqual(failure?.format, .jpeg)
        XCTAssertEqual(failure?.stage, .limits)
    }

    func testGIFScreenBombIsRefused() {
        let failure = assertDecodingFails { try ImageDecoder().decode(CraftedFiles.gifScreen(width: 65_535, height: 65_535)) }
        XCTAssertEqual(failure?.stage, .limits)
        // The same file with a sane screen decodes: only the size was wrong.
        XCTAssertNoThrow(try ImageDecoder().decode(CraftedFiles.gifScreen(width: 1, height: 1)))
    }

    /// For GIF the limit counts every frame: many small frames on a big screen add up.
    func testGIFLimitCountsAllFrames() throws {
        let frames = (0..<5).map { _ in GIFFrameSpec.filled(1, width: 1, height: 1) }
        let gif = try GIFWriter.encode(
            width: 100, height: 100, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)],
            frames: frames)
        XCTAssertEqual(try GIFDecoder().decode(gif, options: DecodingOptions(maxPixels: 50_000)).frames.count, 5)
        let failure = assertDecodingFails { try GIFDecoder().decode(gif, options: DecodingOptions(maxPixels: 49_999)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertTrue(failure?.reason.contains("5 frames") ?? false, failure?.reason ?? "")
    }

    func testLimitIsConfigurableAndInclusive() throws {
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 100, height: 100, color: RGBA(r: 9, g: 9, b: 9)))
        let jpeg = try JPEGEncoder().encode(SyntheticImage.solid(width: 100, height: 100, color: RGBA(r: 9, g: 9, b: 9)))
        for data in [png, jpeg] {
            XCTAssertNoThrow(try ImageDecoder().decode(data, options: DecodingOptions(maxPixels: 10_000)))
            let failure = assertDecodingFails { try ImageDecoder().decode(data, options: DecodingOptions(maxPixels: 9_999)) }
            XCTAssertEqual(failure?.stage, .limits)
        }
        XCTAssertEqual(DecodingOptions().maxPixels, 100_000_000)
    }
}
