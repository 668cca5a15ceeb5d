import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

final class ImageResizerTests: XCTestCase {
    func testAspectFitAndFillNeverEnlarge() {
        let size = PixelSize(width: 4000, height: 3000)
        let box = PixelSize(width: 256, height: 256)
        XCTAssertEqual(size.scaled(toFit: box, contentMode: .aspectFit), PixelSize(width: 256, height: 192))
        XCTAssertEqual(size.scaled(toFit: box, contentMode: .aspectFill), PixelSize(width: 341, height: 256))
        XCTAssertEqual(PixelSize(width: 100, height: 50).scaled(toFit: box, contentMode: .aspectFill), PixelSize(width: 100, height: 50))
        XCTAssertEqual(PixelSize(width: 10_000, height: 1).scaled(toFit: box, contentMode: .aspectFit), PixelSize(width: 256, height: 1))
    }

    /// One-pixel black and white stripes halved become mid grey: area averaging, not nearest-neighbour.
    func testAreaAveragingNotNearestNeighbour() throws {
        let stripes = SyntheticImage.make(width: 64, height: 8) { out in
            for y in 0..<8 {
                for x in 0..<64 {
                    let v: UInt8 = x % 2 == 0 ? 0 : 255
                    let p = out + (y * 64 + x) * 4
                    p[0] = v; p[1] = v; p[2] = v; p[3] = 255
                }
            }
        }
        let half = try ImageResizer.resize(stripes, to: PixelSize(width: 32, height: 4))
        for x in 0..<32 { XCTAssertEqual(Int(half.pixel(x: x, y: 1).r), 128, accuracy: 1) }
        // A non-integer ratio still averages: 64 -> 24 covers 2.67 pixels each.
        let third = try ImageResizer.resize(stripes, to: PixelSize(width: 24, height: 3))
        for x in 0..<24 { XCTAssertEqual(Int(third.pixel(x: x, y: 1).r), 128, accuracy: 48) }
    }

    /// Transparent pixels do not darken their opaque neighbours.
    func testAveragingIsAlphaWeighted() throws {
        let image = SyntheticImage.make(width: 2, height: 1) { p in
            p[0] = 255; p[1] = 0; p[2] = 0; p[3] = 255  // opaque red
            p[4] = 0; p[5] = 0; p[6] = 0; p[7] = 0  // transparent black
        }
        let one = try ImageResizer.resize(image, to: PixelSize(width: 1, height: 1))
        XCTAssertEqual(one.pixel(x: 0, y: 0), RGBA(r: 255, g: 0, b: 0, a: 128))
    }

    func testEveryFrameIsResizedAndMetadataKept() throws {
        let gif = try GIFWriter.encode(
            width: 40, height: 20, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 200, g: 100, b: 50)],
            frames: [.filled(0, width: 40, height: 20, delay: 5), .filled(1, width: 40, height: 20, delay: 7)],
            loopCount: 2)
        let image = try GIFDecoder().decode(gif, options: DecodingOptions(targetSize: PixelSize(width: 10, height: 10)))
        XCTAssertEqual(image.size, PixelSize(width: 20, height: 10))
        XCTAssertEqual(image.originalSize, PixelSize(width: 40, height: 20))
        XCTAssertEqual(image.frames.map(\.duration), [0.05, 0.07])
        XCTAssertEqual(image.loopCount, 2)
        XCTAssertEqual(image.pixel(x: 5, y: 5, frame: 1), RGBA(r: 200, g: 100, b: 50))
    }

    func testPNGDownsampledDecode() throws {
        let png = try PNGEncoder().encode(SyntheticImage.quadrants(width: 400, height: 300))
        let image = try PNGDecoder().decode(png, options: DecodingOptions(targetSize: PixelSize(width: 100, height: 100)))
        XCTAssertEqual(image.size, PixelSize(width: 133, height: 100))
        XCTAssertEqual(image.originalSize, PixelSize(width: 400, height: 300))
        XCTAssertEqual(image.pixel(x: 10, y: 10), RGBA(r: 255, g: 0, b: 0))
        XCTAssertEqual(image.pixel(x: 120, y: 90), RGBA(r: 255, g: 255, b: 255))
    }
}

