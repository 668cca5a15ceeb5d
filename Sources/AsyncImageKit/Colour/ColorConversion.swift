import CLCMS2
import Foundation

/// How a decoder's pixels are laid out when they are converted: 4 bytes a
/// pixel in every case, converted in place.
enum ColorPixelLayout: Hashable, Sendable {
    /// RGBA; the alpha byte is left as it is.
    case rgba
    /// Grey expanded to RGBA (R = G = B, as libjpeg and libpng give it):
    /// the first byte is read, RGB written, alpha left as it is.
    case grayInRGBA
    /// CMYK from libjpeg (0 = no ink); written as opaque RGBA.
    case cmyk
    /// Adobe APP14 CMYK (255 = no ink); written as opaque RGBA.
    case cmykInverted

    /// The profile colour space these pixels need.
    var space: ColorProfileInfo.ColorSpace {
        switch self {
        case .rgba: return .rgb
        case .grayInRGBA: return .gray
        case .cmyk, .cmykInverted: return .cmyk
        }
    }

    var isCMYK: Bool { space == .cmyk }

    /// The layout of pixels of a file's colour type, `nil` for one no decoder produces.
    init?(_ colorType: ImageColorType, adobeInverted: Bool = false) {
        switch colorType {
        case .grayscale, .grayscaleAlpha: self = .grayInRGBA
        case .rgb, .rgba, .palette, .ycbcr: self = .rgba
        case .cmyk, .ycck: self = adobeInverted ? .cmykInverted : .cmyk
        case .unknown: return nil
        }
    }

    fileprivate var lcmsInputFormat: UInt32 {
        switch self {
        case .rgba: return aiv_lcms_rgba_8()
        case .grayInRGBA: return aiv_lcms_gray_in_rgba_8()
        case .cmyk: return aiv_lcms_cmyk_8()
        case .cmykInverted: return aiv_lcms_cmyk_8_inverted()
        }
    }
}

/// A transform from one source profile to sRGB, for one pixel layout,
/// intent and black-point setting: Little CMS's, and for a matrix-shaper
/// profile the fast path that gives the same pixels (``MatrixShaperKernel``).
/// Immutable once made, and used from any thread: the Little CMS transform
/// is made with `cmsFLAGS_NOCACHE`, so `cmsDoTransform` keeps no state in
/// it between calls.
final class ColorTransform: @unchecked Sendable {
    private let handle: cmsHTRANSFORM
    let layout: ColorPixelLayout
    /// The fast path, when the profile, intent and layout have one.
    let kernel: MatrixShaperKernel?

    /// Which implementation converts.
    enum Path: Sendable {
        /// The kernel when there is one, else Little CMS.
        case fastest
        /// Little CMS always (the reference).
        case littleCMS
    }

    fileprivate init(handle: cmsHTRANSFORM, layout: ColorPixelLayout, kernel: MatrixShaperKernel?) {
        self.handle = handle
        self.layout = layout
        self.kernel = kernel
    }

    deinit { cmsDeleteTransform(handle) }

    /// Where a decoder hands this transform to the resize instead of
    /// running it on the decoded image: when a resize follows, filters in
    /// linear light (``ResizeQuality/high``), and the profile has the fast
    /// path. The resampler then reads the source's values through the
    /// profile's curves and matrix in floats, and only the small image is
    /// encoded to sRGB bytes; otherwise (no resize, or `.fast`, which
    /// averages sRGB values) the decoder converts first. The one rule the
    /// five decoders that do this share.
    func linearSource(resizing resizes: Bool, quality: ResizeQuality) -> LinearSource? {
        resizes && quality == .high ? kernel?.linearSource : nil
    }

    /// Converts `height` rows of `width` pixels in place (rows `bytesPerRow`
    /// apart, 4 bytes a pixel). CMYK comes out as opaque RGBA.
    func apply(
        _ pixels: UnsafeMutablePointer<UInt8>, width: Int, height: Int, bytesPerRow: Int, path: Path = .fastest
    ) {
        guard width > 0, height > 0 else { return }
        if path == .fastest, let kernel {
            kernel.apply(pixels, width: width, height: height, bytesPerRow: bytesPerRow)
            return
        }
        // One call per band of rows keeps each call's pixel count in 32 bits.
        let rowsPerCall = max(1, min(height, Int(UInt32.max) / 4 / max(1, bytesPerRow)))
        var row = 0
        while row < height {
            let rows = min(rowsPerCall, height - row)
            let start = pixels + row * bytesPerRow
            cmsDoTransformLineStride(
                handle, start, start, UInt32(width), UInt32(rows), UInt32(bytesPerRow), UInt32(bytesPerRow), 0, 0)
            row += rows
        }
        if layout.isCMYK {
            // Little CMS writes R, G, B; the fourth byte still holds K.
            for y in 0..<height {
                let line = pixels + y * bytesPerRow
                var x = 3
                while x < width * 4 {
                    line[x] = 255
                    x += 4
                }
            }
        }
    }

