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

    /// The largest difference of any colour channel (R, G, B) between the two, in levels.
    public static func maxColourDifference(_ a: Image, _ b: Image) -> Int {
        (0..<3).map { maxDifference(a, b, channel: $0) }.max()!
    }

    /// Mean and largest CIEDE2000 between the two images' colours (alpha
    /// ignored), both read as sRGB.
    public static func ciede2000(_ a: Image, _ b: Image) -> (mean: Double, max: Double) {
        precondition(a.size == b.size, "\(a.size) against \(b.size)")
        return ciede2000(a, rgb: rgb(b))
    }

    /// Mean and largest CIEDE2000 between an image's colours and tightly
    /// packed RGB bytes of its size (a reference computed outside `Image`).
    public static func ciede2000(_ a: Image, rgb: Data) -> (mean: Double, max: Double) {
        precondition(rgb.count == a.width * a.height * 3, "\(rgb.count) bytes for \(a.size)")
        return ColourDifference.compare(rgba: rgba(a), rgb: rgb)!
    }

    /// The image's pixels as tightly packed RGB bytes (row padding dropped).
    public static func rgb(_ image: Image) -> Data { packed(image, channels: 3) }

    /// The image's pixels as tightly packed RGBA bytes (row padding dropped).
    public static func rgba(_ image: Image) -> Data { packed(image, channels: 4) }

    private static func packed(_ image: Image, channels: Int) -> Data {
        var data = Data(capacity: image.width * image.height * channels)
        image.pixels.withUnsafeBytes { raw in
            for y in 0..<image.height {
                let row = raw[(y * image.bytesPerRow)...]
                for x in 0..<image.width {
                    let at = row.startIndex + x * 4
                    data.append(contentsOf: raw[at..<at + channels])
                }
            }
        }
        return data
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
