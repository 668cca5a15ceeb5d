import AsyncImageKit
import Foundation

/// Generated pictures for tests, the demo and benchmarks: real pixels that
/// the real encoders turn into real files.
public enum SyntheticImage {
    /// A photo-like picture: smooth colour fields, soft shapes and fine grain,
    /// so that it compresses like a photograph (not like a flat test card).
    public static func photo(width: Int, height: Int, seed: UInt64 = 1) -> Image {
        var random = SplitMix64(seed: seed)
        struct Blob {
            var x: Double, y: Double, r: Double
            var color: (Double, Double, Double)
        }
        func unit(_ scale: UInt64) -> Double { Double(random.next() % scale) }
        var blobs: [Blob] = []
        for _ in 0..<12 {
            let x = unit(1000) / 1000
            let y = unit(1000) / 1000
            let r = 0.08 + unit(300) / 1000
            blobs.append(Blob(x: x, y: y, r: r, color: (unit(256), unit(256), unit(256))))
        }
        let base = (unit(200), unit(200), unit(200))
        return make(width: width, height: height) { out in
            var grain = SplitMix64(seed: seed &+ 99)
            for y in 0..<height {
                let fy = Double(y) / Double(height)
                for x in 0..<width {
                    let fx = Double(x) / Double(width)
                    var r = base.0 * (1 - fy) + 40 * fx
                    var g = base.1 * (1 - fx * 0.5) + 30 * fy
                    var b = base.2 * fy + 50 * (1 - fx)
                    for blob in blobs {
                        let dx = fx - blob.x
                        let dy = fy - blob.y
                        let d2 = (dx * dx + dy * dy) / (blob.r * blob.r)
                        if d2 < 1 {
                            let w = (1 - d2) * (1 - d2)
                            r += (blob.color.0 - r) * w
                            g += (blob.color.1 - g) * w
                            b += (blob.color.2 - b) * w
                        }
                    }
                    let noise = Double(Int(grain.next() % 17) - 8)
                    let p = out + (y * width + x) * 4
                    p[0] = clamp(r + noise)
                    p[1] = clamp(g + noise)
                    p[2] = clamp(b + noise)
                    p[3] = 255
                }
            }
        }
    }

    /// Four flat quadrants: red top-left, green top-right, blue bottom-left,
    /// white bottom-right. Survives JPEG and shows any rotation or mirroring.
    public static func quadrants(width: Int, height: Int) -> Image {
        make(width: width, height: height) { out in
            for y in 0..<height {
                for x in 0..<width {
                    let color = quadrantColor(x: x, y: y, width: width, height: height)
                    let p = out + (y * width + x) * 4
                    p[0] = color.r
                    p[1] = color.g
                    p[2] = color.b
                    p[3] = 255
                }
            }
        }
    }

    /// The colour of ``quadrants(width:height:)`` at a point.
    public static func quadrantColor(x: Int, y: Int, width: Int, height: Int) -> RGBA {
        switch (x < width / 2, y < height / 2) {
        case (true, true): return RGBA(r: 255, g: 0, b: 0)
        case (false, true): return RGBA(r: 0, g: 255, b: 0)
        case (true, false): return RGBA(r: 0, g: 0, b: 255)
        case (false, false): return RGBA(r: 255, g: 255, b: 255)
        }
    }

    /// A horizontal alpha ramp over a colour gradient: alpha 0 at the left, 255 at the right.
    public static func alphaRamp(width: Int, height: Int) -> Image {
        make(width: width, height: height) { out in
            for y in 0..<height {
                for x in 0..<width {
                    let p = out + (y * width + x) * 4
                    p[0] = UInt8(x * 255 / max(1, width - 1))
                    p[1] = UInt8(y * 255 / max(1, height - 1))
                    p[2] = 128
                    p[3] = UInt8(x * 255 / max(1, width - 1))
                }
            }
        }
    }

    /// An image of one colour.
    public static func solid(width: Int, height: Int, color: RGBA) -> Image {
        make(width: width, height: height) { out in
            for i in 0..<(width * height) {
                out[i * 4] = color.r
                out[i * 4 + 1] = color.g
                out[i * 4 + 2] = color.b
                out[i * 4 + 3] = color.a
            }
        }
    }

    /// An RGBA image whose pixels `fill` writes.
    public static func make(width: Int, height: Int, fill: (UnsafeMutablePointer<UInt8>) -> Void) -> Image {
        var pixels = Data(count: width * height * 4)
        pixels.withUnsafeMutableBytes { fill($0.bindMemory(to: UInt8.self).baseAddress!) }
        return Image(width: width, height: height, rgba: pixels)
    }

    @inline(__always)
    static func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value))) }
}

/// A small, fast, seedable random generator (SplitMix64), for repeatable pictures.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator from a seed.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
