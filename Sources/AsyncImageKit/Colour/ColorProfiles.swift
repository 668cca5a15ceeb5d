import CLCMS2
import Foundation

/// ICC profiles built with Little CMS, for the tests, the fuzz seeds and
/// the demo (which embed them in the files they make): not part of the
/// library's API.
package enum ColorProfiles {
    /// Display P3's primaries and D65 white (x, y): white, red, green, blue.
    package static let displayP3Chromaticities = [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060]

    /// Display P3 (SMPTE EG 432-1 primaries, D65, the sRGB transfer curve)
    /// as a v4 matrix-shaper profile described "Display P3".
    package static func displayP3() -> Data? {
        matrixProfile(chromaticities: displayP3Chromaticities, gamma: nil, description: "Display P3")
    }

    /// Little CMS's own sRGB profile (IEC 61966-2.1).
    package static func sRGB() -> Data? {
        guard let profile = LCMS.makeSRGB() else { return nil }
        return save(profile, description: "sRGB IEC61966-2.1")
    }

    /// An RGB matrix-shaper profile: white x, y then red, green, blue x, y;
    /// a pure power curve of `gamma` (the decoding exponent, 2.2 for
    /// example), or sRGB's curve when `nil`.
    package static func matrixProfile(chromaticities c: [Double], gamma: Double?, description: String) -> Data? {
        guard c.count == 8, let curve = curve(gamma) else { return nil }
        defer { cmsFreeToneCurve(curve) }
        var white = cmsCIExyY(x: c[0], y: c[1], Y: 1)
        var primaries = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: c[2], y: c[3], Y: 1), Green: cmsCIExyY(x: c[4], y: c[5], Y: 1),
            Blue: cmsCIExyY(x: c[6], y: c[7], Y: 1))
        var curves: [OpaquePointer?] = [curve, curve, curve]
        guard let profile = cmsCreateRGBProfile(&white, &primaries, &curves) else { return nil }
        return save(profile, description: description)
    }

    /// A grey profile with a pure power curve of `gamma` (D50 white).
    package static func grayProfile(gamma: Double, description: String) -> Data? {
        guard let curve = curve(gamma), let white = cmsD50_xyY() else { return nil }
        defer { cmsFreeToneCurve(curve) }
        guard let profile = cmsCreateGrayProfile(white, curve) else { return nil }
        return save(profile, description: description)
    }

    private static func curve(_ gamma: Double?) -> OpaquePointer? {
        if let gamma { return cmsBuildGamma(nil, gamma) }
        var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        return cmsBuildParametricToneCurve(nil, 4, &parameters)
    }

    /// The profile's bytes with `description` as its description tag; closes it.
    private static func save(_ profile: cmsHPROFILE, description: String) -> Data? {
        defer { cmsCloseProfile(profile) }
        if let text = cmsMLUalloc(nil, 1) {
            defer { cmsMLUfree(text) }
            cmsMLUsetASCII(text, "en", "US", description)
            cmsWriteTag(profile, cmsSigProfileDescriptionTag, UnsafeRawPointer(text))
        }
        var size: UInt32 = 0
        guard cmsSaveProfileToMem(profile, nil, &size) != 0, size > 0 else { return nil }
        var bytes = Data(count: Int(size))
        let saved = bytes.withUnsafeMutableBytes { cmsSaveProfileToMem(profile, $0.baseAddress, &size) }
        return saved != 0 ? bytes.prefix(Int(size)) : nil
    }
}

extension ColorProfiles {
    /// Re-encodes sRGB RGBA pixels (4 bytes each, alpha kept) into the RGB
    /// space of `profile`, relative colorimetric: the numbers a file tagged
    /// with `profile` stores for these colours. `false` when the profile
    /// cannot be used.
    package static func convertFromSRGB(_ pixels: inout Data, to profile: Data) -> Bool {
        guard let target = LCMS.open(profile) else { return false }
        defer { cmsCloseProfile(target) }
        guard let sRGB = LCMS.makeSRGB() else { return false }
        defer { cmsCloseProfile(sRGB) }
        guard
            let transform = cmsCreateTransform(
                sRGB, aiv_lcms_rgba_8(), target, aiv_lcms_rgba_8(), ColorRenderingIntent.relativeColorimetric.lcmsValue,
                UInt32(cmsFLAGS_NOCACHE))
        else { return false }
        defer { cmsDeleteTransform(transform) }
        pixels.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            cmsDoTransform(transform, base, base, UInt32(raw.count / 4))
        }
        return true
    }
}
