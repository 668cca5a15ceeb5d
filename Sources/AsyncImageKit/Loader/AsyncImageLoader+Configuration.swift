import Foundation
import Logging

extension AsyncImageLoader {
    /// Everything a loader is made of, in one value: its settings and the
    /// parts that can be swapped (transport, memory cache, decoders).
    ///
    /// ```swift
    /// var configuration = AsyncImageLoader.Configuration()
    /// configuration.deliveryQueue = DispatchQueue(label: "images")   // a service never runs the main queue
    /// configuration.concurrentLoads = 4
    /// configuration.logger = Logger(label: "AsyncImageKit")           // silent by default
    /// let loader = AsyncImageLoader(configuration: configuration)
    /// ```
    ///
    /// (`@unchecked Sendable`: `NotificationCenter` and `DispatchQueue` are
    /// thread-safe but not marked `Sendable` in swift-corelibs-foundation.)
    public struct Configuration: @unchecked Sendable {
        /// Where decoded images are kept; nil disables caching. Default ``AsyncImageLoader/sharedCache``.
        public var cache: (any ImageCaching)?
        /// The most transfers at once (default ``AsyncImageLoader/defaultConcurrentLoads``,
        /// 32; see ``AsyncImageLoader/concurrentLoads``).
        public var concurrentLoads: Int
        /// Seconds a transfer may take from its start (default 60; see
        /// ``AsyncImageLoader/loadingTimeout``). It replaces the transport's
        /// own ``TransportConfiguration/timeout`` for the loader's transfers.
        public var loadingTimeout: Double
        /// The most time a request may take from the moment it is made to
        /// its outcome, queue, disk, transfer and decode included, for
        /// requests that set no ``ImageRequest/timeout`` of their own
        /// (default nil: no limit). How it combines with ``loadingTimeout``:
        /// ``ImageRequest/timeout``.
        public var requestTimeout: Duration?
        /// How transfers that fail for a passing reason (a connection
        /// refused or reset before any reply, `502`, `503`, `504`, `429`; a
        /// timeout only when the policy asks, ``RetryPolicy/retriesTimeouts``)
        /// are tried again, for requests that set
        /// no ``ImageRequest/retryPolicy`` of their own (default
        /// ``RetryPolicy/standard``: twice, after about 250 ms and 500 ms;
        /// ``RetryPolicy/disabled``: never). The rule and the guarantees:
        /// ``RetryPolicy``.
        public var retryPolicy: RetryPolicy = .standard
        /// Where notifications are posted and actions run (default: the main
        /// queue). A program that never runs the main queue should pass a
        /// serial queue of its own. The async API never waits for it.
        public var deliveryQueue: DispatchQueue
        /// Where `didFinish`/`didFail` are posted (default
        /// `NotificationCenter.default`); nil posts nothing, and the async
        /// API then never touches ``deliveryQueue`` (what
        /// ``service(memoryBudget:concurrentLoads:diskCache:)`` sets).
        public var notificationCenter: NotificationCenter?
        /// The transport (default: a ``DataLoader`` with default limits).
        public var dataLoader: any DataLoading
        /// The disk cache, between the memory cache and the network (default
        /// nil: none). A body is stored once it decoded, and a display-size
        /// request's processed image once it was made (see ``diskStorage``);
        /// requests choose with ``ImageRequest/cachePolicy``.
        public var diskCache: (any DataCaching)?
        /// What goes to ``diskCache``: original bodies, processed images, or
        /// both (the default). A request may choose for itself with
        /// ``ImageRequest/diskStorage``.
        public var diskStorage: DiskStorage
        /// How processed images are written to disk (default
        /// ``ImageEncoding/automatic``: JPEG at quality 90 for opaque stills,
        /// PNG for stills with transparency). A stored thumbnail is served as
        /// it is by ``AsyncImageLoader/encodedImage(for:encoding:)`` when
        /// asked for what it is stored as. WebP and AVIF may be stored too
        /// (on the benchmark's photos, WebP at quality 75 is 40% smaller
        /// than JPEG at 75, AVIF at 60 half its size, but AVIF is slow to
        /// write: BENCHMARKS.md, *Encoders*): they are
        /// read back through ``decoders``, which must then hold WebP and AVIF
        /// decoders (the default registry does). A
        /// ``ImageEncoding/negotiated(accept:quality:avifSpeed:)`` here
        /// stores what its `accept` chooses.
        public var processedImageEncoding: ImageEncoding
        /// End a progressive JPEG's transfer once its DC coefficients are in
        /// when every request for it decodes at 1/8 scale (with the default
        /// ``ResizeQuality/high``, a display size of 1/16 of the source or
        /// less; 1/8 with ``ResizeQuality/fast``) (the
        /// rest of the file changes the result by about one level at most:
        /// ``ImageResponse/earlyEnd`` reports it). Default true.
        public var endsTransfersAtDCScans = true
        /// The decoders, picked by sniffed format (default ``ImageDecoderRegistry/default``).
        public var decoders: ImageDecoderRegistry
        /// The `Accept` header of the loader's transfers, for requests
        /// whose ``ImageRequest/headers`` name none (default nil:
        /// ``decoders``' ``ImageDecoderRegistry/acceptHeader``, the formats
        /// it can decode, most wanted first). It replaces the transport's
        /// own `Accept` (``TransportConfiguration/headers``); "" sends none.
        ///
        /// A response that says `Vary: Accept` is stored with the `Accept`
        /// it was fetched with and served from the disk cache only to a
        /// request that sends the same (RFC 9111 §4.1): a loader, or a
        /// request, that asks for other formats fetches its own.
        public var acceptHeader: String?
        /// Whether and how tagged images are converted to sRGB, for every
        /// request that does not say (its ``ImageRequest/colorManagement``
        /// is nil). Default ``ColorManagement/default``: converted, relative
        /// colorimetric; ``ColorManagement/off`` keeps the samples as
        /// stored. Requests are cached under the colour management they were
        /// decoded with, so loaders that share a cache never mix the two.
        /// See <doc:ColourManagement>.
        public var colorManagement: ColorManagement = .default
        /// How display sizes are reached, for every request that does not
        /// say (its ``ImageRequest/resizeQuality`` is nil). Default
        /// ``ResizeQuality/high``: shrink-on-load to twice the size, then
        /// Lanczos3 in linear light; ``ResizeQuality/fast`` keeps the
        /// pixels, cost and cache keys of earlier versions. Requests are
        /// cached under the quality they were decoded with.
        public var resizeQuality: ResizeQuality = .high
        /// The share of ``concurrentLoads`` that prefetch transfers may hold
        /// while visible requests wait (default 0.5, rounded down: one of two
        /// slots). With nothing visible waiting, prefetching may use every slot.
        public var prefetchShare: Double
        /// The share of ``concurrentLoads`` that transfers to one origin
        /// (scheme, host and port) may hold: at most ``concurrentLoads`` ×
        /// `originShare` slots, rounded up, at least 1 (default 1: no cap;
        /// ``service(memoryBudget:concurrentLoads:diskCache:)`` sets 0.5,
        /// half the slots). A request whose origin holds its share waits,
        /// even when slots are free, while requests to other origins go
        /// ahead of it: the one exception to the queue's order
        /// (``queueOrder``). So an origin that never answers, or drips its
        /// answers, holds at most its share until the transport's limits end
        /// its transfers (``TransportConfiguration/lowSpeedLimit``,
        /// ``loadingTimeout``), and the other origins' requests keep the
        /// rest. A service that loads from one origin only (an object store)
        /// sets 1. Fixed for the loader's life.
        public var originShare: Double = 1
        /// The most decodes at once (default
        /// ``AsyncImageLoader/defaultConcurrentDecodes``: one per core;
        /// values below 1 count as 1). Decoding is CPU-bound, so a desktop
        /// program that draws on its main loop sets one core fewer
        /// (`max(1, cores - 1)`) and the loader's decodes leave that core
        /// to the main loop; a body that waits for a decoder keeps its
        /// transfer slot (``concurrentLoads``). Fixed for the loader's life.
        public var concurrentDecodes: Int = AsyncImageLoader.defaultConcurrentDecodes
        /// The order among waiting requests of equal priority, for transfer
        /// slots and then decoders (default ``QueueOrder/lifo``, for screens;
        /// ``QueueOrder/fifo`` for services). Fixed for the loader's life.
        public var queueOrder: QueueOrder = .lifo
        /// Called just before each transfer starts (not while it waits in the
        /// queue), on the thread that starts it and outside the loader's
        /// lock: may add or sign headers, e.g. an authorization token that
        /// expires. Default nil.
        public var requestModifier: (@Sendable (inout DataRequest) -> Void)?
        /// Where the loader logs transport failures, retries, cancelled
        /// transfers and an unserviced main queue (swift-log, label
        /// `AsyncImageKit`). Silent by default.
        public var logger: Logger
        /// The most requests pending at once: made and not yet delivered or
        /// cancelled, whether queued, transferring, decoding or on their way
        /// to the delivery queue (``LoaderActivity/pendingRequests``).
        /// Default 10,000 (each costs about a kilobyte of bookkeeping, a
        /// bounded amount whatever a caller asks for). A request made while
        /// that many are pending, and which the memory cache cannot answer,
        /// fails at once with ``AsyncImageError/queueFull(_:limit:)`` through
        /// the usual failure path (action, `didFail`, or the async API's
        /// throw), and is never queued; a memory-cache hit is always
        /// served. Checked in O(1).
        public var maxPendingRequests: Int
        /// Which URLs and addresses the loader may reach (default
        /// ``URLPolicy/unrestricted``: `http`, `https` and `file`). A service
        /// that loads URLs it was handed sets ``URLPolicy/publicOnly``: no
        /// `file` URLs, no loopback, private or link-local addresses, after
        /// DNS and on every redirect hop. A refused request fails with
        /// ``AsyncImageError/refused(_:reason:)`` before any cache or
        /// transfer. Applied on top of the transport's own
        /// ``TransportConfiguration/urlPolicy``; see ``URLPolicy`` for what
        /// is checked when.
        public var urlPolicy: URLPolicy
        /// The HTTP caching rules of ``diskCache`` (default
        /// ``HTTPCachePolicy/private``: one user's cache, as a browser's; a
        /// service whose cache serves many users sets
        /// ``HTTPCachePolicy/shared``). See <doc:DiskCache>.
        public var httpCache: HTTPCachePolicy = .private
        /// How the loader knows the network is unreachable (default
        /// ``SystemNetworkReachability/shared``: the kernel's routes,
        /// watched with a netlink socket). While it says so, requests for
        /// URLs beyond this machine are answered from ``diskCache`` at once
        /// (stale allowed, marked stale; never a response marked
        /// `must-revalidate` or `no-cache`) or fail with
        /// ``AsyncImageError/offline(_:)``, without a transfer; its change
        /// notification puts the loader back online. A transfer that finds
        /// no route takes the loader offline too. Nil: the loader is never
        /// offline (a transfer without a route fails with
        /// ``AsyncImageError/offline(_:)``, and that is all). See
        /// ``AsyncImageLoader/networkStatus`` and <doc:DiskCache>.
        public var reachability: (any NetworkReachability)? = SystemNetworkReachability.shared
        /// The ``PixelBufferPool/byteLimit`` to set on
        /// ``PixelBufferPool/shared`` when the loader is made (default nil:
        /// leave it). The pool is the process's, shared by every loader: the
        /// last loader made with a limit sets it. ``service(memoryBudget:concurrentLoads:diskCache:)``
        /// sets a quarter of its memory budget.
        public var pixelPoolByteLimit: Int?

