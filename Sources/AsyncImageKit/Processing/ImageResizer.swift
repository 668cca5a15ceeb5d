import CImageCodecs
import Foundation

/// Resizes RGBA images, as a ``ResizeQuality`` says:
/// ``resize(_:to:quality:)`` with ``ResizeQuality/high`` boxes a large
/// image down to about twice the size, then filters it with Lanczos3, both in
/// linear light; ``resize(_:to:)`` (``ResizeQuality/fast``) is an area
/// average (an exact box filter: each output pixel the coverage-weighted
/// mean of the source pixels under it), bilinear where a side grows.
///
/// Both are alpha-weighted (done on premultiplied values), so transparent
/// pixels do not darken the edges of opaque ones.
public enum ImageResizer {
    /// How a resize filters.
    ///
    /// The public choice is ``ResizeQuality`` (``resize(_:to:quality:)``):
    /// ``ResizeQuality/fast`` is ``areaAverage``, ``ResizeQuality/high``
    /// ``lanczos3`` after a box. (Lanczos3 was chosen over Mitchell and Magic
    /// Kernel Sharp 2021 from the figures: BENCHMARKS.md, *Thumbnail quality*.)
    package enum Filter: Sendable, Hashable {
        /// An exact box (area average) over the stored values, bilinear
        /// where a side grows: fast, and what every resize has done so far.
        case areaAverage
        /// Lanczos3 (a sinc windowed over three lobes, widened by the scale
        /// when shrinking), separable, in linear light: the 8-bit sRGB
        /// values are linearised by a table, premultiplied by alpha,
        /// filtered in `Float`, clamped (no ringing past black, white or
        /// the alpha), and encoded back by a 16-bit table. Growing uses the
        /// same kernel. Grey is RGB with equal channels, so it stays grey.
        case lanczos3
    }

    /// `image` resized to `size` (every frame) with the area average
    /// (``ResizeQuality/fast``, the pixels of earlier versions); the image
    /// itself when the size is unchanged.
    public static func resize(_ image: Image, to size: PixelSize) throws(AsyncImageError) -> Image {
        try resize(image, to: size, filter: .areaAverage)
    }

    /// `image` resized to `size` as `quality` says (every frame); the
    /// image itself when the size is unchanged. ``ResizeQuality/fast`` is
    /// ``resize(_:to:)``; ``ResizeQuality/high`` reduces by an integer box
    /// in linear light to about twice `size` first (when the image is
    /// larger than that), then filters with Lanczos3 in linear light.
    public static func resize(_ image: Image, to size: PixelSize, quality: ResizeQuality) throws(AsyncImageError) -> Image {
        try resize(image, to: size, quality: quality, light: .sRGB)
    }

    /// ``resize(_:to:quality:)`` with ``ResizeQuality/high``'s linear light
    /// taken from `light` (``ResizeQuality/fast`` needs sRGB values: the
    /// caller converts first).
    package static func resize(
        _ image: Image, to size: PixelSize, quality: ResizeQuality, light: LinearSource
    ) throws(AsyncImageError) -> Image {
        switch quality {
        case .fast: try resize(image, to: size, filter: .areaAverage)
        case .high:
            try resize(
                image, to: size, filter: .lanczos3,
                box: ShrinkOnLoad.boxFactors(source: image.size, final: size, quality: .high), light: light)
        }
    }

