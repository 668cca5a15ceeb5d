import CWebP
import Foundation

/// Encodes an ``Image`` (its first frame) as a still WebP with libwebp's
/// encoder: lossy (VP8) or lossless (VP8L), with alpha kept.
///
/// ```swift
/// let bytes = try WebPEncoder(quality: 80).encode(thumbnail)          // lossy, method 4
/// let exact = try WebPEncoder(lossless: true).encode(thumbnail)      // every pixel as it is
/// ```
///
/// - **Settings** are libwebp's, as `cwebp` takes them: ``quality`` is
///   `cwebp -q` (0 to 100: for a lossy file, the quality; for a lossless
///   one, the effort spent on making it small), ``method`` is `cwebp -m`
///   (0, fastest, to 6, smallest), ``lossless`` is `cwebp -lossless`.
///   Everything else is libwebp's default (`WebPConfigInit`: the `default`
///   preset, no multi-threading), so the same settings make the same bytes
///   as `cwebp -q Q -m M` from the same pixels (`BENCHMARKS.md` compares them).
/// - **Out-of-range settings are refused**, not clamped: a ``quality``
///   outside 0...100 or a ``method`` outside 0...6 throws
///   ``AsyncImageError/encoding(_:reason:)`` before any work. (``ImageEncoding``,
///   whose quality often comes from a request, clamps it instead.)
/// - **Alpha** is kept: an image that is not opaque (``Image/isOpaque``)
///   is written with its alpha channel (lossy files compress it
///   losslessly, libwebp's default); an opaque one without. A lossless
///   file keeps the colour of fully transparent pixels too (libwebp's
///   `exact`), so it decodes to exactly the pixels given; a lossy file
///   may change them (they are invisible), which makes it smaller.
/// - **Orientation** is not written: the pixels are written as they are,
///   upright (a loader's images are).
/// - The largest side WebP allows is 16,383 pixels; a larger image fails
///   with ``AsyncImageError/encoding(_:reason:)``.
public struct WebPEncoder: Sendable {
    /// Quality, 0 to 100 (`cwebp -q`): for a lossy file the quality (75 by
    /// default, libwebp's), for a lossless one the effort.
    public var quality: Int
    /// Write a lossless (VP8L) file instead of a lossy (VP8) one.
    public var lossless: Bool
    /// libwebp's trade-off between speed and size, 0 (fastest) to 6
    /// (smallest): `cwebp -m`. 4 by default, libwebp's.
    public var method: Int

    /// The largest width or height a WebP file can have.
    public static let maxDimension = Int(WEBP_MAX_DIMENSION)

    /// Creates an encoder.
    ///
    /// - Parameters:
    ///   - quality: 0 to 100 (`cwebp -q`).
    ///   - lossless: write lossless WebP.
    ///   - method: 0 (fastest) to 6 (smallest) (`cwebp -m`).
    public init(quality: Int = 75, lossless: Bool = false, method: Int = 4) {
        self.quality = quality
        self.lossless = lossless
        self.method = method
    }

    /// The WebP bytes of the image's first frame.
    ///
    /// - Throws: ``AsyncImageError/encoding(_:reason:)`` (format `webp`)
    ///   when a setting is out of its range, the image is larger than WebP
    ///   allows, or libwebp fails.
    public func encode(_ image: Image) throws(AsyncImageError) -> Data {
        guard (0...100).contains(quality) else { throw Self.refusal("quality \(quality) is not within 0...100") }
        guard (0...6).contains(method) else { throw Self.refusal("method \(method) is not within 0...6") }
        guard image.width <= Self.maxDimension, image.height <= Self.maxDimension else {
            throw Self.refusal("\(image.width)x\(image.height) is larger than WebP allows (\(Self.maxDimension) a side)")
        }
        var config = WebPConfig()
        guard WebPConfigInit(&config) != 0 else { throw Self.refusal("libwebp's ABI does not match its headers") }
        config.quality = Float(quality)
        config.method = Int32(method)
        config.lossless = lossless ? 1 : 0
        config.exact = lossless ? 1 : 0
        config.thread_level = 0
        guard WebPValidateConfig(&config) != 0 else { throw Self.refusal("libwebp refuses the configuration") }

        var picture = WebPPicture()
        guard WebPPictureInit(&picture) != 0 else { throw Self.refusal("libwebp's ABI does not match its headers") }
        defer { WebPPictureFree(&picture) }
        picture.width = Int32(image.width)
        picture.height = Int32(image.height)
        // Lossless encodes from ARGB; lossy from YUV, converted as the pixels are imported.
        picture.use_argb = lossless ? 1 : 0
        let opaque = image.isOpaque
        let imported = image.pixels.withBytes { bytes, _ in
            opaque
                ? WebPPictureImportRGBX(&picture, bytes, Int32(image.bytesPerRow))
                : WebPPictureImportRGBA(&picture, bytes, Int32(image.bytesPerRow))
        }
        guard imported != 0 else { throw Self.refusal("cannot import the pixels: \(Self.describe(picture.error_code))") }

        var writer = WebPMemoryWriter()
        WebPMemoryWriterInit(&writer)
        let encoded = withUnsafeMutablePointer(to: &writer) { output -> Int32 in
            picture.writer = WebPMemoryWrite
            picture.custom_ptr = UnsafeMutableRawPointer(output)
            defer { picture.custom_ptr = nil }
            return WebPEncode(&config, &picture)
        }
        guard encoded != 0, let bytes = writer.mem, writer.size > 0 else {
            WebPMemoryWriterClear(&writer)
            throw Self.refusal(Self.describe(picture.error_code))
        }
        return Data(bytesNoCopy: bytes, count: writer.size, deallocator: .custom { pointer, _ in WebPFree(pointer) })
    }

    private static func refusal(_ reason: String) -> AsyncImageError { .encoding(.webp, reason: reason) }

    /// libwebp's encoding error in words.
    static func describe(_ error: WebPEncodingError) -> String {
        switch error {
        case VP8_ENC_OK: return "the encoder failed"
        case VP8_ENC_ERROR_OUT_OF_MEMORY, VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: return "out of memory"
        case VP8_ENC_ERROR_NULL_PARAMETER: return "a null parameter"
        case VP8_ENC_ERROR_INVALID_CONFIGURATION: return "an invalid configuration"
        case VP8_ENC_ERROR_BAD_DIMENSION: return "a bad dimension"
        case VP8_ENC_ERROR_PARTITION0_OVERFLOW: return "the first partition is over 512 KB (try a lower quality)"
        case VP8_ENC_ERROR_PARTITION_OVERFLOW: return "a partition is over 16 MB"
        case VP8_ENC_ERROR_BAD_WRITE: return "the output could not be written"
        case VP8_ENC_ERROR_FILE_TOO_BIG: return "the file would be over 4 GB"
        case VP8_ENC_ERROR_USER_ABORT: return "aborted"
        default: return "libwebp encoding error \(error.rawValue)"
        }
    }
}
