import Foundation

/// A photo album's data source (Nimbus' `NIPhotoAlbumScrollViewDataSource`):
/// for each photo a thumbnail and an original, the best one in memory now,
/// the better one loading, the neighbours prefetched.
///
/// ```swift
/// let album = PhotoAlbum(photos: urls.map { PhotoAlbum.Photo(thumbnailURL: $0.small, originalURL: $0.large) },
///                        thumbnailSize: PixelSize(width: 160, height: 160), loader: loader)
/// let now = album.photo(at: 7)          // at once: memory only; starts 7, then prefetches 6 and 8
/// draw(now.image, blurry: now.sizeClass == .thumbnail, spinner: now.isLoadingBetter)
/// for await change in album.changes where change.index == 7 { draw(change.image) }
/// album.stopLoading(at: 7)             // it left the screen
/// ```
///
/// The rules:
/// - ``photo(at:)`` never waits, and its answer never comes from disk or
///   network. It first starts what is missing for that index, thumbnail
///   before original (one target per index: the loader's per-target
///   order), and prefetches indexes i-1 and i+1 after it at low priority
///   (raised when they become current); then it answers from the memory
///   cache (the original, else the thumbnail, else no image), with the size
///   class, whether a better one is loading, and the original's pixel size
///   once known. So the first answer for an index whose original is not in
///   memory says ``PhotoState/isLoadingBetter``: its loads have just
///   started, and ``changes`` reports what they bring.
/// - The original's pixel size is known before its pixels: from the first
///   bytes of its transfer (a header probe: JPEG SOF, PNG IHDR, GIF screen,
///   with the EXIF orientation applied), or from the disk cache; a change
///   reports it while the original is still loading.
/// - ``changes`` (and ``onChange``) report each index's state when a better
///   image arrived or the original's size became known.
/// - ``stopLoading(at:)`` cancels what that index started.
/// - In the memory cache, thumbnails are ``ImageCacheClass/thumbnail`` and
///   originals ``ImageCacheClass/original``: originals are evicted first, and
///   a memory-pressure purge keeps the thumbnails.
public final class PhotoAlbum: @unchecked Sendable {
    /// One photo: its thumbnail and its original.
    public struct Photo: Sendable, Hashable {
        public let thumbnailURL: URL
        public let originalURL: URL

        /// A photo.
        public init(thumbnailURL: URL, originalURL: URL) {
            self.thumbnailURL = thumbnailURL
            self.originalURL = originalURL
        }
    }

    /// Which image a state holds.
    public enum SizeClass: Int, Sendable, Hashable, Comparable {
        case none, thumbnail, original

        public static func < (lhs: SizeClass, rhs: SizeClass) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// What the album has for one index.
    public struct PhotoState: Sendable {
        /// The index.
        public let index: Int
        /// The best image in memory (nil: none yet).
        public let image: Image?
        /// Which one it is.
        public let sizeClass: SizeClass
        /// Whether a better one is loading.
        public let isLoadingBetter: Bool
        /// The original's upright pixel size, once known (before its pixels).
        public let originalSize: PixelSize?
    }

    /// The photos.
    public let photos: [Photo]
    /// The loader it loads with.
    public let loader: AsyncImageLoader
    /// The display size thumbnails are decoded for.
    public let thumbnailSize: PixelSize
    /// The display size originals are decoded for (nil: full size).
    public let originalDisplaySize: PixelSize?

    /// One index's loads: the target both are made for (per-target order).
    private final class Slot: @unchecked Sendable {
        var thumbnailTask: ImageTask?
        var originalTask: ImageTask?
        var originalSize: PixelSize?
        /// The best class delivered or found in memory so far.
        var best = SizeClass.none
    }

    private struct Fields {
        var slots: [Int: Slot] = [:]
        var observers: [UInt64: @Sendable (PhotoState) -> Void] = [:]
        var nextObserver: UInt64 = 0
        var onChange: (@Sendable (PhotoState) -> Void)?
    }

