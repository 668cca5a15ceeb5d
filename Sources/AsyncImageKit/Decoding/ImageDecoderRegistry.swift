import Foundation

/// The decoders a loader may use, picked by the format sniffed from the
/// first bytes: the seam where formats are added.
///
/// The last decoder registered for a format wins, so a program can replace
/// a built-in one:
///
/// ```swift
/// var decoders = ImageDecoderRegistry.default
/// decoders.register(MyPNGDecoder())          // its `format` is .png
/// let loader = AsyncImageLoader(configuration: .init(decoders: decoders))
/// ```
public struct ImageDecoderRegistry: Sendable {
    private var decoders: [ImageFormat: any ImageDecoding] = [:]

    /// No decoders at all.
    public init() {}

    /// PNG (libpng), JPEG (libjpeg-turbo), GIF (giflib), WebP (libwebp), AVIF
    /// (libavif), HEIC (libheif) and JPEG XL (libjxl).
    public static let `default`: ImageDecoderRegistry = {
        var registry = ImageDecoderRegistry()
        registry.register(PNGDecoder())
        registry.register(JPEGDecoder())
        registry.register(GIFDecoder())
        registry.register(WebPDecoder())
        registry.register(AVIFDecoder())
        registry.register(HEIFDecoder())
        registry.register(JXLDecoder())
        return registry
    }()

    /// Uses `decoder` for its ``ImageDecoding/format`` from now on.
    public mutating func register(_ decoder: any ImageDecoding) {
        decoders[decoder.format] = decoder
    }

    /// The formats that have a decoder.
    public var formats: Set<ImageFormat> { Set(decoders.keys) }

    /// An `Accept` header value naming the formats that have a decoder
    /// (anything else at a low weight: a server that ignores the types still answers).
    public var acceptHeader: String {
        (formats.map(\.mimeType).sorted() + ["*/*;q=0.1"]).joined(separator: ",")
    }

    /// The decoder registered for `format`, if any.
    public func decoder(for format: ImageFormat) -> (any ImageDecoding)? {
        decoders[format]
    }

    /// Sniffs `data` and decodes it completely with the decoder for its format.
    ///
    /// - Throws: ``AsyncImageError/decoding(_:url:)``: at stage `sniffing`
    ///   when the data is empty, in no known format, or in a format with no
    ///   decoder registered.
    public func decode(_ data: Data, options: DecodingOptions = DecodingOptions()) throws(AsyncImageError) -> Image {
        guard let format = ImageFormat.sniff(data) else {
            let reason =
                data.isEmpty
                ? "empty data"
                : "unrecognised data starting with \(data.prefix(8).map { String(format: "%02x", $0) }.joined(separator: " "))"
            throw .decoding(DecodingFailure(format: nil, stage: .sniffing, reason: reason), url: nil)
        }
        guard let decoder = decoders[format] else {
            throw .decoding(
                DecodingFailure(format: format, stage: .sniffing, reason: "no decoder registered for \(format)"), url: nil)
        }
        // Every decoder delivers its natural size; the framing is done here, once.
        return try DisplayFrame.apply(decoder.decode(data, options: options), options)
    }
}
