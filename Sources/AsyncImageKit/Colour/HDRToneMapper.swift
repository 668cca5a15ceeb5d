import Foundation

/// ``HDRToneMapping`` on pixels: high-bit-depth RGB(A) samples from libavif,
/// libheif or libjxl in, 8-bit sRGB RGBA out. Made for one image (its bit
/// depth, primaries and source peak); immutable, so one may serve any thread.
struct HDRToneMapper: Sendable {
    let mapping: HDRToneMapping
    /// 2^depth - 1.
    let maxCode: Int
    /// Per code value: PQ, the linear light of steps 1-3 (after the EETF,
    /// over reference white); HLG, the scene light `E` of the inverse OETF.
    private let table: [Float]
    /// Step 4, row-major.
    private let matrix: [Float]
    /// HLG's `Ys` weights (the source primaries' luminance row).
    private let luminance: [Float]
    /// HLG: the display light below which the EETF is the identity.
    private let kneeLuminance: Float
    /// HLG: steps 2-3 above the knee, at ``highlightSteps`` equal steps of
    /// display light from ``kneeLuminance`` to the 1000 cd/m² peak, read
    /// with linear interpolation: within 2e-8 of the exact curve (measured
    /// against Double math), below the rounding of the Float light itself.
    private let highlights: [Float]
    /// HLG: ``highlightSteps`` over the width of the highlights' range.
    private let highlightScale: Float
    static let highlightSteps = 16384
    /// The linear values at which the rounded sRGB code goes from `k` to
    /// `k + 1` (`k` = 0...254): the code of `x` is how many are at most `x`.
    private let thresholds: [Float]
    /// The code at the start of each of ``buckets`` equal steps of [0, 1]
    /// (how many thresholds are at most `i / buckets`): a step is narrower
    /// than the closest two thresholds (1/255/12.92 apart, at black), so at
    /// most one threshold lies inside it, and one comparison finishes the
    /// exact code.
    private let codeAtBucket: [UInt8]
    static let buckets = 4096

    /// `nil` when the primaries are not ones the matrix can be made for, or
    /// the depth is not 8 to 16 bits.
    init?(_ mapping: HDRToneMapping, primaries: Int, bitDepth: Int) {
        guard let source = PrimariesMatrix.chromaticities(forHDR: primaries) else { return nil }
        self.init(mapping, chromaticities: source, bitDepth: bitDepth)
    }

    /// For primaries given by their chromaticities (white x, y, then red,
    /// green and blue x, y, as ``NCLXColor/chromaticities``): `nil` when
    /// they make no matrix (a y of 0, primaries on one line), or the depth
    /// is not 8 to 16 bits.
    init?(_ mapping: HDRToneMapping, chromaticities source: [Double], bitDepth: Int) {
        guard (8...16).contains(bitDepth), PrimariesMatrix.isUsable(source) else { return nil }
        let matrix = PrimariesMatrix.toBT709(from: source)
        let luminance = PrimariesMatrix.luminance(source)
        self.mapping = mapping
        maxCode = (1 << bitDepth) - 1
        let eetf = HDRToneMapping.EETF(sourcePeak: mapping.effectivePeak)
        let knee = eetf.kneeLuminance
        kneeLuminance = Float(knee)
        self.matrix = matrix.map { Float($0) }
        self.luminance = luminance.map { Float($0) }
        let scale = 1 / Double(maxCode)
        switch mapping.transfer {
        case .pq:
            table = (0...maxCode).map { code in
                let light = HDRToneMapping.pqEOTF(eetf(Double(code) * scale))
                return Float(light / HDRToneMapping.referenceWhite)
            }
        case .hlg:
            table = (0...maxCode).map { Float(HDRToneMapping.hlgInverseOETF(Double($0) * scale)) }
        }
        if mapping.transfer == .hlg {
            let steps = Self.highlightSteps
            let width = max(HDRToneMapping.defaultSourcePeak - knee, 1e-9) / Double(steps)
            highlights = (0...steps).map { step in
                let light = HDRToneMapping.pqEOTF(eetf(HDRToneMapping.pqInverseEOTF(knee + Double(step) * width)))
                return Float(light / HDRToneMapping.referenceWhite)
            }
            highlightScale = Float(1 / width)
        } else {
            highlights = []
            highlightScale = 0
        }
        let thresholds = (0..<255).map { Float(HDRToneMapping.sRGBDecode((Double($0) + 0.5) / 255)) }
        self.thresholds = thresholds + [.infinity]
        var code = 0
        codeAtBucket = (0..<Self.buckets).map { bucket in
            let start = Float(bucket) / Float(Self.buckets)
            while code < 255 && thresholds[code] <= start { code += 1 }
            return UInt8(code)
        }
    }

    /// Maps `height` rows of `width` pixels: `input` holds `channels` (3 or
    /// 4, RGB(A)) samples a pixel of at most ``maxCode``, rows
    /// `inputRowSamples` samples apart; `output` gets RGBA, rows
    /// `bytesPerRow` apart (alpha 255 without an input alpha).
    func map(
        _ input: UnsafePointer<UInt16>, channels: Int, inputRowSamples: Int, width: Int, height: Int,
        into output: UnsafeMutablePointer<UInt8>, bytesPerRow: Int
    ) {
        mapRows(
            input, channels: channels, inputRowSamples: inputRowSamples, width: width, height: height, into: output,
            bytesPerRow: bytesPerRow)
    }

