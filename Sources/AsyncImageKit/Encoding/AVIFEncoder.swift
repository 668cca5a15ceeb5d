import CAVIF
import Foundation

/// Encodes an ``Image`` (its first frame) as a still AVIF with libavif
/// (0.11 on Debian 12) and libaom: 8 bits, 4:2:0 or 4:4:4, alpha kept.
///
/// ```swift
/// let bytes = try AVIFEncoder(quality: 60, speed: 6).encode(thumbnail)
/// ```
///
/// - **Quality** (0 to 100) is mapped to libavif 0.11's quantizers (0,
///   lossless, to 63, worst) as libavif 1.0 maps its own `quality`:
///   `quantizer = ((100 - quality) * 63 + 50) / 100`, rounded (quality 100
///   is quantizer 0, 60 is 25, 0 is 63; ``quantizer(forQuality:)``). Both
///   `minQuantizer` and `maxQuantizer` are set to it: libavif's aom glue
///   encodes at their mean (aom's constant-quality level), so one number
///   says it all; the alpha plane gets the same quantizer
///   (`minQuantizerAlpha`, `maxQuantizerAlpha`). `avifenc --min Q --max Q
///   --minalpha Q --maxalpha Q` takes the same settings.
/// - **Speed** is libavif's, 0 (slowest, smallest) to 10 (fastest): `avifenc
///   -s`. 6 by default (avifenc's). libaom at speed 6 takes about 185 ms
///   for a 512x370 photo on one core here, about 60 ms at speed 8, for
///   files of about the same size (BENCHMARKS.md, *Encoders*).
/// - **Chroma subsampling**: 4:2:0 by default (what photos are sent as),
///   4:4:4 for images with fine coloured detail (``ChromaSubsampling``).
/// - **Codec**: libaom, chosen explicitly (`AVIF_CODEC_CHOICE_AOM`, as
///   `avifenc -c aom`), whatever other encoders libavif was built with.
/// - **Threads**: ``threads`` (1 by default: the encode runs on the
///   calling thread alone, as every other codec here does, so that a
///   service's concurrency is its own to choose; more lets libaom use
///   worker threads for one image, `avifenc -j`).
/// - **Colour**: the pixels are taken as sRGB and tagged so (an `nclx` box
///   of BT.709 primaries, the sRGB transfer and BT.601 matrix
///   coefficients, full range: what `avifenc` writes for an untagged PNG).
///   No ICC profile, EXIF or orientation is written: a loader's images are
///   upright sRGB.
/// - **Alpha**: an image that is not opaque (``Image/isOpaque``) gets an
///   alpha plane (straight, not premultiplied); an opaque one none.
/// - **Out-of-range settings are refused**, not clamped: a quality outside
///   0...100, a speed outside 0...10 or fewer than 1 thread throw
///   ``AsyncImageError/encoding(_:reason:)`` before any work.
public struct AVIFEncoder: Sendable {
    /// How the colour (chroma) planes are sampled.
    public enum ChromaSubsampling: Sendable, Hashable {
        /// Half the width and half the height (`avifenc -y 420`): the smallest files.
        case yuv420
        /// Every pixel (`avifenc -y 444`): fine coloured detail and text kept.
        case yuv444
    }

    /// Quality, 0 (smallest) to 100 (quantizer 0); see ``quantizer(forQuality:)``.
    public var quality: Int
    /// libavif's speed, 0 (slowest, smallest) to 10 (fastest).
    public var speed: Int
    /// The chroma subsampling.
    public var chromaSubsampling: ChromaSubsampling
    /// The threads libavif and libaom may use for one image (`maxThreads`), at least 1.
    public var threads: Int

    /// Creates an encoder.
    ///
    /// - Parameters:
    ///   - quality: 0 to 100 (mapped to a quantizer: ``quantizer(forQuality:)``).
    ///   - speed: 0 (slowest) to 10 (fastest), as `avifenc -s`.
    ///   - chromaSubsampling: 4:2:0 (the default) or 4:4:4.
    ///   - threads: libavif's `maxThreads` (1: no worker threads).
    public init(quality: Int = 60, speed: Int = 6, chromaSubsampling: ChromaSubsampling = .yuv420, threads: Int = 1) {
        self.quality = quality
        self.speed = speed
        self.chromaSubsampling = chromaSubsampling
        self.threads = threads
    }

