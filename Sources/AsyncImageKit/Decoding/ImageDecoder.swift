import Foundation

/// Decodes any supported format: sniffs the first bytes and hands the data to
/// the decoder for that format (through ``ImageDecoderRegistry/default``).
///
/// ```swift
/// let image = try ImageDecoder().decode(data, options: .init(targetSize: PixelSize(width: 256, height: 256)))
/// ```
public struct ImageDecoder: Sendable {
    /// Creates a decoder for PNG, JPEG, GIF, WebP, AVIF, HEIC and JPEG XL.
    public init() {}

    /// The built-in decoder for a format (``ImageDecoderRegistry/default``'s:
    /// the one list of built-in decoders).
    public func decoder(for format: ImageFormat) -> any ImageDecoding {
        guard let decoder = ImageDecoderRegistry.default.decoder(for: format) else {
            preconditionFailure("no built-in decoder for \(format)")
        }
        return decoder
    }

    /// Sniffs and decodes `data` completely.
    ///
    /// - Throws: ``AsyncImageError/decoding(_:url:)``; at stage `sniffing`
    ///   when the data is empty or in no supported format.
    public func decode(_ data: Data, options: DecodingOptions = DecodingOptions()) throws(AsyncImageError) -> Image {
        try ImageDecoderRegistry.default.decode(data, options: options)
    }
}
