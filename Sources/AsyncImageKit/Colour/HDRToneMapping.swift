import Foundation

/// How the decoders bring an HDR image (an AVIF or HEIC `nclx` description,
/// or a JPEG XL colour encoding, with the PQ or HLG transfer) to 8-bit sRGB:
/// the tone mapping of ITU-R BT.2408 (its Annex 5 EETF, the one of
/// BT.2390), which ``ColorProfileInfo/hdrToneMapping`` reports for such a
/// file.
///
/// The samples are read at the file's own bit depth (10 or 12 bits; libavif
/// and libheif are asked for RGB at that depth; libjxl for 16-bit samples),
/// so nothing is rounded to 8 bits before the last step. For each pixel,
/// with `R'G'B'` its samples normalised to [0, 1] (code / (2^depth - 1)):
///
/// 1. **To display light.**
///    - **PQ** (H.273 transfer 16): the SMPTE ST 2084 EOTF of each of
///      `R'`, `G'`, `B'` gives its absolute luminance in cd/m²:
///      `L = 10000 · (max(E'^(1/m2) - c1, 0) / (c2 - c3 · E'^(1/m2)))^(1/m1)`
///      with m1 = 2610/16384, m2 = 2523/4096 · 128, c1 = 3424/4096,
///      c2 = 2413/4096 · 32, c3 = 2392/4096 · 32.
///    - **HLG** (H.273 transfer 18): the BT.2100 inverse OETF of each
///      sample gives scene light `E` (`E'²/3` up to `E'` = 1/2, then
///      `(exp((E' - c)/a) + b)/12` with a = 0.17883277, b = 1 - 4a,
///      c = 0.5 - a·ln(4a)); the BT.2100 OOTF for a nominal 1000 cd/m²
///      display (system gamma 1.2, black 0) gives display light
///      `F = 1000 · Ys^0.2 · E` per channel, `Ys` the scene luminance
///      (0.2627 R + 0.6780 G + 0.0593 B for BT.2020 primaries: the Y row
///      of the primaries' RGB-to-XYZ matrix).
/// 2. **The EETF**, per channel, in the PQ domain: the source range
///    [0, `Lw`] is mapped to the target range [0, 203 cd/m²] (HDR
///    reference white, BT.2408's "graphics white", which is SDR's 100 %).
///    With `E1 = PQ⁻¹(L) / PQ⁻¹(Lw)` (clipped to 1) and
///    `maxLum = PQ⁻¹(203) / PQ⁻¹(Lw)`, the knee starts at
///    `KS = 1.5 · maxLum - 0.5`; below it `E2 = E1`, above it the Hermite
///    spline with `T = (E1 - KS) / (1 - KS)`:
///    `E2 = (2T³ - 3T² + 1)·KS + (T³ - 2T² + T)·(1 - KS) + (-2T³ + 3T²)·maxLum`.
///    Both blacks are 0, so BT.2408's black-lift term is 0. The result is
///    `L' = EOTF(E2 · PQ⁻¹(Lw))`.
///    - `Lw`, the source peak (``sourcePeak``): for PQ the file's content
///      light level (`clli` MaxCLL) when it has one, else its mastering
///      display's peak (`mdcv`), else ``defaultSourcePeak`` (1000 cd/m²,
///      the usual grading peak and HLG's nominal one); for a JPEG XL file
///      its codestream's intensity target, unless that is one of the
///      defaults that say nothing (``PeakSource/intensityTarget``); for HLG
///      always the nominal 1000 cd/m² the OOTF assumed. A peak under 203 cd/m² is
///      taken as 203: the EETF is then the identity and light above 203 is
///      clipped.
///    - With the default peak, light up to about 88 cd/m² is kept as it
///      is, 1000 cd/m² becomes 203 (SDR white), and reference white
///      (203 cd/m²) about 159 cd/m² (code 229 of 255 for a grey): the
///      highlights between them keep their detail, which clipping at 203
///      would lose.
/// 3. **To SDR linear light**: `L' / 203`, so 203 cd/m² is 1.0.
/// 4. **To BT.709 (sRGB) primaries**: the 3×3 matrix from the file's
///    primaries (BT.2020 for `nclx` primaries 9, or unspecified; for JPEG
///    XL, its colour encoding's primaries and white point) to
///    BT.709's, made from their chromaticities (with a Bradford adaptation
///    to D65 when the file's white is another); for BT.2020 it is
///    BT.2087's `[1.6605 -0.5876 -0.0728; -0.1246 1.1329 -0.0083;
///    -0.0182 -0.1006 1.1187]`.
/// 5. **Gamut**: each channel clipped to [0, 1] (relative colorimetric, as
///    browsers and the SDR path do: colours outside sRGB go to its edge).
/// 6. **sRGB**: the IEC 61966-2-1 curve (`12.92·x` up to 0.0031308, then
///    `1.055·x^(1/2.4) - 0.055`), times 255, rounded to the nearest code.
///    Alpha is rounded from its depth to 8 bits.
///
/// Steps 1-3 of PQ depend on one sample only and are a table of 2^depth
/// entries (exact), as is HLG's inverse OETF; HLG's OOTF mixes the
/// channels, so its EETF is read per channel from a table of 16384 steps of
/// display light between the knee and 1000 cd/m², linearly interpolated
/// (within 2e-8 of the exact curve: finer than the Float light it is given;
/// below the knee the EETF is the identity). Step 6 is exact: the code is
/// the count of the 255 linear levels where the rounded code changes that
/// the value has reached. The rendering intent and black-point compensation of
/// ``ColorManagement`` do not apply (the mapping has no gamut tables, and
/// both blacks are 0).
///
/// With ``ColorManagement/off`` nothing is tone mapped: the samples as
/// stored are brought to 8 bits and read as sRGB, as every other tagged file
/// is under that setting (the PQ or HLG signal itself: flat and dark).
public struct HDRToneMapping: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The HDR transfer of the file.
    public enum Transfer: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// SMPTE ST 2084, the perceptual quantizer (H.273 transfer 16).
        case pq
        /// Hybrid log-gamma, ARIB STD-B67 and BT.2100 (H.273 transfer 18).
        case hlg

        /// `PQ` or `HLG`.
        public var description: String { rawValue.uppercased() }
    }

    /// Where ``HDRToneMapping/sourcePeak`` comes from.
    public enum PeakSource: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// The `clli` box's maximum content light level (MaxCLL).
        case contentLightLevel
        /// The `mdcv` box's mastering display maximum luminance.
        case masteringDisplay
        /// A JPEG XL codestream's `intensity_target` (its upper bound on the
        /// luminance in the image), when it is neither 10000 cd/m² (what
        /// libjxl's encoder writes for any PQ image unless told otherwise:
        /// the whole PQ range, no measurement) nor 255 (the codestream's
        /// default when the field is not written, which `cjxl` 0.7 leaves on
        /// a lossy PQ image); with either of those the peak is
        /// ``assumed``.
        case intensityTarget
        /// None of those (or HLG, which is scene-referred): the default of
        /// ``HDRToneMapping/defaultSourcePeak``, HLG's nominal display peak.
        case assumed

        /// The raw value.
        public var description: String { rawValue }
    }

    /// The file's transfer.
    public var transfer: Transfer
    /// The source peak luminance `Lw` the EETF maps to SDR white, in cd/m²
    /// (as the file gives it; a peak under ``referenceWhite`` is used as
    /// ``referenceWhite``).
    public var sourcePeak: Double
    /// Where ``sourcePeak`` comes from.
    public var peakSource: PeakSource

    /// A tone mapping from known values (for tests and custom decoders).
    /// - Parameters:
    ///   - transfer: PQ or HLG.
    ///   - sourcePeak: the source peak luminance in cd/m².
    ///   - peakSource: where the peak comes from.
    public init(transfer: Transfer, sourcePeak: Double, peakSource: PeakSource) {
        self.transfer = transfer
        self.sourcePeak = sourcePeak
        self.peakSource = peakSource
    }

    /// HDR reference white, 203 cd/m² (BT.2408): the target peak, SDR's 100 %.
    public static let referenceWhite: Double = 203
    /// The source peak of a PQ file that gives none, and HLG's nominal
    /// display peak: 1000 cd/m².
    public static let defaultSourcePeak: Double = 1000

    /// `PQ to SDR (BT.2408 EETF, source peak 1000 cd/m², assumed)`.
    public var description: String {
        let peak = sourcePeak.rounded() == sourcePeak ? String(Int(sourcePeak)) : String(format: "%.1f", sourcePeak)
        return "\(transfer) to SDR (BT.2408 EETF, source peak \(peak) cd/m², \(peakSource))"
    }
}