    /// Converts a tightly packed buffer of `count` bytes (4 a pixel).
    func apply(_ pixels: UnsafeMutablePointer<UInt8>, byteCount count: Int, path: Path = .fastest) {
        apply(pixels, width: count / 4, height: 1, bytesPerRow: count / 4 * 4, path: path)
    }
}

/// The colour conversion of the decoders: what to do for a file's
/// ``ColorSource`` on pixels of a ``ColorPixelLayout``.
enum ColorConversion {
    /// The transform to run on the pixels, or `nil` when there is nothing to
    /// do: conversion off, no colour information, an sRGB profile (or
    /// chunks), or a profile that cannot be used (the file properties say
    /// why). Untagged CMYK gets `nil` too: the caller's simple formula.
    static func transform(
        for source: ColorSource?, layout: ColorPixelLayout, management: ColorManagement
    ) -> ColorTransform? {
        guard management.convertsToSRGB, let source else { return nil }
        switch source {
        case .malformed, .pngSRGB:
            return nil
        case .icc(let profile):
            return ColorTransformCache.shared.outcome(profile: profile, layout: layout, management: management)
                .transform
        case .pngChunks(let chunks):
            guard !chunks.isSRGB, !layout.isCMYK else { return nil }
            return ColorTransformCache.shared.outcome(chunks: chunks, layout: layout, management: management)
                .transform
        case .nclx(let nclx):
            guard let chunks = nclx.chunks, !chunks.isSRGB, !layout.isCMYK else { return nil }
            return ColorTransformCache.shared.outcome(chunks: chunks, layout: layout, management: management)
                .transform
        case .hdrEncoding:
            return nil
        }
    }

    /// The tone mapping to apply instead of a transform: an `nclx` PQ or HLG
    /// description whose primaries it can convert, or a JPEG XL PQ or HLG
    /// encoding, with colour management on; `nil` otherwise (with it off,
    /// the samples as stored).
    static func toneMapping(for source: ColorSource?, management: ColorManagement) -> HDRToneMapping? {
        guard management.convertsToSRGB else { return nil }
        switch source {
        case .nclx(let nclx)?: return nclx.toneMapping
        case .hdrEncoding(let encoding)?: return encoding.mapping
        default: return nil
        }
    }

