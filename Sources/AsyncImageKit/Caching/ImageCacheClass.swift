/// How long a memory cache keeps an image, compared with the others: the
/// class an entry of ``ImageCache`` carries.
///
/// When the cache trims to its limits it evicts the lowest class first, least
/// recently used first within a class; under memory pressure it drops every
/// class below ``thumbnail`` and keeps the thumbnails (see
/// ``ImageCache/removeImages(below:)``). So an album's thumbnails stay while
/// the full-size photos opened from it are relinquished first, as Nimbus' photo
/// browser does.
///
/// ```swift
/// var cell = ImageRequest(url: url, targetSize: PixelSize(width: 120, height: 120))
/// cell.cacheClass = .thumbnail
/// var photo = ImageRequest(url: url)
/// photo.cacheClass = .original
/// ```
public enum ImageCacheClass: UInt8, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Full-size images (photos opened one at a time): evicted first.
    case original = 0
    /// Everything not marked otherwise (the default).
    case normal = 1
    /// Small images shown many at a time (a grid, a list): evicted last,
    /// and kept through a memory-pressure purge.
    case thumbnail = 2

    /// Lower classes are evicted first.
    public static func < (lhs: ImageCacheClass, rhs: ImageCacheClass) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `original`, `normal` or `thumbnail`.
    public var description: String {
        switch self {
        case .original: return "original"
        case .normal: return "normal"
        case .thumbnail: return "thumbnail"
        }
    }
}
