import Foundation

/// The HDR-to-SDR formula of the library's `HDRToneMapping` documentation,
/// written out again plainly for the tests (Double throughout, no tables,
/// nothing shared with the library): SMPTE ST 2084 (PQ) or the BT.2100 HLG
/// inverse OETF and OOTF, BT.2408's EETF to 203 cd/m², BT.2020 to BT.709,
/// clip, the sRGB curve, rounding.
public enum HDRReference {
    public enum Transfer: Sendable { case pq, hlg }

    /// ST 2084's constants.
    static let m1 = 0.1593017578125, m2 = 78.84375, c1 = 0.8359375, c2 = 18.8515625, c3 = 18.6875

    /// A PQ signal to cd/m².
    public static func pqToLight(_ signal: Double) -> Double {
        let p = pow(signal, 1 / m2)
        return 10000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
    }

    /// cd/m² to a PQ signal.
    public static func lightToPQ(_ light: Double) -> Double {
        let y = pow(light / 10000, m1)
        return pow((c1 + c2 * y) / (1 + c3 * y), m2)
    }

    /// BT.2408 Annex 5: a PQ signal from a source of peak `peak` cd/m² onto
    /// a 203 cd/m² target (blacks 0), as a PQ signal.
    public static func eetf(_ signal: Double, peak: Double) -> Double {
        let lw = lightToPQ(max(peak, 203))
        let maxLum = lightToPQ(203) / lw
        let ks = 1.5 * maxLum - 0.5
        let e1 = min(signal / lw, 1)
        var e2 = e1
        if e1 > ks && ks < 1 {
            let t = (e1 - ks) / (1 - ks)
            e2 = (2 * pow(t, 3) - 3 * pow(t, 2) + 1) * ks + (pow(t, 3) - 2 * pow(t, 2) + t) * (1 - ks)
                + (-2 * pow(t, 3) + 3 * pow(t, 2)) * maxLum
        }
        return e2 * lw
    }

    /// BT.2100's HLG inverse OETF.
    public static func hlgToScene(_ signal: Double) -> Double {
        let a = 0.17883277, b = 0.28466892, c = 0.55991073
        return signal <= 0.5 ? signal * signal / 3 : (exp((signal - c) / a) + b) / 12
    }

    /// BT.2087's BT.2020-to-BT.709 matrix for linear light (to 6 places).
    public static let bt2020To709: [[Double]] = [
        [1.660491, -0.587641, -0.072850],
        [-0.124550, 1.132900, -0.008349],
        [-0.018151, -0.100579, 1.118730],
    ]

    /// Display P3 (P3 primaries, D65) to BT.709 for linear light (to 6
    /// places: the product of the two RGB-to-XYZ matrices of CSS Color 4).
    public static let displayP3To709: [[Double]] = [
        [1.224940, -0.224940, 0.0],
        [-0.042057, 1.042057, 0.0],
        [-0.019638, -0.078636, 1.098274],
    ]

    /// The source primaries: the matrix to BT.709 and the luminance weights (HLG's `Ys`).
    public enum Primaries: Sendable {
        case bt2020, displayP3

        var matrix: [[Double]] { self == .bt2020 ? bt2020To709 : displayP3To709 }
        var luminance: [Double] { self == .bt2020 ? [0.2627, 0.6780, 0.0593] : [0.228975, 0.691739, 0.079287] }
    }

    /// IEC 61966-2-1.
    public static func sRGB(_ linear: Double) -> Double {
        linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055
    }

    /// The 8-bit sRGB of one pixel (BT.2020 unless `primaries` says
    /// otherwise) whose signals are `rgb` (each in [0, 1]); `peak` is the
    /// source peak (HLG: 1000).
    public static func sdr(_ rgb: [Double], transfer: Transfer, peak: Double = 1000, primaries: Primaries = .bt2020)
        -> [UInt8]
    {
        var light: [Double]
        switch transfer {
        case .pq:
            light = rgb.map { pqToLight($0) }
        case .hlg:
            let scene = rgb.map { hlgToScene($0) }
            let w = primaries.luminance
            let ys = w[0] * scene[0] + w[1] * scene[1] + w[2] * scene[2]
            light = scene.map { 1000 * pow(ys, 0.2) * $0 }
        }
        light = light.map { pqToLight(eetf(lightToPQ($0), peak: transfer == .hlg ? 1000 : peak)) / 203 }
        return primaries.matrix.map { row in
            let value = row[0] * light[0] + row[1] * light[1] + row[2] * light[2]
            return UInt8((255 * sRGB(min(max(value, 0), 1))).rounded())
        }
    }

    /// 12-bit code values as 16-bit PNG samples that any rounding or
    /// shifting brings back to the same 12 bits (the bits repeated).
    public static func sixteenBits(_ code: Int) -> UInt16 { UInt16(code << 4 | code >> 8) }

    /// A test chart of 12-bit BT.2020 code values, `width` x 8 (the width a
    /// multiple of 8 of at least 64): a grey ramp over the whole range, ramps
    /// of each primary, and patches: black, 100, 203, 1000 and 4000 cd/m² in
    /// PQ, full red, green and blue, a saturated BT.2020 orange, and mixtures.
    public static func chart(width: Int = 64) -> [[Int]] {
        var pixels: [[Int]] = []
        for y in 0..<8 {
            for x in 0..<width {
                let ramp = x * 4095 / (width - 1)
                switch y {
                case 0: pixels.append([ramp, ramp, ramp])
                case 1: pixels.append([ramp, 0, 0])
                case 2: pixels.append([0, ramp, 0])
                case 3: pixels.append([0, 0, ramp])
                case 4: pixels.append([ramp, 4095 - ramp, ramp / 2])
                case 5:
                    let pq = [0.0, 100, 203, 1000, 4000].map { Int((lightToPQ($0) * 4095).rounded()) }
                    let patches: [[Int]] = pq.map { [$0, $0, $0] } + [[4095, 0, 0], [0, 4095, 0], [0, 0, 4095]]
                    pixels.append(patches[x * patches.count / width])
                default:
                    // Pseudo-random colours, the same on every run.
                    let seed = (x * 7919 + y * 104_729) & 0xFFFF
                    pixels.append([seed * 31 % 4096, seed * 17 % 4096, seed * 13 % 4096])
                }
            }
        }
        return pixels
    }
}
