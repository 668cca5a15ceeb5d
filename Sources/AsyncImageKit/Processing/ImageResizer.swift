import Foundation

/// Resizes RGBA images with area averaging (an exact box filter): each output
/// pixel is the coverage-weighted mean of the source pixels under it.
///
/// Averaging is alpha-weighted (done on premultiplied values), so transparent
/// pixels do not darken the edges of opaque ones. Meant for downscaling; when
/// a side grows, each output pixel takes the source pixel it falls in.
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
        for frame in image.frames {
            let pixels = try PixelMemory.make(size.pixelCount * 4) { out throws(AsyncImageError) in
                frame.pixels.withUnsafeBytes { raw in
                    resample(
                        raw.bindMemory(to: UInt8.self).baseAddress!, bytesPerRow: image.bytesPerRow,
                        sourceHeight: image.height, into: out, horizontal: horizontal, vertical: vertical)
                }
            }
            frames.append(ImageFrame(pixels: pixels, duration: frame.duration))
        }
        return Image(
            width: size.width, height: size.height, bytesPerRow: size.width * 4, frames: frames,
            format: image.format, originalSize: image.originalSize, orientation: image.orientation,
            loopCount: image.loopCount, decodeInfo: image.decodeInfo)
    }

    /// For each destination index along one axis, the source indices it covers and their weights (summing to 1).
    struct Weights {
        var start: [Int]
        var count: [Int]
        var offset: [Int]
        var values: [Float]

        init(source: Int, destination: Int) {
            start = []
            count = []
            offset = []
            values = []
            let scale = Double(source) / Double(destination)
            for d in 0..<destination {
                offset.append(values.count)
                if scale <= 1 {
                    // Growing: the source pixel this one falls in.
                    start.append(min(source - 1, Int((Double(d) + 0.5) * scale)))
                    count.append(1)
                    values.append(1)
                    continue
                }
                let lo = Double(d) * scale
                let hi = min(Double(source), Double(d + 1) * scale)
                let first = Int(lo.rounded(.down))
                let last = min(source - 1, Int(hi.rounded(.up)) - 1)
                start.append(first)
                count.append(last - first + 1)
                for s in first...last {
                    let overlap = min(hi, Double(s + 1)) - max(lo, Double(s))
                    values.append(Float(overlap / scale))
                }
            }
        }
    }

    /// Two passes: rows horizontally into a premultiplied float buffer, then columns vertically.
    static func resample(
        _ source: UnsafePointer<UInt8>, bytesPerRow: Int, sourceHeight: Int,
        into out: UnsafeMutablePointer<UInt8>, horizontal: Weights, vertical: Weights
    ) {
        let width = horizontal.start.count
        let height = vertical.start.count
        let rowFloats = width * 4
        let temp = UnsafeMutablePointer<Float>.allocate(capacity: rowFloats * sourceHeight)
        defer { temp.deallocate() }

        // Unsafe buffers: no bounds checks in the inner loops.
        horizontal.values.withUnsafeBufferPointer { hw in
            horizontal.start.withUnsafeBufferPointer { starts in
                horizontal.count.withUnsafeBufferPointer { counts in
                    horizontal.offset.withUnsafeBufferPointer { offsets in
                        for y in 0..<sourceHeight {
                            let row = source + y * bytesPerRow
                            var o = temp + y * rowFloats
                            for x in 0..<width {
                                var r: Float = 0, g: Float = 0, b: Float = 0, a: Float = 0
                                var p = row + starts[x] * 4
                                var w = hw.baseAddress! + offsets[x]
                                for _ in 0..<counts[x] {
                                    let alpha = w.pointee * Float(p[3])
                                    r += Float(p[0]) * alpha
                                    g += Float(p[1]) * alpha
                                    b += Float(p[2]) * alpha
                                    a += alpha
                                    p += 4
                                    w += 1
                                }
                                o[0] = r
                                o[1] = g
                                o[2] = b
                                o[3] = a
                                o += 4
                            }
                        }
                    }
                }
            }
        }

        let accumulator = UnsafeMutablePointer<Float>.allocate(capacity: rowFloats)
        defer { accumulator.deallocate() }
        vertical.values.withUnsafeBufferPointer { vw in
            for y in 0..<height {
                accumulator.initialize(repeating: 0, count: rowFloats)
                let first = vertical.start[y]
                let weights = vw.baseAddress! + vertical.offset[y]
                for i in 0..<vertical.count[y] {
                    let w = weights[i]
                    let src = temp + (first + i) * rowFloats
                    for j in 0..<rowFloats { accumulator[j] += src[j] * w }
                }
                let dst = out + y * width * 4
                for x in 0..<width {
                    let s = accumulator + x * 4
                    let alpha = s[3]
                    if alpha <= 0.5 / 255 {
                        dst[x * 4] = 0
                        dst[x * 4 + 1] = 0
                        dst[x * 4 + 2] = 0
                        dst[x * 4 + 3] = 0
                        continue
                    }
                    let inverse = 1 / alpha
                    dst[x * 4] = clampToByte(s[0] * inverse)
                    dst[x * 4 + 1] = clampToByte(s[1] * inverse)
                    dst[x * 4 + 2] = clampToByte(s[2] * inverse)
                    dst[x * 4 + 3] = clampToByte(alpha)
                }
            }
        }
    }

    @inline(__always)
    static func clampToByte(_ value: Float) -> UInt8 {
        UInt8(max(0, min(255, value + 0.5)))
    }
}
