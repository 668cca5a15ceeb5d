import Foundation

/// One image as a model object, observed by views (OGImage's `OGImage` and
/// `OGScaledImage`): created for a URL and, optionally, a display size and
/// processors, it loads through an ``AsyncImageLoader`` and holds the
/// processed image, the original image (when asked for), the error, the
/// loading state and the response (``ImageResponse``: where the image came
/// from, and whether it is stale).
///
/// ```swift
/// let avatar = ImageModel(url: url, displaySize: PixelSize(width: 64, height: 64),
///                         processors: [ImageProcessors.Circle()])
/// if let image = avatar.image { draw(image) }             // already there when it was in memory
/// for await snapshot in avatar.snapshots {                // every change, from the current state on
///     if case .loaded = snapshot.phase { draw(snapshot.image!) }
/// }
/// let token = avatar.observe { snapshot in redraw(snapshot) }   // or closures: observe(on:_:), on the delivery queue by default
/// ```
///
/// - When the image is in the memory cache, the model holds it as soon as it
///   is created (OGImage's "loaded instantly"), and loads nothing.
/// - It loads at once otherwise; ``reload()`` loads again.
/// - Any number of observers: closures (``observe(on:_:)``, run on the
///   loader's delivery queue, in order) and ``snapshots`` (an
///   `AsyncSequence`, fed from the loader's threads). An observation holds
///   the model; it ends when its token is cancelled or released, or when the
///   iterating task ends.
/// - When the last observer has left and nothing else holds the model, it
///   is released and cancels what it was loading.
public final class ImageModel: @unchecked Sendable {
    /// Where the model is in its life.
    public enum Phase: Sendable, Equatable {
        /// Loading (or about to).
        case loading
        /// Loaded: ``Snapshot/image`` holds the image.
        case loaded
        /// The load failed with this error.
        case failed(AsyncImageError)
        /// The load was cancelled from outside (a `cancelLoading` call on
        /// the loader); ``ImageModel/reload()`` starts it again.
        case cancelled
    }

    /// The model's state at one moment.
    public struct Snapshot: Sendable {
        /// Loading, loaded or failed.
        public var phase: Phase
        /// The processed image (display size and processors applied).
        public var image: Image?
        /// The original image at full size: loaded only with `loadsOriginal`
        /// (a 12-megapixel photo costs 48 MB), or when the request has no
        /// display size and no processors (then it is ``image``).
        public var originalImage: Image?
        /// How the processed image was had: its source, staleness, and what
        /// the response carried.
        public var response: ImageResponse?
        /// When ``image`` was set, on the model's clock: an animation plays from then.
        public var imageSetAt: Double?
        /// While loading, the latest preview of a progressive JPEG (for a
        /// model made with `showsPreviews`); nil once the image is in.
        public var preview: Image?

        /// The still image to show at `t` (on the model's clock): the frame
        /// of an animation at `t - imageSetAt`, with the browsers' rules
        /// (see ``AnimationTimeline``); a still image itself.
        public func displayedImage(at t: Double) -> Image? {
            guard let image else { return nil }
            return image.isAnimated ? image.stillImage(at: t - (imageSetAt ?? t)) : image
        }
    }

    /// The request for the processed image.
    public let request: ImageRequest
    /// The loader it loads with.
    public let loader: AsyncImageLoader
    /// Whether the original image is loaded too.
    public let loadsOriginal: Bool

    private struct Observer {
        let queue: DispatchQueue?
        let handler: @Sendable (Snapshot) -> Void
    }

    private struct Fields {
        var snapshot = Snapshot(phase: .loading)
        var observers: [UInt64: Observer] = [:]
        var nextObserver: UInt64 = 0
        var tasks: [ImageTask] = []
        var generation: UInt64 = 0
    }

    private let fields = Locked(Fields())
    private let clock: @Sendable () -> Double

    /// A model for `url` shown at `displaySize` (nil: full size) through
    /// `processors`; see ``ImageRequest`` for the other parameters.
    public convenience init(
        url: URL, displaySize: PixelSize? = nil, contentMode: ContentMode = .aspectFill, scaling: ScalingOptions = [],
        processors: [any ImageProcessing] = [], key: String? = nil, loadsOriginal: Bool = false,
        loader: AsyncImageLoader = .shared,
        clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    ) {
        self.init(
            request: ImageRequest(
                url: url, targetSize: displaySize, contentMode: contentMode, scaling: scaling, processors: processors,
                key: key),
            loadsOriginal: loadsOriginal, loader: loader, clock: clock)
    }

