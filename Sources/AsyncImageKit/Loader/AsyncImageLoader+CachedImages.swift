import Foundation

extension AsyncImageLoader {
    /// Whether `request`'s image can be had without the network: in the
    /// memory cache, or its body in the disk cache (the file exists; it is
    /// not read). Follows the request's ``ImageRequest/cachePolicy``.
    /// (ThumbnailService's `hasDiskCacheForRequest`.)
    public func hasCachedImage(for request: ImageRequest) -> Bool {
        let (cache, disk) = state.withLock { ($0.cache, $0.diskCache) }
        let policy = request.cachePolicy
        if !policy.contains(.skipMemoryReads), cache?.image(for: request.cacheKey) != nil { return true }
        if !policy.contains(.skipDiskReads), disk?.contains(LoadRequest.diskKey(for: request)) == true { return true }
        return false
    }

    /// `request`'s image now, or nil: from the memory cache, else decoded on
    /// the calling thread from the disk cache (and then kept in the memory
    /// cache); never from the network. For a caller that wants an image now
    /// or not at all (ThumbnailService's synchronous execution). Follows the
    /// request's ``ImageRequest/cachePolicy`` and pixel limit; posts nothing.
    public func cachedImage(for request: ImageRequest) -> Image? {
        let (cache, disk) = state.withLock { ($0.cache, $0.diskCache) }
        let policy = request.cachePolicy
        if !policy.contains(.skipMemoryReads), let image = cache?.image(for: request.cacheKey),
            request.options.limitFailure(for: image) == nil
        {
            return image
        }
        guard !policy.contains(.skipDiskReads), let entry = disk?.entry(for: LoadRequest.diskKey(for: request)),
            HTTPCaching.matches(entry.metadata, requestHeaders: request.headers),
            let image = try? decoders.decode(entry.data, options: request.options)
        else { return nil }
        if !policy.contains(.skipMemoryWrites) { cache?.setImage(image, for: request.cacheKey) }
        return image
    }

    /// Waits until the disk cache writes the loader has scheduled so far are
    /// done (bodies are stored in the background; every image delivered so
    /// far has had its store scheduled): before a process exits, or in a test.
    public func flushDiskWrites() {
        diskQueue.sync(flags: .barrier) {}
        state.withLock { $0.diskCache }?.flush()
    }
}
