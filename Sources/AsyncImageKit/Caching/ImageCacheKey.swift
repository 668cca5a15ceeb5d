import Foundation

/// What identifies a decoded image in a cache: the URL and how it was
/// decoded (the target size and content mode of a downsampled decode).
///
/// The hash is computed once, when the key is made, so a cache lookup costs
/// one string comparison at most.
public struct ImageCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The URL's absolute string.
    public let url: String
    /// `""` for a full-size decode; otherwise e.g. `"256x256-fill"`.
    public let processing: String
    private let hash: Int

    /// The key for `url` decoded with `options` (only the target size and
    /// content mode matter; the pixel limit does not change the pixels).
    public init(url: URL, options: DecodingOptions = DecodingOptions()) {
        self.init(url: url.absoluteString, processing: Self.processingKey(options))
    }

    /// A key from its parts.
    public init(url: String, processing: String) {
        self.url = url
        self.processing = processing
        var hasher = Hasher()
        hasher.combine(url)
        hasher.combine(processing)
        self.hash = hasher.finalize()
    }

    static func processingKey(_ options: DecodingOptions) -> String {
        guard let size = options.targetSize else { return "" }
        return "\(size.width)x\(size.height)-\(options.contentMode == .aspectFill ? "fill" : "fit")"
    }

    /// Feeds the precomputed hash.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    /// Equal when URL and processing are equal.
    public static func == (lhs: ImageCacheKey, rhs: ImageCacheKey) -> Bool {
        lhs.hash == rhs.hash && lhs.url == rhs.url && lhs.processing == rhs.processing
    }

    /// `URL` or `URL [processing]`.
    public var description: String { processing.isEmpty ? url : "\(url) [\(processing)]" }
}
