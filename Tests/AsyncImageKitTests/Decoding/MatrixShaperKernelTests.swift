@testable import AsyncImageKit
import CLCMS2
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The colour fast path (``MatrixShaperKernel``) against Little CMS's own
/// transform of the same pixels, profile by profile: each primaries set
/// (Display P3, Adobe RGB, ProPhoto with a D50 white, Rec. 2020, Rec. 709)
/// and each curve type (parametric, pure gamma, a 16-bit table), the
/// Ghostscript profiles Debian ships when present, and PNG chunks. Over
/// every combination of 52 levels per channel:
///
/// - against Little CMS in double precision, rounded to bytes: mean ΔE00
///   at most 0.2, and a max no larger than Little CMS's own 8-bit
///   transform's against the same reference (nor than 1.0 where that one
///   stays within it);
/// - against Little CMS's 8-bit transform (what the decoders ran before):
///   no channel more than one level apart, mean ΔE00 at most 0.2.
///
/// Why the max is held to Little CMS's own: on a grid this dense some
/// colours land within a hundredth of a level of a rounding tie, and a
/// one-level step of a dark saturated colour is ΔE00 1.0-1.5 by itself.
/// Little CMS's 8-bit path (1.14 fixed point) rounds more of those the
/// other way than the fast path does (Display P3: 152 colours over ΔE00 0.5
/// and max 1.50, against 64 and 1.07). The files' bound (mean 0.2, max 1.0)
/// is held in `ColourConversionTests`.
///
/// Which profiles and settings take the fast path, and which stay on
/// Little CMS, is held too.
final class MatrixShaperKernelTests: XCTestCase {
    /// A matrix-shaper profile with `curve` on all three channels.
    private func profile(_ c: [Double], curve: OpaquePointer) throws -> Data {
        var white = cmsCIExyY(x: c[0], y: c[1], Y: 1)
        var primaries = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: c[2], y: c[3], Y: 1), Green: cmsCIExyY(x: c[4], y: c[5], Y: 1),
            Blue: cmsCIExyY(x: c[6], y: c[7], Y: 1))
        var curves: [OpaquePointer?] = [curve, curve, curve]
        let handle = try XCTUnwrap(cmsCreateRGBProfile(&white, &primaries, &curves))
        defer { cmsCloseProfile(handle) }
        var size: UInt32 = 0
        XCTAssertNotEqual(cmsSaveProfileToMem(handle, nil, &size), 0)
        var bytes = [UInt8](repeating: 0, count: Int(size))
        XCTAssertNotEqual(cmsSaveProfileToMem(handle, &bytes, &size), 0)
        return Data(bytes)
    }

    private static let p3 = [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060]
    private static let adobe = [0.3127, 0.3290, 0.64, 0.33, 0.21, 0.71, 0.15, 0.06]
    private static let proPhoto = [0.3457, 0.3585, 0.7347, 0.2653, 0.1596, 0.8404, 0.0366, 0.0001]
    private static let rec2020 = [0.3127, 0.3290, 0.708, 0.292, 0.170, 0.797, 0.131, 0.046]
    private static let rec709 = [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]

    private func parametric(_ type: Int32, _ parameters: [Double]) throws -> OpaquePointer {
        var parameters = parameters
        return try XCTUnwrap(cmsBuildParametricToneCurve(nil, type, &parameters))
    }

    /// The test profiles: name and bytes.
    private func profiles() throws -> [(String, Data)] {
        let sRGBCurve = try parametric(4, [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045])
        let bt709 = try parametric(4, [1 / 0.45, 1 / 1.099, 0.099 / 1.099, 1 / 4.5, 0.081])
        let gamma22 = try XCTUnwrap(cmsBuildGamma(nil, 563.0 / 256))
        let gamma18 = try XCTUnwrap(cmsBuildGamma(nil, 1.8))
        let table = (0..<1024).map { UInt16((pow(Double($0) / 1023, 2.4) * 65535).rounded()) }
        let tabulated = try XCTUnwrap(table.withUnsafeBufferPointer { cmsBuildTabulatedToneCurve16(nil, 1024, $0.baseAddress) })
        defer { [sRGBCurve, bt709, gamma22, gamma18, tabulated].forEach { cmsFreeToneCurve($0) } }
        var list: [(String, Data)] = [
            ("Display P3 (parametric)", try profile(Self.p3, curve: sRGBCurve)),
            ("Adobe RGB (gamma 2.2)", try profile(Self.adobe, curve: gamma22)),
            ("ProPhoto, D50 white (gamma 1.8)", try profile(Self.proPhoto, curve: gamma18)),
            ("Rec. 2020 (BT.709 curve)", try profile(Self.rec2020, curve: bt709)),
            ("Rec. 709 (BT.709 curve)", try profile(Self.rec709, curve: bt709)),
            ("Display P3 (16-bit table curve)", try profile(Self.p3, curve: tabulated)),
            ("ColorProfiles.displayP3", try XCTUnwrap(ColorProfiles.displayP3())),
        ]
        for name in ["a98.icc", "rommrgb.icc", "esrgb.icc", "default_rgb.icc"] {
            let url = URL(fileURLWithPath: "/usr/share/color/icc/ghostscript/" + name)
            if let data = try? Data(contentsOf: url) { list.append(("Ghostscript " + name, data)) }
        }
        return list
    }

    /// Every combination of 52 levels per channel (0, 5, ..., 255), opaque.
    private static let grid: [UInt8] = {
        var pixels: [UInt8] = []
        let levels = stride(from: 0, through: 255, by: 5).map { UInt8($0) }
        for r in levels { for g in levels { for b in levels { pixels += [r, g, b, 255] } } }
        return pixels
    }()

    /// Little CMS's transform of `profile` in double precision, rounded to bytes (RGB).
    private func exact(_ profile: Data, intent: ColorRenderingIntent) throws -> Data {
        let source = try XCTUnwrap(LCMS.open(profile))
        defer { cmsCloseProfile(source) }
        let sRGB = try XCTUnwrap(LCMS.makeSRGB())
        defer { cmsCloseProfile(sRGB) }
        let rgbDouble: UInt32 = 0x44_0018  // TYPE_RGB_DBL: FLOAT_SH(1) | COLORSPACE_SH(PT_RGB) | CHANNELS_SH(3) | BYTES_SH(0)
        let transform = try XCTUnwrap(
            cmsCreateTransform(source, rgbDouble, sRGB, rgbDouble, intent.lcmsValue, UInt32(cmsFLAGS_NOCACHE)))
        defer { cmsDeleteTransform(transform) }
        var input: [Double] = []
        for index in stride(from: 0, to: Self.grid.count, by: 4) {
            input += [Double(Self.grid[index]) / 255, Double(Self.grid[index + 1]) / 255, Double(Self.grid[index + 2]) / 255]
        }
        var output = [Double](repeating: 0, count: input.count)
        cmsDoTransform(transform, input, &output, UInt32(input.count / 3))
        return Data(output.map { UInt8(max(0, min(255, ($0 * 255).rounded()))) })
    }

    /// The fast path's ΔE00 against Little CMS in double precision (and
    /// Little CMS's 8-bit transform's), after holding it within a level of
    /// the 8-bit transform.
    private func compare(
        _ transform: ColorTransform, _ profile: Data, intent: ColorRenderingIntent, _ name: String
    ) throws -> (fast: (mean: Double, max: Double), eightBit: (mean: Double, max: Double)) {
        var fast = Self.grid
        var eightBit = Self.grid
        fast.withUnsafeMutableBufferPointer { transform.apply($0.baseAddress!, byteCount: $0.count) }
        eightBit.withUnsafeMutableBufferPointer { transform.apply($0.baseAddress!, byteCount: $0.count, path: .littleCMS) }
        var levels = 0
        for index in fast.indices { levels = max(levels, abs(Int(fast[index]) - Int(eightBit[index]))) }
        XCTAssertLessThanOrEqual(levels, 1, name)
        var rgb = Data()
        for index in stride(from: 0, to: eightBit.count, by: 4) { rgb.append(contentsOf: eightBit[index..<index + 3]) }
        let againstEightBit = try XCTUnwrap(ColourDifference.compare(rgba: Data(fast), rgb: rgb), name)
        XCTAssertLessThanOrEqual(againstEightBit.mean, 0.2, name)
        XCTAssertEqual(fast.enumerated().filter { $0.offset % 4 == 3 }.map(\.element), Array(repeating: 255, count: fast.count / 4), name)
        let reference = try exact(profile, intent: intent)
        return (
            try XCTUnwrap(ColourDifference.compare(rgba: Data(fast), rgb: reference), name),
            try XCTUnwrap(ColourDifference.compare(rgba: Data(eightBit), rgb: reference), name)
        )
    }

    private func converted(_ transform: ColorTransform, _ path: ColorTransform.Path) -> [UInt8] {
        var pixels = Self.grid
        pixels.withUnsafeMutableBufferPointer { transform.apply($0.baseAddress!, byteCount: $0.count, path: path) }
        return pixels
    }

    private func check(_ difference: (fast: (mean: Double, max: Double), eightBit: (mean: Double, max: Double)), _ name: String) {
        XCTAssertLessThanOrEqual(difference.fast.mean, 0.2, name)
        XCTAssertLessThanOrEqual(difference.fast.max, max(1.0, difference.eightBit.max), name)
    }

    func testFastPathMatchesLittleCMS() throws {
        let intents: [ColorRenderingIntent] = [.relativeColorimetric, .perceptual, .saturation]  // relative first
        var table: [String] = []
        for (name, data) in try profiles() {
            var relative: (fast: [UInt8], eightBit: [UInt8])?
            for intent in intents {
                let management = ColorManagement(intent: intent)
                let outcome = ColorTransformCache(capacity: 4).outcome(profile: data, layout: .rgba, management: management)
                if case .identity = outcome { continue }  // an sRGB profile: nothing to convert
                let transform = try XCTUnwrap(outcome.transform, name)
                XCTAssertNotNil(transform.kernel, "\(name), \(intent): no fast path")
                guard let relative else {
                    let difference = try compare(transform, data, intent: intent, "\(name), \(intent)")
                    check(difference, "\(name), \(intent)")
                    table.append(
                        String(
                            format: "%@: fast path mean ΔE00 %.4f, max %.3f; Little CMS 8-bit mean %.4f, max %.3f", name,
                            difference.fast.mean, difference.fast.max, difference.eightBit.mean, difference.eightBit.max))
                    relative = (converted(transform, .fastest), converted(transform, .littleCMS))
                    continue
                }
                // For a matrix-shaper profile the three intents are one transform, in both paths.
                XCTAssertEqual(converted(transform, .fastest), relative.fast, "\(name), \(intent)")
                XCTAssertEqual(converted(transform, .littleCMS), relative.eightBit, "\(name), \(intent)")
            }
        }
        print("Against Little CMS in double precision, rounded to bytes:\n" + table.joined(separator: "\n"))
    }

    /// PNG `gAMA`/`cHRM` chunks (the decoder's own construction) take the fast path too.
    func testPNGChunksTakeTheFastPath() throws {
        let chunks = PNGColorChunks(gamma: 0.45455, chromaticities: Self.p3)
        let transform = try XCTUnwrap(
            ColorTransformCache(capacity: 4).outcome(chunks: chunks, layout: .rgba, management: .default).transform)
        XCTAssertNotNil(transform.kernel)
        let profile = try XCTUnwrap(
            ColorProfiles.matrixProfile(chromaticities: Self.p3, gamma: 1 / 0.45455, description: "chunks"))
        check(try compare(transform, profile, intent: .relativeColorimetric, "chunks"), "chunks")
    }

    /// What stays on Little CMS: absolute colorimetric, black-point
    /// compensation, grey, CMYK layouts.
    func testOtherSettingsStayOnLittleCMS() throws {
        let p3 = try XCTUnwrap(ColorProfiles.displayP3())
        let cache = ColorTransformCache(capacity: 8)
        for management in [
            ColorManagement(intent: .absoluteColorimetric), ColorManagement(usesBlackPointCompensation: true),
        ] {
            let transform = try XCTUnwrap(cache.outcome(profile: p3, layout: .rgba, management: management).transform)
            XCTAssertNil(transform.kernel, "\(management)")
        }
        let grey = try XCTUnwrap(ColorProfiles.grayProfile(gamma: 1.8, description: "grey"))
        let greyTransform = try XCTUnwrap(cache.outcome(profile: grey, layout: .grayInRGBA, management: .default).transform)
        XCTAssertNil(greyTransform.kernel)
    }

    /// Rows with padding: the bytes past each row's pixels are not touched.
    func testStridedRowsKeepTheirPadding() throws {
        let transform = try XCTUnwrap(
            ColorTransformCache(capacity: 2).outcome(profile: try XCTUnwrap(ColorProfiles.displayP3()), layout: .rgba, management: .default)
                .transform)
        let width = 300, height = 3, bytesPerRow = width * 4 + 12
        var pixels = (0..<(bytesPerRow * height)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var reference = pixels
        pixels.withUnsafeMutableBufferPointer {
            transform.apply($0.baseAddress!, width: width, height: height, bytesPerRow: bytesPerRow)
        }
        reference.withUnsafeMutableBufferPointer {
            transform.apply($0.baseAddress!, width: width, height: height, bytesPerRow: bytesPerRow, path: .littleCMS)
        }
        for row in 0..<height {
            let padding = row * bytesPerRow + width * 4..<(row + 1) * bytesPerRow
            XCTAssertEqual(Array(pixels[padding]), Array(reference[padding]))
            for index in row * bytesPerRow..<row * bytesPerRow + width * 4 {
                XCTAssertLessThanOrEqual(abs(Int(pixels[index]) - Int(reference[index])), 1)
            }
        }
    }

    /// A tagged RGB JPEG is converted row by row as libjpeg hands the rows
    /// out (the row sink): the same bytes as converting the whole decoded
    /// image afterwards, at full size and DCT-scaled.
    func testJPEGRowsConvertedAsTheyComeMatchAWholeImagePass() throws {
        let p3 = try XCTUnwrap(ColorProfiles.displayP3())
        let photo = SyntheticImage.photo(width: 640, height: 480, seed: 41)
        let tagged = ColourFixtures.jpeg(try JPEGEncoder(quality: 92).encode(photo), profile: p3)
        let transform = try XCTUnwrap(
            ColorTransformCache.shared.outcome(profile: p3, layout: .rgba, management: .default).transform)
        XCTAssertNotNil(transform.kernel)
        // 160x120 with `.fast`: libjpeg's 1/4 scale is the size asked for, so no resize follows.
        for target in [nil, PixelSize(width: 160, height: 120)] {
            var off = DecodingOptions(colorManagement: .off)
            var on = DecodingOptions()
            off.targetSize = target
            on.targetSize = target
            off.resizeQuality = .fast
            on.resizeQuality = .fast
            let converted = try JPEGDecoder().decode(tagged, options: on)
            let plain = try JPEGDecoder().decode(tagged, options: off)
            XCTAssertEqual(converted.size, target ?? photo.size)
            XCTAssertEqual(converted.size, plain.size)
            XCTAssertEqual(converted.bytesPerRow, plain.bytesPerRow)
            var pixels = [UInt8](plain.pixels)
            pixels.withUnsafeMutableBufferPointer {
                transform.apply($0.baseAddress!, width: plain.width, height: plain.height, bytesPerRow: plain.bytesPerRow)
            }
            XCTAssertEqual(converted.pixels, Data(pixels), "target \(String(describing: target))")
            XCTAssertNotEqual(converted.pixels, plain.pixels)
        }
    }

    /// A tagged PNG's rows are converted as libpng hands them out (the row
    /// sink; an interlaced file's only once its last pass made them final):
    /// the same bytes as converting the whole decoded image afterwards, on
    /// the fast path (Display P3, RGB) and on Little CMS (a grey file with a
    /// grey gamma profile).
    func testPNGRowsConvertedAsTheyComeMatchAWholeImagePass() throws {
        let p3 = try XCTUnwrap(ColorProfiles.displayP3())
        let photo = SyntheticImage.photo(width: 203, height: 77, seed: 44)
        var rgba: [UInt16] = []
        var grey: [UInt16] = []
        for y in 0..<photo.height {
            for x in 0..<photo.width {
                let pixel = photo.pixel(x: x, y: y)
                rgba += [UInt16(pixel.r), UInt16(pixel.g), UInt16(pixel.b), UInt16(pixel.a)]
                grey.append(UInt16(pixel.g))
            }
        }
        let greyProfile = try XCTUnwrap(ColorProfiles.grayProfile(gamma: 1.8, description: "grey"))
        for interlaced in [false, true] {
            let files: [(String, Data, Data, ColorPixelLayout)] = [
                (
                    "P3 RGBA",
                    RawPNGWriter.encode(
                        width: photo.width, height: photo.height, colorType: .rgba, bitDepth: 8, samples: rgba,
                        interlaced: interlaced, chunks: [("iCCP", ColourFixtures.iCCPPayload(p3))]),
                    p3, .rgba
                ),
                (
                    "grey gamma 1.8",
                    RawPNGWriter.encode(
                        width: photo.width, height: photo.height, colorType: .gray, bitDepth: 8, samples: grey,
                        interlaced: interlaced, chunks: [("iCCP", ColourFixtures.iCCPPayload(greyProfile))]),
                    greyProfile, .grayInRGBA
                ),
            ]
            for (name, file, profile, layout) in files {
                let label = "\(name), interlaced \(interlaced)"
                let transform = try XCTUnwrap(
                    ColorTransformCache.shared.outcome(profile: profile, layout: layout, management: .default).transform,
                    label)
                XCTAssertEqual(transform.kernel != nil, layout == .rgba, label)
                let converted = try PNGDecoder().decode(file, options: DecodingOptions())
                let plain = try PNGDecoder().decode(file, options: DecodingOptions(colorManagement: .off))
                var pixels = [UInt8](plain.pixels)
                pixels.withUnsafeMutableBufferPointer {
                    transform.apply($0.baseAddress!, width: plain.width, height: plain.height, bytesPerRow: plain.bytesPerRow)
                }
                XCTAssertEqual(converted.pixels, Data(pixels), label)
                XCTAssertNotEqual(converted.pixels, plain.pixels, label)
            }
        }
    }

    /// A display-size decode filtered in linear light (``ResizeQuality/high``)
    /// runs a matrix-shaper transform inside the resize: the resampler reads
    /// the source's values through the profile's curves and matrix (clipped
    /// pixel by pixel, as a transform clips), and only the small image is
    /// encoded to sRGB bytes. JPEG and PNG, Display P3 and ProPhoto, two
    /// sizes with no DCT scale or box (so that only the colour differs):
    ///
    /// - against the reference (the full decode converted by Little
    ///   CMS's 8-bit transform, then the same resampler): within two levels;
    /// - against that reference computed exactly (Little CMS in doubles, the
    ///   resampler's weights in doubles): mean ΔE00 at most 0.2 and below
    ///   the 8-bit reference's own, max no larger than its max (or 1.0).
    ///   Measured: mean 0.0015-0.0023, max 0.87-1.03 (one level of a dark
    ///   saturated red), where the 8-bit reference is 0.09-0.20 and 1.67-1.99:
    ///   rounding to bytes between the transform and the filter is what the
    ///   fused path leaves out.
    ///
    /// Where no resize follows, the image is converted as at full size; with
    /// ``ResizeQuality/fast`` (an average of sRGB values) it is converted
    /// before the resize, as before.
    func testDisplaySizeConvertsOnTheSmallImage() throws {
        let photo = SyntheticImage.photo(width: 480, height: 360, seed: 45)
        for (profileName, profile) in [
            ("Display P3", try XCTUnwrap(ColorProfiles.displayP3())),
            ("ProPhoto", try self.profile(Self.proPhoto, curve: try parametric(1, [1.8]))),
        ] {
            let transform = try XCTUnwrap(
                ColorTransformCache.shared.outcome(profile: profile, layout: .rgba, management: .default).transform)
            XCTAssertNotNil(transform.kernel, profileName)
            let files = [
                ("JPEG", ColourFixtures.jpeg(try JPEGEncoder(quality: 92).encode(photo), profile: profile)),
                ("PNG", ColourFixtures.png(photo, chunks: [("iCCP", ColourFixtures.iCCPPayload(profile))])),
            ]
            for (format, file) in files {
                let plain = try ImageDecoder().decode(file, options: DecodingOptions(colorManagement: .off))
                var converted = [UInt8](plain.pixels)
                converted.withUnsafeMutableBufferPointer {
                    transform.apply(
                        $0.baseAddress!, width: plain.width, height: plain.height, bytesPerRow: plain.bytesPerRow,
                        path: .littleCMS)
                }
                let reference = Image(
                    width: plain.width, height: plain.height, bytesPerRow: plain.bytesPerRow,
                    frames: [ImageFrame(pixels: Data(converted), duration: 0)], format: plain.format, opacity: .opaque)
                // 240x180 and 400x300 shrink with no DCT scale (libjpeg's scale must cover twice the target).
                for side in [240, 400] {
                    let label = "\(profileName) \(format) \(side)"
                    var options = DecodingOptions()
                    options.targetSize = PixelSize(width: side, height: side * 3 / 4)
                    options.resizeQuality = .high
                    let small = try ImageDecoder().decode(file, options: options)
                    XCTAssertEqual(small.size, options.targetSize, label)
                    XCTAssertEqual(small.decodeInfo.scaleDenominator, 1, label)
                    XCTAssert(ShrinkOnLoad.boxFactors(source: plain.size, final: small.size, quality: .high) == (1, 1), label)
                    let expected = try ImageResizer.resize(reference, to: small.size, quality: .high)
                    // Within two levels of the 8-bit reference (which rounds to bytes
                    // twice, before and after the filter); against the exact one,
                    // closer on average than it, and no farther at worst.
                    let levels = ImageComparison.maxColourDifference(small, expected)
                    XCTAssertLessThanOrEqual(levels, 2, label)
                    let exact = try exactResize(plain, profile: profile, to: small.size)
                    let fused = ImageComparison.ciede2000(small, rgb: exact)
                    let eightBit = ImageComparison.ciede2000(expected, rgb: exact)
                    XCTAssertLessThanOrEqual(fused.mean, 0.2, label)
                    XCTAssertLessThanOrEqual(fused.mean, eightBit.mean, label)
                    XCTAssertLessThanOrEqual(fused.max, max(1.0, eightBit.max), label)
                    print(
                        "display size \(label): against the exact reference mean ΔE00 \(fused.mean), max \(fused.max);"
                            + " 8-bit reference \(eightBit.mean), \(eightBit.max); \(levels) level(s) from it")
                    // Not the sRGB reading of the same values: the transform ran.
                    var untransformed = DecodingOptions(colorManagement: .off)
                    untransformed.targetSize = options.targetSize
                    let naive = try ImageDecoder().decode(file, options: untransformed)
                    XCTAssertNotEqual(naive.pixels, small.pixels, label)

                }
                // 80x60: a PNG goes through a box first (blocks averaged in the source's linear light,
                // the matrix and clipping on the reduced pixels, so an
                // out-of-gamut colour is clipped after its block's average):
                // against the 8-bit reference made from the same decode (JPEG:
                // libjpeg's 1/2 scale, as the display-size decode takes).
                do {
                    let label = "\(profileName) \(format) 80 (box)"
                    var options = DecodingOptions()
                    options.targetSize = PixelSize(width: 80, height: 60)
                    options.resizeQuality = .high
                    let small = try ImageDecoder().decode(file, options: options)
                    var baseOptions = DecodingOptions(colorManagement: .off)
                    if format == "JPEG" {
                        baseOptions.targetSize = PixelSize(width: 240, height: 180)
                        baseOptions.resizeQuality = .fast
                    }
                    let base = try ImageDecoder().decode(file, options: baseOptions)
                    XCTAssertEqual(base.decodeInfo.scaleDenominator, small.decodeInfo.scaleDenominator, label)
                    var pixels = [UInt8](base.pixels)
                    pixels.withUnsafeMutableBufferPointer {
                        transform.apply(
                            $0.baseAddress!, width: base.width, height: base.height, bytesPerRow: base.bytesPerRow,
                            path: .littleCMS)
                    }
                    let boxed = ShrinkOnLoad.boxFactors(source: base.size, final: small.size, quality: .high)
                    // (libjpeg's scale leaves no box for the JPEG: its pixels are fused without one.)
                    XCTAssertEqual(boxed.x > 1, format == "PNG", label)
                    let expected = try ImageResizer.resize(
                        Image(
                            width: base.width, height: base.height, bytesPerRow: base.bytesPerRow,
                            frames: [ImageFrame(pixels: Data(pixels), duration: 0)], opacity: .opaque),
                        to: small.size, quality: .high)
                    let levels = ImageComparison.maxColourDifference(small, expected)
                    let difference = ImageComparison.ciede2000(small, expected)
                    print("display size \(label): \(levels) level(s), mean ΔE00 \(difference.mean), max \(difference.max)")
                    XCTAssertLessThanOrEqual(difference.mean, 0.2, label)
                    XCTAssertLessThanOrEqual(difference.max, 2.0, label)
                }
                // No resize after all (the target is the decoded size): converted as at full size.
                var same = DecodingOptions()
                same.targetSize = photo.size
                same.resizeQuality = .high
                let whole = try ImageDecoder().decode(file, options: same)
                let full = try ImageDecoder().decode(file, options: DecodingOptions())
                XCTAssertEqual(whole.pixels, full.pixels, "\(profileName) \(format) unresized")
                // `.fast` averages sRGB values: converted first, then averaged, as before.
                var fast = DecodingOptions()
                fast.targetSize = PixelSize(width: 400, height: 300)
                fast.resizeQuality = .fast
                let averaged = try ImageDecoder().decode(file, options: fast)
                XCTAssertEqual(averaged.decodeInfo.scaleDenominator, 1)
                XCTAssertEqual(averaged.pixels, try ImageResizer.resize(full, to: averaged.size).pixels, "\(profileName) \(format) fast")
            }
        }
    }

    /// The display-size reference in double precision: every decoded pixel
    /// through Little CMS in doubles, clipped to 0...1, to linear light by
    /// the sRGB curve, filtered with the resampler's own Lanczos3 weights in
    /// doubles, then encoded to the nearest byte (RGB). Only for a resize
    /// with no box before the filter.
    private func exactResize(_ plain: Image, profile: Data, to size: PixelSize) throws -> Data {
        let source = try XCTUnwrap(LCMS.open(profile))
        defer { cmsCloseProfile(source) }
        let sRGB = try XCTUnwrap(LCMS.makeSRGB())
        defer { cmsCloseProfile(sRGB) }
        let rgbDouble: UInt32 = 0x44_0018  // TYPE_RGB_DBL
        let transform = try XCTUnwrap(
            cmsCreateTransform(source, rgbDouble, sRGB, rgbDouble, UInt32(INTENT_RELATIVE_COLORIMETRIC), UInt32(cmsFLAGS_NOCACHE)))
        defer { cmsDeleteTransform(transform) }
        let (width, height) = (plain.width, plain.height)
        let input = ImageComparison.rgb(plain).map { Double($0) / 255 }
        var linear = [Double](repeating: 0, count: input.count)
        cmsDoTransform(transform, input, &linear, UInt32(width * height))
        linear = linear.map { LinearLight.toLinear(min(1, max(0, $0))) }
        let horizontal = ImageResizer.Weights(
            source: width, destination: size.width, kernel: ImageResizer.Weights.lanczos3, support: 3)
        let vertical = ImageResizer.Weights(
            source: height, destination: size.height, kernel: ImageResizer.Weights.lanczos3, support: 3)
        var rows = [Double](repeating: 0, count: height * size.width * 3)
        for y in 0..<height {
            for x in 0..<size.width {
                for k in 0..<horizontal.taps {
                    let weight = Double(horizontal.values[x * horizontal.taps + k])
                    let from = (y * width + horizontal.start[x] + k) * 3
                    for c in 0..<3 { rows[(y * size.width + x) * 3 + c] += weight * linear[from + c] }
                }
            }
        }
        var out = Data(count: size.width * size.height * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                for c in 0..<3 {
                    var sum = 0.0
                    for k in 0..<vertical.taps {
                        sum += Double(vertical.values[y * vertical.taps + k])
                            * rows[((vertical.start[y] + k) * size.width + x) * 3 + c]
                    }
                    out[(y * size.width + x) * 3 + c] = UInt8((LinearLight.toSRGB(min(1, max(0, sum))) * 255).rounded())
                }
            }
        }
        return out
    }

}
