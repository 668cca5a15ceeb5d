@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `Image.isOpaque` (issue 28, item 3): worked out once when an image is
/// made, by the decoder that knows (JPEG; PNG without alpha or `tRNS`), by
/// a resize that measures what it writes, by a canvas or a mask that knows,
/// else by a scan; right for real files (the corpus) and generated ones.
final class OpacityTests: XCTestCase {
    private let decoder = ImageDecoder()
    private static let box = PixelSize(width: 100, height: 100)

    /// An opaque photo with the pixel at (`x`, `y`) given alpha `alpha`.
    private static func photo(width: Int = 500, height: Int = 375, translucentAt point: (x: Int, y: Int)? = nil, alpha: UInt8 = 128)
        -> Image
    {
        let photo = SyntheticImage.photo(width: width, height: height)
        guard let point else { return photo }
        var pixels = photo.pixels
        pixels[point.y * photo.bytesPerRow + point.x * 4 + 3] = alpha
        return Image(width: width, height: height, rgba: pixels, bytesPerRow: photo.bytesPerRow)
    }

    private func corpus(_ path: String) throws -> Data {
        try Data(contentsOf: Corpus.location.appendingPathComponent(path))
    }

    // MARK: Decoders

    func testJPEGIsOpaqueAtFullAndDisplaySizeAndTurned() throws {
        for path in ["valid/jpeg/testorig.jpg", "valid/jpeg/gen-cmyk-adobe-32x32.jpg", "valid/jpeg/grayscale_square.jpg", "valid/jpeg/testimgp.jpg"] {
            let data = try corpus(path)
            XCTAssertTrue(try decoder.decode(data).isOpaque, path)
            let small = try decoder.decode(data, options: DecodingOptions(targetSize: PixelSize(width: 7, height: 7)))
            XCTAssertTrue(small.isOpaque, path)
        }
        // Turned by its EXIF orientation (moved pixels keep their opacity).
        let turned = try JPEGEncoder(quality: 90, orientation: .right).encode(SyntheticImage.photo(width: 60, height: 40))
        let image = try decoder.decode(turned)
        XCTAssertEqual(image.orientation, .right)
        XCTAssertTrue(image.isOpaque)
    }

    func testPNGWithoutAlphaIsOpaqueByItsColourType() throws {
        // RGB and grey, generated and from the suite (basn2c08: RGB 8; basn0g08: grey 8).
        let rgb = RawPNGWriter.encode(
            width: 3, height: 2, colorType: .rgb, bitDepth: 8, samples: [UInt16](repeating: 200, count: 18))
        XCTAssertTrue(try decoder.decode(rgb).isOpaque)
        for path in ["valid/png/basn2c08.png", "valid/png/basn0g08.png", "valid/png/basn3p08.png"] {
            XCTAssertTrue(try decoder.decode(try corpus(path)).isOpaque, path)
        }
    }

    func testPNGWithAlphaIsScanned() throws {
        // RGBA, every pixel opaque: opaque (the scan says so).
        let opaque = try PNGEncoder().encode(Self.photo())
        XCTAssertTrue(try decoder.decode(opaque).isOpaque)
        XCTAssertTrue(try decoder.decode(opaque, options: DecodingOptions(targetSize: Self.box)).isOpaque)
        // One translucent pixel (alpha 128) among 187,500: not opaque, at full
        // size, and at display size (its share of a 5x5 average is under 255).
        let one = try PNGEncoder().encode(Self.photo(translucentAt: (x: 333, y: 222)))
        XCTAssertFalse(try decoder.decode(one).isOpaque)
        XCTAssertFalse(try decoder.decode(one, options: DecodingOptions(targetSize: Self.box)).isOpaque)
        // The last pixel of the last row.
        let last = try PNGEncoder().encode(Self.photo(width: 33, height: 17, translucentAt: (x: 32, y: 16), alpha: 254))
        XCTAssertFalse(try decoder.decode(last).isOpaque)
        // The suite's alpha files (basi6a16: RGBA 16, interlaced; ibasn4a08: grey and alpha; bgwn6a08: RGBA 8).
        for path in ["valid/png/basi6a16.png", "valid/png/ibasn4a08.png", "valid/png/bgwn6a08.png"] {
            XCTAssertFalse(try decoder.decode(try corpus(path)).isOpaque, path)
        }
    }

