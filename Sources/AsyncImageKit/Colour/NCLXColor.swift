import Foundation

/// An `nclx` colour description (AVIF, HEIC): ITU-T H.273 code points for
/// the colour primaries and the transfer characteristics. The SDR ones are
/// converted to sRGB as PNG `cHRM`/`gAMA` chunks are: a matrix-shaper
/// profile with the primaries' chromaticities and the curve. PQ and HLG
/// (HDR) are tone mapped to SDR instead (``HDRToneMapping``).
struct NCLXColor: Hashable, Sendable {
    /// H.273 `colour_primaries` (1: BT.709/sRGB, 9: BT.2020, 12: Display P3...).
    var primaries: Int
    /// H.273 `transfer_characteristics` (13: sRGB, 1/6/14/15: BT.709 family, 8: linear, 16: PQ, 18: HLG...).
    var transfer: Int
    /// The image's `clli` maximum content light level (MaxCLL) in cd/m², when it has one.
    var maxContentLightLevel: Int? = nil
    /// The image's `mdcv` mastering display maximum luminance in cd/m², when it has one.
    var masteringPeak: Double? = nil

    /// The code points with the light levels of `lightLevel` (for HDR's source peak).
    init(primaries: Int, transfer: Int, lightLevel: ContentLightLevels? = nil) {
        self.primaries = primaries
        self.transfer = transfer
        maxContentLightLevel = lightLevel?.maxContentLightLevel
        masteringPeak = lightLevel?.masteringPeak
    }

    /// The tone mapping of an HDR transfer (PQ, HLG) with primaries it can
    /// convert, `nil` otherwise.
    var toneMapping: HDRToneMapping? {
        guard PrimariesMatrix.chromaticities(forHDR: primaries) != nil else { return nil }
        return HDRToneMapping(
            transferCode: transfer, maxContentLightLevel: maxContentLightLevel, masteringPeak: masteringPeak)
    }

    /// Whether the transfer is PQ or HLG.
    var isHDR: Bool { transfer == 16 || transfer == 18 }

    /// The white point and primaries (white x, y, then red, green and blue
    /// x, y) of the code points this converts; `nil` for 2 (unspecified),
    /// which is read as sRGB's.
    static let chromaticities: [Int: [Double]] = [
        1: [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06],  // BT.709, sRGB
        4: [0.310, 0.316, 0.67, 0.33, 0.21, 0.71, 0.14, 0.08],  // BT.470 M
        5: [0.3127, 0.3290, 0.64, 0.33, 0.29, 0.60, 0.15, 0.06],  // BT.601 625
        6: [0.3127, 0.3290, 0.630, 0.340, 0.310, 0.595, 0.155, 0.070],  // BT.601 525
        7: [0.3127, 0.3290, 0.630, 0.340, 0.310, 0.595, 0.155, 0.070],  // SMPTE 240M
        9: [0.3127, 0.3290, 0.708, 0.292, 0.170, 0.797, 0.131, 0.046],  // BT.2020
        11: [0.314, 0.351, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060],  // DCI-P3 (SMPTE RP 431-2)
        12: [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060],  // Display P3 (SMPTE EG 432-1)
    ]

    /// The equivalent chunks, `nil` when this cannot be converted (HDR
    /// transfer, unknown code points). The BT.709 family of transfers is
    /// shown with the sRGB curve, as browsers show SDR video and AVIF.
    var chunks: PNGColorChunks? {
        let gamma: Double?
        switch transfer {
        case 1, 2, 6, 13, 14, 15: gamma = nil  // the sRGB curve (2: unspecified)
        case 4: gamma = 1 / 2.2
        case 5: gamma = 1 / 2.8
        case 8: gamma = 1
        default: return nil
        }
        guard let white = primaries == 2 ? Self.chromaticities[1] : Self.chromaticities[primaries] else { return nil }
        return PNGColorChunks(gamma: gamma, chromaticities: white)
    }

    /// `nclx primaries 12, transfer 13`, for ``ColorProfileInfo/description``.
    var summary: String { "nclx primaries \(primaries), transfer \(transfer)" }
}

/// An HEIF (AVIF, HEIC) image's `clli` and `mdcv` properties: what the HDR
/// tone mapping takes its source peak from.
struct ContentLightLevels: Hashable, Sendable {
    /// `clli`'s `max_content_light_level` (cd/m²), `nil` without the box or when it is 0 (unknown).
    var maxContentLightLevel: Int?
    /// `mdcv`'s `max_display_mastering_luminance` (units of 0.0001 cd/m²) in cd/m², `nil` without the box or when 0.
    var masteringPeak: Double?

    /// The primary item's `clli` (4 bytes: MaxCLL, MaxFALL) and `mdcv`
    /// (24 bytes: primaries and white as 16-bit x, y, then the maximum and
    /// minimum luminance as 32-bit values) in a HEIF file, `nil` when it has neither.
    static func read(_ view: ByteView) -> ContentLightLevels? {
        guard let (properties, boxes) = ISOBox.primaryItemProperties(view) else { return nil }
        var levels = ContentLightLevels()
        for box in boxes {
            if box.type == "clli", box.end - box.body >= 4, let value = properties.u16(box.body), value > 0 {
                levels.maxContentLightLevel = Int(value)
            } else if box.type == "mdcv", box.end - box.body >= 24, let value = properties.u32(box.body + 16),
                value > 0
            {
                levels.masteringPeak = Double(value) / 10000
            }
        }
        return levels.maxContentLightLevel == nil && levels.masteringPeak == nil ? nil : levels
    }
}