    /// What ``ImageFileProperties/colorProfile`` reports of `source` for an
    /// image whose pixels are `layout` (`nil` when its colour type is unknown).
    static func info(for source: ColorSource, layout: ColorPixelLayout?) -> ColorProfileInfo {
        switch source {
        case .malformed(let reason):
            return ColorProfileInfo(
                source: .iccProfile, description: nil, colorSpace: nil, byteCount: 0, isSRGB: false, warning: reason)
        case .pngSRGB:
            return ColorProfileInfo(
                source: .pngSRGBChunk, description: "sRGB (PNG sRGB chunk)", colorSpace: layout == .grayInRGBA ? .gray : .rgb,
                byteCount: 0, isSRGB: true)
        case .pngChunks(let chunks):
            var warning: String?
            var isSRGB = chunks.isSRGB
            if !isSRGB, let layout {
                switch ColorTransformCache.shared.outcome(chunks: chunks, layout: layout, management: .default) {
                case .identity: isSRGB = true
                case .unusable(let reason): warning = reason
                case .transform: break
                }
            }
            return ColorProfileInfo(
                source: .pngGammaAndChromaticities, description: chunks.summary,
                colorSpace: layout == .grayInRGBA ? .gray : .rgb, byteCount: 0, isSRGB: isSRGB, warning: warning)
        case .nclx(let nclx):
            if let mapping = nclx.toneMapping {
                return ColorProfileInfo(
                    source: .nclx, description: nclx.summary, colorSpace: .rgb, byteCount: 0, isSRGB: false,
                    hdrToneMapping: mapping)
            }
            guard let chunks = nclx.chunks else {
                let what = nclx.isHDR ? "HDR with primaries it cannot convert" : "unknown code points"
                return ColorProfileInfo(
                    source: .nclx, description: nclx.summary, colorSpace: .rgb, byteCount: 0, isSRGB: false,
                    warning: "\(nclx.summary) is not converted (\(what))")
            }
            var info = self.info(for: .pngChunks(chunks), layout: layout)
            info.source = .nclx
            info.description = nclx.summary
            return info
        case .hdrEncoding(let encoding):
            // Libjxl's profile for the encoding, as for JPEG XL's SDR ones;
            // the tone mapping instead of any warning about it.
            var info =
                encoding.profile.map { self.info(for: .icc($0), layout: layout) }
                ?? ColorProfileInfo(
                    source: .iccProfile, description: nil, colorSpace: .rgb, byteCount: 0, isSRGB: false)
            info.isSRGB = false
            info.warning = nil
            info.hdrToneMapping = encoding.mapping
            return info
        case .icc(let profile):
            let details = ProfileDetails(profile)
            var info = ColorProfileInfo(
                source: .iccProfile, description: details?.description, colorSpace: details?.space,
                byteCount: profile.count, isSRGB: false)
            guard details != nil else {
                info.warning = "Little CMS cannot read the profile"
                return info
            }
            if let layout {
                switch ColorTransformCache.shared.outcome(profile: profile, layout: layout, management: .default) {
                case .identity: info.isSRGB = true
                case .unusable(let reason): info.warning = reason
                case .transform: break
                }
            }
            return info
        }
    }
}

/// A profile's description and colour space, as Little CMS reads them.
struct ProfileDetails {
    var description: String?
    var space: ColorProfileInfo.ColorSpace

    init?(_ profile: Data) {
        guard let handle = LCMS.open(profile) else { return nil }
        defer { cmsCloseProfile(handle) }
        space = LCMS.space(of: handle)
        description = LCMS.description(of: handle)
    }
}

/// The calls into Little CMS.
enum LCMS {
    /// Opens a profile from memory (Little CMS copies what it needs), `nil`
    /// when it is not one.
    static func open(_ profile: Data) -> cmsHPROFILE? {
        guard profile.count >= 128 else { return nil }  // not even a header
        return profile.withUnsafeBytes { raw in
            cmsOpenProfileFromMem(raw.baseAddress, UInt32(clamping: raw.count))
        }
    }

    static func space(of profile: cmsHPROFILE) -> ColorProfileInfo.ColorSpace {
        switch cmsGetColorSpace(profile) {
        case cmsSigRgbData: return .rgb
        case cmsSigGrayData: return .gray
        case cmsSigCmykData: return .cmyk
        default: return .other
        }
    }

