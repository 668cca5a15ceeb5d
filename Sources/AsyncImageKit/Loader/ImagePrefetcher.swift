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
    /// A prefetch under way: its task once made (nil while it is being made),
    /// and a token that tells it from a later prefetch of the same key.
    private struct Entry {
        let token: UInt64
        var task: ImageTask?
    }

    private let lock = NSLock()
    private var tasks: [ImageCacheKey: Entry] = [:]
    private var nextToken: UInt64 = 0
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
                return tasks.values.compactMap(\.task)
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
            // The key is claimed before the request is made, so two threads
            // prefetching it at once make one request.
            let token = lock.withLock { () -> UInt64? in
                guard tasks[key] == nil else { return nil }
                nextToken += 1
                tasks[key] = Entry(token: nextToken, task: nil)
                request.priority = currentPriority
                return nextToken
            }
            guard let token else { continue }
            let record = loader.enqueue(
                request, target: nil, success: nil, failure: nil, isPrefetch: true,
                onCancelled: { [weak self] in self?.forget(key, token) },
                completion: { [weak self] _ in self?.forget(key, token) })
            let task = ImageTask(record, loader: loader)
            let stopped = lock.withLock { () -> Bool in
                // Ended already (a cache hit), or stopped meanwhile: nothing to keep.
                guard tasks[key]?.token == token else { return true }
                tasks[key]?.task = task
                return false
            }
            if stopped { cancel([task]) }
        }
    }

    /// Stops prefetching `urls` (full size); their transfers stop unless a
    /// visible request shares them.
    public func stopPrefetching(with urls: [URL]) {
        stopPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops prefetching `requests`.
    public func stopPrefetching(with requests: [ImageRequest]) {
        let stopped = lock.withLock { requests.compactMap { tasks.removeValue(forKey: $0.cacheKey)?.task } }
        cancel(stopped)
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let stopped = lock.withLock { () -> [ImageTask] in
            defer { tasks = [:] }
            return tasks.values.compactMap(\.task)
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

    /// Forgets the prefetch of `key` made with `token` (not a later one).
    private func forget(_ key: ImageCacheKey, _ token: UInt64) {
        lock.withLock {
            if tasks[key]?.token == token { tasks[key] = nil }
        }
    }

    deinit {
        cancel(tasks.values.compactMap(\.task))
    }
}
