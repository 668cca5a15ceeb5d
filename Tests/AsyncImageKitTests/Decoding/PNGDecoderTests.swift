import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// PNG decoding checked pixel by pixel on generated files of every colour
/// type and bit depth, interlaced and not.
final class PNGDecoderTests: XCTestCase {
    let width = 19  // odd sizes exercise partial bytes and every Adam7 pass
    let height = 13

    private func samples(count: Int, depth: Int, seed: UInt64) -> [UInt16] {
        var random = SplitMix64(seed: seed)
        let mask = UInt64((1 << depth) - 1)
        return (0..<count).map { _ in UInt16(random.next() & mask) }
    }

    /// Scales a sample of `depth` bits to 8 bits the way the decoder does.
    private func to8(_ value: UInt16, depth: Int) -> UInt8 {
        if depth == 16 { return UInt8((UInt32(value) * 255 + 32895) >> 16) }
        return UInt8(Int(value) * 255 / ((1 << depth) - 1))
    }

    private func decodeBoth(
        _ colorType: RawPNGWriter.ColorType, depth: Int, samples: [UInt16], palette: [RGBA] = [],
        transparency: Data? = nil
    ) throws -> [Image] {
        try [false, true].map { interlaced in
            let png = RawPNGWriter.encode(
                width: width, height: height, colorType: colorType, bitDepth: depth, samples: samples,
                palette: palette, transparency: transparency, interlaced: interlaced)
            let image = try PNGDecoder().decode(png)
            XCTAssertEqual(image.size, PixelSize(width: width, height: height))
            XCTAssertEqual(image.format, .png)
            return image
        }
    }

    private func assertPixels(
        _ images: [Image], file: StaticString = #filePath, line: UInt = #line, expected: (Int) -> RGBA
    ) {
        for image in images {
            for y in 0..<height {
                for x in 0..<width {
                    let want = expected(y * width + x)
                    let got = image.pixel(x: x, y: y)
                    if got != want {
                        XCTFail("pixel (\(x),\(y)): got \(got), want \(want)", file: file, line: line)
                        return
                    }
                }
            }
        }
    }

    func testGrayEveryBitDepth() throws {
        for depth in [1, 2, 4, 8, 16] {
            let s = samples(count: width * height, depth: depth, seed: UInt64(depth))
            let images = try decodeBoth(.gray, depth: depth, samples: s)
            assertPixels(images) { i in
                let v = self.to8(s[i], depth: depth)
                return RGBA(r: v, g: v, b: v, a: 255)
            }
        }
    }

    func testGrayAlphaAndRGBAndRGBAIn8And16Bits() throws {
        for depth in [8, 16] {
            let ga = samples(count: width * height * 2, depth: depth, seed: 10)
            assertPixels(try decodeBoth(.grayAlpha, depth: depth, samples: ga)) { i in
                let v = self.to8(ga[i * 2], depth: depth)
                return RGBA(r: v, g: v, b: v, a: self.to8(ga[i * 2 + 1], depth: depth))
            }
            let rgb = samples(count: width * height * 3, depth: depth, seed: 11)
            assertPixels(try decodeBoth(.rgb, depth: depth, samples: rgb)) { i in
                RGBA(
                    r: self.to8(rgb[i * 3], depth: depth), g: self.to8(rgb[i * 3 + 1], depth: depth),
                    b: self.to8(rgb[i * 3 + 2], depth: depth), a: 255)
            }
            let rgba = samples(count: width * height * 4, depth: depth, seed: 12)
            assertPixels(try decodeBoth(.rgba, depth: depth, samples: rgba)) { i in
                RGBA(
                    r: self.to8(rgba[i * 4], depth: depth), g: self.to8(rgba[i * 4 + 1], depth: depth),
                    b: self.to8(rgba[i * 4 + 2], depth: depth), a: self.to8(rgba[i * 4 + 3], depth: depth))
            }
        }
    }

    func testPaletteWithTransparencyEveryBitDepth() throws {
        for depth in [1, 2, 4, 8] {
            let entries = 1 << depth
            var palette: [RGBA] = []
            for i in 0..<entries {
                palette.append(RGBA(r: UInt8((i * 37) & 0xFF), g: UInt8(255 - i), b: UInt8((i * 7) & 0xFF)))
            }
            // tRNS gives alpha to the first entries only; the rest stay opaque.
            let alphas = (0..<min(entries, 3)).map { UInt8($0 * 100) }
            let s = samples(count: width * height, depth: depth, seed: UInt64(20 + depth))
            let images = try decodeBoth(.palette, depth: depth, samples: s, palette: palette, transparency: Data(alphas))
            assertPixels(images) { i in
                let index = Int(s[i])
                var color = palette[index]
                color.a = index < alphas.count ? alphas[index] : 255
                return color
            }
        }
    }

