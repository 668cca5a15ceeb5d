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
}
