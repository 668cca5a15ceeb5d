@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// Colour management without child processes: profiles built with Little
/// CMS (``ColorProfiles``) put into files made in process. What must stay
/// as it was (untagged and sRGB-tagged files), conversion checked against
/// the Display P3 to sRGB matrices computed here, the APP2 join, malformed
/// profiles (a warning and an unconverted image), the cache key, and the
/// transform cache. The Little CMS references and the ΔE tables are in
/// `ColourConversionTests` (integration).
final class ColourManagementTests: XCTestCase {
    private let chart = ColourFixtures.chart(patch: 16)
    private let off = DecodingOptions(colorManagement: .off)

    private func p3() throws -> Data { try XCTUnwrap(ColorProfiles.displayP3()) }
    private func sRGB() throws -> Data { try XCTUnwrap(ColorProfiles.sRGB()) }

    private func decode(_ data: Data, _ options: DecodingOptions = DecodingOptions()) throws -> Image {
        try ImageDecoder().decode(data, options: options)
    }

    private func gif(_ image: Image) throws -> Data {
        // The 24 patches' colours as the palette, one index per patch.
        let palette = ColourFixtures.patches.map { RGBA(r: $0.0, g: $0.1, b: $0.2) } + Array(
            repeating: RGBA(r: 0, g: 0, b: 0), count: 8)
        var indices: [UInt8] = []
        for y in 0..<image.height {
            for x in 0..<image.width { indices.append(UInt8((y / 16) * 6 + x / 16)) }
        }
        return try GIFWriter.encode(
            width: image.width, height: image.height, globalPalette: palette,
            frames: [GIFFrameSpec(width: image.width, height: image.height, indices: indices)], loopCount: nil)
    }

    // MARK: - What stays as it is

    /// A file with no colour information decodes as with conversion off
    /// (the code path of before), and its properties report none.
    func testUntaggedFilesAreUntouched() throws {
        let files: [(String, Data)] = [
            ("jpeg", try JPEGEncoder(quality: 95).encode(chart)),
            ("grey jpeg", try JPEGEncoder(quality: 95, colorModel: .grayscale).encode(chart)),
            ("cmyk jpeg", try JPEGEncoder(quality: 95, colorModel: .cmyk).encode(chart)),
            ("png", try PNGEncoder().encode(chart)),
            ("gif", try gif(chart)),
        ]
        for (name, data) in files {
            XCTAssertEqual(try decode(data).pixels, try decode(data, off).pixels, name)
            let properties = try XCTUnwrap(ImageFileProperties(data: data), name)
            XCTAssertNil(properties.colorProfile, name)
            XCTAssertFalse(properties.hasICCProfile, name)
        }
    }

    /// Untagged CMYK keeps the simple formula: with an Adobe marker (inverted
    /// inks), R = C'K'/255 of the stored (inverted) values.
    func testUntaggedCMYKKeepsTheSimpleFormula() throws {
        let data = try JPEGEncoder(quality: 100, colorModel: .cmyk).encode(ColourFixtures.chart(patch: 8))
        let image = try decode(data)
        var cmyk = [UInt8](repeating: 0, count: 4)
        // Patch 19 (near white) decodes near white, patch 24 (dark grey) dark.
        let light = image.pixel(x: 4, y: 3 * 8 + 4)
        let dark = image.pixel(x: 5 * 8 + 4, y: 3 * 8 + 4)
        XCTAssertGreaterThan(Int(light.r), 230)
        XCTAssertLessThan(Int(dark.r), 70)
        // And the formula itself.
        cmyk = [200, 100, 50, 128]
        cmyk.withUnsafeMutableBufferPointer { JPEGDecoder.convertCMYKToRGBA($0.baseAddress!, count: 4, inverted: true) }
        XCTAssertEqual(cmyk, [100, 50, 25, 255])
    }