    /// The description tag, `nil` when there is none or it is empty.
    static func description(of profile: cmsHPROFILE) -> String? {
        let length = Int(cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", nil, 0))
        guard length > 1, length <= 4096 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        _ = cmsGetProfileInfoASCII(profile, cmsInfoDescription, "en", "US", &buffer, UInt32(buffer.count))
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// The sRGB profile every transform goes to: Little CMS's own
    /// (IEC 61966-2.1 primaries and curve, D65 white adapted to D50).
    static func makeSRGB() -> cmsHPROFILE? { cmsCreate_sRGBProfile() }

    /// A transform from `source` to sRGB RGBA, or why there is none.
    static func transform(
        from source: cmsHPROFILE, layout: ColorPixelLayout, management: ColorManagement
    ) -> Result<ColorTransform, ColorTransformCache.Unusable> {
        let space = self.space(of: source)
        guard space == layout.space else {
            return .failure(.init(reason: "a \(space) profile on \(layout.space) pixels"))
        }
        switch cmsGetDeviceClass(source) {
        case cmsSigLinkClass, cmsSigAbstractClass, cmsSigNamedColorClass:
            return .failure(.init(reason: "a device-link, abstract or named-colour profile describes no image's colours"))
        default:
            break
        }
        guard let sRGB = makeSRGB() else { return .failure(.init(reason: "Little CMS cannot make sRGB")) }
        defer { cmsCloseProfile(sRGB) }
        var flags = UInt32(cmsFLAGS_NOCACHE)
        if management.usesBlackPointCompensation { flags |= UInt32(cmsFLAGS_BLACKPOINTCOMPENSATION) }
        guard
            let handle = cmsCreateTransform(
                source, layout.lcmsInputFormat, sRGB, aiv_lcms_rgba_8(), management.intent.lcmsValue, flags)
        else { return .failure(.init(reason: "Little CMS cannot make a transform from the profile")) }
        let reference = ColorTransform(handle: handle, layout: layout, kernel: nil)
        // The fast path only where it agrees with Little CMS: made with a
        // handle of its own, checked against the reference.
        guard let kernel = MatrixShaperKernel(source: source, layout: layout, management: management),
            let second = cmsCreateTransform(
                source, layout.lcmsInputFormat, sRGB, aiv_lcms_rgba_8(), management.intent.lcmsValue, flags)
        else { return .success(reference) }
        let fast = ColorTransform(handle: second, layout: layout, kernel: kernel)
        return .success(agree(fast, reference) ? fast : reference)
    }

    /// Whether `transform`'s fast path and Little CMS agree to within one
    /// level on every channel of a grid of colours (every combination of 18
    /// levels per channel, 0 to 255) and every grey.
    static func agree(_ transform: ColorTransform, _ reference: ColorTransform) -> Bool {
        var pixels: [UInt8] = []
        let steps = stride(from: 0, through: 255, by: 15).map { UInt8($0) }
        for r in steps { for g in steps { for b in steps { pixels += [r, g, b, 255] } } }
        for level in 0...255 { pixels += [UInt8(level), UInt8(level), UInt8(level), 255] }
        var expected = pixels
        pixels.withUnsafeMutableBufferPointer { transform.apply($0.baseAddress!, byteCount: $0.count) }
        expected.withUnsafeMutableBufferPointer { reference.apply($0.baseAddress!, byteCount: $0.count, path: .littleCMS) }
        for index in pixels.indices where abs(Int(pixels[index]) - Int(expected[index])) > 1 { return false }
        return true
    }

    /// A matrix-shaper profile from PNG chunks: `cHRM`'s primaries and white
    /// (sRGB's without one), with `gAMA`'s curve (sRGB's without one).
    /// Grey pixels get a grey profile with the curve.
    static func profile(for chunks: PNGColorChunks, layout: ColorPixelLayout) -> cmsHPROFILE? {
        let curve: OpaquePointer?
        if let gamma = chunks.gamma {
            curve = cmsBuildGamma(nil, 1 / gamma)
        } else {
            var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
            curve = cmsBuildParametricToneCurve(nil, 4, &parameters)
        }
        guard let curve else { return nil }
        defer { cmsFreeToneCurve(curve) }
        let c = chunks.chromaticities ?? [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]
        var white = cmsCIExyY(x: c[0], y: c[1], Y: 1)
        if layout == .grayInRGBA { return cmsCreateGrayProfile(&white, curve) }
        var primaries = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: c[2], y: c[3], Y: 1), Green: cmsCIExyY(x: c[4], y: c[5], Y: 1),
            Blue: cmsCIExyY(x: c[6], y: c[7], Y: 1))
        var curves: [OpaquePointer?] = [curve, curve, curve]
        return cmsCreateRGBProfile(&white, &primaries, &curves)
    }

    /// Whether `transform` changes no pixel by more than one level: every
    /// combination of 0, 51, ..., 255 per channel, and every grey level.
    static func isIdentity(_ transform: ColorTransform) -> Bool {
        var pixels: [UInt8] = []
        let steps: [UInt8] = [0, 51, 102, 153, 204, 255]
        if transform.layout == .rgba {
            for r in steps { for g in steps { for b in steps { pixels += [r, g, b, 255] } } }
        }
        for level in 0...255 { pixels += [UInt8(level), UInt8(level), UInt8(level), 255] }
        let input = pixels
        pixels.withUnsafeMutableBufferPointer { transform.apply($0.baseAddress!, byteCount: $0.count) }
        for index in stride(from: 0, to: input.count, by: 4) {
            let expected = transform.layout == .grayInRGBA ? [input[index], input[index], input[index]] : Array(input[index..<index + 3])
            for channel in 0..<3 where abs(Int(pixels[index + channel]) - Int(expected[channel])) > 1 { return false }
        }
        return true
    }
}
