import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

final class JPEGDecoderTests: XCTestCase {
    /// The colour at the centre of each quadrant, in reading order.
    private func corners(_ image: Image) -> [RGBA] {
        let (w, h) = (image.width, image.height)
        return [(w / 4, h / 4), (w * 3 / 4, h / 4), (w / 4, h * 3 / 4), (w * 3 / 4, h * 3 / 4)].map {
            image.pixel(x: $0.0, y: $0.1)
        }
    }

    private func assertCorners(
        _ image: Image, _ expected: [RGBA], tolerance: Int = 12, file: StaticString = #filePath, line: UInt = #line
    ) {
        for (got, want) in zip(corners(image), expected) where distance(got, want) > tolerance {
            XCTFail("quadrants \(corners(image)) differ from \(expected)", file: file, line: line)
            return
        }
    }

    private let red = RGBA(r: 255, g: 0, b: 0)
    private let green = RGBA(r: 0, g: 255, b: 0)
    private let blue = RGBA(r: 0, g: 0, b: 255)
    private let white = RGBA(r: 255, g: 255, b: 255)

    func testBaselineAndProgressive() throws {
        let source = SyntheticImage.quadrants(width: 96, height: 64)
        for progressive in [false, true] {
            let jpeg = try JPEGEncoder(quality: 95, progressive: progressive).encode(source)
            let image = try JPEGDecoder().decode(jpeg)
            XCTAssertEqual(image.size, PixelSize(width: 96, height: 64))
            XCTAssertEqual(image.format, .jpeg)
            XCTAssertEqual(image.decodeInfo.scaleDenominator, 1)
            assertCorners(image, [red, green, blue, white])
            XCTAssertEqual(image.pixel(x: 0, y: 0).a, 255)
        }
    }

    func testGrayscale() throws {
        let source = SyntheticImage.quadrants(width: 64, height: 64)
        let image = try JPEGDecoder().decode(try JPEGEncoder(colorModel: .grayscale).encode(source))
        let gray = corners(image)
        for pixel in gray { XCTAssertTrue(pixel.r == pixel.g && pixel.g == pixel.b, "\(pixel) is not gray") }
        // Luma of red, green, blue, white: 76, 150, 29, 255.
        XCTAssertEqual(gray.map { Int($0.r) / 10 }, [7, 15, 2, 25])
    }

    func testAdobeCMYKIsConvertedToRGB() throws {
        let source = SyntheticImage.quadrants(width: 64, height: 64)
        let jpeg = try JPEGEncoder(quality: 95, colorModel: .cmyk).encode(source)
        let image = try JPEGDecoder().decode(jpeg)
        assertCorners(image, [red, green, blue, white])
    }

    /// Every EXIF orientation, checked by where the four coloured quadrants land.
    func testEveryEXIFOrientationIsApplied() throws {
        let source = SyntheticImage.quadrants(width: 80, height: 48)
        let expected: [ImageOrientation: [RGBA]] = [
            .up: [red, green, blue, white],
            .upMirrored: [green, red, white, blue],
            .down: [white, blue, green, red],
            .downMirrored: [blue, white, red, green],
            .leftMirrored: [red, blue, green, white],
            .right: [blue, red, white, green],
            .rightMirrored: [white, green, blue, red],
            .left: [green, white, red, blue],
        ]
        for orientation in ImageOrientation.allCases {
            let jpeg = try JPEGEncoder(quality: 95, orientation: orientation).encode(source)
            let image = try JPEGDecoder().decode(jpeg)
            XCTAssertEqual(image.orientation, orientation)
            let upright = orientation.swapsDimensions ? PixelSize(width: 48, height: 80) : PixelSize(width: 80, height: 48)
            XCTAssertEqual(image.size, upright, "\(orientation)")
            XCTAssertEqual(image.originalSize, upright, "\(orientation)")
            assertCorners(image, expected[orientation]!)
        }
    }