extension HDRToneMapping {
    /// The mapping for an H.273 transfer: PQ (16) and HLG (18), `nil` for
    /// any other. `maxContentLightLevel` (`clli`, cd/m²) and
    /// `masteringPeak` (`mdcv`, cd/m²) are used for PQ when they are over 0.
    init?(transferCode: Int, maxContentLightLevel: Int? = nil, masteringPeak: Double? = nil) {
        switch transferCode {
        case 16:
            if let peak = maxContentLightLevel, peak > 0 {
                self.init(transfer: .pq, sourcePeak: Double(peak), peakSource: .contentLightLevel)
            } else if let peak = masteringPeak, peak > 0 {
                self.init(transfer: .pq, sourcePeak: peak, peakSource: .masteringDisplay)
            } else {
                self.init(transfer: .pq, sourcePeak: Self.defaultSourcePeak, peakSource: .assumed)
            }
        case 18:
            self.init(transfer: .hlg, sourcePeak: Self.defaultSourcePeak, peakSource: .assumed)
        default:
            return nil
        }
    }

    /// libjxl's defaults for a JPEG XL `intensity_target` that say nothing
    /// about the image: 10000 (its encoder's choice for PQ) and 255 (the
    /// codestream's value when the field is not written).
    static let defaultIntensityTargets: Set<Float> = [10000, 255]

