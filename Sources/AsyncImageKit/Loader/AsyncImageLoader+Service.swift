import Foundation
import Logging

extension AsyncImageLoader.Configuration {
    /// The settings for a service that loads images on its clients' behalf
    /// (a thumbnail service, an image proxy, a crawler), where the defaults
    /// are made for a screen.
    ///
    /// ```swift
    /// var configuration = AsyncImageLoader.Configuration.service(
    ///     memoryBudget: 256 << 20, diskCache: try DataCache(directory: cacheDirectory))
    /// configuration.logger = logger
    /// let loader = AsyncImageLoader(configuration: configuration)
    /// let thumbnail = try await loader.image(for: request)     // the async API: no queue to run
    /// ```
    ///
    /// | setting | the defaults (a screen) | service |
    /// |---|---|---|
    /// | ``queueOrder`` | ``QueueOrder/lifo``: the newest target first | ``QueueOrder/fifo``: first come, first served |
    /// | ``notificationCenter`` | `.default`, a post per request | nil: nothing posted |
    /// | ``deliveryQueue`` | the main queue | a serial queue of its own (only actions use it) |
    /// | ``urlPolicy`` | ``URLPolicy/unrestricted`` | ``URLPolicy/publicOnly`` |
    /// | ``httpCache`` | ``HTTPCachePolicy/private`` | ``HTTPCachePolicy/shared`` (RFC 9111 §3.5: one cache, many users) |
    /// | ``maxPendingRequests`` | 10,000 | 1,000: a full queue answers `503` at once (``AsyncImageError/queueFull(_:limit:)``) |
    /// | ``cache`` | ``AsyncImageLoader/sharedCache`` | an ``ImageCache`` of its own, ¾ of `memoryBudget` |
    /// | ``pixelPoolByteLimit`` | nil (the pool's own 256 MiB) | ¼ of `memoryBudget` |
    /// | ``concurrentLoads`` | 32 (``AsyncImageLoader/defaultConcurrentLoads``) | 8: each slot may hold a body waiting for a decoder |
    /// | ``originShare`` | 1: one origin may hold every slot | 0.5: at most half the slots (rounded up) to one origin, while its other requests wait |
    ///
    /// **One memory budget.** Decoded images live in two places that keep
    /// memory after a request ends: the memory cache, and the
    /// ``PixelBufferPool`` that recycles the buffers of released images for
    /// the next decode. `memoryBudget` covers both: the cache gets three
    /// quarters (its ``ImageCache/totalCostLimit``), the pool one quarter
    /// (its ``PixelBufferPool/byteLimit``). What a busy service holds beyond
    /// them is the decodes running now, each at most its decode buffer (one
    /// per decoder: ``concurrentDecodes``, ``LoaderActivity/decoding``), and the bodies in flight
    /// (each at most ``TransportConfiguration/maxBodySize``). So its
    /// resident memory stays within `memoryBudget` + decoders x the largest
    /// decode buffer admitted (4 bytes x ``DecodingOptions/maxPixels``, or
    /// less with a display size: a JPEG decodes at its scaled size) + the
    /// process's idle size.
    ///
    /// - Parameters:
    ///   - memoryBudget: bytes for the memory cache and the pixel pool
    ///     together (default 256 MiB).
    ///   - concurrentLoads: the most transfers at once (default 8).
    ///   - diskCache: the disk cache, shared by every client under the
    ///     shared-cache rules (default none).
    public static func service(
        memoryBudget: Int = 256 << 20, concurrentLoads: Int = 8, diskCache: (any DataCaching)? = nil
    ) -> Self {
        let budget = max(0, memoryBudget)
        let pool = budget / 4
        var configuration = Self(
            cache: ImageCache(totalCostLimit: budget - pool), concurrentLoads: concurrentLoads,
            deliveryQueue: DispatchQueue(label: "AsyncImageKit.delivery"), notificationCenter: nil,
            diskCache: diskCache, maxPendingRequests: 1_000, urlPolicy: .publicOnly)
        configuration.queueOrder = .fifo
        configuration.httpCache = .shared
        configuration.pixelPoolByteLimit = pool
        // One origin that never answers must not hold every slot while
        // the other origins' requests wait (the one exception to first come,
        // first served).
        configuration.originShare = 0.5
        return configuration
    }
}