    /// `image` resized to `size` with `filter` (every frame), after an
    /// integer `box` reduction (Lanczos3 only: in linear light, each block
    /// of `box.x` x `box.y` pixels averaged, the last ones at the right and
    /// bottom edges over what is left); the image itself when the size is
    /// unchanged.
    ///
    /// `light` says where Lanczos3's linear light comes from (sRGB by
    /// default); the area average ignores it.
    package static func resize(
        _ image: Image, to size: PixelSize, filter: Filter, box: (x: Int, y: Int) = (1, 1),
        light: LinearSource = .sRGB
    ) throws(AsyncImageError) -> Image {
        guard size != image.size else { return image }
        guard size.width > 0, size.height > 0 else {
            throw .decoding(
                DecodingFailure(format: image.format, stage: .pixels, reason: "cannot resize to \(size)"), url: nil)
        }
        let linear = filter == .lanczos3
        let box = linear ? Box(x: box.x, y: box.y, source: image.size) : Box(x: 1, y: 1, source: image.size)
        let horizontal =
            linear
            ? Weights(source: box.reduced.width, destination: size.width, kernel: Weights.lanczos3, support: 3)
            : Weights(source: image.width, destination: size.width)
        let vertical =
            linear
            ? Weights(source: box.reduced.height, destination: size.height, kernel: Weights.lanczos3, support: 3)
            : Weights(source: image.height, destination: size.height)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(image.frames.count)
        // The result's opacity, measured as its pixels are written (no scan).
        var opaque = true
        for frame in image.frames {
            let pixels = try PixelMemory.make(size.pixelCount * 4) { out throws(AsyncImageError) in
                frame.pixels.withUnsafeBytes { raw in
                    let alpha = resample(
                        raw.bindMemory(to: UInt8.self).baseAddress!, bytesPerRow: image.bytesPerRow,
                        into: out, horizontal: horizontal, vertical: vertical, linear: linear, box: box,
                        opaque: image.isOpaque, light: light)
                    if alpha != 255 { opaque = false }
                }
            }
            frames.append(ImageFrame(pixels: pixels, duration: frame.duration))
        }
        return Image(
            width: size.width, height: size.height, bytesPerRow: size.width * 4, frames: frames,
            format: image.format, originalSize: image.originalSize, orientation: image.orientation,
            loopCount: image.loopCount, decodeInfo: image.decodeInfo, opacity: opaque ? .opaque : .notOpaque)
    }

    /// An integer box reduction before the filter: blocks of `x` by `y`
    /// source pixels, each averaged into one (the last column and row of
    /// blocks over what is left of the source).
    struct Box {
        let x: Int
        let y: Int
        /// The source's size.
        let source: PixelSize
        /// The size after the box: the source's, divided and rounded up.
        let reduced: PixelSize

        init(x: Int, y: Int, source: PixelSize) {
            self.x = max(1, x)
            self.y = max(1, y)
            self.source = source
            reduced = PixelSize(width: (source.width + self.x - 1) / self.x, height: (source.height + self.y - 1) / self.y)
        }

        /// Whether it does nothing.
        var isIdentity: Bool { x == 1 && y == 1 }
    }

    /// For each destination index along one axis, the source pixels it covers
    /// and their weights (summing to 1), padded to the same number of taps for
    /// every index: the inner loops then run a fixed count (no mispredicted
    /// branches on 2-or-3-pixel spans) and taps outside the coverage weigh 0.
    struct Weights {
        /// Taps per destination index: the most source pixels any one covers.
        let taps: Int
        /// The first source index of each destination's taps; the window lies inside the source.
        var start: [Int]
        /// `taps` weights per destination index.
        var values: [Float]
        /// How many source pixels there are along this axis.
        let sourceCount: Int

        init(source: Int, destination: Int) {
            let scale = Double(source) / Double(destination)
            var spans: [(first: Int, weights: [Float])] = []
            spans.reserveCapacity(destination)
            for d in 0..<destination {
                if scale <= 1 {
                    // Growing (or the same size): bilinear between the two
                    // source pixels whose centres surround this one's.
                    let centre = (Double(d) + 0.5) * scale - 0.5
                    let left = min(source - 1, max(0, Int(centre.rounded(.down))))
                    let t = Float(min(1, max(0, centre - Double(left))))
                    spans.append(left + 1 < source && t > 0 ? (left, [1 - t, t]) : (left, [1]))
                    continue
                }
                let lo = Double(d) * scale
                let hi = min(Double(source), Double(d + 1) * scale)
                let first = Int(lo.rounded(.down))
                let last = min(source - 1, Int(hi.rounded(.up)) - 1)
                spans.append((first, (first...last).map { Float((min(hi, Double($0 + 1)) - max(lo, Double($0))) / scale) }))
            }
            self.init(source: source, spans: spans)
        }

