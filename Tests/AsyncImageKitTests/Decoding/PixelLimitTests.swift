@testable import AsyncImageKit
import CImageCodecs
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// Decompression bombs are refused from the header, before any pixel buffer exists.
final class PixelLimitTests: XCTestCase {
    func testPNGBombIsRefusedFromTheHeader() {
        // 50,000 x 50,000 RGBA would be 10 GB.
        let failure = assertDecodingFails { try ImageDecoder().decode(CraftedFiles.pngHeader(width: 50_000, height: 50_000)) }
        XCTAssertEqual(failure?.format, .png)
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
        XCTAssertTrue(failure?.reason.contains("50000x50000") ?? false, failure?.reason ?? "")
    }

    func testJPEGBombIsRefusedFromTheHeader() throws {
        let real = try JPEGEncoder().encode(SyntheticImage.quadrants(width: 16, height: 16))
        let bomb = CraftedFiles.jpeg(real, patchedTo: 60_000, height: 60_000)
        let failure = assertDecodingFails { try ImageDecoder().decode(bomb) }
        XCTAssertEqual(failure?.format, .jpeg)
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
    }

    func testGIFScreenBombIsRefused() {
        let failure = assertDecodingFails { try ImageDecoder().decode(CraftedFiles.gifScreen(width: 65_535, height: 65_535)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
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
        XCTAssertEqual(failure?.isPixelLimit, true)
        XCTAssertTrue(failure?.reason.contains("5 frames") ?? false, failure?.reason ?? "")
    }

    func testLimitIsConfigurableAndInclusive() throws {
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 100, height: 100, color: RGBA(r: 9, g: 9, b: 9)))
        let jpeg = try JPEGEncoder().encode(SyntheticImage.solid(width: 100, height: 100, color: RGBA(r: 9, g: 9, b: 9)))
        for data in [png, jpeg] {
            XCTAssertNoThrow(try ImageDecoder().decode(data, options: DecodingOptions(maxPixels: 10_000)))
            let failure = assertDecodingFails { try ImageDecoder().decode(data, options: DecodingOptions(maxPixels: 9_999)) }
            XCTAssertEqual(failure?.stage, .limits)
            XCTAssertEqual(failure?.isPixelLimit, true)
        }
        XCTAssertEqual(DecodingOptions().maxPixels, 100_000_000)
    }

    /// A GIF frame larger than its screen costs its own size: giflib decodes
    /// every row of it, even those that fall outside the screen.
    func testGIFFrameLargerThanTheScreenCountsItsOwnSize() throws {
        var gif = try GIFWriter.encode(
            width: 2_000, height: 1_000, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)],
            frames: [GIFFrameSpec.filled(1, width: 2_000, height: 1_000)])
        // The screen says 1x1 (bytes 6-9, little-endian); the frame stays 2000x1000.
        gif.replaceSubrange(6..<10, with: [1, 0, 1, 0])
        let failure = assertDecodingFails { try GIFDecoder().decode(gif, options: DecodingOptions(maxPixels: 1_999_999)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
        XCTAssertTrue(failure?.reason.contains("2000x1000 on a 1x1 screen") ?? false, failure?.reason ?? "")
        let image = try GIFDecoder().decode(gif, options: DecodingOptions(maxPixels: 2_000_000))
        XCTAssertEqual(image.size, PixelSize(width: 1, height: 1))
    }

    /// Every frame counts at least `minimumFramePixels`: a tiny screen cannot
    /// carry millions of frames under the default limit.
    func testGIFTinyFramesCountAtLeastTheMinimum() throws {
        let gif = try GIFWriter.encode(
            width: 1, height: 1, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)],
            frames: (0..<4).map { _ in GIFFrameSpec.filled(1, width: 1, height: 1) })
        let minimum = GIFDecoder.minimumFramePixels
        XCTAssertEqual(try GIFDecoder().decode(gif, options: DecodingOptions(maxPixels: 4 * minimum)).frames.count, 4)
        let failure = assertDecodingFails { try GIFDecoder().decode(gif, options: DecodingOptions(maxPixels: 4 * minimum - 1)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
    }

    /// A progressive JPEG with more scans than the limit fails at stage
    /// `limits` (a valid file can have thousands, each another pass).
    func testJPEGScanLimit() throws {
        let source = SyntheticImage.quadrants(width: 64, height: 48)
        let jpeg = try JPEGEncoder(progressive: true).encode(source)
        var options = DecodingOptions()
        XCTAssertEqual(try ImageDecoder().decode(jpeg, options: options).size, PixelSize(width: 64, height: 48))
        options.maxProgressiveScans = 3
        let failure = assertDecodingFails { try ImageDecoder().decode(jpeg, options: options) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.reason, "more than 3 progressive scans")
        XCTAssertEqual(failure?.isPixelLimit, false, "not the pixel limit: no decode again with a higher one")
        // A baseline file has one scan: the limit does not apply.
        XCTAssertNoThrow(try ImageDecoder().decode(try JPEGEncoder().encode(source), options: options))
    }

    /// A PNG chunk whose length claims more than the whole file (here 1.9 GB
    /// in a file of 100 bytes) ends in a typed failure, and never becomes an
    /// allocation: libpng used to allocate the claimed length of text, pCAL,
    /// sCAL, sPLT and iCCP chunks first (found by `Fuzz/run`). The shim
    /// records libpng's largest single allocation.
    func testPNGChunkLongerThanTheFile() throws {
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 8, height: 8, color: RGBA(r: 1, g: 2, b: 3)))
        for type in ["tEXt", "zTXt", "iTXt", "iCCP", "sPLT", "pCAL", "sCAL", "eXIf", "abCd"] {
            var lying = png.prefix(33)  // signature and IHDR
            lying.append(contentsOf: [0x73, 0x20, 0x00, 0x00] + Array(type.utf8) + Array(repeating: 0x41, count: 64))
            let failure = assertDecodingFails { try ImageDecoder().decode(Data(lying)) }
            XCTAssertEqual(failure?.format, .png, type)
            var result = aiv_decode_result()
            let status = Data(lying).withBytes { bytes, count in
                withUnsafePointer(to: PixelMemory.codecAllocator) { aiv_png_decode(bytes, count, 1 << 30, $0, nil, &result) }
            }
            XCTAssertEqual(status, -1, type)
            XCTAssertGreaterThan(result.largest_codec_allocation, 0, "\(type): allocations are seen")
            XCTAssertLessThan(result.largest_codec_allocation, 1 << 20, "\(type): the claimed length was not allocated")
        }
    }
}
