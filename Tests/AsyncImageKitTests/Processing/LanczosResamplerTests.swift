import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// The quality filter (``ImageResizer/Filter/lanczos3``: Lanczos3 in linear
/// light, premultiplied, clamped) against a plain `Double` reference written
/// here from the definitions alone: the kernel, its widening by the scale,
/// edge clamping, normalisation, the sRGB curve. Within one code value, for
/// shrinking, growing, a 1-pixel side, a ratio over 100:1 and an alpha
/// checkerboard (whose colours must not bleed through transparent pixels).
final class LanczosResamplerTests: XCTestCase {
    func testShrinkingMatchesTheReference() throws {
        try assertMatchesReference(random(width: 37, height: 23, seed: 1, opaque: true), to: PixelSize(width: 11, height: 7))
        try assertMatchesReference(random(width: 64, height: 48, seed: 2, opaque: true), to: PixelSize(width: 25, height: 19))
    }

    func testGrowingMatchesTheReference() throws {
        try assertMatchesReference(random(width: 9, height: 6, seed: 3, opaque: true), to: PixelSize(width: 31, height: 20))
    }

    func testOnePixelSidesMatchTheReference() throws {
        try assertMatchesReference(random(width: 1, height: 40, seed: 4, opaque: true), to: PixelSize(width: 1, height: 7))
        try assertMatchesReference(random(width: 40, height: 1, seed: 5, opaque: true), to: PixelSize(width: 3, height: 1))
        try assertMatchesReference(random(width: 1, height: 5, seed: 6, opaque: true), to: PixelSize(width: 4, height: 17))
    }

    func testARatioOverAHundredToOneMatchesTheReference() throws {
        try assertMatchesReference(random(width: 420, height: 6, seed: 7, opaque: true), to: PixelSize(width: 4, height: 2))
    }

    func testTranslucencyMatchesAPremultipliedReference() throws {
        try assertMatchesReference(random(width: 30, height: 20, seed: 8, opaque: false), to: PixelSize(width: 13, height: 9))
        // A checkerboard of opaque red and fully transparent green: no green
        // may show anywhere (premultiplied: a transparent pixel weighs nothing).
        let board = SyntheticImage.make(width: 16, height: 16) { p in
            for i in 0..<256 {
                let on = (i % 16 + i / 16) % 2 == 0
                (p[i * 4], p[i * 4 + 1], p[i * 4 + 2], p[i * 4 + 3]) = on ? (255, 0, 0, 255) : (0, 255, 0, 0)
            }
        }
        let small = try assertMatchesReference(board, to: PixelSize(width: 5, height: 5))
        for y in 0..<5 {
            for x in 0..<5 {
                let pixel = small.pixel(x: x, y: y)
                XCTAssertEqual(pixel.g, 0, "green bled through at \(x),\(y): \(pixel)")
                XCTAssertEqual(pixel.r, 255, "at \(x),\(y): \(pixel)")
            }
        }
    }

    /// ``ResizeQuality/high`` boxes a large image down to about twice the
    /// size first (ShrinkOnLoad's factors), in linear light and
    /// premultiplied, the last blocks over what is left at the right and
    /// bottom edges; then the filter runs on that grid.
    func testTheBoxBeforeTheFilterMatchesTheReference() throws {
        for (image, size) in [
            (random(width: 203, height: 97, seed: 9, opaque: true), PixelSize(width: 20, height: 9)),
            (random(width: 161, height: 120, seed: 10, opaque: false), PixelSize(width: 13, height: 17)),
            (random(width: 300, height: 2, seed: 11, opaque: true), PixelSize(width: 7, height: 1)),
        ] {
            let box = ShrinkOnLoad.boxFactors(source: image.size, final: size, quality: .high)
            XCTAssertGreaterThan(box.x, 1, "\(image.size) to \(size) must box")
            XCTAssertEqual(ShrinkOnLoad.boxFactors(source: image.size, final: size, quality: .fast).x, 1)
            try assertMatchesReference(image, to: size, box: box) { try ImageResizer.resize($0, to: $1, quality: .high) }
        }
    }

    /// ``ResizeQuality/fast`` is the area average, whatever the size.
    func testFastIsTheAreaAverage() throws {
        let image = random(width: 203, height: 97, seed: 12, opaque: false)
        let size = PixelSize(width: 20, height: 9)
        XCTAssertEqual(
            try ImageResizer.resize(image, to: size, quality: .fast).pixels,
            try ImageResizer.resize(image, to: size).pixels)
    }

    /// A flat field stays flat (the weights sum to one); a hard edge does
    /// not ring past black or white (the bytes are clamped, and the clamp
    /// is the reference's too).
    func testAFlatFieldStaysFlat() throws {
        let flat = SyntheticImage.solid(width: 50, height: 30, color: RGBA(r: 200, g: 100, b: 50))
        for size in [PixelSize(width: 7, height: 5), PixelSize(width: 120, height: 80)] {
            let resized = try ImageResizer.resize(flat, to: size, filter: .lanczos3)
            XCTAssertTrue(resized.isOpaque)
            for y in 0..<size.height {
                for x in 0..<size.width {
                    let p = resized.pixel(x: x, y: y)
                    XCTAssertLessThanOrEqual(abs(Int(p.r) - 200) + abs(Int(p.g) - 100) + abs(Int(p.b) - 50), 1, "\(p)")
                }
            }
        }
    }

