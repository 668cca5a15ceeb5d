import Foundation

/// Colour differences for the colour-management tests: 8-bit sRGB to
/// CIELAB (D65 white, as both images compared are sRGB) and CIEDE2000, after
/// Sharma, Wu and Dalal, "The CIEDE2000 Color-Difference Formula:
/// Implementation Notes, Supplementary Test Data, and Mathematical
/// Observations", Color Research and Application 30 (2005), whose test
/// pairs check it (`ColourDifferenceTests`).
public enum ColourDifference {
    /// A CIELAB colour.
    public struct Lab: Sendable, Equatable {
        public var l: Double
        public var a: Double
        public var b: Double

        public init(_ l: Double, _ a: Double, _ b: Double) {
            self.l = l
            self.a = a
            self.b = b
        }
    }

    /// CIEDE2000 (kL = kC = kH = 1).
    public static func ciede2000(_ x: Lab, _ y: Lab) -> Double {
        let c1 = (x.a * x.a + x.b * x.b).squareRoot()
        let c2 = (y.a * y.a + y.b * y.b).squareRoot()
        let meanC = (c1 + c2) / 2
        let meanC7 = pow(meanC, 7)
        let g = 0.5 * (1 - (meanC7 / (meanC7 + pow(25, 7))).squareRoot())
        let a1 = (1 + g) * x.a
        let a2 = (1 + g) * y.a
        let cp1 = (a1 * a1 + x.b * x.b).squareRoot()
        let cp2 = (a2 * a2 + y.b * y.b).squareRoot()
        func hue(_ b: Double, _ a: Double) -> Double {
            if b == 0 && a == 0 { return 0 }
            let h = atan2(b, a) * 180 / .pi
            return h < 0 ? h + 360 : h
        }
        let hp1 = hue(x.b, a1)
        let hp2 = hue(y.b, a2)

        let dL = y.l - x.l
        let dC = cp2 - cp1
        var dh = 0.0
        if cp1 * cp2 != 0 {
            dh = hp2 - hp1
            if dh > 180 { dh -= 360 } else if dh < -180 { dh += 360 }
        }
        let dH = 2 * (cp1 * cp2).squareRoot() * sin(dh * .pi / 360)

        let meanL = (x.l + y.l) / 2
        let meanCp = (cp1 + cp2) / 2
        var meanH = hp1 + hp2
        if cp1 * cp2 != 0 {
            if abs(hp1 - hp2) <= 180 {
                meanH /= 2
            } else {
                meanH = hp1 + hp2 < 360 ? (hp1 + hp2 + 360) / 2 : (hp1 + hp2 - 360) / 2
            }
        }
        func rad(_ degrees: Double) -> Double { degrees * .pi / 180 }
        let t =
            1 - 0.17 * cos(rad(meanH - 30)) + 0.24 * cos(rad(2 * meanH)) + 0.32 * cos(rad(3 * meanH + 6))
            - 0.20 * cos(rad(4 * meanH - 63))
        let dTheta = 30 * exp(-pow((meanH - 275) / 25, 2))
        let meanCp7 = pow(meanCp, 7)
        let rC = 2 * (meanCp7 / (meanCp7 + pow(25, 7))).squareRoot()
        let l50 = (meanL - 50) * (meanL - 50)
        let sL = 1 + 0.015 * l50 / (20 + l50).squareRoot()
        let sC = 1 + 0.045 * meanCp
        let sH = 1 + 0.015 * meanCp * t
        let rT = -sin(rad(2 * dTheta)) * rC
        let terms = pow(dL / sL, 2) + pow(dC / sC, 2) + pow(dH / sH, 2) + rT * (dC / sC) * (dH / sH)
        return max(0, terms).squareRoot()
    }

    /// An 8-bit sRGB colour in CIELAB (IEC 61966-2.1 curve and matrix, D65 white).
    public static func lab(r: UInt8, g: UInt8, b: UInt8) -> Lab {
        func linear(_ v: UInt8) -> Double {
            let c = Double(v) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        let (lr, lg, lb) = (linear(r), linear(g), linear(b))
        let x = (0.4124564 * lr + 0.3575761 * lg + 0.1804375 * lb) / 0.95047
        let y = 0.2126729 * lr + 0.7151522 * lg + 0.0721750 * lb
        let z = (0.0193339 * lr + 0.1191920 * lg + 0.9503041 * lb) / 1.08883
        func f(_ t: Double) -> Double { t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116 }
        let (fx, fy, fz) = (f(x), f(y), f(z))
        return Lab(116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz))
    }

    /// Mean and largest CIEDE2000 between two images' pixels: `a` RGBA (4
    /// bytes a pixel), `b` RGB (3 bytes a pixel), the same pixel count.
    public static func compare(rgba a: Data, rgb b: Data) -> (mean: Double, max: Double)? {
        let count = a.count / 4
        guard count > 0, b.count == count * 3 else { return nil }
        let pa = [UInt8](a)
        let pb = [UInt8](b)
        var sum = 0.0
        var largest = 0.0
        for i in 0..<count {
            let d = ciede2000(
                lab(r: pa[i * 4], g: pa[i * 4 + 1], b: pa[i * 4 + 2]),
                lab(r: pb[i * 3], g: pb[i * 3 + 1], b: pb[i * 3 + 2]))
            sum += d
            largest = max(largest, d)
        }
        return (sum / Double(count), largest)
    }
}