    /// An sRGB profile (Little CMS's own, embedded in JPEG, PNG and GIF),
    /// a PNG `sRGB` chunk and a `gAMA` of 1/2.2 alone: the pixels of the
    /// same file untagged, byte for byte.
    func testSRGBTaggedDecodesAsUntagged() throws {
        let profile = try sRGB()
        let jpeg = try JPEGEncoder(quality: 95).encode(chart)
        let gif = try gif(chart)
        let plainPNG = ColourFixtures.png(chart, chunks: [])
        let cases: [(String, Data, Data)] = [
            ("jpeg", ColourFixtures.jpeg(jpeg, profile: profile), jpeg),
            ("png iCCP", ColourFixtures.png(chart, chunks: [("iCCP", ColourFixtures.iCCPPayload(profile))]), plainPNG),
            ("png sRGB", ColourFixtures.png(chart, chunks: [("sRGB", Data([0]))]), plainPNG),
            ("png gAMA 45455", ColourFixtures.png(chart, chunks: [("gAMA", Data([0, 0, 0xB1, 0x8F]))]), plainPNG),
            ("gif", ColourFixtures.gif(gif, profile: profile), gif),
        ]
        for (name, tagged, untagged) in cases {
            XCTAssertEqual(try decode(tagged).pixels, try decode(untagged).pixels, name)
            let info = try XCTUnwrap(ImageFileProperties(data: tagged)?.colorProfile, name)
            XCTAssertTrue(info.isSRGB, name)
            XCTAssertNil(info.warning, name)
        }
        let info = ImageFileProperties(data: cases[0].1)?.colorProfile
        XCTAssertEqual(info?.description, "sRGB IEC61966-2.1")
        XCTAssertEqual(info?.colorSpace, .rgb)
        XCTAssertEqual(info?.source, .iccProfile)
        XCTAssertEqual(info?.byteCount, profile.count)
    }

    // MARK: - Conversion

