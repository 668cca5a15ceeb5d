import AsyncImageKit
import Foundation

/// An RGBA drawing surface for the demo's pictures and the benchmark's
/// plots: rectangles, images (centre-cropped to fill a rectangle), and text
/// in a tiny 3x5 pixel font.
public struct Canvas: Sendable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// RGBA, row after row, no padding.
    public private(set) var pixels: [UInt8]

    /// A canvas filled with `background`.
    public init(width: Int, height: Int, background: RGBA) {
        self.width = width
        self.height = height
        pixels = [UInt8](repeating: 0, count: width * height * 4)
        fill(x: 0, y: 0, width: width, height: height, color: background)
    }

    /// Fills a rectangle (clipped to the canvas), blended by `color`'s alpha.
    public mutating func fill(x: Int, y: Int, width w: Int, height h: Int, color: RGBA) {
        let x0 = max(0, x), y0 = max(0, y)
        let x1 = min(width, x + w), y1 = min(height, y + h)
        guard x0 < x1, y0 < y1 else { return }
        pixels.withUnsafeMutableBufferPointer { p in
            for row in y0..<y1 {
                var i = (row * width + x0) * 4
                for _ in x0..<x1 {
                    if color.a == 255 {
                        p[i] = color.r
                        p[i + 1] = color.g
                        p[i + 2] = color.b
                    } else {
                        let a = Int(color.a)
                        p[i] = UInt8((Int(color.r) * a + Int(p[i]) * (255 - a)) / 255)
                        p[i + 1] = UInt8((Int(color.g) * a + Int(p[i + 1]) * (255 - a)) / 255)
                        p[i + 2] = UInt8((Int(color.b) * a + Int(p[i + 2]) * (255 - a)) / 255)
                    }
                    p[i + 3] = 255
                    i += 4
                }
            }
        }
    }

    /// Draws `image` (its first frame) scaled to cover the rectangle and centre-cropped,
    /// blended over what is there by its alpha.
    public mutating func draw(_ image: Image, x: Int, y: Int, width w: Int, height h: Int) {
        guard w > 0, h > 0 else { return }
        let scale = max(Double(w) / Double(image.width), Double(h) / Double(image.height))
        let offsetX = (Double(image.width) * scale - Double(w)) / 2
        let offsetY = (Double(image.height) * scale - Double(h)) / 2
        image.pixels.withUnsafeBytes { raw in
            let src = raw.bindMemory(to: UInt8.self)
            for row in 0..<h where y + row >= 0 && y + row < height {
                let sy = min(image.height - 1, Int((Double(row) + offsetY) / scale))
                for col in 0..<w where x + col >= 0 && x + col < width {
                    let sx = min(image.width - 1, Int((Double(col) + offsetX) / scale))
                    let s = sy * image.bytesPerRow + sx * 4
                    let d = ((y + row) * width + x + col) * 4
                    let a = Int(src[s + 3])
                    for c in 0..<3 {
                        pixels[d + c] = UInt8((Int(src[s + c]) * a + Int(pixels[d + c]) * (255 - a)) / 255)
                    }
                    pixels[d + 3] = 255
                }
            }
        }
    }

    /// Draws `image` (its first frame) at its own size with its top-left
    /// corner at (x, y), blended over what is there by its alpha.
    public mutating func place(_ image: Image, x: Int, y: Int) {
        image.pixels.withUnsafeBytes { raw in
            let src = raw.bindMemory(to: UInt8.self)
            for row in 0..<image.height where y + row >= 0 && y + row < height {
                for col in 0..<image.width where x + col >= 0 && x + col < width {
                    let s = row * image.bytesPerRow + col * 4
                    let d = ((y + row) * width + x + col) * 4
                    let a = Int(src[s + 3])
                    for c in 0..<3 {
                        pixels[d + c] = UInt8((Int(src[s + c]) * a + Int(pixels[d + c]) * (255 - a)) / 255)
                    }
                    pixels[d + 3] = 255
                }
            }
        }
    }

    /// Draws text in the 3x5 font, each font pixel `scale` pixels square.
    public mutating func text(_ string: String, x: Int, y: Int, scale: Int = 2, color: RGBA) {
        var cursor = x
        for character in string.uppercased() {
            if let rows = Font.glyphs[character] {
                for (r, bits) in rows.enumerated() {
                    for c in 0..<3 where bits & (4 >> c) != 0 {
                        fill(x: cursor + c * scale, y: y + r * scale, width: scale, height: scale, color: color)
                    }
                }
            }
            cursor += 4 * scale
        }
    }

    /// The width `text` takes.
    public static func textWidth(_ string: String, scale: Int = 2) -> Int { string.count * 4 * scale - scale }

    /// The canvas as an image.
    public var image: Image { Image(width: width, height: height, rgba: Data(pixels)) }

    /// Writes the canvas as a PNG file.
    public func writePNG(to url: URL) throws {
        try PNGEncoder().encode(image).write(to: url)
    }
}

/// A 3x5 pixel font: each glyph is five rows of three bits (4 = left column).
enum Font {
    static let glyphs: [Character: [UInt8]] = {
        let table: [(Character, String)] = [
            ("0", "111 101 101 101 111"), ("1", "010 110 010 010 111"), ("2", "111 001 111 100 111"),
            ("3", "111 001 111 001 111"), ("4", "101 101 111 001 001"), ("5", "111 100 111 001 111"),
            ("6", "111 100 111 101 111"), ("7", "111 001 001 001 001"), ("8", "111 101 111 101 111"),
            ("9", "111 101 111 001 111"), ("A", "010 101 111 101 101"), ("B", "110 101 110 101 110"),
            ("C", "011 100 100 100 011"), ("D", "110 101 101 101 110"), ("E", "111 100 110 100 111"),
            ("F", "111 100 110 100 100"), ("G", "011 100 101 101 011"), ("H", "101 101 111 101 101"),
            ("I", "111 010 010 010 111"), ("J", "001 001 001 101 010"), ("K", "101 101 110 101 101"),
            ("L", "100 100 100 100 111"), ("M", "101 111 111 101 101"), ("N", "110 101 101 101 101"),
            ("O", "010 101 101 101 010"), ("P", "110 101 110 100 100"), ("Q", "010 101 101 110 011"),
            ("R", "110 101 110 101 101"), ("S", "011 100 010 001 110"), ("T", "111 010 010 010 010"),
            ("U", "101 101 101 101 111"), ("V", "101 101 101 101 010"), ("W", "101 101 111 111 101"),
            ("X", "101 101 010 101 101"), ("Y", "101 101 010 010 010"), ("Z", "111 001 010 100 111"),
            (" ", "000 000 000 000 000"), ("#", "101 111 101 111 101"), (".", "000 000 000 000 010"),
            ("-", "000 000 111 000 000"), (":", "000 010 000 010 000"), ("/", "001 001 010 100 100"),
            ("%", "101 001 010 100 101"), ("(", "010 100 100 100 010"), (")", "010 001 001 001 010"),
            ("=", "000 111 000 111 000"), ("+", "000 010 111 010 000"), (",", "000 000 000 010 100"),
        ]
        var glyphs: [Character: [UInt8]] = [:]
        for (character, rows) in table {
            glyphs[character] = rows.split(separator: " ").map { UInt8($0, radix: 2)! }
        }
        return glyphs
    }()
}