        /// The weights of a windowed kernel (`kernel(x)` for `x` in source
        /// pixels from the destination pixel's centre, zero past `support`),
        /// widened by the scale when shrinking, so that every destination
        /// pixel sees the source under it; a tap past an edge weighs on the
        /// edge pixel (clamped), and each destination's weights sum to 1.
        init(source: Int, destination: Int, kernel: (Double) -> Double, support: Double) {
            let scale = Double(source) / Double(destination)
            let stretch = max(1, scale)
            let radius = support * stretch
            var spans: [(first: Int, weights: [Float])] = []
            spans.reserveCapacity(destination)
            for d in 0..<destination {
                let centre = (Double(d) + 0.5) * scale - 0.5
                let lo = Int((centre - radius).rounded(.up))
                let hi = Int((centre + radius).rounded(.down))
                let first = min(source - 1, max(0, lo))
                let last = max(first, min(source - 1, hi))
                var weights = [Double](repeating: 0, count: last - first + 1)
                for s in lo...max(lo, hi) {
                    weights[min(last, max(first, s)) - first] += kernel((Double(s) - centre) / stretch)
                }
                let sum = weights.reduce(0, +)
                if abs(sum) < 1e-12 {
                    // No kernel mass here (cannot happen for Lanczos3): the nearest pixel.
                    weights = weights.map { _ in 0 }
                    weights[min(weights.count - 1, max(0, Int(centre.rounded()) - first))] = 1
                    spans.append((first, weights.map(Float.init)))
                } else {
                    spans.append((first, weights.map { Float($0 / sum) }))
                }
            }
            self.init(source: source, spans: spans)
        }

        /// Lanczos3: sinc(x) sinc(x / 3) inside three pixels.
        static func lanczos3(_ x: Double) -> Double {
            let x = abs(x)
            guard x < 3 else { return 0 }
            guard x > 1e-9 else { return 1 }
            let px = Double.pi * x
            return 3 * sin(px) * sin(px / 3) / (px * px)
        }

        /// Pads each destination's weights to the same count of taps.
        private init(source: Int, spans: [(first: Int, weights: [Float])]) {
            sourceCount = source
            let destination = spans.count
            let taps = spans.map(\.weights.count).max() ?? 1
            self.taps = taps
            start = []
            start.reserveCapacity(destination)
            values = [Float](repeating: 0, count: destination * taps)
            for (d, span) in spans.enumerated() {
                let windowStart = min(span.first, source - taps)
                start.append(windowStart)
                for (k, weight) in span.weights.enumerated() {
                    values[d * taps + span.first - windowStart + k] = weight
                }
            }
        }
    }

