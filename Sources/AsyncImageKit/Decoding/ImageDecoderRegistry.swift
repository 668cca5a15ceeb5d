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
    private var acceptWeights: [ImageFormat: Double] = [:]

    /// No decoders at all.
    public init() {}

    /// PNG (libpng), JPEG (libjpeg-turbo), GIF (giflib), WebP (libwebp), AVIF
    /// (libavif), HEIC (libheif) and JPEG XL (libjxl), each at its
    /// ``ImageFormat/defaultAcceptWeight``.
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
    ///
    /// - Parameters:
    ///   - decoder: the decoder; it replaces any registered for its format.
    ///   - acceptWeight: how much a loader using this registry asks servers
    ///     for the format (its q-value in ``acceptHeader``, 0 to 1; 0 leaves
    ///     it out, though it is still decoded when a server sends it); nil:
    ///     ``ImageFormat/defaultAcceptWeight``.
    public mutating func register(_ decoder: any ImageDecoding, acceptWeight: Double? = nil) {
        decoders[decoder.format] = decoder
        acceptWeights[decoder.format] = max(0, min(1, acceptWeight ?? decoder.format.defaultAcceptWeight))
    }

    /// The formats that have a decoder.
    public var formats: Set<ImageFormat> { Set(decoders.keys) }

    /// The `Accept` header value of a loader using this registry (the
    /// default of ``AsyncImageLoader/Configuration/acceptHeader``): the
    /// formats that have a decoder, most wanted first, each with its weight
    /// as a q-value when below 1; then `*/*;q=0.1`, so that a server that
    /// only has something else still answers (its bytes are sniffed, never
    /// trusted by type). The default registry's:
    ///
    /// ```
    /// image/avif,image/jxl,image/webp,image/heic;q=0.9,image/png;q=0.8,image/jpeg;q=0.8,image/gif;q=0.8,*/*;q=0.1
    /// ```
    ///
    /// Formats of equal weight are listed AVIF, JPEG XL, WebP, HEIC, PNG,
    /// JPEG, GIF (a server that ignores q-values may take the first it has).
    public var acceptHeader: String {
        let rank = { (format: ImageFormat) in ImageFormat.acceptOrder.firstIndex(of: format) ?? Int.max }
        let wanted = acceptWeights.filter { decoders[$0.key] != nil && $0.value > 0 }
            .sorted { $0.value != $1.value ? $0.value > $1.value : rank($0.key) < rank($1.key) }
        return AcceptHeader.field(wanted.map { ($0.key.mimeType, $0.value) } + [("*/*", 0.1)])
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
