import Foundation

/// Decodes any supported format: sniffs the first bytes and hands the data to
/// the decoder for that format.
///
/// ```swift
/// let image = try ImageDecoder().decode(data, options: .init(targetSize: PixelSize(width: 256, height: 256)))
/// ```
public struct ImageDecoder: Sendable {
    /// Creates a decoder for PNG, JPEG and GIF.
    public init() {}

    /// The decoder for a format.
    public func decoder(for format: ImageFormat) -> any ImageDecoding {
        switch format {
        case .png: return PNGDecoder()
        case .jpeg: return JPEGDecoder()
        case .gif: return GIFDecoder()
        }
    }

    /// Sniffs and decodes `data` completely.
    ///
    /// - Throws: ``AsyncImageError/decoding(_:url:)``; at stage `sniffing`
    ///   when the data is empty or in no supported format.
    public func decode(_ data: Data, options: DecodingOptions = DecodingOptions()) throws(AsyncImageError) -> Image {
        guard let format = ImageFormat.sniff(data) else {
            let reason =
                data.isEmpty
                ? "empty data"
                : "unrecognised data starting with \(data.prefix(8).map { String(format: "%02x", $0) }.joined(separator: " "))"
            throw .decoding(DecodingFailure(format: nil, stage: .sniffing, reason: reason), url: nil)
        }
        return try decoder(for: format).decode(data, options: options)
    }
}
