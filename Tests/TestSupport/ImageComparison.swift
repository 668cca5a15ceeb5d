import AsyncImageKit
import Foundation

/// Comparing two images of the same size pixel by pixel (row padding ignored).
public enum ImageComparison {
    /// The peak signal-to-noise ratio of the colour channels (R, G, B), in
    /// dB: `10 log10(255² / MSE)`; infinity when they are equal.
    public static func psnr(_ a: Image, _ b: Image) -> Double {
        precondition(a.size == b.size, "\(a.size) against \(b.size)")
        var squares = 0.0
        forEachPixel(a, b) { p, q in
            for channel in 0..<3 {
                let d = Double(p[channel]) - Double(q[channel])
                squares += d * d
            }
        }
        let mse = squares / Double(a.width * a.height * 3)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// The largest difference of one channel (`0...3`: R, G, B, A) between the two.
    public static func maxDifference(_ a: Image, _ b: Image, channel: Int) -> Int {
        precondition(a.size == b.size, "\(a.size) against \(b.size)")
        var largest = 0
        forEachPixel(a, b) { p, q in largest = max(largest, abs(Int(p[channel]) - Int(q[channel]))) }
        return largest
    }

    /// Whether every pixel's four channels are equal.
    public static func isEqual(_ a: Image, _ b: Image) -> Bool {
        guard a.size == b.size else { return false }
        var equal = true
        forEachPixel(a, b) { p, q in
            if equal, p[0] != q[0] || p[1] != q[1] || p[2] != q[2] || p[3] != q[3] { equal = false }
        }
        return equal
    }

    private static func forEachPixel(
        _ a: Image, _ b: Image, _ body: (UnsafePointer<UInt8>, UnsafePointer<UInt8>) -> Void
    ) {
        a.pixels.withUnsafeBytes { rawA in
            b.pixels.withUnsafeBytes { rawB in
                let pa = rawA.bindMemory(to: UInt8.self).baseAddress!
                let pb = rawB.bindMemory(to: UInt8.self).baseAddress!
                for y in 0..<a.height {
                    for x in 0..<a.width {
                        body(pa + y * a.bytesPerRow + x * 4, pb + y * b.bytesPerRow + x * 4)
                    }
                }
            }
        }
    }
}