    /// The mapping for a JPEG XL colour encoding's transfer, PQ (16) or HLG
    /// (18) as in H.273, `nil` for any other. PQ's peak is
    /// `intensityTarget` when it is over 0, finite and not one of
    /// ``defaultIntensityTargets``.
    init?(transferCode: Int, intensityTarget: Float) {
        guard transferCode == 16 else {
            self.init(transferCode: transferCode)
            return
        }
        if intensityTarget > 0, intensityTarget.isFinite, !Self.defaultIntensityTargets.contains(intensityTarget) {
            self.init(transfer: .pq, sourcePeak: Double(intensityTarget), peakSource: .intensityTarget)
        } else {
            self.init(transfer: .pq, sourcePeak: Self.defaultSourcePeak, peakSource: .assumed)
        }
    }

    /// `Lw` as the EETF uses it: ``sourcePeak``, at least the reference
    /// white, at most PQ's 10000 cd/m².
    var effectivePeak: Double {
        guard sourcePeak.isFinite else { return Self.defaultSourcePeak }
        return min(max(sourcePeak, Self.referenceWhite), 10000)
    }

    // MARK: The curves (BT.2100)

    static let m1 = 2610.0 / 16384
    static let m2 = 2523.0 / 4096 * 128
    static let c1 = 3424.0 / 4096
    static let c2 = 2413.0 / 4096 * 32
    static let c3 = 2392.0 / 4096 * 32

