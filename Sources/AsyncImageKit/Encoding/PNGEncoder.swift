import CImageCodecs
import Foundation

/// Encodes an ``Image`` (its first frame) as an 8-bit RGBA PNG with libpng.
///
/// ```swift
/// try PNGEncoder().encode(image).write(to: URL(fileURLWithPath: "out.png"))
/// ```
public struct PNGEncoder: Sendable {
    /// zlib compression level, 0 (none, fastest) to 9 (smallest).
    public var compressionLevel: Int

    /// Creates an encoder.
    public init(compressionLevel: Int = 6) {
        self.compressionLevel = compressionLevel
    }

    /// The PNG bytes of the image's first frame.
    ///
    /// - Throws: ``AsyncImageError/decoding(_:url:)`` (format `png`) if libpng fails.
    public func encode(_ image: Image) throws(AsyncImageError) -> Data {
        var result = aiv_encode_result()
        let status = image.pixels.withBytes { bytes, _ in
            aiv_png_encode_rgba(
                bytes, UInt32(image.width), UInt32(image.height), UInt32(image.bytesPerRow),
                Int32(compressionLevel), &result)
        }
        return try EncodedBytes.take(&result, status: status, format: .png)
    }
}

/// Turning the C shim's encode result into `Data`.
enum EncodedBytes {
    static func take(_ result: inout aiv_encode_result, status: Int32, format: ImageFormat) throws(AsyncImageError)
        -> Data
    {
        guard status == 0, let bytes = result.data else {
            var message = result.message
            let text = withUnsafeBytes(of: &message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            throw .encoding(format, reason: text.isEmpty ? "the encoder failed" : text)
        }
        return Data(bytesNoCopy: bytes, count: result.size, deallocator: .free)
    }
}