    private let fields = Locked(Fields())

    /// An album of `photos`, thumbnails at `thumbnailSize`, originals at
    /// `originalDisplaySize` (nil: full size).
    public init(
        photos: [Photo], thumbnailSize: PixelSize, originalDisplaySize: PixelSize? = nil,
        loader: AsyncImageLoader = .shared
    ) {
        self.photos = photos
        self.thumbnailSize = thumbnailSize
        self.originalDisplaySize = originalDisplaySize
        self.loader = loader
    }

    deinit {
        let slots = fields.withLock { $0.slots.values.map { $0 } }
        for slot in slots {
            slot.thumbnailTask?.cancel()
            slot.originalTask?.cancel()
        }
    }

    /// Called with every change (a better image, or the original's size),
    /// on the loader's threads (the delivery queue for images).
    public var onChange: (@Sendable (PhotoState) -> Void)? {
        get { fields.withLock { $0.onChange } }
        set { fields.withLock { $0.onChange = newValue } }
    }

    /// Every change from now on (a better image, or the original's size);
    /// the sequence ends with the iterating task.
    public var changes: AsyncStream<PhotoState> {
        AsyncStream { continuation in
            let id = fields.withLock { fields -> UInt64 in
                fields.nextObserver += 1
                fields.observers[fields.nextObserver] = { continuation.yield($0) }
                return fields.nextObserver
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.fields.withLock { $0.observers.removeValue(forKey: id) }
            }
        }
    }

    /// The request for index `index`'s thumbnail.
    public func thumbnailRequest(at index: Int, priority: ImagePriority = .normal) -> ImageRequest {
        var request = ImageRequest(url: photos[index].thumbnailURL, targetSize: thumbnailSize, priority: priority)
        request.cacheClass = .thumbnail  // kept over originals, and through memory pressure
        return request
    }

    /// The request for index `index`'s original.
    public func originalRequest(at index: Int, priority: ImagePriority = .normal) -> ImageRequest {
        var request = ImageRequest(url: photos[index].originalURL, targetSize: originalDisplaySize, priority: priority)
        request.cacheClass = .original  // the first to go
        return request
    }

    /// Starts what is missing for `index` (thumbnail, then original) and
    /// prefetches the neighbours, then answers at once with the best image
    /// in memory for `index` (no disk, no network) and whether a better one
    /// is loading: true on the first call unless the original is in memory.
    /// An index outside ``photos`` gets an empty state and starts nothing.
    public func photo(at index: Int) -> PhotoState {
        guard photos.indices.contains(index) else {
            return PhotoState(index: index, image: nil, sizeClass: .none, isLoadingBetter: false, originalSize: nil)
        }
        let state = current(index)
        start(index, priority: .normal)
        for neighbour in [index - 1, index + 1] where photos.indices.contains(neighbour) {
            start(neighbour, priority: .low)
        }
        return current(index, knownBest: state.sizeClass)
    }

    /// Cancels what `index` started (it left the screen).
    public func stopLoading(at index: Int) {
        let slot = fields.withLock { fields -> Slot? in
            guard let slot = fields.slots[index] else { return nil }
            (slot.thumbnailTask, slot.originalTask) = (nil, nil)
            return slot
        }
        // Both in one step (the slot is their target): cancelling the running
        // thumbnail first would free its transfer slot for the queued original.
        if let slot { loader.cancelLoadingImages(target: slot) }
    }

    // MARK: Internals

