import Foundation

extension Notification.Name {
    /// Posted when a load succeeded (`"AsyncImageLoadDidFinish"`), on the
    /// loader's delivery queue, right before the success action runs; once per
    /// request, cache hits included. Object: the target (nil for loads without
    /// one). userInfo: ``AsyncImageImageKey`` (the ``Image``), ``AsyncImageURLKey``
    /// (the `URL`), ``AsyncImageResponseKey`` (the ``ImageResponse``: its
    /// ``ImageResponse/source`` tells whether the image came from the memory
    /// cache, the disk cache or the network), ``AsyncImageCacheKey`` (the
    /// ``ImageCaching`` holding the image: see there when it is present) and
    /// ``AsyncImageStaleKey`` (a stale disk entry).
    public static let asyncImageLoadDidFinish = Notification.Name("AsyncImageLoadDidFinish")

    /// Posted when a load failed (`"AsyncImageLoadDidFail"`), on the delivery
    /// queue, right before the failure action runs; once per request. Object:
    /// the target. userInfo: ``AsyncImageErrorKey`` (the ``AsyncImageError``)
    /// and ``AsyncImageURLKey``. Cancelled requests post nothing.
    public static let asyncImageLoadDidFail = Notification.Name("AsyncImageLoadDidFail")
}

/// userInfo key of the loaded ``Image`` (`"image"`).
public let AsyncImageImageKey = "image"
/// userInfo key of the request's `URL` (`"URL"`).
public let AsyncImageURLKey = "URL"
/// userInfo key of the ``ImageCaching`` holding the delivered image
/// (`"cache"`), on every didFinish whose image is in a cache: a load stored
/// in the loader's cache (as in the original) and a memory-cache hit.
/// Absent when caching is off, and for a load whose request skips memory
/// writes (``ImageCachePolicy/skipMemoryWrites``). It does not tell a
/// cache hit from a load: for that, read ``ImageResponse/source``
/// (``AsyncImageResponseKey``).
public let AsyncImageCacheKey = "cache"
/// userInfo key present (`true`) when the image is a stale disk entry
/// (`"stale"`): shown while it is revalidated, or because the server could
/// not be reached (see ``ImageResponse/isStale``).
public let AsyncImageStaleKey = "stale"
/// userInfo key of the ``ImageResponse`` of a finished load (`"response"`):
/// where the image came from, the HTTP response, the file's properties.
public let AsyncImageResponseKey = "response"
/// userInfo key of the ``AsyncImageError`` of a failed load (`"error"`).
public let AsyncImageErrorKey = "error"