        /// A configuration; every parameter has the default described on its property.
        public init(
            cache: (any ImageCaching)? = AsyncImageLoader.sharedCache, concurrentLoads: Int = AsyncImageLoader.defaultConcurrentLoads,
            loadingTimeout: Double = 60, deliveryQueue: DispatchQueue = .main,
            notificationCenter: NotificationCenter? = .default, dataLoader: (any DataLoading)? = nil,
            diskCache: (any DataCaching)? = nil, diskStorage: DiskStorage = .both,
            processedImageEncoding: ImageEncoding = .automatic,
            decoders: ImageDecoderRegistry = .default, prefetchShare: Double = 0.5,
            requestModifier: (@Sendable (inout DataRequest) -> Void)? = nil,
            logger: Logger = AsyncImageLoader.silentLogger, maxPendingRequests: Int = 10_000,
            urlPolicy: URLPolicy = .unrestricted
        ) {
            self.maxPendingRequests = maxPendingRequests
            self.urlPolicy = urlPolicy
            self.requestModifier = requestModifier
            self.diskCache = diskCache
            self.diskStorage = diskStorage
            self.processedImageEncoding = processedImageEncoding
            self.cache = cache
            self.concurrentLoads = concurrentLoads
            self.loadingTimeout = loadingTimeout
            self.deliveryQueue = deliveryQueue
            self.notificationCenter = notificationCenter
            self.dataLoader = dataLoader ?? AsyncImageLoader.defaultDataLoader(TransportConfiguration())
            self.decoders = decoders
            self.prefetchShare = prefetchShare
            self.logger = logger
        }
    }

    /// A logger that discards everything (label `AsyncImageKit`): the default.
    public static let silentLogger = Logger(label: "AsyncImageKit", factory: { _ in SwiftLogNoOpLogHandler() })

    /// A libcurl ``DataLoader`` whose completions run on a queue of their
    /// own, so a body reaches a free decoder even while the decode pool's
    /// threads are busy.
    static func defaultDataLoader(_ transport: TransportConfiguration) -> DataLoader {
        DataLoader(
            configuration: transport,
            completionQueue: DispatchQueue(label: "AsyncImageKit.transfers", qos: .userInitiated))
    }
}