    /// The ST 2084 EOTF: a PQ signal in [0, 1] to cd/m².
    static func pqEOTF(_ signal: Double) -> Double {
        let e = pow(min(max(signal, 0), 1), 1 / m2)
        return 10000 * pow(max(e - c1, 0) / (c2 - c3 * e), 1 / m1)
    }

    /// The inverse EOTF: cd/m² to a PQ signal in [0, 1].
    static func pqInverseEOTF(_ luminance: Double) -> Double {
        let y = pow(min(max(luminance / 10000, 0), 1), m1)
        return pow((c1 + c2 * y) / (1 + c3 * y), m2)
    }

    static let hlgA = 0.17883277
    static let hlgB = 1 - 4 * hlgA
    static let hlgC = 0.5 - hlgA * log(4 * hlgA)

    /// The BT.2100 HLG inverse OETF: a signal in [0, 1] to scene light in [0, 1].
    static func hlgInverseOETF(_ signal: Double) -> Double {
        let e = min(max(signal, 0), 1)
        return e <= 0.5 ? e * e / 3 : (exp((e - hlgC) / hlgA) + hlgB) / 12
    }

    /// The HLG OOTF's system gamma for the nominal 1000 cd/m² display.
    static let hlgSystemGamma = 1.2

    /// The sRGB curve's inverse: an encoded value in [0, 1] to linear light.
    static func sRGBDecode(_ value: Double) -> Double {
        value <= 0.04045 ? value / 12.92 : pow((value + 0.055) / 1.055, 2.4)
    }

    /// BT.2408's EETF (Annex 5), both blacks 0, in the PQ domain.
    struct EETF: Sendable {
        /// `PQ⁻¹(Lw)`.
        let sourceSignal: Double
        /// `PQ⁻¹(203) / PQ⁻¹(Lw)`.
        let maxLum: Double
        /// `1.5 · maxLum - 0.5`.
        let kneeStart: Double

        init(sourcePeak: Double) {
            sourceSignal = HDRToneMapping.pqInverseEOTF(sourcePeak)
            maxLum = min(1, HDRToneMapping.pqInverseEOTF(HDRToneMapping.referenceWhite) / sourceSignal)
            kneeStart = 1.5 * maxLum - 0.5
        }

        /// A PQ signal mapped to the target range (still a PQ signal).
        func callAsFunction(_ signal: Double) -> Double {
            let e1 = min(max(signal / sourceSignal, 0), 1)
            guard e1 > kneeStart, kneeStart < 1 else { return e1 * sourceSignal }
            let t = (e1 - kneeStart) / (1 - kneeStart)
            let t2 = t * t, t3 = t2 * t
            let e2 =
                (2 * t3 - 3 * t2 + 1) * kneeStart + (t3 - 2 * t2 + t) * (1 - kneeStart) + (-2 * t3 + 3 * t2) * maxLum
            return e2 * sourceSignal
        }

        /// The luminance (cd/m²) below which the EETF changes nothing.
        var kneeLuminance: Double { HDRToneMapping.pqEOTF(max(0, kneeStart) * sourceSignal) }
    }
}

/// The colour matrices of ``HDRToneMapping``'s step 4, from H.273
/// chromaticities (``NCLXColor/chromaticities``).
enum PrimariesMatrix {
    typealias Matrix = [Double]  // 3x3, row-major

    /// The chromaticities HDR pixels are read in: the file's, BT.2020's for
    /// unspecified (2, as BT.2100 has it); `nil` for code points not in the table.
    static func chromaticities(forHDR primaries: Int) -> [Double]? {
        NCLXColor.chromaticities[primaries == 2 ? 9 : primaries]
    }

