import Foundation
import ImageFixtures
import XCTest

@testable import AsyncImageKit

/// ``ResizeQuality``: its cache-key part (``ResizeQuality/fast`` keeps the
/// keys of earlier versions), the loader's default and a request's own,
/// shrink-on-load's margin in each decoder that can decode smaller, and
/// the progressive early end asking the same rule as the JPEG decoder.
final class ResizeQualityTests: XCTestCase {
    let url = URL(string: "https://example.com/photo.jpg")!

    func testHighHasAKeyPartAndFastKeepsTheOldKey() {
        var request = ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 64, height: 64)))
        XCTAssertEqual(request.options.resizeQuality, .high)
        XCTAssertEqual(request.cacheKey.processing, "64x64-fit-fitcrops-hq")
        request.resizeQuality = .fast
        XCTAssertEqual(request.cacheKey.processing, "64x64-fit-fitcrops", "the key of 0.10")
        request.resizeQuality = nil
        XCTAssertEqual(request.cacheKey.processing, "64x64-fit-fitcrops-hq")

        // Full size: nothing is resized, so no part, and still full size.
        var full = ImageRequest(url: url)
        full.resizeQuality = .fast
        XCTAssertEqual(full.cacheKey.processing, "")
        XCTAssertTrue(ImageCacheKey.isFullSize(ImageRequest(url: url).cacheKey.processing))

        XCTAssertEqual(ImageProcessors.Resize(.fitInside(PixelSize(width: 8, height: 8))).identifier, "resize(8x8-fit-fitcrops-hq)")
        XCTAssertEqual(
            ImageProcessors.Resize(.fitInside(PixelSize(width: 8, height: 8)), quality: .fast).identifier,
            "resize(8x8-fit-fitcrops)")
    }

    /// A loader whose default is ``ResizeQuality/fast`` fills it into
    /// requests that name none, and only those: each finds only the image
    /// cached under its own quality.
    func testTheLoaderDefaultFillsInRequestsThatNameNone() throws {
        let cache = ImageCache()
        var configuration = AsyncImageLoader.Configuration(cache: cache, notificationCenter: nil)
        configuration.resizeQuality = .fast
        configuration.reachability = nil
        let loader = AsyncImageLoader(configuration: configuration)
        let plain = ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 64, height: 64)))
        var fast = plain
        fast.resizeQuality = .fast
        let image = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3))
        cache.setImage(image, for: fast.cacheKey)
        XCTAssertNotNil(loader.cachedImage(for: plain), "the loader's .fast key")
        var high = plain
        high.resizeQuality = .high
        XCTAssertNil(loader.cachedImage(for: high), "a request's own quality wins")
        XCTAssertEqual(plain.resolving(RequestDefaults(colorManagement: .default, resizeQuality: .fast)).cacheKey, fast.cacheKey)
        XCTAssertEqual(high.resolving(RequestDefaults(colorManagement: .default, resizeQuality: .fast)).cacheKey, high.cacheKey)
    }

    /// `.fast` is the path of 0.11 byte for byte: these FNV-1a checksums of
    /// the pixels were printed by the same decodes built from 0.11's main
    /// (b02fbdd), before `ResizeQuality` existed (JPEG fill and fit, a
    /// rotated JPEG, PNG, a still WebP).
    func testFastIsByteIdenticalToEarlierVersions() throws {
        func options(_ w: Int, _ h: Int, _ mode: ContentMode, _ scaling: ScalingOptions = []) -> DecodingOptions {
            var options = DecodingOptions(targetSize: PixelSize(width: w, height: h), contentMode: mode, scaling: scaling)
            options.resizeQuality = .fast
            return options
        }
        let photo = SyntheticImage.photo(width: 1200, height: 800, seed: 3)
        let jpeg = try JPEGEncoder(quality: 85).encode(photo)
        let rotated = try JPEGEncoder(quality: 85, orientation: .right).encode(photo)
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 900, height: 600, seed: 4))
        let webp = try WebPEncoder().encode(SyntheticImage.photo(width: 800, height: 600, seed: 5))
        let decoder = ImageDecoder()
        XCTAssertEqual(Self.fnv(try decoder.decode(jpeg, options: options(256, 256, .aspectFill))), "800632eec7812060")
        XCTAssertEqual(
            Self.fnv(try decoder.decode(jpeg, options: options(100, 100, .aspectFit, .fitWithoutMargins))), "adc9b5300205deda")
        XCTAssertEqual(Self.fnv(try decoder.decode(rotated, options: options(90, 90, .aspectFill))), "b5aff5292b0d2dfd")
        XCTAssertEqual(Self.fnv(try decoder.decode(png, options: options(90, 90, .aspectFit))), "d7f5adde35b05263")
        XCTAssertEqual(
            Self.fnv(try decoder.decode(webp, options: options(100, 100, .aspectFit, .fitWithoutMargins))), "be1e02bb59803a71")
        // And `.high` differs: the checksums see a change.
        var high = options(256, 256, .aspectFill)
        high.resizeQuality = .high
        XCTAssertNotEqual(Self.fnv(try decoder.decode(jpeg, options: high)), "800632eec7812060")
    }

    /// FNV-1a (64 bits) of the first frame's pixels, rows packed.
    static func fnv(_ image: Image) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        image.pixels.withUnsafeBytes { raw in
            for y in 0..<image.height {
                for byte in raw[(y * image.bytesPerRow)..<(y * image.bytesPerRow + image.width * 4)] {
                    hash ^= UInt64(byte)
                    hash &*= 0x0000_0100_0000_01b3
                }
            }
        }
        return String(format: "%016llx", hash)
    }

    /// The image model looks the memory cache up as a load would, with the
    /// loader's defaults filled in: a loader set to `.fast` shows the image
    /// cached under the `.fast` key at once (it used to read the cache with
    /// the request's own key, and missed).
    func testTheImageModelFindsTheLoadersKey() throws {
        let cache = ImageCache()
        var configuration = AsyncImageLoader.Configuration(
            cache: cache, deliveryQueue: DispatchQueue(label: "model-test"), notificationCenter: nil)
        configuration.resizeQuality = .fast
        configuration.reachability = nil
        let loader = AsyncImageLoader(configuration: configuration)
        var fast = ImageRequest(url: url, targetSize: PixelSize(width: 32, height: 32))
        fast.resizeQuality = .fast
        cache.setImage(SyntheticImage.solid(width: 32, height: 32, color: RGBA(r: 9, g: 8, b: 7)), for: fast.cacheKey)
        let model = ImageModel(url: url, displaySize: PixelSize(width: 32, height: 32), loader: loader)
        XCTAssertEqual(model.phase, .loaded)
        XCTAssertEqual(model.image?.pixel(x: 0, y: 0), RGBA(r: 9, g: 8, b: 7))
    }

    /// libwebp's scaled decode stops at twice the final size with `.high`;
    /// `.fast` scales straight to it, as before.
    func testWebPDecodesAtTheMargin() throws {
        let webp = try WebPEncoder().encode(SyntheticImage.photo(width: 800, height: 600))
        for (quality, decoded) in [(ResizeQuality.high, PixelSize(width: 200, height: 150)), (.fast, PixelSize(width: 100, height: 75))] {
            var options = DecodingOptions(
                targetSize: PixelSize(width: 100, height: 100), contentMode: .aspectFit, scaling: .fitWithoutMargins)
            options.resizeQuality = quality
            let image = try WebPDecoder().decode(webp, options: options)
            XCTAssertEqual(image.size, PixelSize(width: 100, height: 75), "\(quality)")
            XCTAssertEqual(image.decodeInfo.decodedSize, decoded, "\(quality)")
        }
    }

    /// The early end at the DC scans and the JPEG decoder share one rule:
    /// for every size and both qualities, the decoder decodes at 1/8
    /// exactly when `DCEarlyEnd` says it does (upright sizes, a rotated
    /// file among them).
    func testTheEarlyEndAndTheDecoderAgreeOnTheScale() throws {
        let plain = try JPEGEncoder(quality: 80).encode(SyntheticImage.photo(width: 640, height: 480))
        let rotated = try JPEGEncoder(quality: 80, orientation: .right).encode(SyntheticImage.photo(width: 640, height: 480))
        var eighths = 0
        for (jpeg, upright) in [(plain, PixelSize(width: 640, height: 480)), (rotated, PixelSize(width: 480, height: 640))] {
            for side in [20, 30, 40, 60, 80, 100, 160, 320] {
                for sizing in [ImageSizing.fitInside(PixelSize(width: side, height: side)), .fillAndCrop(PixelSize(width: side, height: side))] {
                    for quality in ResizeQuality.allCases {
                        var request = ImageRequest(url: url, sizing: sizing)
                        request.resizeQuality = quality
                        let image = try JPEGDecoder().decode(jpeg, options: request.options)
                        let early = DCEarlyEnd.decodesFromDCAlone(request, source: upright)
                        XCTAssertEqual(early, image.decodeInfo.scaleDenominator == 8, "\(upright) \(sizing) \(quality)")
                        if early { eighths += 1 }
                    }
                }
            }
        }
        XCTAssertGreaterThan(eighths, 4, "some cases decode at 1/8")
    }

    /// The formats without a scaled decode box down in the resizer: a
    /// large PNG at `.high` is within a code value or two of the same
    /// pixels boxed then filtered by hand (LanczosResamplerTests holds the
    /// resizer itself to a Double reference); `.fast` is the area average.
    func testAFullDecodeIsBoxedThenFiltered() throws {
        let source = SyntheticImage.photo(width: 900, height: 600)
        let png = try PNGEncoder().encode(source)
        var options = DecodingOptions(targetSize: PixelSize(width: 90, height: 90), contentMode: .aspectFit, scaling: .fitWithoutMargins)
        let high = try PNGDecoder().decode(png, options: options)
        XCTAssertEqual(high.size, PixelSize(width: 90, height: 60))
        XCTAssertEqual(high.pixels, try ImageResizer.resize(source, to: PixelSize(width: 90, height: 60), quality: .high).pixels)
        XCTAssertEqual(ShrinkOnLoad.boxFactors(source: source.size, final: high.size, quality: .high).x, 5)
        options.resizeQuality = .fast
        let fast = try PNGDecoder().decode(png, options: options)
        XCTAssertEqual(fast.pixels, try ImageResizer.resize(source, to: PixelSize(width: 90, height: 60)).pixels)
    }
}