    /// The quantizer (0, lossless, to 63, worst) a quality (0 to 100)
    /// is encoded at: `((100 - quality) * 63 + 50) / 100`, libavif 1.0's
    /// own mapping of its `quality`, for libavif 0.11, which takes quantizers.
    public static func quantizer(forQuality quality: Int) -> Int {
        let clamped = max(0, min(100, quality))
        return ((100 - clamped) * 63 + 50) / 100
    }

    /// The AVIF bytes of the image's first frame.
    ///
    /// - Throws: ``AsyncImageError/encoding(_:reason:)`` (format `avif`)
    ///   when a setting is out of its range, or libavif fails (libaom
    ///   missing from its build included).
    public func encode(_ image: Image) throws(AsyncImageError) -> Data {
        guard (0...100).contains(quality) else { throw Self.refusal("quality \(quality) is not within 0...100") }
        guard (0...10).contains(speed) else { throw Self.refusal("speed \(speed) is not within 0...10") }
        guard threads >= 1 else { throw Self.refusal("threads \(threads) is fewer than 1") }
        let format = chromaSubsampling == .yuv444 ? AVIF_PIXEL_FORMAT_YUV444 : AVIF_PIXEL_FORMAT_YUV420
        guard let avif = avifImageCreate(UInt32(image.width), UInt32(image.height), 8, format) else {
            throw Self.refusal("cannot create libavif's image")
        }
        defer { avifImageDestroy(avif) }
        avif.pointee.colorPrimaries = avifColorPrimaries(AVIF_COLOR_PRIMARIES_BT709)
        avif.pointee.transferCharacteristics = avifTransferCharacteristics(AVIF_TRANSFER_CHARACTERISTICS_SRGB)
        avif.pointee.matrixCoefficients = avifMatrixCoefficients(AVIF_MATRIX_COEFFICIENTS_BT601)
        avif.pointee.yuvRange = AVIF_RANGE_FULL

        let opaque = image.isOpaque
        let converted = image.pixels.withBytes { bytes, _ -> avifResult in
            var rgb = avifRGBImage()
            avifRGBImageSetDefaults(&rgb, avif)
            rgb.format = AVIF_RGB_FORMAT_RGBA
            rgb.depth = 8
            rgb.alphaPremultiplied = 0
            // An opaque image gets no alpha plane.
            rgb.ignoreAlpha = opaque ? 1 : 0
            // Only read (libavif's struct serves both directions).
            rgb.pixels = UnsafeMutablePointer(mutating: bytes)
            rgb.rowBytes = UInt32(image.bytesPerRow)
            return avifImageRGBToYUV(avif, &rgb)
        }
        guard converted == AVIF_RESULT_OK else { throw Self.refusal("converting to YUV: \(Self.describe(converted))") }

        guard let encoder = avifEncoderCreate() else { throw Self.refusal("cannot create libavif's encoder") }
        defer { avifEncoderDestroy(encoder) }
        let quantizer = Int32(Self.quantizer(forQuality: quality))
        encoder.pointee.codecChoice = AVIF_CODEC_CHOICE_AOM
        encoder.pointee.maxThreads = Int32(clamping: threads)
        encoder.pointee.speed = Int32(speed)
        encoder.pointee.minQuantizer = quantizer
        encoder.pointee.maxQuantizer = quantizer
        encoder.pointee.minQuantizerAlpha = quantizer
        encoder.pointee.maxQuantizerAlpha = quantizer
        var output = avifRWData(data: nil, size: 0)
        let written = avifEncoderWrite(encoder, avif, &output)
        guard written == AVIF_RESULT_OK, let bytes = output.data, output.size > 0 else {
            avifRWDataFree(&output)
            let detail = withUnsafeBytes(of: &encoder.pointee.diag.error) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            throw Self.refusal(Self.describe(written) + (detail.isEmpty ? "" : " (\(detail))"))
        }
        // Released by libavif itself when the bytes are.
        return Data(
            bytesNoCopy: bytes, count: output.size,
            deallocator: .custom { pointer, count in
                var owned = avifRWData(data: pointer.assumingMemoryBound(to: UInt8.self), size: count)
                avifRWDataFree(&owned)
            })
    }

    private static func refusal(_ reason: String) -> AsyncImageError { .encoding(.avif, reason: reason) }

    private static func describe(_ result: avifResult) -> String {
        avifResultToString(result).map { String(cString: $0) } ?? "libavif result \(result.rawValue)"
    }
}
