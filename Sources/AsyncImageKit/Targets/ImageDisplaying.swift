import Foundation

/// A class that shows an image. Adopt it (it only needs an `image` property)
/// and it gains ``imageURL``, as UIImageView did with AsyncImageView's category:
///
/// ```swift
/// final class Thumbnail: ImageDisplaying {
///     var image: Image?
/// }
/// let cell = Thumbnail()
/// cell.imageURL = thumbnailURL   // loads through AsyncImageLoader.shared, then sets `image`
/// cell.imageURL = fullURL        // queued behind it: the thumbnail shows first if it arrives first
/// cell.imageURL = nil            // cancels both loads and clears the image
/// ```
///
/// The image is assigned on the loader's delivery queue, the clear of
/// `imageURL = nil` too: set there (e.g. on the main thread with the main
/// queue), `image` is nil at once; set on another thread, it becomes nil on
/// the delivery queue, after any delivery already under way.
public protocol ImageDisplaying: AnyObject {
    /// The image shown.
    var image: Image? { get set }

    /// Setting it loads the image through ``imageLoader`` and assigns it to
    /// ``image``; setting it again queues the new URL behind the earlier ones
    /// (the later one supersedes them once delivered); setting nil cancels the
    /// loads `imageURL` started (as the original did: loads made for this
    /// object with ``AsyncImageLoader`` directly keep running) and clears
    /// ``image``. Getting it returns the URL most recently set. Setting a new
    /// URL keeps the current image until the new one arrives (a thumbnail
    /// stays up while the full image loads); set nil first to clear it, e.g.
    /// when a cell is reused. A default implementation is provided.
    var imageURL: URL? { get set }

    /// The loader ``imageURL`` uses (default: ``AsyncImageLoader/shared``).
    var imageLoader: AsyncImageLoader { get }

    /// The size the image is shown at, to decode it downsampled (default nil: full size).
    var imageDisplaySize: PixelSize? { get }

    /// Called on the delivery queue when a load started by ``imageURL``
    /// succeeds (default: assigns ``image``).
    func imageLoadDidFinish(_ image: Image, url: URL)

    /// Called on the delivery queue when a load started by ``imageURL`` fails (default: nothing).
    func imageLoadDidFail(_ error: AsyncImageError, url: URL)
}

extension ImageDisplaying {
    /// ``AsyncImageLoader/shared``.
    public var imageLoader: AsyncImageLoader { .shared }

    /// nil: decode at full size.
    public var imageDisplaySize: PixelSize? { nil }

    /// Assigns ``ImageDisplaying/image``.
    public func imageLoadDidFinish(_ image: Image, url: URL) {
        self.image = image
    }

    /// Does nothing.
    public func imageLoadDidFail(_ error: AsyncImageError, url: URL) {}

    /// The default ``ImageDisplaying/imageURL``: see there.
    public var imageURL: URL? {
        get { ImageURLRegistry.shared.url(for: self) }
        set { loadImageURL(newValue) }
    }

    /// What the default ``imageURL`` setter does; call it from your own `imageURL`.
    public func loadImageURL(_ url: URL?) {
        ImageURLRegistry.shared.set(url, for: self)
        let loader = imageLoader
        guard let url else {
            loader.cancelLoadingImages(target: self, action: ImageURLActions.show)
            // On the delivery queue, like every assignment the loader makes:
            // after a delivery already under way, so its image cannot come back.
            let target = WeakTarget(self)
            DeliveryQueueMark.run(on: loader.deliveryQueue) {
                (target.object as? any ImageDisplaying)?.image = nil
            }
            return
        }
        loader.loadImage(
            ImageRequest(url: url, targetSize: imageDisplaySize), target: self, success: ImageURLActions.show,
            failure: ImageURLActions.fail)
    }
}

/// The actions ``ImageDisplaying/imageURL`` loads with.
public enum ImageURLActions {
    /// Hands the image to the target's `imageLoadDidFinish` (named `"imageURL"`).
    public static let show = ImageAction("imageURL") { target, image, url in
        (target as? any ImageDisplaying)?.imageLoadDidFinish(image, url: url)
    }

    /// Tells the target (named `"imageURL"`, like ``show``, so they cancel together).
    public static let fail = ImageFailureAction("imageURL") { target, error, url in
        (target as? any ImageDisplaying)?.imageLoadDidFail(error, url: url)
    }
}

/// The URL most recently set on each object through `imageURL`, held weakly.
final class ImageURLRegistry: @unchecked Sendable {
    static let shared = ImageURLRegistry()

    private let entries = Locked<[ObjectIdentifier: (target: WeakTarget, url: URL)]>([:])

    func url(for object: AnyObject) -> URL? {
        var keep = KeepAlive()
        let url = entries.withLock { entries -> URL? in
            guard let entry = entries[ObjectIdentifier(object)], entry.target.refers(to: object, &keep) else { return nil }
            return entry.url
        }
        withExtendedLifetime(keep) {}  // released here, outside the lock
        return url
    }

    func set(_ url: URL?, for object: AnyObject) {
        var keep = KeepAlive()
        entries.withLock { entries in
            if entries.count > 64 && entries.count.isMultiple(of: 64) {
                entries = entries.filter { $0.value.target.isAlive(&keep) }
            }
            entries[ObjectIdentifier(object)] = url.map { (WeakTarget(object), $0) }
        }
        withExtendedLifetime(keep) {}
    }
}
