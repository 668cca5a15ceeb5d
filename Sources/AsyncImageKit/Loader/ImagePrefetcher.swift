import Foundation

/// Loads images ahead of need (the rows below the screen, an album's
/// neighbouring photos) into the loader's cache, without starving what is
/// on screen.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(loader: loader)
/// prefetcher.startPrefetching(with: nextPageURLs)
/// prefetcher.stopPrefetching(with: urlsScrolledPast)
/// ```
///
/// Prefetch requests run at ``priority`` (default ``ImagePriority/low``),
/// have no target, post no notifications and run no actions. While visible
/// requests wait, prefetch transfers hold at most the loader's
/// ``AsyncImageLoader/prefetchShare`` of its slots (one of the default two);
/// with nothing visible waiting they may use every slot. A visible request
/// for a URL being prefetched joins its transfer. A URL already cached, or
/// already being prefetched at the same size, is not asked for again.
public final class ImagePrefetcher: @unchecked Sendable {
    /// The loader it prefetches through.
    public let loader: AsyncImageLoader
    private let lock = NSLock()
    private var tasks: [ImageCacheKey: ImageTask] = [:]
    private var currentPriority: ImagePriority

    /// Creates a prefetcher for `loader`.
    public init(loader: AsyncImageLoader = .shared, priority: ImagePriority = .low) {
        self.loader = loader
        self.currentPriority = priority
    }

    /// The priority of prefetch requests; a change re-ranks those waiting.
    public var priority: ImagePriority {
        get { lock.withLock { currentPriority } }
        set {
            let running = lock.withLock { () -> [ImageTask] in
                currentPriority = newValue
                return Array(tasks.values)
            }
            running.forEach { $0.priority = newValue }
        }
    }

    /// Prefetches `urls` at full size.
    public func startPrefetching(with urls: [URL]) {
        startPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Prefetches `requests` (their display sizes are the sizes cached).
    public func startPrefetching(with requests: [ImageRequest]) {
        for var request in requests {
            let key = request.cacheKey
            let started = lock.withLock { () -> Bool in
                guard tasks[key] == nil else { return false }
                request.priority = currentPriority
                return true
            }
            guard started else { continue }
            let record = loader.enqueue(
                request, target: nil, success: nil, failure: nil, isPrefetch: true,
                onCancelled: { [weak self] in self?.forget(key) },
                completion: { [weak self] _ in self?.forget(key) })
            let task = ImageTask(record, loader: loader)
            lock.withLock {
                // Finished already (a cache hit): nothing to keep.
                if task.state == .running { tasks[key] = task }
            }
        }
    }

    /// Stops prefetching `urls` (full size); their transfers stop unless a
    /// visible request shares them.
    public func stopPrefetching(with urls: [URL]) {
        stopPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops prefetching `requests`.
    public func stopPrefetching(with requests: [ImageRequest]) {
        let stopped = lock.withLock { requests.compactMap { tasks.removeValue(forKey: $0.cacheKey) } }
        cancel(stopped)
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let stopped = lock.withLock { () -> [ImageTask] in
            defer { tasks = [:] }
            return Array(tasks.values)
        }
        cancel(stopped)
    }

    /// Prefetches under way.
    public var count: Int { lock.withLock { tasks.count } }

    /// Cancels `tasks` in one step: a slot freed by one is not refilled by another about to be cancelled.
    private func cancel(_ tasks: [ImageTask]) {
        guard !tasks.isEmpty else { return }
        loader.cancel { _, _ in tasks.map(\.record) }
    }

    private func forget(_ key: ImageCacheKey) {
        _ = lock.withLock { tasks.removeValue(forKey: key) }
    }

    deinit {
        cancel(Array(tasks.values))
    }
}
