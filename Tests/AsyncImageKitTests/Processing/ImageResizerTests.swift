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
