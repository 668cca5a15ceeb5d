import Foundation

extension AsyncImageLoader {
    /// Whether `request`'s image can be had without the network: in the
    /// memory cache, or on disk (its response's headers and its processed
    /// image or body: the files exist; they are not read). Follows the
    /// request's ``ImageRequest/cachePolicy``. (ThumbnailService's
    /// `hasDiskCacheForRequest`.)
    public func hasCachedImage(for request: ImageRequest) -> Bool {
        let request = request.resolving(requestDefaults)
        let (cache, disk) = state.withLock { ($0.cache, $0.diskCache) }
        let policy = request.cachePolicy
        switch lookUp(request, in: cache) {
        case .refused: return false
        case .hit: return true
        case .miss, .overLimit: break  // the disk may hold it, decoded within the limit
        }
        guard !policy.contains(.skipDiskReads), let disk, !request.url.isFileURL else { return false }
        return ImageDiskStore(cache: disk).contains(
            LoadRequest.diskKey(for: request), processing: request.cacheKey.processing)
    }

    /// `request`'s image now, or nil: from the memory cache, else decoded on
    /// the calling thread from the disk cache (and then kept in the memory
    /// cache); never from the network. For a caller that wants an image now
    /// or not at all (ThumbnailService's synchronous execution). Follows the
    /// request's ``ImageRequest/cachePolicy`` and pixel limit; posts nothing.
    public func cachedImage(for request: ImageRequest) -> Image? {
        let request = request.resolving(requestDefaults)
        let (cache, disk) = state.withLock { ($0.cache, $0.diskCache) }
        let policy = request.cachePolicy
        // The memory lookup a load makes (a URL the policy refuses is not
        // served from the caches either), then the disk's.
        switch lookUp(request, in: cache) {
        case .refused: return nil
        case .hit(let image): return image
        case .miss, .overLimit: break
        }
        guard !policy.contains(.skipDiskReads), let disk, !request.url.isFileURL else { return nil }
        // The processed image if one is stored (no decode of the original),
        // else the body, decoded here.
        // The same lookup as a load's, offline: fresh, or stale where the
        // response allows it (never past `must-revalidate` or `no-cache`).
        let httpCache = HTTPCache(policy: state.withLock { $0.httpCache }, store: ImageDiskStore(cache: disk))
        let store = httpCache.store
        let key = LoadRequest.diskKey(for: request)
        let processing = request.cacheKey.processing
        let rules = StaleRules(offline: true, servesWhileRevalidating: false, servesOnError: false)
        guard
            case .usable(let stored, _) = httpCache.lookUp(
                key, requestHeaders: request.transferHeaders(accept: acceptHeader), processings: [], needsFullSize: false, rules: rules,
                now: Date().timeIntervalSince1970)
        else { return nil }
        let generation = stored.entry.generation
        var image: Image?
        if !ImageCacheKey.isFullSize(processing), let stored = store.processed(for: key, processing: processing, generation: generation) {
            image = StoredImage.decode(stored, decoders: decoders)
        }
        if image == nil, let body = store.original(for: key, generation: generation) {
            image = try? request.processors.apply(to: decoders.decode(body, options: request.options))
                .with(fileProperties: ImageFileProperties(data: body))
        }
        guard let image, request.options.limitFailure(for: image) == nil else { return nil }
        if !policy.contains(.skipMemoryWrites) { cache?.setImage(image, for: request.cacheKey, cacheClass: request.cacheClass) }
        return image
    }

    /// Waits until the disk cache writes the loader has scheduled so far are
    /// done (bodies are stored in the background; every image delivered so
    /// far has had its store scheduled): before a process exits, or in a test.
    public func flushDiskWrites() {
        diskQueue.sync(flags: .barrier) {}
        diskWrites.sync {}
        state.withLock { $0.diskCache }?.flush()
    }
}
