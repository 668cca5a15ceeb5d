import Foundation

/// A decoder for one image format.
///
/// Decoders are stateless values, safe to use from any thread at once.
public protocol ImageDecoding: Sendable {
    /// The format this decoder reads.
    var format: ImageFormat { get }

    /// Decodes `data` completely (every pixel of every frame) or fails.
    ///
    /// - Throws: ``AsyncImageError/decoding(_:url:)`` saying at which stage and why.
    func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image
}

extension ImageDecoding {
    /// Decodes `data` with default options.
    public func decode(_ data: Data) throws(AsyncImageError) -> Image {
        try decode(data, options: DecodingOptions())
    }

    func failure(_ stage: DecodingFailure.Stage, _ reason: String, pixelLimit: Bool = false) -> AsyncImageError {
        .decoding(DecodingFailure(format: format, stage: stage, reason: reason, isPixelLimit: pixelLimit), url: nil)
    }
}
