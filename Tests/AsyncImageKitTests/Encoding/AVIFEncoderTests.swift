import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `AVIFEncoder` (issue 32, item 4): libavif with libaom, read back by our
/// own `AVIFDecoder` (libavif with dav1d). (Read back by `avifdec`, and
/// compared with `avifenc` at the same settings: `EncoderToolTests` in the
/// integration target.) Small images at fast speeds: libaom is the slowest
/// codec here.
final class AVIFEncoderTests: XCTestCase {
    private static let photo = SyntheticImage.photo(width: 96, height: 64, seed: 11)

    /// A photo with an alpha ramp over it.
    private static let translucent: Image = {
        var pixels = photo.pixels
        for y in 0..<photo.height {
            for x in 0..<photo.width { pixels[y * photo.bytesPerRow + x * 4 + 3] = UInt8(x * 255 / (photo.width - 1)) }
        }
        return Image(width: photo.width, height: photo.height, rgba: pixels, bytesPerRow: photo.bytesPerRow)
    }()

    /// Quality to quantizer: libavif 1.0's mapping, rounded.
    func testQualityMapsToQuantizers() {
        let expected = [100: 0, 99: 1, 90: 6, 80: 13, 75: 16, 60: 25, 50: 32, 25: 47, 1: 62, 0: 63]
        for (quality, quantizer) in expected {
            XCTAssertEqual(AVIFEncoder.quantizer(forQuality: quality), quantizer, "quality \(quality)")
        }
        let all = (0...100).map(AVIFEncoder.quantizer(forQuality:))
        XCTAssertEqual(all, all.sorted(by: >), "a higher quality is never a coarser quantizer")
    }

    /// 4:2:0 at the default quality: an AVIF our decoder reads at the same
    /// size, opaque (no alpha plane written), tagged as sRGB (`nclx` 1/13/6,
    /// which the decoder leaves as it is), close to the original.
    func testAnOpaqueImageRoundTrips() throws {
        let data = try AVIFEncoder(speed: 9).encode(Self.photo)
        XCTAssertEqual(ImageFormat.sniff(data), .avif)
        let decoded = try AVIFDecoder().decode(data)
        XCTAssertEqual(decoded.size, Self.photo.size)
        XCTAssertTrue(decoded.isOpaque)
        let psnr = ImageComparison.psnr(decoded, Self.photo)
        XCTAssertGreaterThan(psnr, 28, "PSNR \(psnr) dB at quality 60, 4:2:0")
        let properties = try XCTUnwrap(ImageFileProperties(data: data))
        XCTAssertEqual(properties.format, .avif)
        XCTAssertEqual(properties.bitDepth, 8)
        XCTAssertFalse(properties.hasTransparency)
        XCTAssertNotEqual(properties.colorProfile?.isSRGB, false, "\(String(describing: properties.colorProfile))")
    }

    /// 4:4:4 at quality 100 (quantizer 0: AV1's lossless coding of the YUV
    /// planes) is within the RGB-YUV-RGB conversion's rounding: PSNR over
    /// 45 dB, no channel more than 3 levels off; the alpha plane at
    /// quantizer 0 is exact.
    func testFourFourFourAtQuality100IsClose() throws {
        let data = try AVIFEncoder(quality: 100, speed: 9, chromaSubsampling: .yuv444).encode(Self.translucent)
        let decoded = try AVIFDecoder().decode(data)
        let psnr = ImageComparison.psnr(decoded, Self.translucent)
        XCTAssertGreaterThan(psnr, 45, "PSNR \(psnr) dB")
        for channel in 0..<3 {
            XCTAssertLessThanOrEqual(ImageComparison.maxDifference(decoded, Self.translucent, channel: channel), 3)
        }
        XCTAssertEqual(ImageComparison.maxDifference(decoded, Self.translucent, channel: 3), 0, "alpha")
        // 4:2:0 at the same quality loses the chroma detail: further off.
        let subsampled = try AVIFDecoder().decode(try AVIFEncoder(quality: 100, speed: 9).encode(Self.translucent))
        XCTAssertLessThan(ImageComparison.psnr(subsampled, Self.translucent), psnr)
    }

    /// Alpha is kept at a lossy quality (the alpha plane gets the colour's
    /// quantizer): the fully transparent and fully opaque ends stay so,
    /// the ramp within a few levels.
    func testAlphaIsKept() throws {
        let decoded = try AVIFDecoder().decode(try AVIFEncoder(quality: 60, speed: 9).encode(Self.translucent))
        XCTAssertFalse(decoded.isOpaque)
        XCTAssertLessThanOrEqual(ImageComparison.maxDifference(decoded, Self.translucent, channel: 3), 8)
        XCTAssertLessThanOrEqual(Int(decoded.pixel(x: 0, y: 30).a), 4)
        XCTAssertGreaterThanOrEqual(Int(decoded.pixel(x: 95, y: 30).a), 251)
    }

    /// A higher quality makes a larger file.
    func testQualityChangesTheSizeMonotonically() throws {
        let photo = SyntheticImage.photo(width: 128, height: 96, seed: 9)
        let sizes = try [10, 40, 70, 95].map { try AVIFEncoder(quality: $0, speed: 10).encode(photo).count }
        XCTAssertEqual(sizes, sizes.sorted(), "\(sizes)")
        XCTAssertEqual(Set(sizes).count, sizes.count, "\(sizes)")
    }

    /// Two threads make a valid file of the same image (the encode may split differently).
    func testThreadsSetting() throws {
        let decoded = try AVIFDecoder().decode(try AVIFEncoder(speed: 10, threads: 2).encode(Self.photo))
        XCTAssertEqual(decoded.size, Self.photo.size)
        XCTAssertGreaterThan(ImageComparison.psnr(decoded, Self.photo), 28)
    }

    /// Out-of-range settings are refused with `.encoding(.avif, ...)`
    /// before any work; the bounds themselves are accepted.
    func testBadSettingsAreRefused() throws {
        let small = SyntheticImage.photo(width: 16, height: 16)
        let refused: [(AVIFEncoder, String)] = [
            (AVIFEncoder(quality: -1), "quality -1"),
            (AVIFEncoder(quality: 101), "quality 101"),
            (AVIFEncoder(speed: 11), "speed 11"),
            (AVIFEncoder(speed: -1), "speed -1"),
            (AVIFEncoder(threads: 0), "threads 0"),
        ]
        for (encoder, says) in refused {
            XCTAssertThrowsError(try encoder.encode(small), says) { error in
                guard case .encoding(let format, let reason) = error as? AsyncImageError else {
                    return XCTFail("\(says): \(error)")
                }
                XCTAssertEqual(format, .avif)
                XCTAssertTrue(reason.contains(says), "\(says): \(reason)")
            }
        }
        for encoder in [AVIFEncoder(quality: 0, speed: 10), AVIFEncoder(quality: 100, speed: 10)] {
            XCTAssertEqual(try AVIFDecoder().decode(try encoder.encode(small)).size, small.size)
        }
    }

    /// Odd sizes (4:2:0 rounds the chroma planes up) and a one-pixel image.
    func testOddSizes() throws {
        for (width, height) in [(1, 1), (3, 5), (17, 9)] {
            let image = SyntheticImage.photo(width: width, height: height, seed: 3)
            let decoded = try AVIFDecoder().decode(try AVIFEncoder(quality: 90, speed: 10).encode(image))
            XCTAssertEqual(decoded.size, image.size)
        }
    }
}
