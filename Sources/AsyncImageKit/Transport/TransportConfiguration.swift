/// Limits and settings for every transfer a ``DataLoader`` makes.
public struct TransportConfiguration: Sendable, Hashable {
    /// Seconds a transfer may take from the moment it starts (time waiting in
    /// a loader's queue does not count). Default 60. Zero, a negative value,
    /// NaN or `.infinity` mean no time limit. `file` URLs are not timed.
    public var timeout: Double
    /// The most body bytes accepted (after content decoding), enforced while
    /// the body streams in, with or without `Content-Length`. Default 50 MB.
    public var maxBodySize: Int
    /// The most redirects followed (to `http` and `https` only). Default 10.
    public var maxRedirects: Int
    /// Ask for and decode `gzip`, `deflate` and other encodings libcurl supports. Default `true`.
    public var acceptsEncodedBodies: Bool
    /// The `User-Agent` header.
    public var userAgent: String
    /// Headers sent with every transfer (default: an `Accept` naming the
    /// formats the built-in decoders read). A request's own headers replace
    /// these by name.
    public var headers: [String: String]

    /// `Accept` for the formats of ``ImageDecoderRegistry/default``.
    public static let defaultAccept = ImageDecoderRegistry.default.acceptHeader

    /// Creates a configuration.
    public init(
        timeout: Double = 60, maxBodySize: Int = 50_000_000, maxRedirects: Int = 10,
        acceptsEncodedBodies: Bool = true, userAgent: String = "AsyncImageKit/0.1 (Linux; libcurl)",
        headers: [String: String] = ["Accept": TransportConfiguration.defaultAccept]
    ) {
        self.headers = headers
        self.timeout = timeout
        self.maxBodySize = maxBodySize
        self.maxRedirects = maxRedirects
        self.acceptsEncodedBodies = acceptsEncodedBodies
        self.userAgent = userAgent
    }
}