    /// A model for `request`. `clock`: seconds on a monotonic clock (when an
    /// animation starts playing); the system uptime by default.
    public init(
        request: ImageRequest, loadsOriginal: Bool = false, loader: AsyncImageLoader = .shared,
        clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    ) {
        self.request = request
        self.loader = loader
        self.clock = clock
        self.loadsOriginal = loadsOriginal && !Self.isOriginal(request)
        start()
    }

    /// A model for `url` that shows previews of a progressive JPEG while it
    /// downloads (``Snapshot/preview``); see the other initializers.
    public convenience init(
        url: URL, displaySize: PixelSize? = nil, showsPreviews: Bool, loader: AsyncImageLoader = .shared,
        clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    ) {
        var request = ImageRequest(url: url, targetSize: displaySize)
        request.wantsPreviews = showsPreviews
        self.init(request: request, loader: loader, clock: clock)
    }

    deinit {
        let tasks = fields.withLock { $0.tasks }
        tasks.forEach { $0.cancel() }
    }

    /// The current state.
    public var snapshot: Snapshot { fields.withLock { $0.snapshot } }
    /// The current phase.
    public var phase: Phase { snapshot.phase }
    /// The processed image, once loaded (or at once from the memory cache).
    public var image: Image? { snapshot.image }
    /// The original image (see ``Snapshot/originalImage``).
    public var originalImage: Image? { snapshot.originalImage }
    /// The still image to show now (an animation's current frame; see
    /// ``Snapshot/displayedImage(at:)``).
    public var displayedImageNow: Image? { snapshot.displayedImage(at: clock()) }

    /// The error of a failed load.
    public var error: AsyncImageError? {
        if case .failed(let error) = snapshot.phase { return error }
        return nil
    }

    /// Loads again (after a failure, say): the memory cache first.
    public func reload() {
        let old = fields.withLock { fields -> [ImageTask] in
            defer { fields.tasks = [] }
            return fields.tasks
        }
        old.forEach { $0.cancel() }
        start()
    }

    // MARK: Observing

    /// Calls `handler` with every change, first with the current state, on
    /// `queue` (default: the loader's delivery queue), in order. The
    /// observation holds the model until the token is cancelled or released.
    public func observe(
        on queue: DispatchQueue? = nil, _ handler: @escaping @Sendable (Snapshot) -> Void
    ) -> ImageModelObservation {
        let queue = queue ?? loader.deliveryQueue
        let id = fields.withLock { fields -> UInt64 in
            fields.nextObserver += 1
            fields.observers[fields.nextObserver] = Observer(queue: queue, handler: handler)
            // The current state first, ahead of any change (handed over under the same lock).
            let current = fields.snapshot
            queue.async { handler(current) }
            return fields.nextObserver
        }
        return ImageModelObservation(model: self, id: id)
    }

    /// Every state from the current one on (a ``reload()`` goes on in the
    /// same sequence): break out of the loop when you have what you need.
    /// Iterating holds the model; the sequence ends with the iterating task.
    public var snapshots: AsyncStream<Snapshot> {
        AsyncStream { continuation in
            let id = fields.withLock { fields -> UInt64 in
                fields.nextObserver += 1
                fields.observers[fields.nextObserver] = Observer(queue: nil) { continuation.yield($0) }
                continuation.yield(fields.snapshot)
                return fields.nextObserver
            }
            // Holds the model while the stream lives.
            continuation.onTermination = { _ in self.removeObserver(id) }
        }
    }

    func removeObserver(_ id: UInt64) {
        _ = fields.withLock { $0.observers.removeValue(forKey: id) }
    }

    // MARK: Loading

    /// Whether `request` asks for the original image itself.
    private static func isOriginal(_ request: ImageRequest) -> Bool {
        request.options.targetSize == nil && request.processors.isEmpty
    }