    func testPNGWithTRNSIsNotTakenAsOpaque() throws {
        // A palette whose index 0 is transparent (tRNS), used by one pixel.
        let palette = [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 0, b: 255)]
        let transparent = RawPNGWriter.encode(
            width: 2, height: 2, colorType: .palette, bitDepth: 8, samples: [1, 1, 1, 0], palette: palette,
            transparency: Data([0]))
        XCTAssertFalse(try decoder.decode(transparent).isOpaque)
        // The same tRNS, its index unused: opaque after all (scanned, not assumed).
        let unused = RawPNGWriter.encode(
            width: 2, height: 2, colorType: .palette, bitDepth: 8, samples: [1, 1, 1, 1], palette: palette,
            transparency: Data([0]))
        XCTAssertTrue(try decoder.decode(unused).isOpaque)
    }

    func testGIFWithTransparencyIsNotOpaque() throws {
        let palette = [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0)]
        let solid = try GIFWriter.encode(
            width: 8, height: 8, globalPalette: palette, frames: [.filled(1, width: 8, height: 8)], loopCount: nil)
        XCTAssertTrue(try decoder.decode(solid).isOpaque)
        let transparent = try GIFWriter.encode(
            width: 8, height: 8, globalPalette: palette, frames: [.filled(1, width: 8, height: 8, transparentIndex: 1)],
            loopCount: nil)
        XCTAssertFalse(try decoder.decode(transparent).isOpaque)
        // A frame smaller than the screen leaves the rest transparent.
        let partial = try GIFWriter.encode(
            width: 8, height: 8, globalPalette: palette, frames: [.filled(0, left: 2, top: 2, width: 4, height: 4)],
            loopCount: nil)
        XCTAssertFalse(try decoder.decode(partial).isOpaque)
        // The suite's.
        XCTAssertFalse(try decoder.decode(try corpus("valid/gif/static_transparent.gif")).isOpaque)
        XCTAssertTrue(try decoder.decode(try corpus("valid/gif/static_nontransparent.gif")).isOpaque)
        XCTAssertFalse(try decoder.decode(try corpus("valid/gif/animated_transparent_loop.gif")).isOpaque)
        // Downsampled: the resize measures its own result.
        let small = try decoder.decode(
            try corpus("valid/gif/static_transparent.gif"), options: DecodingOptions(targetSize: PixelSize(width: 10, height: 10)))
        XCTAssertFalse(small.isOpaque)
    }

    // MARK: Made otherwise

    func testAnImageMadeFromPixelsIsScanned() {
        var pixels = Data(repeating: 255, count: 3 * 4 * 2)
        XCTAssertTrue(Image(width: 3, height: 2, rgba: pixels).isOpaque)
        pixels[3 * 4 + 4 + 3] = 0  // row 1, pixel 1's alpha
        XCTAssertFalse(Image(width: 3, height: 2, rgba: pixels).isOpaque)
        // Padding of zeros beside opaque pixels: opaque.
        var padded = Data(count: 16 * 2)
        for y in 0..<2 { for x in 0..<3 { for c in 0..<4 { padded[y * 16 + x * 4 + c] = 255 } } }
        XCTAssertTrue(Image(width: 3, height: 2, rgba: padded, bytesPerRow: 16).isOpaque)
        // An animation: opaque only when every frame is.
        let frames = [ImageFrame(pixels: Data(repeating: 255, count: 16), duration: 0.1),
                      ImageFrame(pixels: Data(repeating: 0, count: 16), duration: 0.1)]
        let animation = Image(width: 2, height: 2, bytesPerRow: 8, frames: frames)
        XCTAssertFalse(animation.isOpaque)
        XCTAssertTrue(animation.stillImage(frame: 0).isOpaque)
        XCTAssertFalse(animation.stillImage(frame: 1).isOpaque)
    }

    func testFramingAndProcessorsSayWhetherTheResultIsOpaque() throws {
        let jpeg = try JPEGEncoder(quality: 90).encode(Self.photo())
        func decode(_ size: ImageSizing) throws -> Image {
            try decoder.decode(
                jpeg, options: DecodingOptions(targetSize: size.size, contentMode: size.contentMode, scaling: size.scaling))
        }
        // Fit with margins (Nimbus' default): transparent rows, not opaque.
        XCTAssertFalse(try decode(.exact(Self.box, contentMode: .aspectFit)).isOpaque)
        XCTAssertTrue(try decode(.exact(Self.box, contentMode: .aspectFill)).isOpaque, "covered: cropped, no margins")
        XCTAssertTrue(try decode(.fitInside(Self.box)).isOpaque)
        XCTAssertTrue(try decode(.fillAndCrop(Self.box)).isOpaque)
        // Too large to cover the box: the default centres it with margins.
        XCTAssertFalse(try decode(.exact(PixelSize(width: 1000, height: 1000))).isOpaque)
        XCTAssertTrue(try decode(.fillAndCrop(PixelSize(width: 1000, height: 1000))).isOpaque)

        let image = try decoder.decode(jpeg)
        XCTAssertTrue(try ImageProcessors.Resize(.fitInside(Self.box)).process(image).isOpaque)
        XCTAssertFalse(try ImageProcessors.Resize(.exact(Self.box, contentMode: .aspectFit)).process(image).isOpaque)
        XCTAssertTrue(try ImageProcessors.Crop(x: 10, y: 10, size: PixelSize(width: 50, height: 50)).process(image).isOpaque)
        XCTAssertFalse(try ImageProcessors.Circle().process(image).isOpaque)
        XCTAssertFalse(try ImageProcessors.RoundedCorners(radius: 8).process(image).isOpaque)
        XCTAssertTrue(try ImageProcessors.RoundedCorners(radius: 0).process(image).isOpaque)
        // A crop that leaves out the one translucent pixel is opaque (scanned).
        let translucent = Self.photo(translucentAt: (x: 0, y: 0))
        XCTAssertFalse(translucent.isOpaque)
        XCTAssertTrue(try ImageProcessors.Crop(x: 1, y: 1, size: PixelSize(width: 50, height: 50)).process(translucent).isOpaque)
        XCTAssertFalse(try ImageProcessors.Crop(x: 0, y: 0, size: PixelSize(width: 50, height: 50)).process(translucent).isOpaque)
        // A crop reaching past the image is clipped to it: still opaque.
        XCTAssertTrue(try ImageProcessors.Crop(x: 450, y: 300, size: PixelSize(width: 100, height: 100)).process(image).isOpaque)
        XCTAssertTrue(image.flattenedOntoWhite().isOpaque)
    }

    func testAStoredImageKeepsItsOpacity() throws {
        let opaque = try decoder.decode(try JPEGEncoder(quality: 90).encode(Self.photo(width: 64, height: 48)))
        let translucent = Self.photo(width: 64, height: 48, translucentAt: (x: 5, y: 5))
        for (image, expected) in [(opaque, true), (translucent, false)] {
            for encoding in [ImageEncoding.automatic, .lossless, .automatic(quality: 40)] {
                let stored = try StoredImage.encode(image, encoding: encoding)
                let parts = try XCTUnwrap(StoredImage.stored(stored))
                XCTAssertEqual(parts.isOpaque, expected)
                XCTAssertEqual(try XCTUnwrap(StoredImage.decode(stored, decoders: .default)).isOpaque, expected)
            }
        }
        let frames = [ImageFrame(pixels: Data(repeating: 255, count: 16), duration: 0.1),
                      ImageFrame(pixels: Data(repeating: 255, count: 16), duration: 0.2)]
        let animation = Image(width: 2, height: 2, bytesPerRow: 8, frames: frames)
        XCTAssertTrue(try XCTUnwrap(StoredImage.decode(try StoredImage.encode(animation, encoding: .automatic), decoders: .default)).isOpaque)
    }
}