    func testGrayAndRGBTransparencyKey() throws {
        let gray = samples(count: width * height, depth: 8, seed: 30).map { $0 % 4 }
        // tRNS for gray: one 16-bit sample value that is fully transparent.
        assertPixels(try decodeBoth(.gray, depth: 8, samples: gray, transparency: Data([0, 2]))) { i in
            let v = UInt8(gray[i])
            return RGBA(r: v, g: v, b: v, a: gray[i] == 2 ? 0 : 255)
        }
        let rgb = samples(count: width * height * 3, depth: 8, seed: 31).map { $0 % 2 }
        assertPixels(try decodeBoth(.rgb, depth: 8, samples: rgb, transparency: Data([0, 1, 0, 0, 0, 1]))) { i in
            let (r, g, b) = (UInt8(rgb[i * 3]), UInt8(rgb[i * 3 + 1]), UInt8(rgb[i * 3 + 2]))
            return RGBA(r: r, g: g, b: b, a: (r, g, b) == (1, 0, 1) ? 0 : 255)
        }
    }

    func testTruncatedDataFailsInsideTheImageData() throws {
        let s = samples(count: 200 * 100 * 3, depth: 8, seed: 40)
        let png = RawPNGWriter.encode(width: 200, height: 100, colorType: .rgb, bitDepth: 8, samples: s)
        for cut in [png.count / 2, png.count - 20] {
            let failure = assertDecodingFails { try PNGDecoder().decode(png.prefix(cut)) }
            XCTAssertEqual(failure?.format, .png)
            XCTAssertTrue([.pixels, .trailer].contains(failure?.stage ?? .header), "cut at \(cut): \(String(describing: failure))")
        }
        // Everything but IEND: the image data is whole, but the stream is not.
        let withoutEnd = png.prefix(png.count - 12)
        let failure = assertDecodingFails { try PNGDecoder().decode(withoutEnd) }
        XCTAssertEqual(failure?.stage, .trailer)
    }

    func testCorruptCRCInImageDataFails() throws {
        let s = samples(count: 16 * 16 * 3, depth: 8, seed: 41)
        var png = [UInt8](RawPNGWriter.encode(width: 16, height: 16, colorType: .rgb, bitDepth: 8, samples: s))
        let idat = png.indices.first { png[$0] == 0x49 && png[$0 + 1] == 0x44 && png[$0 + 2] == 0x41 && png[$0 + 3] == 0x54 }!
        let length = png[(idat - 4)..<idat].reduce(0) { $0 << 8 | Int($1) }
        // A damaged CRC on intact data: libpng checks it and refuses the critical chunk.
        var badCRC = png
        badCRC[idat + 4 + length] ^= 0xFF
        let crcFailure = assertDecodingFails { try PNGDecoder().decode(Data(badCRC)) }
        XCTAssertEqual(crcFailure?.format, .png)
        XCTAssertTrue(crcFailure?.reason.contains("CRC") ?? false, crcFailure?.reason ?? "")
        // A damaged byte inside the compressed data fails too (zlib notices before the CRC is read).
        png[idat + 6] ^= 0xFF
        XCTAssertNotNil(assertDecodingFails { try PNGDecoder().decode(Data(png)) })
    }

    // MARK: Decompression bombs

    /// 64x64 pixels whose image data inflates to 200 MB more than its rows:
    /// refused before anything is inflated, as a limit (413 from a service),
    /// naming what it holds. (libpng alone inflates all of it to check the
    /// stream's end: an 8 MB file cost 21 s of CPU.)
    func testADecompressionBombIsRefusedBeforeInflating() {
        let bomb = PNGBomb.make(width: 64, height: 64, extraBytes: 200 << 20)
        let failure = assertDecodingFails { try PNGDecoder().decode(bomb) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertTrue(failure?.reason.contains("compressed image data for 64x64 pixels") == true, "\(String(describing: failure))")
        XCTAssertEqual(failure.map { AsyncImageError.decoding($0, url: nil).suggestedHTTPStatus }, 413)
    }

    /// Less compressed data than the up-front bound (a larger image has a
    /// larger one), but a stream that goes on after the last row (here
    /// 200 MB of zeros): libpng inflates the rest of the stream while it
    /// reads the last row; its reads are bounded there, so it stops within
    /// a few dozen KiB and the file is refused as carrying more than its
    /// pixels need.
    func testCompressedDataAfterTheLastRowIsNotInflated() {
        let bomb = PNGBomb.make(width: 512, height: 512, extraBytes: 200 << 20)
        XCTAssertLessThan(bomb.count, 512 * 513 + 512 * 513 / 8 + 65536, "under the up-front bound")
        let failure = assertDecodingFails { try PNGDecoder().decode(bomb) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertTrue(failure?.reason.contains("after the last row") == true, "\(String(describing: failure))")
        // Without the extra data, the same image decodes.
        let image = try? PNGDecoder().decode(PNGBomb.make(width: 512, height: 512, extraBytes: 0))
        XCTAssertEqual(image?.size, PixelSize(width: 512, height: 512))
    }

}