    // MARK: The reference

    private func random(width: Int, height: Int, seed: UInt64, opaque: Bool) -> Image {
        var generator = SplitMix64(seed: seed)
        return SyntheticImage.make(width: width, height: height) { p in
            for i in 0..<(width * height * 4) {
                p[i] = UInt8(truncatingIfNeeded: generator.next())
                if opaque, i % 4 == 3 { p[i] = 255 }
            }
        }
    }

    /// Resizes with `resize` (the filter alone by default) and compares every
    /// byte with the reference (after `box`); returns the result.
    @discardableResult
    private func assertMatchesReference(
        _ image: Image, to size: PixelSize, box: (x: Int, y: Int) = (1, 1),
        file: StaticString = #filePath, line: UInt = #line,
        resize: (Image, PixelSize) throws -> Image = { try ImageResizer.resize($0, to: $1, filter: .lanczos3) }
    ) throws -> Image {
        let resized = try resize(image, size)
        XCTAssertEqual(resized.size, size, file: file, line: line)
        let expected = Self.reference(image, to: size, box: box)
        var worst = 0
        for y in 0..<size.height {
            for x in 0..<size.width {
                let got = resized.pixel(x: x, y: y)
                let want = expected[y * size.width + x]
                for (a, b) in [(got.r, want.r), (got.g, want.g), (got.b, want.b), (got.a, want.a)] {
                    worst = max(worst, abs(Int(a) - Int(b)))
                }
            }
        }
        XCTAssertLessThanOrEqual(
            worst, 1, "\(image.size) to \(size), box \(box): \(worst) code values off", file: file, line: line)
        return resized
    }

    /// Lanczos3 from its definition.
    private static func kernel(_ x: Double) -> Double {
        if x == 0 { return 1 }
        guard abs(x) < 3 else { return 0 }
        return (sin(.pi * x) / (.pi * x)) * (sin(.pi * x / 3) / (.pi * x / 3))
    }

    /// The weight of each source index for destination `d` along one axis.
    private static func weights(source: Int, destination: Int, d: Int) -> [Int: Double] {
        let scale = Double(source) / Double(destination)
        let stretch = max(1, scale)
        let centre = (Double(d) + 0.5) * scale - 0.5
        var weights: [Int: Double] = [:]
        for s in Int((centre - 3 * stretch).rounded(.down))...Int((centre + 3 * stretch).rounded(.up)) {
            weights[min(source - 1, max(0, s)), default: 0] += kernel((Double(s) - centre) / stretch)
        }
        let sum = weights.values.reduce(0, +)
        return weights.mapValues { $0 / sum }
    }

    private static func linear(_ v: UInt8) -> Double {
        let c = Double(v) / 255
        return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
    }

    private static func encode(_ l: Double) -> UInt8 {
        let c = l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1 / 2.4) - 0.055
        return UInt8(max(0, min(255, (c * 255).rounded())))
    }

    /// Every destination pixel as the weighted sum, in `Double`, of the
    /// premultiplied linear source under the two axes' weights, after
    /// averaging `box` blocks of the source (premultiplied linear too).
    private static func reference(_ image: Image, to size: PixelSize, box: (x: Int, y: Int) = (1, 1)) -> [RGBA] {
        // The grid the weights run over: the source, or its blocks' means.
        let gridWidth = (image.width + box.x - 1) / box.x
        let gridHeight = (image.height + box.y - 1) / box.y
        var grid = [(r: Double, g: Double, b: Double, a: Double)](repeating: (0, 0, 0, 0), count: gridWidth * gridHeight)
        for gy in 0..<gridHeight {
            for gx in 0..<gridWidth {
                var sum = (r: 0.0, g: 0.0, b: 0.0, a: 0.0)
                var count = 0.0
                for sy in (gy * box.y)..<min(image.height, (gy + 1) * box.y) {
                    for sx in (gx * box.x)..<min(image.width, (gx + 1) * box.x) {
                        let p = image.pixel(x: sx, y: sy)
                        let alpha = Double(p.a) / 255
                        sum.r += linear(p.r) * alpha
                        sum.g += linear(p.g) * alpha
                        sum.b += linear(p.b) * alpha
                        sum.a += alpha
                        count += 1
                    }
                }
                grid[gy * gridWidth + gx] = (sum.r / count, sum.g / count, sum.b / count, sum.a / count)
            }
        }
        var out: [RGBA] = []
        for y in 0..<size.height {
            let wy = weights(source: gridHeight, destination: size.height, d: y)
            for x in 0..<size.width {
                let wx = weights(source: gridWidth, destination: size.width, d: x)
                var (r, g, b, a) = (0.0, 0.0, 0.0, 0.0)
                for (sy, vy) in wy {
                    for (sx, vx) in wx {
                        let p = grid[sy * gridWidth + sx]
                        let w = vx * vy
                        r += w * p.r
                        g += w * p.g
                        b += w * p.b
                        a += w * p.a
                    }
                }
                a = min(1, max(0, a))
                guard a > 0.5 / 255 else {
                    out.append(RGBA(r: 0, g: 0, b: 0, a: 0))
                    continue
                }
                func colour(_ c: Double) -> UInt8 { encode(min(a, max(0, c)) / a) }
                out.append(RGBA(r: colour(r), g: colour(g), b: colour(b), a: UInt8((a * 255).rounded())))
            }
        }
        return out
    }
}