    /// Whether `source` (white x, y, then red, green, blue x, y) makes the
    /// matrices: eight finite values, no y of 0, primaries not on one line.
    static func isUsable(_ source: [Double]) -> Bool {
        guard source.count == 8, source.allSatisfy({ $0.isFinite }),
            stride(from: 1, to: 8, by: 2).allSatisfy({ source[$0] > 0 })
        else { return false }
        // The primaries' xyz as columns: a triangle of (next to) no area has no inverse.
        let xyz: Matrix = (0..<9).map { index in
            let x = source[2 + 2 * (index % 3)], y = source[3 + 2 * (index % 3)]
            return [x, y, 1 - x - y][index / 3]
        }
        guard abs(determinant(xyz)) > 1e-6 else { return false }
        return (toBT709(from: source) + luminance(source)).allSatisfy { $0.isFinite }
    }

    static func determinant(_ m: Matrix) -> Double {
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6])
    }

    /// Linear RGB of `source` (white x, y, then red, green, blue x, y) to
    /// linear BT.709 RGB, the white adapted to D65 by Bradford when it is another.
    static func toBT709(from source: [Double]) -> Matrix {
        let bt709 = NCLXColor.chromaticities[1]!
        var toXYZ = rgbToXYZ(source)
        if abs(source[0] - bt709[0]) > 1e-6 || abs(source[1] - bt709[1]) > 1e-6 {
            toXYZ = multiply(bradford(from: white(source), to: white(bt709)), toXYZ)
        }
        return multiply(invert(rgbToXYZ(bt709)), toXYZ)
    }

    /// The Y row of `source`'s RGB-to-XYZ matrix: its luminance weights.
    static func luminance(_ source: [Double]) -> [Double] { Array(rgbToXYZ(source)[3..<6]) }

    /// The XYZ of a white x, y with Y = 1.
    static func white(_ c: [Double]) -> [Double] { [c[0] / c[1], 1, (1 - c[0] - c[1]) / c[1]] }

    /// RGB to XYZ: the primaries' XYZ as columns, scaled so that RGB 1, 1, 1 is the white.
    static func rgbToXYZ(_ c: [Double]) -> Matrix {
        var p = Matrix(repeating: 0, count: 9)
        for i in 0..<3 {
            let x = c[2 + 2 * i], y = c[3 + 2 * i]
            p[i] = x / y
            p[3 + i] = 1
            p[6 + i] = (1 - x - y) / y
        }
        let s = apply(invert(p), white(c))
        for row in 0..<3 { for column in 0..<3 { p[row * 3 + column] *= s[column] } }
        return p
    }

    /// Bradford's chromatic adaptation from one white (XYZ) to another.
    static func bradford(from source: [Double], to target: [Double]) -> Matrix {
        let cone: Matrix = [0.8951, 0.2664, -0.1614, -0.7502, 1.7135, 0.0367, 0.0389, -0.0685, 1.0296]
        let s = apply(cone, source), t = apply(cone, target)
        let scale: Matrix = [t[0] / s[0], 0, 0, 0, t[1] / s[1], 0, 0, 0, t[2] / s[2]]
        return multiply(invert(cone), multiply(scale, cone))
    }

    static func multiply(_ a: Matrix, _ b: Matrix) -> Matrix {
        (0..<9).map { index in
            let row = index / 3, column = index % 3
            return (0..<3).reduce(0) { $0 + a[row * 3 + $1] * b[$1 * 3 + column] }
        }
    }

    static func apply(_ m: Matrix, _ v: [Double]) -> [Double] {
        (0..<3).map { m[$0 * 3] * v[0] + m[$0 * 3 + 1] * v[1] + m[$0 * 3 + 2] * v[2] }
    }

    static func invert(_ m: Matrix) -> Matrix {
        let (a, b, c, d, e, f, g, h, i) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
        let co: Matrix = [e * i - f * h, c * h - b * i, b * f - c * e, f * g - d * i, a * i - c * g, c * d - a * f,
                          d * h - e * g, b * g - a * h, a * e - b * d]
        let determinant = a * co[0] + b * co[3] + c * co[6]
        return co.map { $0 / determinant }
    }
}
