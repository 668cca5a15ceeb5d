/// Which caches a request may read and write, and whether it may use the
/// network (Nuke's and ThumbnailService's per-request cache choices).
///
/// ```swift
/// ImageRequest(url: url, cachePolicy: .reloadIgnoringCaches)   // fetch again, then cache
/// ImageRequest(url: url, cachePolicy: .cachedOnly)             // offline: a miss fails with .notCached
/// ImageRequest(url: url, cachePolicy: [.skipDiskWrites])       // keep it out of the disk cache
/// ```
public struct ImageCachePolicy: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    /// A policy from its raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Does not look in the memory cache.
    public static let skipMemoryReads = ImageCachePolicy(rawValue: 1 << 0)
    /// Does not store its image in the memory cache.
    public static let skipMemoryWrites = ImageCachePolicy(rawValue: 1 << 1)
    /// Does not look in the disk cache.
    public static let skipDiskReads = ImageCachePolicy(rawValue: 1 << 2)
    /// Does not store its body in the disk cache.
    public static let skipDiskWrites = ImageCachePolicy(rawValue: 1 << 3)
    /// Never uses the network: what the caches hold, or ``AsyncImageError/notCached(_:)``.
    public static let skipNetwork = ImageCachePolicy(rawValue: 1 << 4)

    /// Stale on disk: delivered at once, marked stale (``ImageResponse/isStale``,
    /// ``AsyncImageStaleKey``), while the loader revalidates it; if the image
    /// changed, the new one is delivered after it to the same target and
    /// actions, through the per-target order (a second delivery for the one
    /// call: what "show stale, then fresh" means); if not, nothing more.
    /// The async API returns the first.
    public static let returnStaleWhileRevalidating = ImageCachePolicy(rawValue: 1 << 5)
    /// Never a stale image: not while revalidating, not when the network
    /// fails, and not offline (``skipNetwork``, or the loader's
    /// ``AsyncImageLoader/networkStatus``: a stale entry then fails the
    /// request). By default a stale entry is served, marked stale, when a
    /// revalidation fails with a transport error, a timeout or a 5xx, and
    /// offline: RFC 9111 lets a cache that cannot reach the server do so.
    public static let neverStale = ImageCachePolicy(rawValue: 1 << 6)

    /// Every cache, then the network (the default).
    public static let useCaches: ImageCachePolicy = []
    /// Skips the caches' contents and loads again; the result is cached.
    public static let reloadIgnoringCaches: ImageCachePolicy = [.skipMemoryReads, .skipDiskReads]
    /// Only what the caches hold (offline).
    public static let cachedOnly: ImageCachePolicy = [.skipNetwork]
}
