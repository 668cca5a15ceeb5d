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

    /// How the image meets ``imageDisplaySize`` (default ``ContentMode/aspectFill``).
    var imageContentMode: ContentMode { get }

    /// How the result is framed at ``imageDisplaySize`` (default none:
    /// exactly the display size; see ``ScalingOptions``).
    var imageScaling: ScalingOptions { get }

    /// Loads ``imageURL`` again after the display size, content mode or
    /// scaling changed (a default implementation is provided).
    func imageDisplayDidChange()

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

    /// ``ContentMode/aspectFill``.
    public var imageContentMode: ContentMode { .aspectFill }

    /// None: exactly the display size.
    public var imageScaling: ScalingOptions { [] }

    /// Call after ``imageDisplaySize``, ``imageContentMode`` or
    /// ``imageScaling`` changed: loads ``imageURL`` again for the new values
    /// (the memory cache first; the image shown stays until the new one
    /// arrives). Does nothing without a URL.
    public func imageDisplayDidChange() {
        // Read and reloaded as one step against other threads' `imageURL` sets.
        ImageURLRegistry.shared.ordered {
            guard let url = imageURL else { return }
            applyImageURL(url, clearsImage: false)
        }
    }

    /// The request ``imageURL`` makes for `url`: this object's display size,
    /// content mode and scaling.
    public func imageRequest(for url: URL) -> ImageRequest {
        ImageRequest(url: url, targetSize: imageDisplaySize, contentMode: imageContentMode, scaling: imageScaling)
    }

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
        ImageURLRegistry.shared.set(url, for: self) { record in
            guard let url else {
                loader.cancelLoadingImages(target: self, action: ImageURLActions.show)
                guard clearsImage else { return }
                // On the delivery queue, like every assignment the loader makes:
                // after a delivery already under way, so its image cannot come
                // back; before any delivery of a URL set after it (the queue
                // is serial), so a reused cell is cleared even when its next
                // URL follows at once. Skipped only for a later clear's own.
                let target = WeakTarget(self)
                DeliveryQueueMark.run(on: loader.deliveryQueue) {
                    guard let object = target.object as? any ImageDisplaying,
                        ImageURLRegistry.shared.admits(record.clears.token, for: object)
                    else { return }
                    object.image = nil
                }
                return
            }
            loader.loadImage(
                imageRequest(for: url), target: self,
                success: ImageURLActions.show(since: record.clears.token),
                failure: ImageURLActions.fail(since: record.clears.token))
        }
    }
}

/// The actions ``ImageDisplaying/imageURL`` loads with, both named
/// `"imageURL"` so they cancel together. The loader alone decides which URL
/// wins on a target (a delivered URL supersedes the earlier ones); the
/// actions made by `imageURL` add one rule of their own: an outcome of a URL
/// set before `imageURL` was last set to nil is dropped (its delivery was
/// already under way when the clear came, from a didFinish observer say).
public enum ImageURLActions {
    /// Hands the image to the target's `imageLoadDidFinish`.
    public static let show = ImageAction("imageURL") { target, image, url in
        (target as? any ImageDisplaying)?.imageLoadDidFinish(image, url: url)
    }

    /// Tells the target's `imageLoadDidFail`.
    public static let fail = ImageFailureAction("imageURL") { target, error, url in
        (target as? any ImageDisplaying)?.imageLoadDidFail(error, url: url)
    }

    /// ``show`` for a URL set after the target's `clears`-th clear.
    static func show(since clears: UInt64) -> ImageAction {
        ImageAction(show.name) { target, image, url in
            guard let target = target as? any ImageDisplaying, ImageURLRegistry.shared.admits(clears, for: target)
            else { return }
            target.imageLoadDidFinish(image, url: url)
        }
    }

    /// ``fail`` for a URL set after the target's `clears`-th clear.
    static func fail(since clears: UInt64) -> ImageFailureAction {
        ImageFailureAction(fail.name) { target, error, url in
            guard let target = target as? any ImageDisplaying, ImageURLRegistry.shared.admits(clears, for: target)
            else { return }
            target.imageLoadDidFail(error, url: url)
        }
    }
}

/// What `imageURL` records per object (held weakly): the URL most recently
/// set, a generation that every set advances, and how many times it was
/// set to nil. Which URL's image wins is the loader's business, not this.
///
/// One recursive lock covers an object's record *and* the loader call that
/// follows it, so two threads setting `imageURL` at once reach the loader in
/// the order they recorded (the loader's later URL is the registry's).
final class ImageURLRegistry: @unchecked Sendable {
    static let shared = ImageURLRegistry()

    /// An object's record.
    struct Record: Equatable {
        var latest: URL?
        /// Advances on every set.
        var generation: UInt64 = 0
        /// Advances on every set to nil (see ``ClearCount``).
        var clears = ClearCount()
    }

    private struct Entry {
        let target: WeakTarget
        var record = Record()
    }

    /// Recursive: a loader call made under it may release a target whose
    /// `deinit` sets `imageURL` again on the same thread, or deliver a cache
    /// hit inline, whose action reads the record.
    private let lock = NSRecursiveLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    /// The table size at which entries of dead objects are next dropped.
    private var nextSweep = 64

    /// Entries held now, dead objects' included until the next sweep (tests).
    var count: Int { lock.withLock { entries.count } }

    func url(for object: AnyObject) -> URL? {
        record(for: object)?.latest
    }

    func record(for object: AnyObject) -> Record? {
        withEntry(of: object, creating: false) { $0?.record }
    }

    /// Whether an outcome of a load `object` started with `token` may be shown (see ``ClearCount``).
    func admits(_ token: UInt64, for object: AnyObject) -> Bool {
        record(for: object)?.clears.admits(token) == true
    }

    /// Runs `body` under the lock: a target that records more of its own
    /// (``AsyncImageView``) does so in the same order as the loader calls.
    func ordered<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// Records `url` (nil clears) for `object`, then runs `body` with the new
    /// record, both under the lock.
    func set(_ url: URL?, for object: AnyObject, then body: (Record) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        let record = withEntry(of: object, creating: true) { entry -> Record in
            guard var current = entry else { return Record() }
            current.record.latest = url
            current.record.generation &+= 1
            if url == nil { current.record.clears.clear() }
            entry = current
            return current.record
        }
        body(record)
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