/// The resizer against a plain reference: an exact box filter in double
/// precision (bilinear where a side grows), alpha-weighted, computed pixel by pixel.
final class ImageResizerReferenceTests: XCTestCase {
    private func reference(_ image: Image, to size: PixelSize) -> [UInt8] {
        let sx = Double(image.width) / Double(size.width)
        let sy = Double(image.height) / Double(size.height)
        let pixels = [UInt8](image.frames[0].pixels)
        var out = [UInt8](repeating: 0, count: size.pixelCount * 4)
        // Per axis: (source index, weight) pairs covering one destination index.
        func span(_ d: Int, _ scale: Double, _ source: Int) -> [(Int, Double)] {
            if scale <= 1 {
                // Growing: bilinear between the source centres around this one's.
                let centre = max(0, (Double(d) + 0.5) * scale - 0.5)
                let left = min(source - 1, Int(centre))
                let t = centre - Double(left)
                return left + 1 < source && t > 0 ? [(left, 1 - t), (left + 1, t)] : [(left, 1)]
            }
            let lo = Double(d) * scale
            let hi = min(Double(source), Double(d + 1) * scale)
            return (Int(lo)...min(source - 1, Int(hi.rounded(.up)) - 1)).map {
                ($0, (min(hi, Double($0 + 1)) - max(lo, Double($0))) / scale)
            }
        }
        for y in 0..<size.height {
            for x in 0..<size.width {
                var sum = [0.0, 0.0, 0.0, 0.0]
                for (sy0, wy) in span(y, sy, image.height) {
                    for (sx0, wx) in span(x, sx, image.width) {
                        let p = sy0 * image.bytesPerRow + sx0 * 4
                        let a = Double(pixels[p + 3]) * wx * wy
                        for c in 0..<3 { sum[c] += Double(pixels[p + c]) * a }
                        sum[3] += a
                    }
                }
                let o = (y * size.width + x) * 4
                guard sum[3] > 0.5 / 255 else { continue }
                for c in 0..<3 { out[o + c] = UInt8(max(0, min(255, sum[c] / sum[3] + 0.5))) }
                out[o + 3] = UInt8(max(0, min(255, sum[3] + 0.5)))
            }
        }
        return out
    }

    func testMatchesTheReferenceAtManyRatios() throws {
        var random = SplitMix64(seed: 42)
        let source = SyntheticImage.make(width: 97, height: 61) { p in
            for i in 0..<(97 * 61) {
                let v = random.next()
                p[i * 4] = UInt8(truncatingIfNeeded: v)
                p[i * 4 + 1] = UInt8(truncatingIfNeeded: v >> 8)
                p[i * 4 + 2] = UInt8(truncatingIfNeeded: v >> 16)
                // Mostly opaque, some translucent, some fully transparent pixels.
                let a = UInt8(truncatingIfNeeded: v >> 24)
                p[i * 4 + 3] = a < 40 ? 0 : (a < 120 ? a : 255)
            }
        }
        for size in [
            PixelSize(width: 64, height: 40), PixelSize(width: 31, height: 17), PixelSize(width: 5, height: 3),
            PixelSize(width: 1, height: 1), PixelSize(width: 97, height: 20), PixelSize(width: 150, height: 90),
            PixelSize(width: 150, height: 20), PixelSize(width: 40, height: 90),  // one axis grows, the other shrinks
        ] {
            let ours = [UInt8](try ImageResizer.resize(source, to: size).frames[0].pixels)
            let expected = reference(source, to: size)
            XCTAssertEqual(ours.count, expected.count)
            let worst = zip(ours, expected).map { abs(Int($0) - Int($1)) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 1, "\(size): off by \(worst) from the reference")
        }
    }

    /// One-pixel-wide and -tall sources, and rows with padding past width x 4.
    func testThinSourcesAndPaddedRows() throws {
        var random = SplitMix64(seed: 7)
        for (width, height) in [(1, 61), (61, 1)] {
            let source = SyntheticImage.make(width: width, height: height) { p in
                for i in 0..<(width * height * 4) { p[i] = i % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: random.next()) }
            }
            for size in [PixelSize(width: 1, height: 1), PixelSize(width: max(1, width / 4), height: max(1, height / 4)),
                         PixelSize(width: width * 3, height: height * 2)] {
                let ours = [UInt8](try ImageResizer.resize(source, to: size).frames[0].pixels)
                let worst = zip(ours, reference(source, to: size)).map { abs(Int($0) - Int($1)) }.max() ?? 0
                XCTAssertLessThanOrEqual(worst, 1, "\(width)x\(height) -> \(size)")
            }
        }
        // 10x6 with 4 padding bytes a row (filled with 0xEE, which must not leak in).
        let bytesPerRow = 44
        var padded = Data(repeating: 0xEE, count: bytesPerRow * 6)
        var tight = Data(count: 40 * 6)
        for y in 0..<6 {
            for x in 0..<10 {
                let value: [UInt8] = [UInt8(x * 25), UInt8(y * 40), 90, 255]
                for c in 0..<4 {
                    padded[y * bytesPerRow + x * 4 + c] = value[c]
                    tight[y * 40 + x * 4 + c] = value[c]
                }
            }
        }
        let paddedImage = Image(width: 10, height: 6, bytesPerRow: bytesPerRow, frames: [ImageFrame(pixels: padded, duration: 0)])
        let tightImage = Image(width: 10, height: 6, bytesPerRow: 40, frames: [ImageFrame(pixels: tight, duration: 0)])
        let size = PixelSize(width: 4, height: 3)
        XCTAssertEqual(
            [UInt8](try ImageResizer.resize(paddedImage, to: size).frames[0].pixels),
            [UInt8](try ImageResizer.resize(tightImage, to: size).frames[0].pixels))
    }
}