    /// One streaming pass: each source row is resampled horizontally once
    /// (premultiplied, one `SIMD4<Float>` a pixel) into a ring of `taps` rows,
    /// and every output row is the weighted sum of its window of that ring,
    /// written as soon as its window is in. The ring holds output width x
    /// vertical taps (about the vertical scale factor + 1) rows of floats, not
    /// the whole height: at the usual display sizes it stays in cache.
    /// Returns the AND of every alpha written (255: the result is opaque).
    @discardableResult
    static func resample(
        _ source: UnsafePointer<UInt8>, bytesPerRow: Int,
        into out: UnsafeMutablePointer<UInt8>, horizontal: Weights, vertical: Weights, linear: Bool = false,
        box: Box? = nil, opaque: Bool = false, light: LinearSource = .sRGB
    ) -> UInt8 {
        var alpha: UInt8 = 255
        let width = horizontal.start.count
        let height = vertical.start.count
        let box = box ?? Box(x: 1, y: 1, source: PixelSize(width: horizontal.sourceCount, height: vertical.sourceCount))
        let sourceWidth = box.source.width
        let ringSize = vertical.taps
        let ring = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: width * ringSize)
        var ringRows = [Int](repeating: -1, count: ringSize)
        let accumulator = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: width)
        let expanded = UnsafeMutablePointer<SIMD4<Float>>.allocate(capacity: sourceWidth)
        defer {
            ring.deallocate()
            accumulator.deallocate()
            expanded.deallocate()
        }
        light.decode.withUnsafeBufferPointer { decode in
            horizontal.values.withUnsafeBufferPointer { hw in
                horizontal.start.withUnsafeBufferPointer { starts in
                    let taps = Taps(
                        weights: hw.baseAddress!, starts: starts.baseAddress!, taps: horizontal.taps, width: width,
                        expanded: expanded, sourceWidth: sourceWidth, linear: linear, box: box, opaque: opaque,
                        decode: decode.baseAddress!, matrix: light.matrix)
                    vertical.values.withUnsafeBufferPointer { vw in
                        for y in 0..<height {
                            let first = vertical.start[y]
                            let weights = vw.baseAddress! + y * ringSize
                            var started = false
                            for k in 0..<ringSize {
                                let w = weights[k]
                                if w == 0 { continue }
                                let s = first + k
                                let slot = s % ringSize
                                let resampled = ring + slot * width
                                if ringRows[slot] != s {
                                    if box.isIdentity {
                                        taps.resampleRow(source + s * bytesPerRow, into: resampled)
                                    } else {
                                        let rows = min(box.y, box.source.height - s * box.y)
                                        taps.resampleBlockRow(
                                            source + s * box.y * bytesPerRow, rows: rows, bytesPerRow: bytesPerRow,
                                            into: resampled)
                                    }
                                    ringRows[slot] = s
                                }
                                if started {
                                    for x in 0..<width { accumulator[x] += resampled[x] * w }
                                } else {
                                    for x in 0..<width { accumulator[x] = resampled[x] * w }
                                    started = true
                                }
                            }
                            alpha &=
                                linear
                                ? writeLinearRow(accumulator, width: width, into: out + y * width * 4)
                                : writeRow(accumulator, width: width, into: out + y * width * 4)
                        }
                    }
                }
            }
        }
        return alpha
    }

    /// The horizontal weights as raw pointers, for the inner loop.
    private struct Taps {
        let weights: UnsafePointer<Float>
        let starts: UnsafePointer<Int>
        let taps: Int
        let width: Int
        /// One source row, premultiplied, as floats (alpha in lane 3).
        let expanded: UnsafeMutablePointer<SIMD4<Float>>
        let sourceWidth: Int
        /// Linear light, alpha in 0...1 (else the stored values, alpha in 0...255).
        let linear: Bool
        /// The box before the filter (linear light only).
        let box: Box
        /// Every source alpha is 255 (known without a scan): linear light skips premultiplying.
        let opaque: Bool
        /// ``LinearSource/decode``: red's 256 entries, then green's, then blue's.
        let decode: UnsafePointer<Float>
        /// ``LinearSource/matrix``: applied to each pixel before the filter
        /// (after the box), clipped to 0...alpha.
        let matrix: LinearSource.Matrix?

        /// Resamples one RGBA row to `width` premultiplied pixels (alpha in lane 3).
        @inline(__always)
        func resampleRow(_ source: UnsafePointer<UInt8>, into out: UnsafeMutablePointer<SIMD4<Float>>) {
            // Each source pixel is converted once, though it may fall under two output pixels.
            var p = source
            let (red, green, blue) = (decode, decode + 256, decode + 512)
            if linear && opaque, let matrix {
                // Every alpha is 255, through a profile's matrix: in C, vectorised.
                matrix.m.withUnsafeBufferPointer { m in
                    expanded.withMemoryRebound(to: Float.self, capacity: sourceWidth * 4) {
                        aiv_matrix_shaper_expand_opaque(source, sourceWidth, decode, m.baseAddress!, $0)
                    }
                }
                filter(into: out)
                return
            } else if linear && opaque {
                // Every alpha is 255: nothing to premultiply.
                for x in 0..<sourceWidth {
                    expanded[x] = SIMD4<Float>(red[Int(p[0])], green[Int(p[1])], blue[Int(p[2])], 1)
                    p += 4
                }
            } else if linear {
                for x in 0..<sourceWidth {
                    let alpha = Float(p[3]) * (1 / 255)
                    expanded[x] = SIMD4<Float>(
                        red[Int(p[0])] * alpha, green[Int(p[1])] * alpha, blue[Int(p[2])] * alpha, alpha)
                    p += 4
                }
            } else {
                for x in 0..<sourceWidth {
                    let alpha = Float(p[3])
                    expanded[x] = SIMD4<Float>(Float(p[0]) * alpha, Float(p[1]) * alpha, Float(p[2]) * alpha, alpha)
                    p += 4
                }
            }
            if linear, let matrix { matrix.map(expanded, count: sourceWidth) }
            filter(into: out)
        }

        /// Averages `rows` source rows (from `source`, `bytesPerRow`
        /// apart) in blocks of ``Box/x`` pixels, in linear light and
        /// premultiplied, into one row of the reduced grid, then filters it
        /// to `width` pixels.
        func resampleBlockRow(
            _ source: UnsafePointer<UInt8>, rows: Int, bytesPerRow: Int, into out: UnsafeMutablePointer<SIMD4<Float>>
        ) {
            let reducedWidth = box.reduced.width
            let (red, green, blue) = (decode, decode + 256, decode + 512)
            for j in 0..<reducedWidth {
                let first = j * box.x
                let end = min(sourceWidth, first + box.x)
                var sum = SIMD4<Float>()
                for r in 0..<rows {
                    var p = source + r * bytesPerRow + first * 4
                    if opaque {
                        for _ in first..<end {
                            sum += SIMD4<Float>(red[Int(p[0])], green[Int(p[1])], blue[Int(p[2])], 1)
                            p += 4
                        }
                    } else {
                        for _ in first..<end {
                            let alpha = Float(p[3]) * (1 / 255)
                            sum += SIMD4<Float>(
                                red[Int(p[0])] * alpha, green[Int(p[1])] * alpha, blue[Int(p[2])] * alpha, alpha)
                            p += 4
                        }
                    }
                }
                expanded[j] = sum * (1 / Float((end - first) * rows))
            }
            if let matrix { matrix.map(expanded, count: reducedWidth) }
            filter(into: out)
        }

        /// Filters ``expanded`` to `width` pixels with the horizontal weights.
        @inline(__always)
        private func filter(into out: UnsafeMutablePointer<SIMD4<Float>>) {
            var w = weights
            guard linear else {
                // The area average's order of sums, kept: `.fast` stays byte-identical.
                for x in 0..<width {
                    let e = expanded + starts[x]
                    var sum = SIMD4<Float>()
                    for k in 0..<taps { sum += e[k] * w[k] }
                    out[x] = sum
                    w += taps
                }
                return
            }
            // Four sums in turn, not one: one sum is a chain of dependent
            // additions (a few cycles each), four run side by side; Lanczos
            // windows are wide (6 x the scale taps), so this is most of its time.
            let quads = taps & ~3
            for x in 0..<width {
                let e = expanded + starts[x]
                var s0 = SIMD4<Float>(), s1 = SIMD4<Float>(), s2 = SIMD4<Float>(), s3 = SIMD4<Float>()
                var k = 0
                while k < quads {
                    s0 += e[k] * w[k]
                    s1 += e[k + 1] * w[k + 1]
                    s2 += e[k + 2] * w[k + 2]
                    s3 += e[k + 3] * w[k + 3]
                    k += 4
                }
                while k < taps {
                    s0 += e[k] * w[k]
                    k += 1
                }
                out[x] = (s0 + s1) + (s2 + s3)
                w += taps
            }
        }
    }

    /// Un-premultiplies an accumulated row into RGBA bytes; returns the AND
    /// of the alphas written.
    @inline(__always)
    private static func writeRow(_ row: UnsafePointer<SIMD4<Float>>, width: Int, into dst: UnsafeMutablePointer<UInt8>)
        -> UInt8
    {
        var d = dst
        var all: UInt8 = 255
        for x in 0..<width {
            let s = row[x]
            let alpha = s[3]
            if alpha > 0.5 / 255 {
                let inverse = 1 / alpha
                d[0] = clampToByte(s[0] * inverse)
                d[1] = clampToByte(s[1] * inverse)
                d[2] = clampToByte(s[2] * inverse)
                d[3] = clampToByte(alpha)
            } else {
                d[0] = 0
                d[1] = 0
                d[2] = 0
                d[3] = 0
            }
            all &= d[3]
            d += 4
        }
        return all
    }

    /// Un-premultiplies a row accumulated in linear light into sRGB bytes,
    /// clamping what the kernel's negative lobes overshot (alpha to 0...1,
    /// each colour to 0...alpha); returns the AND of the alphas written.
    @inline(__always)
    private static func writeLinearRow(
        _ row: UnsafePointer<SIMD4<Float>>, width: Int, into dst: UnsafeMutablePointer<UInt8>
    ) -> UInt8 {
        LinearLight.encode.withUnsafeBufferPointer { table in
            var d = dst
            var all: UInt8 = 255
            let top = Float(LinearLight.encodeSteps)
            for x in 0..<width {
                let s = row[x]
                let alpha = min(1, max(0, s[3]))
                if alpha > 0.5 / 255 {
                    let scale = top / alpha
                    let colour = (s * scale).clamped(lowerBound: SIMD4(repeating: 0), upperBound: SIMD4(repeating: top))
                    d[0] = table[Int(colour[0] + 0.5)]
                    d[1] = table[Int(colour[1] + 0.5)]
                    d[2] = table[Int(colour[2] + 0.5)]
                    d[3] = clampToByte(alpha * 255)
                } else {
                    d[0] = 0
                    d[1] = 0
                    d[2] = 0
                    d[3] = 0
                }
                all &= d[3]
                d += 4
            }
            return all
        }
    }

    @inline(__always)
    private static func clampToByte(_ value: Float) -> UInt8 {
        UInt8(max(0, min(255, value + 0.5)))
    }
}