    /// The state of `index` from memory (and what is loading).
    private func current(_ index: Int, knownBest: SizeClass? = nil) -> PhotoState {
        var image: Image?
        var sizeClass = SizeClass.none
        if let original = loader.memoryCachedImage(for: originalRequest(at: index)) {
            (image, sizeClass) = (original, .original)
        } else if let thumbnail = loader.memoryCachedImage(for: thumbnailRequest(at: index)) {
            (image, sizeClass) = (thumbnail, .thumbnail)
        }
        let (loading, known) = fields.withLock { fields -> (Bool, PixelSize?) in
            guard let slot = fields.slots[index] else { return (false, nil) }
            slot.best = max(slot.best, sizeClass)
            let running = [slot.originalTask].compactMap { $0 }.contains { $0.state == .running }
            return (sizeClass < .original && running, slot.originalSize)
        }
        let originalSize =
            known ?? (sizeClass == .original ? image?.originalSize : image?.fileProperties.map(\.uprightPixelSize))
        return PhotoState(
            index: index, image: image, sizeClass: sizeClass, isLoadingBetter: loading,
            originalSize: sizeClass == .thumbnail && known == nil ? nil : originalSize)
    }

    /// Starts the thumbnail (unless the original or the thumbnail is in
    /// memory) then the original for `index`, or raises their priority.
    private func start(_ index: Int, priority: ImagePriority) {
        let hasOriginal = loader.memoryCachedImage(for: originalRequest(at: index)) != nil
        let hasThumbnail = hasOriginal || loader.memoryCachedImage(for: thumbnailRequest(at: index)) != nil
        let (slot, existing) = fields.withLock { fields -> (Slot, [ImageTask]) in
            let slot = fields.slots[index] ?? Slot()
            fields.slots[index] = slot
            return (slot, [slot.thumbnailTask, slot.originalTask].compactMap { $0 }.filter { $0.state == .running })
        }
        if !existing.isEmpty {
            // Already loading (a prefetch, say): now at least `priority`.
            for task in existing where task.priority < priority { task.priority = priority }
            return
        }
        guard !hasOriginal else { return }
        let show = ImageAction("album", response: { [weak self] target, response in
            guard let self, let slot = target as? Slot else { return }
            let sizeClass: SizeClass = response.url == self.photos[index].originalURL ? .original : .thumbnail
            self.delivered(index, slot, sizeClass, response.image)
        })
        var thumbnailTask: ImageTask?
        if !hasThumbnail {
            thumbnailTask = loader.loadImage(thumbnailRequest(at: index, priority: priority), target: slot, success: show)
        }
        let originalTask = loader.loadImage(originalRequest(at: index, priority: priority), target: slot, success: show)
        fields.withLock { _ in
            slot.thumbnailTask = thumbnailTask
            slot.originalTask = originalTask
            // What memory holds now is the best so far (an original purged
            // since it was delivered is reported again when it comes back).
            slot.best = hasThumbnail ? .thumbnail : .none
        }
        // The original's size from the first bytes of its transfer, or from disk.
        originalTask.onFileProperties { [weak self] properties in
            guard let self else { return }
            let changed = self.fields.withLock { _ -> Bool in
                guard slot.originalSize == nil else { return false }
                slot.originalSize = properties.uprightPixelSize
                return true
            }
            if changed { self.tell(self.current(index)) }
        }
    }

    /// A better image for `index` arrived (on the delivery queue): reported
    /// as delivered, whatever the memory cache kept of it.
    private func delivered(_ index: Int, _ slot: Slot, _ sizeClass: SizeClass, _ image: Image) {
        let state = fields.withLock { _ -> PhotoState? in
            guard sizeClass > slot.best else { return nil }
            slot.best = sizeClass
            let loading = sizeClass < .original && slot.originalTask?.state == .running
            let originalSize = sizeClass == .original ? image.originalSize : slot.originalSize
            return PhotoState(
                index: index, image: image, sizeClass: sizeClass, isLoadingBetter: loading, originalSize: originalSize)
        }
        if let state { tell(state) }
    }

    private func tell(_ state: PhotoState) {
        let (observers, onChange) = fields.withLock { ($0.observers.values.map { $0 }, $0.onChange) }
        onChange?(state)
        observers.forEach { $0(state) }
    }
}