    /// A big photo shown small is decoded with DCT scaling: the full-size
    /// bitmap never exists. ``ResizeQuality/high`` (the default) stops at
    /// twice the final size or more (ShrinkOnLoad's margin), ``ResizeQuality/fast``
    /// at the final size.
    func testDownsampledDecodeUsesDCTScaling() throws {
        let source = SyntheticImage.quadrants(width: 2400, height: 1600)
        let jpeg = try JPEGEncoder(quality: 85).encode(source)
        let target = PixelSize(width: 256, height: 256)

        // Fill: 384x256 final, so at least 768x512: 1/2 (1200x800); 1/4 would be 600x400.
        let filled = try JPEGDecoder().decode(jpeg, options: DecodingOptions(targetSize: target))
        XCTAssertEqual(filled.size, PixelSize(width: 384, height: 256))
        XCTAssertEqual(filled.decodeInfo.scaleDenominator, 2)
        XCTAssertEqual(filled.decodeInfo.decodedSize, PixelSize(width: 1200, height: 800))
        XCTAssertEqual(filled.originalSize, PixelSize(width: 2400, height: 1600))
        XCTAssertLessThan(filled.decodeInfo.decodedSize.pixelCount * 4, 2400 * 1600 + 1)
        assertCorners(filled, [red, green, blue, white])

        // Fit: 256x171 final, so at least 512x342: 1/4 (600x400).
        let fitted = try JPEGDecoder().decode(
            jpeg, options: DecodingOptions(targetSize: target, contentMode: .aspectFit))
        XCTAssertEqual(fitted.size, PixelSize(width: 256, height: 171))
        XCTAssertEqual(fitted.decodeInfo.scaleDenominator, 4)
        XCTAssertEqual(fitted.decodeInfo.decodedSize, PixelSize(width: 600, height: 400))

        // Fast: the smallest scale that still covers the final size.
        var fast = DecodingOptions(targetSize: target)
        fast.resizeQuality = .fast
        let fastFilled = try JPEGDecoder().decode(jpeg, options: fast)
        XCTAssertEqual(fastFilled.size, PixelSize(width: 384, height: 256))
        XCTAssertEqual(fastFilled.decodeInfo.scaleDenominator, 4)
        XCTAssertEqual(fastFilled.decodeInfo.decodedSize, PixelSize(width: 600, height: 400))
        fast.contentMode = .aspectFit
        let fastFitted = try JPEGDecoder().decode(jpeg, options: fast)
        XCTAssertEqual(fastFitted.decodeInfo.scaleDenominator, 8)
        XCTAssertEqual(fastFitted.decodeInfo.decodedSize, PixelSize(width: 300, height: 200))
        assertCorners(fastFilled, [red, green, blue, white])

        // A target bigger than the image: full size, never enlarged.
        for quality in ResizeQuality.allCases {
            var options = DecodingOptions(targetSize: PixelSize(width: 5000, height: 5000))
            options.resizeQuality = quality
            let full = try JPEGDecoder().decode(jpeg, options: options)
            XCTAssertEqual(full.size, PixelSize(width: 2400, height: 1600))
            XCTAssertEqual(full.decodeInfo.scaleDenominator, 1)
        }
    }

    /// The target is met in upright terms even when the file is stored rotated
    /// (the margin counted on the stored sides, which are the upright ones swapped).
    func testDownsampledDecodeOfARotatedPhoto() throws {
        let source = SyntheticImage.quadrants(width: 2000, height: 1000)
        let jpeg = try JPEGEncoder(quality: 85, orientation: .right).encode(source)
        for (quality, denominator) in [(ResizeQuality.high, 4), (.fast, 8)] {
            var options = DecodingOptions(targetSize: PixelSize(width: 100, height: 100))
            options.resizeQuality = quality
            let image = try JPEGDecoder().decode(jpeg, options: options)
            XCTAssertEqual(image.size, PixelSize(width: 100, height: 200))
            XCTAssertEqual(image.originalSize, PixelSize(width: 1000, height: 2000))
            XCTAssertEqual(image.decodeInfo.scaleDenominator, denominator, "\(quality)")
            assertCorners(image, [blue, red, white, green])
        }
    }

    /// libjpeg only warns about a truncated file and would fill the rest in grey; here it fails.
    func testTruncatedJPEGFailsInsteadOfReturningHalfAnImage() throws {
        let jpeg = try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 320, height: 240, seed: 5))
        let failure = assertDecodingFails { try JPEGDecoder().decode(jpeg.prefix(jpeg.count * 6 / 10)) }
        XCTAssertEqual(failure?.format, .jpeg)
        XCTAssertEqual(failure?.stage, .pixels)
        XCTAssertTrue(failure?.reason.contains("Premature end") ?? false, failure?.reason ?? "")
    }

    /// "Corrupt JPEG data" is a warning in libjpeg; here it is a failure.
    func testCorruptDataWarningIsAFailure() throws {
        let jpeg = [UInt8](try JPEGEncoder(quality: 90).encode(SyntheticImage.quadrants(width: 32, height: 32)))
        // Garbage bytes just before the frame header (SOF0).
        let sof = jpeg.indices.first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 }!
        let corrupt = Data(jpeg[..<sof] + [0x12, 0x34, 0x56] + jpeg[sof...])
        let failure = assertDecodingFails { try JPEGDecoder().decode(corrupt) }
        XCTAssertTrue(failure?.reason.contains("Corrupt JPEG data") ?? false, failure?.reason ?? "")
    }

    func testGarbageAfterSignatureFails() {
        let failure = assertDecodingFails { try JPEGDecoder().decode(Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 1, 2, 3])) }
        XCTAssertEqual(failure?.format, .jpeg)
        XCTAssertEqual(failure?.stage, .header)
    }
}