    /// ``map(_:channels:inputRowSamples:width:height:into:bytesPerRow:)`` for 8-bit samples.
    func map(
        _ input: UnsafePointer<UInt8>, channels: Int, inputRowSamples: Int, width: Int, height: Int,
        into output: UnsafeMutablePointer<UInt8>, bytesPerRow: Int
    ) {
        mapRows(
            input, channels: channels, inputRowSamples: inputRowSamples, width: width, height: height, into: output,
            bytesPerRow: bytesPerRow)
    }

    /// Generic over the sample type, and specialised here, in its own file,
    /// for the two the entry points above take.
    private func mapRows<Sample: FixedWidthInteger & UnsignedInteger>(
        _ input: UnsafePointer<Sample>, channels: Int, inputRowSamples: Int, width: Int, height: Int,
        into output: UnsafeMutablePointer<UInt8>, bytesPerRow: Int
    ) {
        table.withUnsafeBufferPointer { table in
            highlights.withUnsafeBufferPointer { highlights in
                codeAtBucket.withUnsafeBufferPointer { buckets in
                    thresholds.withUnsafeBufferPointer { thresholds in
                        for y in 0..<height {
                            mapRow(
                                input + y * inputRowSamples, channels: channels, width: width,
                                into: output + y * bytesPerRow, table: table, highlights: highlights, buckets: buckets,
                                thresholds: thresholds)
                        }
                    }
                }
            }
        }
    }

    @inline(__always)
    private func mapRow<Sample: FixedWidthInteger & UnsignedInteger>(
        _ input: UnsafePointer<Sample>, channels: Int, width: Int, into output: UnsafeMutablePointer<UInt8>,
        table: UnsafeBufferPointer<Float>, highlights: UnsafeBufferPointer<Float>, buckets: UnsafeBufferPointer<UInt8>,
        thresholds: UnsafeBufferPointer<Float>
    ) {
        let maxCode = self.maxCode
        let isPQ = mapping.transfer == .pq
        let m = (matrix[0], matrix[1], matrix[2], matrix[3], matrix[4], matrix[5], matrix[6], matrix[7], matrix[8])
        var pixel = input
        var out = output
        for _ in 0..<width {
            let r = table[min(Int(pixel[0]), maxCode)]
            let g = table[min(Int(pixel[1]), maxCode)]
            let b = table[min(Int(pixel[2]), maxCode)]
            let light = isPQ ? (r, g, b) : hlgDisplayLight(r, g, b, highlights)
            out[0] = Self.encode(m.0 * light.0 + m.1 * light.1 + m.2 * light.2, buckets, thresholds)
            out[1] = Self.encode(m.3 * light.0 + m.4 * light.1 + m.5 * light.2, buckets, thresholds)
            out[2] = Self.encode(m.6 * light.0 + m.7 * light.1 + m.8 * light.2, buckets, thresholds)
            if channels == 4 {
                let alpha = min(Int(pixel[3]), maxCode)
                out[3] = UInt8((alpha * 255 + maxCode / 2) / maxCode)
            } else {
                out[3] = 255
            }
            pixel += channels
            out += 4
        }
    }

    /// HLG, steps 1-3 for one pixel's scene light: the OOTF (mixing the
    /// channels through `Ys`), then the EETF per channel, over reference white.
    @inline(__always)
    private func hlgDisplayLight(
        _ r: Float, _ g: Float, _ b: Float, _ highlights: UnsafeBufferPointer<Float>
    ) -> (Float, Float, Float) {
        let ys = luminance[0] * r + luminance[1] * g + luminance[2] * b
        guard ys > 0 else { return (0, 0, 0) }
        let gain = Float(HDRToneMapping.defaultSourcePeak) * powf(ys, Float(HDRToneMapping.hlgSystemGamma - 1))
        return (hlgChannel(gain * r, highlights), hlgChannel(gain * g, highlights), hlgChannel(gain * b, highlights))
    }

    /// One channel's display light (cd/m²) through the EETF, over reference
    /// white: below the knee as it is, above it from ``highlights``.
    @inline(__always)
    private func hlgChannel(_ light: Float, _ highlights: UnsafeBufferPointer<Float>) -> Float {
        guard light > kneeLuminance else { return max(0, light) / Float(HDRToneMapping.referenceWhite) }
        let position = (light - kneeLuminance) * highlightScale
        let step = min(Int(position), Self.highlightSteps - 1)
        let fraction = min(position - Float(step), 1)
        return highlights[step] + (highlights[step + 1] - highlights[step]) * fraction
    }

    /// Steps 5 and 6: clipped, then the nearest sRGB code: the code at the
    /// start of the value's bucket, one more when the value has passed the
    /// next threshold.
    @inline(__always)
    private static func encode(
        _ value: Float, _ buckets: UnsafeBufferPointer<UInt8>, _ thresholds: UnsafeBufferPointer<Float>
    ) -> UInt8 {
        guard value > 0 else { return 0 }  // NaN too
        guard value < 1 else { return 255 }
        // value * 4096 is exact (a power of two), so the bucket's start is at most value.
        let code = buckets[Int(value * Float(Self.buckets))]
        return value >= thresholds[Int(code)] ? code + 1 : code
    }
}
