import Foundation

/// A delivered image and where it came from (see ``AsyncImageLoader/response(for:)``).
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
}
