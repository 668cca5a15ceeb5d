import Foundation

/// A memory cache of decoded images: the seam where ``AsyncImageLoader``
/// keeps and finds them. ``ImageCache`` (strict LRU with cost and count
/// limits, purged under memory pressure) is the default.
///
/// Compared by identity: a loader stores each image once per cache object.
/// Every method may be called from any thread, and the loader never calls
/// one under its own lock.
public protocol ImageCaching: AnyObject, Sendable {
    /// The image for `key`, or nil.
    func image(for key: ImageCacheKey) -> Image?
    /// Stores `image` for `key`.
    func setImage(_ image: Image, for key: ImageCacheKey)
    /// Stores `image` for `key` in a priority class (see ``ImageCacheClass``):
    /// what the loader calls, with the request's ``ImageRequest/cacheClass``.
    /// The default implementation ignores the class and calls
    /// ``setImage(_:for:)``.
    func setImage(_ image: Image, for key: ImageCacheKey, cacheClass: ImageCacheClass)
    /// Removes the image for `key`.
    func removeImage(for key: ImageCacheKey)
    /// Removes every image.
    func removeAll()
}

extension ImageCaching {
    /// Ignores the class: stores `image` with ``setImage(_:for:)``.
    public func setImage(_ image: Image, for key: ImageCacheKey, cacheClass: ImageCacheClass) {
        setImage(image, for: key)
    }
}

extension ImageCache: ImageCaching {}
