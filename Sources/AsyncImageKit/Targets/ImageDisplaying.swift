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
        applyImageURL(url, clearsImage: true)
    }

    /// Records `url` and starts (or cancels) its load, as one step against
    /// other threads' `imageURL` sets, so the loader sees URLs in the order
    /// they were recorded. `clearsImage`: nil also clears ``image``.
    func applyImageURL(_ url: URL?, clearsImage: Bool) {
        let loader = imageLoader
        ImageURLRegistry.shared.set(url, for: self) { generation in
            guard let url else {
                loader.cancelLoadingImages(target: self, action: ImageURLActions.show)
                guard clearsImage else { return }
                // On the delivery queue, like every assignment the loader makes:
                // after a delivery already under way, so its image cannot come
                // back; skipped if imageURL was set again meanwhile.
                let target = WeakTarget(self)
                DeliveryQueueMark.run(on: loader.deliveryQueue) {
                    guard let object = target.object as? any ImageDisplaying,
                        ImageURLRegistry.shared.generation(for: object) == generation
                    else { return }
                    object.image = nil
                }
                return
            }
            loader.loadImage(
                ImageRequest(url: url, targetSize: imageDisplaySize), target: self, success: ImageURLActions.show,
                failure: ImageURLActions.fail)
        }
    }
}

/// The actions ``ImageDisplaying/imageURL`` loads with. Each passes on only
/// outcomes of URLs set since `imageURL` was last nil (a delivery that was
/// already under way when it was cleared is dropped), and, like the loader,
/// treats the earlier URLs as superseded once one is delivered.
public enum ImageURLActions {
    /// Hands the image to the target's `imageLoadDidFinish` (named `"imageURL"`).
    public static let show = ImageAction("imageURL") { target, image, url in
        guard let target = target as? any ImageDisplaying, ImageURLRegistry.shared.claim(url, for: target) else { return }
        target.imageLoadDidFinish(image, url: url)
    }

    /// Tells the target (named `"imageURL"`, like ``show``, so they cancel together).
    public static let fail = ImageFailureAction("imageURL") { target, error, url in
        guard let target = target as? any ImageDisplaying, ImageURLRegistry.shared.claim(url, for: target) else { return }
        target.imageLoadDidFail(error, url: url)
    }
}

/// What `imageURL` records per object (held weakly): the URL most recently
/// set, the URLs still wanted, and a generation that every set advances.
///
/// One recursive lock covers an object's record *and* the loader call that
/// follows it, so two threads setting `imageURL` at once reach the loader in
/// the order they recorded (the loader's later URL is the registry's).
final class ImageURLRegistry: @unchecked Sendable {
    static let shared = ImageURLRegistry()

    private struct Entry {
        let target: WeakTarget
        var latest: URL?
        /// URLs set since the last nil, oldest first, from the last one delivered on.
        var wanted: [URL] = []
        var generation: UInt64 = 0
    }

    /// Recursive: a loader call made under it may release a target whose
    /// `deinit` sets `imageURL` again on the same thread.
    private let lock = NSRecursiveLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    /// The table size at which entries of dead objects are next dropped.
    private var nextSweep = 64
    /// The most URLs kept wanted per object (loads that never end in a delivery stay listed).
    private let wantedLimit = 32

    /// Entries held now, dead objects' included until the next sweep (tests).
    var count: Int { lock.withLock { entries.count } }

    func url(for object: AnyObject) -> URL? {
        withEntry(of: object, creating: false) { $0?.latest }
    }

    func generation(for object: AnyObject) -> UInt64? {
        withEntry(of: object, creating: false) { $0?.generation }
    }

    /// Runs `body` under the lock: a target that records more of its own
    /// (``AsyncImageView``) does so in the same order as the loader calls.
    func ordered<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// Records `url` (nil clears) for `object`, then runs `body` with the new
    /// generation, both under the lock.
    func set(_ url: URL?, for object: AnyObject, then body: (UInt64) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        let generation = withEntry(of: object, creating: true) { entry -> UInt64 in
            guard var current = entry else { return 0 }
            current.latest = url
            if let url {
                current.wanted.append(url)
                if current.wanted.count > wantedLimit { current.wanted.removeFirst() }
            } else {
                current.wanted.removeAll()
            }
            current.generation &+= 1
            entry = current
            return current.generation
        }
        body(generation)
    }

    /// Whether `url`'s outcome is still wanted by `object`; if so, it and
    /// every URL set before it stop being wanted.
    func claim(_ url: URL, for object: AnyObject) -> Bool {
        withEntry(of: object, creating: false) { entry in
            guard let index = entry?.wanted.lastIndex(of: url) else { return false }
            entry?.wanted.removeFirst(index + 1)
            return true
        }
    }

    /// Runs `body` on `object`'s entry under the lock (nil when it has none
    /// and `creating` is false); parked references are released after it.
    private func withEntry<T>(of object: AnyObject, creating: Bool, _ body: (inout Entry?) -> T) -> T {
        var keep = KeepAlive()
        let result = lock.withLock { () -> T in
            let id = ObjectIdentifier(object)
            if entries.count >= nextSweep {
                // Amortized: the next sweep waits until the table has doubled.
                entries = entries.filter { $0.value.target.isAlive(&keep) }
                nextSweep = max(64, 2 * entries.count)
            }
            var entry = entries[id]
            // An entry of a dead object whose address was reused is not this object's.
            if let found = entry, !found.target.refers(to: object, &keep) { entry = nil }
            if entry == nil && creating { entry = Entry(target: WeakTarget(object)) }
            let result = body(&entry)
            entries[id] = entry
            return result
        }
        withExtendedLifetime(keep) {}
        return result
    }
}