/// Where a Lanczos3 resize's linear light comes from: the 8-bit values'
/// curves to linear light, then a matrix from those primaries to sRGB's,
/// clipped to sRGB's gamut pixel by pixel before the filter (as a colour
/// transform clips) but after the integer box, when there is one (its
/// blocks are averaged in the source's linear light first: the matrix runs
/// on the reduced pixels); the result is always encoded as sRGB.
///
/// ``sRGB`` is sRGB in, no matrix (every untagged or sRGB image). A
/// matrix-shaper profile's (``MatrixShaperKernel/linearSource``) lets a
/// display-size decode run the colour transform inside the resize: the
/// pixels go from the source's values to sRGB's linear light once, in
/// floats, instead of to sRGB bytes and back to linear light, and the
/// output table runs on the small image only.
package struct LinearSource: Sendable {
    /// A 3x3 matrix from the source's linear primaries to sRGB's.
    package struct Matrix: Sendable {
        /// Row-major: sRGB linear = m x source linear.
        let m: [Float]

        init(rowMajor m: [Float]) {
            precondition(m.count == 9)
            self.m = m
        }

        /// Maps `count` premultiplied pixels in place, each colour clipped
        /// to 0...alpha (0...1 unpremultiplied), alpha kept.
        func map(_ pixels: UnsafeMutablePointer<SIMD4<Float>>, count: Int) {
            // Scalar floats: SIMD4's lanes, extracted and rebuilt, and the
            // generic pointwise min/max cost 10-60 ns a pixel here.
            let (m0, m1, m2, m3, m4, m5, m6, m7, m8) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
            pixels.withMemoryRebound(to: Float.self, capacity: count * 4) { p in
                var p = p
                for _ in 0..<count {
                    let (r, g, b, a) = (p[0], p[1], p[2], p[3])
                    p[0] = Swift.min(Swift.max(m0 * r + m1 * g + m2 * b, 0), a)
                    p[1] = Swift.min(Swift.max(m3 * r + m4 * g + m5 * b, 0), a)
                    p[2] = Swift.min(Swift.max(m6 * r + m7 * g + m8 * b, 0), a)
                    p += 4
                }
            }
        }
    }

    /// 768 entries: an 8-bit red value's linear light, then green's, then blue's.
    let decode: [Float]
    /// To sRGB's linear primaries, then clipped; nil: already sRGB's.
    let matrix: Matrix?

    package init(decode: [Float], matrix: Matrix?) {
        precondition(decode.count == 768)
        self.decode = decode
        self.matrix = matrix
    }

    /// sRGB in, sRGB out.
    package static let sRGB = LinearSource(
        decode: LinearLight.decode + LinearLight.decode + LinearLight.decode, matrix: nil)
}

/// The sRGB transfer as tables, for filtering in linear light (IEC 61966-2-1).
enum LinearLight {
    /// An 8-bit sRGB code value's linear light, 0...1.
    static let decode: [Float] = (0..<256).map { Float(toLinear(Double($0) / 255)) }

    /// The steps of ``encode``: linear light quantised to 16 bits keeps every
    /// code value within a fortieth of one of the exact encoding (the
    /// curve's steepest part, 12.92 near black, is 3,294 code values over
    /// the whole range: 0.025 a step).
    static let encodeSteps = 65535

    /// Linear light `i / encodeSteps` as the nearest 8-bit sRGB code value.
    static let encode: [UInt8] = (0...encodeSteps).map { i in
        UInt8(max(0, min(255, (toSRGB(Double(i) / Double(encodeSteps)) * 255).rounded())))
    }

    /// The sRGB curve, decoding: a value in 0...1 to linear light.
    static func toLinear(_ c: Double) -> Double { c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4) }

    /// The sRGB curve, encoding: linear light in 0...1 to a value in 0...1.
    static func toSRGB(_ l: Double) -> Double { l <= 0.0031308 ? l * 12.92 : 1.055 * pow(l, 1 / 2.4) - 0.055 }
}