    private func start() {
        let generation = fields.withLock { fields -> UInt64 in
            fields.generation += 1
            // A reload starts over: nothing of the last load counts as done.
            fields.snapshot.originalImage = nil
            return fields.generation
        }
        // The memory cache first, on this thread: "loaded instantly".
        let cached = loader.memoryCachedImage(for: request)
        if let cached {
            let response = ImageResponse(image: cached, url: request.url, source: .memoryCache, isStale: false)
            let now = clock()
            update(generation) {
                $0.image = cached
                $0.imageSetAt = now
                $0.response = response
                if Self.isOriginal(self.request) { $0.originalImage = cached }
                $0.phase = self.loadsOriginal && $0.originalImage == nil ? .loading : .loaded
            }
        } else {
            update(generation) { $0.phase = .loading }
            let task = loader.load(request, onCancelled: { [weak self] in self?.cancelled(generation) }) {
                [weak self] result in
                self?.finished(result, original: false, generation)
            }
            if request.wantsPreviews {
                task.onPreview { [weak self] image in
                    self?.update(generation) { if $0.phase == .loading, $0.image == nil { $0.preview = image } }
                }
            }
            fields.withLock { $0.tasks.append(task) }
        }
        if loadsOriginal {
            // The request's own fields (key, headers, policies, pixel limit),
            // without a display size or processors: one transfer for both.
            let original = ImageRequest(
                url: request.url, maxPixels: request.options.maxPixels, maxFrames: request.options.maxFrames,
                priority: request.priority,
                headers: request.headers, cachePolicy: request.cachePolicy, diskStorage: request.diskStorage,
                key: request.cacheKey.url == request.url.absoluteString ? nil : request.cacheKey.url)
            let task = loader.load(original, onCancelled: { [weak self] in self?.cancelled(generation) }) {
                [weak self] result in
                self?.finished(result, original: true, generation)
            }
            fields.withLock { $0.tasks.append(task) }
        }
    }

    private func finished(_ result: Result<ImageResponse, AsyncImageError>, original: Bool, _ generation: UInt64) {
        let now = clock()
        update(generation) { snapshot in
            switch result {
            case .success(let response) where original:
                snapshot.originalImage = response.image
            case .success(let response):
                snapshot.image = response.image
                snapshot.preview = nil
                snapshot.imageSetAt = now
                snapshot.response = response
                if Self.isOriginal(self.request) { snapshot.originalImage = response.image }
            case .failure(let error):
                snapshot.phase = .failed(error)
                snapshot.preview = nil
                return
            }
            if case .failed = snapshot.phase { return }
            let done = snapshot.image != nil && (!self.loadsOriginal || snapshot.originalImage != nil)
            snapshot.phase = done ? .loaded : .loading
        }
    }

    /// A load was cancelled from outside (not by the model itself).
    private func cancelled(_ generation: UInt64) {
        update(generation) { snapshot in
            if snapshot.phase == .loading { snapshot.phase = .cancelled }
        }
    }

    /// Changes the snapshot (if `generation` is still current) and tells every observer.
    /// Handed over under the lock, so every observer sees the changes in
    /// the order they were made (a queue gets them with `async`; a stream's
    /// `yield` only buffers).
    private func update(_ generation: UInt64, _ change: (inout Snapshot) -> Void) {
        fields.withLock { fields in
            guard fields.generation == generation else { return }
            change(&fields.snapshot)
            let snapshot = fields.snapshot
            for (_, observer) in fields.observers.sorted(by: { $0.key < $1.key }) {
                if let queue = observer.queue {
                    queue.async { observer.handler(snapshot) }
                } else {
                    observer.handler(snapshot)
                }
            }
        }
    }
}

/// An observation of an ``ImageModel``: it holds the model, and ends when
/// cancelled or released.
public final class ImageModelObservation: @unchecked Sendable {
    private let lock = NSLock()
    private var model: ImageModel?
    private let id: UInt64

    init(model: ImageModel, id: UInt64) {
        self.model = model
        self.id = id
    }

    deinit { cancel() }

    /// Ends the observation (and lets go of the model).
    public func cancel() {
        let model = lock.withLock { () -> ImageModel? in
            defer { self.model = nil }
            return self.model
        }
        model?.removeObserver(id)
    }
}

extension AsyncImageLoader {
    /// Loads `request` for a model: the outcome (with its response) from the
    /// loader's own threads, as the async API has it, with no action.
    func load(
        _ request: ImageRequest, onCancelled: (@Sendable () -> Void)? = nil,
        completion: @escaping @Sendable (Result<ImageResponse, AsyncImageError>) -> Void
    ) -> ImageTask {
        ImageTask(
            enqueue(request, target: nil, success: nil, failure: nil, onCancelled: onCancelled, completion: completion),
            loader: self)
    }
}