    /// Display P3 numbers to sRGB, by the matrices (both D65, so Little
    /// CMS's adaptation to D50 and back cancels out), clipped to sRGB.
    static func p3ToSRGB(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> (UInt8, UInt8, UInt8) {
        func linear(_ v: UInt8) -> Double {
            let c = Double(v) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        func encode(_ v: Double) -> UInt8 {
            let c = min(1, max(0, v))
            let e = c <= 0.0031308 ? c * 12.92 : 1.055 * pow(c, 1 / 2.4) - 0.055
            return UInt8((e * 255).rounded())
        }
        let (pr, pg, pb) = (linear(r), linear(g), linear(b))
        // Linear P3 to linear sRGB (the product of P3's RGB-to-XYZ and sRGB's inverse).
        let sr = 1.2249401 * pr - 0.2249404 * pg + 0.0000001 * pb
        let sg = -0.0420569 * pr + 1.0420571 * pg - 0.0000001 * pb
        let sb = -0.0196376 * pr - 0.0786361 * pg + 1.0982735 * pb
        return (encode(sr), encode(sg), encode(sb))
    }

    /// A P3-tagged PNG (lossless) decodes to the sRGB the matrices give,
    /// within 0.5 ΔE00 at every pixel; the same file with conversion off
    /// keeps its P3 numbers.
    func testDisplayP3PNGMatchesTheMatrices() throws {
        let tagged = ColourFixtures.png(chart, chunks: [("iCCP", ColourFixtures.iCCPPayload(try p3()))])
        let image = try decode(tagged)
        var expected = Data()
        for y in 0..<chart.height {
            for x in 0..<chart.width {
                let p = chart.pixel(x: x, y: y)
                let s = Self.p3ToSRGB(p.r, p.g, p.b)
                expected += [s.0, s.1, s.2]
            }
        }
        let difference = try XCTUnwrap(ColourDifference.compare(rgba: image.pixels, rgb: expected))
        XCTAssertLessThan(difference.max, 0.5, "mean \(difference.mean)")
        XCTAssertNotEqual(image.pixels, chart.pixels)
        XCTAssertEqual(try decode(tagged, off).pixels, chart.pixels)
        let info = try XCTUnwrap(ImageFileProperties(data: tagged)?.colorProfile)
        XCTAssertEqual(info.description, "Display P3")
        XCTAssertEqual(info.colorSpace, .rgb)
        XCTAssertFalse(info.isSRGB)
        XCTAssertNil(info.warning)
    }

    /// A GIF's palette is converted: the same colours as the PNG.
    func testDisplayP3GIFConvertsItsPalette() throws {
        let gif = ColourFixtures.gif(try gif(chart), profile: try p3())
        let png = ColourFixtures.png(chart, chunks: [("iCCP", ColourFixtures.iCCPPayload(try p3()))])
        XCTAssertEqual(try decode(gif).pixels, try decode(png).pixels)
        XCTAssertEqual(ImageFileProperties(data: gif)?.colorProfile?.description, "Display P3")
    }

    /// The profile split over APP2 segments (here 200 bytes each, written in
    /// reverse order) is joined by sequence number.
    func testJPEGProfileJoinedFromSegments() throws {
        let profile = try p3()
        let jpeg = try JPEGEncoder(quality: 95).encode(chart)
        let whole = ColourFixtures.jpeg(jpeg, profile: profile)
        let count = (profile.count + 199) / 200
        XCTAssertGreaterThan(count, 2)
        var reversed = Data()
        for index in (0..<count).reversed() {
            let part = profile.subdata(in: index * 200..<min(profile.count, index * 200 + 200))
            reversed += ColourFixtures.app2Segments(part, count: count, sequences: [index + 1])
        }
        let split = ColourFixtures.jpeg(jpeg, inserting: reversed)
        XCTAssertEqual(try decode(split).pixels, try decode(whole).pixels)
        XCTAssertNotEqual(try decode(split).pixels, try decode(jpeg).pixels)
        XCTAssertEqual(ImageFileProperties(data: split)?.colorProfile?.byteCount, profile.count)
    }

    /// The loader's header probe on the transport thread reads a prefix
    /// without judging its profile (that builds a transform); the same
    /// prefix read again, off that thread, has it.
    func testTheTransportThreadsProbeLeavesTheProfileForLater() throws {
        let jpeg = ColourFixtures.jpeg(try JPEGEncoder(quality: 95).encode(chart), profile: try p3())
        let fast = try XCTUnwrap(ImageFileProperties(prefix: jpeg, readsColorProfile: false))
        let full = try XCTUnwrap(ImageFileProperties(prefix: jpeg))
        XCTAssertNil(fast.colorProfile)
        XCTAssertEqual(full.colorProfile?.description, "Display P3")
        XCTAssertEqual(full.colorProfile?.isSRGB, false)
        XCTAssertEqual(fast.pixelSize, full.pixelSize)
        XCTAssertEqual(fast.jpeg, full.jpeg)
    }

    /// A grey profile with a 1.8 curve: grey level v shows as the sRGB grey
    /// of the same luminance, (v/255)^1.8.
    func testGreyProfile() throws {
        let profile = try XCTUnwrap(ColorProfiles.grayProfile(gamma: 1.8, description: "Grey 1.8"))
        let levels: [UInt16] = (0..<64).map { UInt16($0 * 4) }
        let png = RawPNGWriter.encode(
            width: 64, height: 1, colorType: .gray, bitDepth: 8, samples: levels,
            chunks: [("iCCP", ColourFixtures.iCCPPayload(profile))])
        let image = try decode(png)
        for (x, level) in levels.enumerated() {
            let y = pow(Double(level) / 255, 1.8)
            let e = y <= 0.0031308 ? y * 12.92 : 1.055 * pow(y, 1 / 2.4) - 0.055
            let pixel = image.pixel(x: x, y: 0)
            XCTAssertEqual(Double(pixel.r), e * 255, accuracy: 1.5, "level \(level)")
            XCTAssertEqual(pixel.r, pixel.g)
            XCTAssertEqual(pixel.g, pixel.b)
        }
        XCTAssertEqual(ImageFileProperties(data: png)?.colorProfile?.colorSpace, .gray)
    }

    /// A DCT-scaled decode (1/2: the quality path's margin) converts too:
    /// each patch's centre is the full-size decode's within 1 ΔE00.
    func testScaledJPEGIsConverted() throws {
        let big = ColourFixtures.chart(patch: 64)
        let tagged = ColourFixtures.jpeg(try JPEGEncoder(quality: 98).encode(big), profile: try p3())
        let full = try decode(tagged)
        let small = try decode(tagged, DecodingOptions(targetSize: PixelSize(width: 96, height: 64)))
        XCTAssertEqual(small.decodeInfo.scaleDenominator, 2)
        for patch in 0..<24 {
            let a = full.pixel(x: (patch % 6) * 64 + 32, y: (patch / 6) * 64 + 32)
            let b = small.pixel(x: (patch % 6) * 16 + 8, y: (patch / 6) * 16 + 8)
            let d = ColourDifference.ciede2000(
                ColourDifference.lab(r: a.r, g: a.g, b: a.b), ColourDifference.lab(r: b.r, g: b.g, b: b.b))
            XCTAssertLessThan(d, 1, "patch \(patch)")
        }
        let untagged = try decode(try JPEGEncoder(quality: 98).encode(big), DecodingOptions(targetSize: PixelSize(width: 96, height: 64)))
        XCTAssertNotEqual(untagged.pixels, small.pixels)
    }

    /// The demo's P3 photo: colour-managed, it shows as its sRGB original
    /// (within JPEG's loss); unmanaged, visibly duller.
    func testDemoP3PhotoIsShownRight() throws {
        let original = SyntheticImage.photo(width: 160, height: 120, seed: 5)
        let p3 = try XCTUnwrap(ColourFixtures.displayP3JPEG(original, quality: 95))
        let plain = try JPEGEncoder(quality: 95).encode(original)
        var rgb = Data()
        for y in 0..<original.height {
            for x in 0..<original.width {
                let p = original.pixel(x: x, y: y)
                rgb += [p.r, p.g, p.b]
            }
        }
        let managed = try XCTUnwrap(ColourDifference.compare(rgba: try decode(p3).pixels, rgb: rgb))
        let baseline = try XCTUnwrap(ColourDifference.compare(rgba: try decode(plain).pixels, rgb: rgb))
        let unmanaged = try XCTUnwrap(ColourDifference.compare(rgba: try decode(p3, off).pixels, rgb: rgb))
        XCTAssertLessThan(managed.mean, baseline.mean + 0.5, "managed \(managed), plain JPEG \(baseline)")
        XCTAssertGreaterThan(unmanaged.mean, managed.mean + 1, "unmanaged \(unmanaged)")
    }

    // MARK: - Malformed

    /// Damaged or mismatched profiles: the image decodes as the untagged
    /// file does, and the properties say why.
    func testMalformedProfilesDecodeUnconverted() throws {
        let profile = try p3()
        let grey = try XCTUnwrap(ColorProfiles.grayProfile(gamma: 1.8, description: "Grey 1.8"))
        let jpeg = try JPEGEncoder(quality: 95).encode(chart)
        let png = ColourFixtures.png(chart, chunks: [])
        let garbage = Data((0..<600).map { UInt8(($0 * 37 + 11) % 256) })
        var zlibCut = ColourFixtures.iCCPPayload(profile)
        zlibCut = zlibCut.prefix(zlibCut.count - 30)
        let cases: [(String, Data, Data)] = [
            ("truncated", ColourFixtures.jpeg(jpeg, profile: profile.prefix(200)), jpeg),
            ("garbage", ColourFixtures.jpeg(jpeg, profile: garbage), jpeg),
            ("tiny", ColourFixtures.jpeg(jpeg, profile: Data([1, 2, 3])), jpeg),
            ("missing segment", ColourFixtures.jpeg(jpeg, inserting: ColourFixtures.app2Segments(profile, count: 2)), jpeg),
            (
                "repeated segment",
                ColourFixtures.jpeg(jpeg, inserting: ColourFixtures.app2Segments(profile, capacity: 300, count: 2, sequences: [1, 1])),
                jpeg
            ),
            ("segment 0 of 0", ColourFixtures.jpeg(jpeg, inserting: ColourFixtures.app2Segments(profile, count: 0, sequences: [0])), jpeg),
            ("segment 3 of 2", ColourFixtures.jpeg(jpeg, inserting: ColourFixtures.app2Segments(profile, count: 2, sequences: [3])), jpeg),
            (
                "no sequence bytes",
                ColourFixtures.jpeg(jpeg, inserting: Data([0xFF, 0xE2, 0, 14]) + Data("ICC_PROFILE".utf8) + [0]), jpeg
            ),
            ("grey profile on RGB", ColourFixtures.jpeg(jpeg, profile: grey), jpeg),
            ("iCCP cut zlib", ColourFixtures.png(chart, chunks: [("iCCP", zlibCut)]), png),
            ("iCCP no name", ColourFixtures.png(chart, chunks: [("iCCP", Data([0, 0, 0x78, 0x9C]))]), png),
            ("iCCP method 1", ColourFixtures.png(chart, chunks: [("iCCP", Data("ICC".utf8) + [0, 1, 0x78, 0x9C])]), png),
            ("iCCP garbage", ColourFixtures.png(chart, chunks: [("iCCP", ColourFixtures.iCCPPayload(garbage))]), png),
        ]
        for (name, tagged, untagged) in cases {
            XCTAssertEqual(try decode(tagged).pixels, try decode(untagged).pixels, name)
            let info = try XCTUnwrap(ImageFileProperties(data: tagged)?.colorProfile, name)
            XCTAssertNotNil(info.warning, name)
            XCTAssertFalse(info.isSRGB, name)
        }
    }

    /// An `iCCP` that inflates past the limit is refused (a zlib bomb).
    func testICCPInflateLimit() {
        let zeros = Data(count: ICCPayload.maxProfileSize + 1)
        let payload = ColourFixtures.iCCPPayload(zeros)
        guard case .malformed(let reason) = ICCPayload.pngProfile(payload) else { return XCTFail("inflated") }
        XCTAssertTrue(reason.contains("more than"), reason)
        guard case .icc(let small) = ICCPayload.pngProfile(ColourFixtures.iCCPPayload(Data(count: 1000))) else {
            return XCTFail("not inflated")
        }
        XCTAssertEqual(small.count, 1000)
    }

    // MARK: - Options, keys, cache

    func testColourManagementIsPartOfTheCacheKey() throws {
        let url = URL(string: "https://example.com/a.jpg")!
        let plain = ImageRequest(url: url)
        XCTAssertEqual(plain.cacheKey.processing, "")
        var unconverted = plain
        unconverted.colorManagement = .off
        XCTAssertEqual(unconverted.cacheKey.processing, "colour-off")
        XCTAssertEqual(unconverted.options.colorManagement, .off)
        XCTAssertNotEqual(unconverted.cacheKey, plain.cacheKey)
        XCTAssertNotEqual(unconverted, plain)

        var sized = ImageRequest(url: url, targetSize: PixelSize(width: 64, height: 64))
        sized.colorManagement = ColorManagement(intent: .perceptual, usesBlackPointCompensation: true)
        XCTAssertEqual(sized.cacheKey.processing, "64x64-fill-hq-colour-perceptual-bpc")
        sized.colorManagement = nil
        XCTAssertEqual(sized.cacheKey.processing, "64x64-fill-hq")
        XCTAssertEqual(ImageCacheKey(url: url, options: DecodingOptions(colorManagement: .off)).processing, "colour-off")

        // A loader's default fills in requests that name none, and only those.
        let off = RequestDefaults(colorManagement: .off, resizeQuality: .high)
        XCTAssertEqual(plain.resolving(off).cacheKey.processing, "colour-off")
        XCTAssertEqual(plain.resolving(RequestDefaults(colorManagement: .default, resizeQuality: .high)).cacheKey, plain.cacheKey)
        var own = plain
        own.colorManagement = .default
        XCTAssertEqual(own.resolving(off).cacheKey.processing, "")
    }

    /// A loader with conversion off and one with it on, sharing a memory
    /// cache: each finds only its own image.
    func testLoadersSharingACacheKeepTheirImagesApart() throws {
        let cache = ImageCache()
        var configuration = AsyncImageLoader.Configuration(cache: cache, notificationCenter: nil)
        let converting = AsyncImageLoader(configuration: configuration)
        configuration.colorManagement = .off
        let unconverting = AsyncImageLoader(configuration: configuration)
        let url = URL(string: "https://example.com/p3.png")!
        cache[ImageRequest(url: url).cacheKey] = chart
        XCTAssertNotNil(converting.cachedImage(for: ImageRequest(url: url)))
        XCTAssertNil(unconverting.cachedImage(for: ImageRequest(url: url)))
        var explicit = ImageRequest(url: url)
        explicit.colorManagement = .default
        XCTAssertNotNil(unconverting.cachedImage(for: explicit))
    }

    func testTransformsAreCachedAndBounded() throws {
        let cache = ColorTransformCache(capacity: 2)
        let profile = try p3()
        XCTAssertNotNil(cache.outcome(profile: profile, layout: .rgba, management: .default).transform)
        XCTAssertNotNil(cache.outcome(profile: profile, layout: .rgba, management: .default).transform)
        XCTAssertEqual(cache.buildCount, 1)
        // Another intent is another transform.
        _ = cache.outcome(profile: profile, layout: .rgba, management: ColorManagement(intent: .perceptual))
        XCTAssertEqual(cache.buildCount, 2)
        guard case .identity = cache.outcome(profile: try sRGB(), layout: .rgba, management: .default) else {
            return XCTFail("sRGB is not an identity")
        }
        XCTAssertEqual(cache.count, 2)
        guard case .unusable = cache.outcome(profile: Data(count: 300), layout: .rgba, management: .default) else {
            return XCTFail("zeros made a transform")
        }
        XCTAssertEqual(cache.count, 2)
        // Same hash input length, other bytes: not confused.
        var other = profile
        other[other.count - 1] ^= 0xFF
        _ = cache.outcome(profile: other, layout: .rgba, management: .default)
        XCTAssertEqual(cache.count, 2)
    }

    /// Many threads decode tagged files at once through the shared cache.
    func testConcurrentConversion() throws {
        let tagged = ColourFixtures.png(chart, chunks: [("iCCP", ColourFixtures.iCCPPayload(try p3()))])
        let expected = try decode(tagged).pixels
        let mismatches = Counter()
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if (try? ImageDecoder().decode(tagged))?.pixels != expected { _ = mismatches.increment() }
        }
        XCTAssertEqual(mismatches.value, 0)
    }
}
