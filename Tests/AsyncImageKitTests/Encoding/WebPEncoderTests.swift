import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `WebPEncoder` (issue 32, item 4): libwebp's encoder, read back by our
/// own `WebPDecoder`. (Read back by libwebp's `dwebp`, and compared with
/// `cwebp` at the same settings: `EncoderToolTests` in the integration target.)
final class WebPEncoderTests: XCTestCase {
    /// A photo with an alpha ramp over it, its fully transparent pixels
    /// still coloured (what only an exact lossless file keeps).
    private static func translucentPhoto(width: Int = 96, height: Int = 64) -> Image {
        let photo = SyntheticImage.photo(width: width, height: height, seed: 5)
        var pixels = photo.pixels
        for y in 0..<height {
            for x in 0..<width { pixels[y * photo.bytesPerRow + x * 4 + 3] = UInt8(x * 255 / (width - 1)) }
        }
        return Image(width: width, height: height, rgba: pixels, bytesPerRow: photo.bytesPerRow)
    }

    /// Lossless: every pixel decodes as it was given, alpha and the colour
    /// under alpha 0 included, from rows with padding at their ends.
    func testLosslessIsExactWithAlphaAndPaddedRows() throws {
        let image = Self.translucentPhoto()
        // The same pixels in rows 20 bytes longer than they need.
        let stride = image.width * 4 + 20
        var padded = Data(repeating: 0xAB, count: stride * image.height)
        for y in 0..<image.height {
            padded.replaceSubrange(
                y * stride..<y * stride + image.width * 4,
                with: image.pixels[y * image.bytesPerRow..<y * image.bytesPerRow + image.width * 4])
        }
        let paddedImage = Image(width: image.width, height: image.height, rgba: padded, bytesPerRow: stride)
        for (name, input) in [("tight", image), ("padded", paddedImage)] {
            let data = try WebPEncoder(lossless: true).encode(input)
            XCTAssertEqual(ImageFormat.sniff(data), .webp, name)
            let decoded = try WebPDecoder().decode(data)
            XCTAssertEqual(decoded.size, image.size, name)
            XCTAssertFalse(decoded.isOpaque, name)
            XCTAssertTrue(ImageComparison.isEqual(decoded, image), "\(name): lossless is exact")
            let hidden = image.pixel(x: 0, y: 10)
            XCTAssertEqual(hidden.a, 0)
            XCTAssertNotEqual(Int(hidden.r) + Int(hidden.g) + Int(hidden.b), 0)
            XCTAssertEqual(decoded.pixel(x: 0, y: 10), hidden, "\(name): the colour under alpha 0 kept")
        }
    }

    /// Lossy: close to the original (PSNR over 30 dB at quality 90 for the
    /// grainy photo), alpha kept (compressed losslessly, libwebp's default:
    /// within one level), an opaque image decoded opaque.
    func testLossyIsCloseAndKeepsAlpha() throws {
        let image = Self.translucentPhoto()
        let decoded = try WebPDecoder().decode(try WebPEncoder(quality: 90).encode(image))
        XCTAssertEqual(decoded.size, image.size)
        XCTAssertFalse(decoded.isOpaque)
        XCTAssertLessThanOrEqual(ImageComparison.maxDifference(decoded, image, channel: 3), 1, "alpha")
        XCTAssertEqual(decoded.pixel(x: 0, y: 0).a, 0)
        XCTAssertEqual(decoded.pixel(x: 95, y: 0).a, 255)

        let opaque = SyntheticImage.photo(width: 96, height: 64, seed: 5)
        let decodedOpaque = try WebPDecoder().decode(try WebPEncoder(quality: 90).encode(opaque))
        XCTAssertTrue(decodedOpaque.isOpaque, "no alpha written for an opaque image")
        let psnr = ImageComparison.psnr(decodedOpaque, opaque)
        XCTAssertGreaterThan(psnr, 30, "PSNR \(psnr) dB at quality 90")
    }

    /// A higher quality makes a larger file, at each method; a slower method
    /// is no larger than the fastest at the same quality.
    func testQualityChangesTheSizeMonotonically() throws {
        let photo = SyntheticImage.photo(width: 256, height: 192, seed: 9)
        for method in [0, 4, 6] {
            let sizes = try [10, 40, 70, 95].map { try WebPEncoder(quality: $0, method: method).encode(photo).count }
            XCTAssertEqual(sizes, sizes.sorted(), "method \(method): \(sizes)")
            XCTAssertEqual(Set(sizes).count, sizes.count, "method \(method): \(sizes)")
        }
        let fastest = try WebPEncoder(quality: 75, method: 0).encode(photo).count
        let smallest = try WebPEncoder(quality: 75, method: 6).encode(photo).count
        XCTAssertLessThanOrEqual(smallest, fastest)
    }

    /// The same settings make the same bytes (libwebp is deterministic with one thread).
    func testTheSameSettingsMakeTheSameBytes() throws {
        let photo = SyntheticImage.photo(width: 120, height: 80, seed: 2)
        XCTAssertEqual(try WebPEncoder(quality: 60).encode(photo), try WebPEncoder(quality: 60).encode(photo))
    }

    /// Out-of-range settings and an image larger than WebP allows are
    /// refused with `.encoding(.webp, ...)`, naming what is wrong; the
    /// bounds themselves are accepted.
    func testBadSettingsAreRefused() throws {
        let photo = SyntheticImage.photo(width: 16, height: 16)
        let refused: [(WebPEncoder, Image, String)] = [
            (WebPEncoder(quality: -1), photo, "quality -1"),
            (WebPEncoder(quality: 101), photo, "quality 101"),
            (WebPEncoder(method: 7), photo, "method 7"),
            (WebPEncoder(method: -1), photo, "method -1"),
            (WebPEncoder(), SyntheticImage.solid(width: 16_384, height: 1, color: RGBA(r: 1, g: 2, b: 3)), "16384x1"),
        ]
        for (encoder, image, says) in refused {
            XCTAssertThrowsError(try encoder.encode(image), says) { error in
                guard case .encoding(let format, let reason) = error as? AsyncImageError else {
                    return XCTFail("\(says): \(error)")
                }
                XCTAssertEqual(format, .webp)
                XCTAssertTrue(reason.contains(says), "\(says): \(reason)")
            }
        }
        for encoder in [WebPEncoder(quality: 0, method: 0), WebPEncoder(quality: 100, method: 6)] {
            XCTAssertEqual(try WebPDecoder().decode(try encoder.encode(photo)).size, photo.size)
        }
        let widest = SyntheticImage.solid(width: WebPEncoder.maxDimension, height: 1, color: RGBA(r: 1, g: 2, b: 3))
        XCTAssertEqual(try WebPDecoder().decode(try WebPEncoder().encode(widest)).size, widest.size)
    }

    /// Only the first frame of an animation is written (a still).
    func testAnAnimationIsWrittenAsItsFirstFrame() throws {
        let first = SyntheticImage.solid(width: 8, height: 8, color: RGBA(r: 200, g: 0, b: 0))
        let second = SyntheticImage.solid(width: 8, height: 8, color: RGBA(r: 0, g: 0, b: 200))
        let animation = Image(
            width: 8, height: 8, bytesPerRow: 32,
            frames: [ImageFrame(pixels: first.pixels, duration: 0.1), ImageFrame(pixels: second.pixels, duration: 0.1)])
        let decoded = try WebPDecoder().decode(try WebPEncoder(lossless: true).encode(animation))
        XCTAssertFalse(decoded.isAnimated)
        XCTAssertEqual(decoded.pixel(x: 4, y: 4), RGBA(r: 200, g: 0, b: 0))
    }
}
