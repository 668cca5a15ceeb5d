import Foundation

/// A delivered image and where it came from (see ``AsyncImageLoader/response(for:)``,
/// ``ImageAction/init(_:response:)`` and ``AsyncImageResponseKey``).
public struct ImageResponse: Sendable {
    /// Where the image came from.
    public enum Source: Sendable, Hashable {
        /// The memory cache.
        case memoryCache
        /// The disk cache: fresh, confirmed by the server (a `304`), or stale.
        case diskCache
        /// A body from the network (or a `file` URL).
        case network
    }

    /// The HTTP response, as a cache returns it (RFC 9111): from the
    /// network, or stored (its status and headers, with an `Age`; after a
    /// `304`, with the `304`'s headers merged in). Nil for `file` URLs and
    /// memory-cache hits.
    public struct HTTPInfo: Sendable, Hashable {
        /// The URL the body came from, after redirects.
        public let finalURL: URL
        /// The status (a stored response's own: 200 after a `304` too).
        public let statusCode: Int
        /// The response's headers, names lowercased.
        public let headers: [String: String]
        /// Whether the server confirmed the stored response just now (a `304`).
        public let isRevalidated: Bool

        /// HTTP information.
        public init(finalURL: URL, statusCode: Int, headers: [String: String], isRevalidated: Bool = false) {
            self.finalURL = finalURL
            self.statusCode = statusCode
            self.headers = headers
            self.isRevalidated = isRevalidated
        }
    }

    /// A progressive JPEG whose transfer ended once its DC coefficients were
    /// in: at 1/8 scale or smaller they are all the decode reads.
    public struct EarlyEnd: Sendable, Hashable {
        /// The body bytes the decode read (up to the end of the DC scans).
        public let receivedBytes: Int
        /// The whole body's length, when the server said (`Content-Length`).
        public let totalBytes: Int?
        /// The bytes not transferred, when the total is known.
        public var savedBytes: Int? { totalBytes.map { max(0, $0 - receivedBytes) } }
    }

    /// The image.
    public let image: Image
    /// The request's URL.
    public let url: URL
    /// Where it came from.
    public let source: Source
    /// A stale disk entry: shown while it is revalidated
    /// (``ImageCachePolicy/returnStaleWhileRevalidating``), or because the
    /// server could not be reached to revalidate it.
    public let isStale: Bool
    /// The HTTP response, when one was received for this delivery (nil for
    /// memory and fresh disk hits, and `file` URLs).
    public let http: HTTPInfo?
    /// Set when the transfer ended early, at a progressive JPEG's DC
    /// coefficients (the image is the same as from the whole file).
    public let earlyEnd: EarlyEnd?
    /// The image's bytes, when the loader made them (or read them from
    /// disk) for ``AsyncImageLoader/encodedImage(for:encoding:)``.
    var encoded: EncodedPayload?

    /// What the source file said about itself (format, size, bit depth,
    /// colour type, frames, ICC, EXIF): ``Image/fileProperties``.
    public var fileProperties: ImageFileProperties? { image.fileProperties }

    /// A response, as a custom caller or a test makes one.
    public init(
        image: Image, url: URL, source: Source, isStale: Bool = false, http: HTTPInfo? = nil, earlyEnd: EarlyEnd? = nil
    ) {
        self.image = image
        self.url = url
        self.source = source
        self.isStale = isStale
        self.http = http
        self.earlyEnd = earlyEnd
    }
}
