import Foundation

/// Resizes RGBA images with area averaging (an exact box filter): each output
/// pixel is the coverage-weighted mean of the source pixels under it.
///
/// Averaging is alpha-weighted (done on premultiplied values), so transparent
/// pixels do not darken the edges of opaque ones. Meant for downscaling; when
/// a side grows, it is interpolated bilinearly.
public enum ImageResizer {
    /// `image` resized to `size` (every frame); the image itself when the size is unchanged.
    public static func resize(_ image: Image, to size: PixelSize) throws(AsyncImageError) -> Image {
        guard size != image.size else { return image }
        guard size.width > 0, size.height > 0 else {
            throw .decoding(
                DecodingFailure(format: image.format, stage: .pixels, reason: "cannot resize to \(size)"), url: nil)
        }
        let horizontal = Weights(source: image.width, destination: size.width)
        let vertical = Weights(source: image.height, destination: size.height)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(image.frames.count)
        // The result's opacity, measured as its pixels are written (no scan).
        var opaque = true
        for frame in image.frames {
            let pixels = try PixelMemory.make(size.pixelCount * 4) { out throws(AsyncImageError) in
                frame.pixels.withUnsafeBytes { raw in
                    let alpha = resample(
                        raw.bindMemory(to: UInt8.self).baseAddress!, bytesPerRow: image.bytesPerRow,
                        into: out, horizontal: horizontal, vertical: vertical)
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
            sourceCount = source
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
        into out: UnsafeMutablePointer<UInt8>, horizontal: Weights, vertical: Weights
    ) -> UInt8 {
        var alpha: UInt8 = 255
        let width = horizontal.start.count
        let height = vertical.start.count
        let sourceWidth = horizontal.sourceCount
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
        horizontal.values.withUnsafeBufferPointer { hw in
            horizontal.start.withUnsafeBufferPointer { starts in
                let taps = Taps(
                    weights: hw.baseAddress!, starts: starts.baseAddress!, taps: horizontal.taps, width: width,
                    expanded: expanded, sourceWidth: sourceWidth)
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
                                taps.resampleRow(source + s * bytesPerRow, into: resampled)
                                ringRows[slot] = s
                            }
                            if started {
                                for x in 0..<width { accumulator[x] += resampled[x] * w }
                            } else {
                                for x in 0..<width { accumulator[x] = resampled[x] * w }
                                started = true
                            }
                        }
                        alpha &= writeRow(accumulator, width: width, into: out + y * width * 4)
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

        /// Resamples one RGBA row to `width` premultiplied pixels (alpha in lane 3).
        @inline(__always)
        func resampleRow(_ source: UnsafePointer<UInt8>, into out: UnsafeMutablePointer<SIMD4<Float>>) {
            // Each source pixel is converted once, though it may fall under two output pixels.
            var p = source
            for x in 0..<sourceWidth {
                let alpha = Float(p[3])
                expanded[x] = SIMD4<Float>(Float(p[0]) * alpha, Float(p[1]) * alpha, Float(p[2]) * alpha, alpha)
                p += 4
            }
            var w = weights
            for x in 0..<width {
                let e = expanded + starts[x]
                var sum = SIMD4<Float>()
                for k in 0..<taps { sum += e[k] * w[k] }
                out[x] = sum
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

    @inline(__always)
    private static func clampToByte(_ value: Float) -> UInt8 {
        UInt8(max(0, min(255, value + 0.5)))
    }
}
