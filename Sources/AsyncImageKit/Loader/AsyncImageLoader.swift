import Foundation
import Logging

/// Loads images for targets: the heart of AsyncImageView, rebuilt for Linux.
///
/// ```swift
/// let show = ImageAction("show") { target, image, url in (target as? Cell)?.image = image }
/// AsyncImageLoader.shared.loadImage(thumbnailURL, target: cell, action: show)
/// AsyncImageLoader.shared.loadImage(fullURL, target: cell, action: show)   // starts, and shows, after the thumbnail
/// AsyncImageLoader.shared.cancelLoadingImages(target: cell)                // cell reused: drop both
/// ```
///
/// How a request flows: down once through the stages, and its image (or
/// its failure) back up once. Each stage is a type that owns its fields
/// (`RequestTable`, `JobTable`, `TransferSlots`, the HTTP cache,
/// `DecodeScheduler`) and a file under `Loader/Engine` that does its work;
/// all run under the loader's one lock as `inout state, inout effects`, with
/// user code, callbacks and releases run after it (<doc:Engine> walks one
/// request through the code).
///
/// ```
///          DOWN                                            UP
///  loadImage ─► requests ──── memory hit ────────────► delivery ─► notification + action
///               lookUp, RequestTable.admit             RequestTable.end, superseding
///               (+Requests)                            (+Delivery)              ▲
///                   ▼                                                           │
///               jobs: JobTable, LoadJob                jobs: each request of a size
///               (one transfer per URL)                 (+Decoding)              ▲
///                   ▼                                                           │
///               transfers: TransferSlots               stores: memory cache, disk
///               pump, start (+Transfers)               (+Decoding, +Stores)     ▲
///                   ▼                                                           │
///               HTTP cache: lookUpStored ─ stored ─┐   decode: DecodeScheduler,
///               validators, Range (+HTTPCache)     │   decoders, processors     ▲
///                   ▼                              ▼                            │
///               network: startTransfer ──►  HTTP cache: answered  ──►  transfers:
///               probe, previews, DC end     304, 206, stale on error   transferFinished
///               (+Network) ── transport ──► (+HTTPCache)               (+Transfers)
/// ```
///
/// A failure goes up the same way from where it happened (the URL policy
/// and `maxPendingRequests` fail a request at the top; the transport, the
/// HTTP cache or a decode fail every request of a job).
///
/// What every request can rely on:
///
/// - **One outcome.** It ends in exactly one of: success (notification, then
///   success action), failure (notification, then failure action), or
///   cancelled (nothing at all).
/// - **One transfer per URL.** Requests for a URL that is queued or loading
///   join it, whatever their display size (the body is then decoded once per
///   size); each still gets its own callbacks and its own pixel limit. The
///   transfer is cancelled only when no request needs it any more.
/// - **Per-target order.** On one target and action, URLs start in the order
///   they were set (the queue is LIFO across targets, FIFO within one). A
///   later URL supersedes the earlier ones: an earlier one is shown first
///   if it arrives first, but once a later one has been delivered, earlier
///   ones are cancelled and never delivered, even when the later one was a
///   cache hit.
/// - **Priorities.** Higher ``ImagePriority`` first; a shared transfer runs
///   at the highest priority among its requests (``ImageTask/priority``
///   changes it while queued).
/// - **Weak targets.** The loader never keeps a target alive. When a target is
///   deallocated its requests are dropped (their transfers cancelled unless
///   another request needs them) and no callback or notification mentions it.
/// - **Bounded.** At most ``Configuration/maxPendingRequests`` requests are
///   pending; past that a request fails at once with
///   ``AsyncImageError/queueFull(_:limit:)``. Bodies, headers, redirects,
///   pixels and frames have limits too, and ``Configuration/urlPolicy``
///   decides which URLs and addresses may be reached (see <doc:LimitsAndSecurity>).
/// - **Deadlines.** A request with a time limit (``ImageRequest/timeout``,
///   ``Configuration/requestTimeout``) fails alone with
///   ``AsyncImageError/timedOut(_:seconds:stage:)`` when it passes, in
///   whichever stage it is; ``loadingTimeout`` bounds each transfer on its
///   own. Whichever passes first ends the request.
/// - **Retries.** A transfer that fails for a passing reason (a connection
///   refused or reset before any reply, `429`, `502`, `503`, `504`; not a
///   timeout, unless the policy asks) is tried again after a short, growing wait
///   (``Configuration/retryPolicy``, ``ImageRequest/retryPolicy``), never
///   past a request's deadline; each try is an event and a log line (the
///   rule: ``RetryPolicy``).
/// - **Offline.** While the network is unreachable (``Configuration/reachability``,
///   or a transfer that found no route), requests for URLs beyond this
///   machine start no transfer: what the disk cache holds is served at
///   once, stale allowed and marked stale (never past `must-revalidate` or
///   `no-cache`), anything else fails at once with
///   ``AsyncImageError/offline(_:)``; the loader comes back online when
///   the reachability says so, or when one request, tried after a short
///   wait, reaches a server (``networkStatus``).
/// - **Cache hits never wait** in the queue; made on the delivery queue,
///   they are delivered before `loadImage` returns. Failures are never cached.
///
/// Every method may be called from any thread.
public final class AsyncImageLoader: Sendable {
    /// The cache shared by ``shared`` and, by default, every other loader.
    public static let sharedCache = ImageCache()

    /// The shared loader (``sharedCache``, 2 concurrent loads, 60 s timeout,
    /// delivery on the main queue, `NotificationCenter.default`).
    public static let shared = AsyncImageLoader()

    let state: Locked<LoaderState>
    /// Progressive previews' decodes (small, unscheduled; the decode stage's
    /// own run on queues of their own: see `DecodeScheduler`).
    let previewQueue = DispatchQueue(label: "AsyncImageKit.previews", qos: .userInitiated, attributes: .concurrent)
    let timerQueue = DispatchQueue(label: "AsyncImageKit.loader-timers")
    /// Disk cache reads, off the callers' threads and the transport's.
    let diskQueue = DispatchQueue(label: "AsyncImageKit.disk", qos: .userInitiated, attributes: .concurrent)
    /// Disk cache writes, one at a time in the order they were handed over
    /// (a response's headers before its parts; see ``ImageDiskStore``), off
    /// the decoders (processed images are encoded here).
    let diskWrites = DispatchQueue(label: "AsyncImageKit.disk-writes", qos: .utility)
    /// Where what follows from the reachability's word runs (the log line,
    /// events, the next transfers), off the reachability's thread, which
    /// every loader shares; serial, so changes are told in order.
    let networkStatusQueue = DispatchQueue(label: "AsyncImageKit.network-status", qos: .userInitiated)
    let dataLoader: any DataLoading
    let decoders: ImageDecoderRegistry
    /// The colour management and resize quality of requests that do not name their own.
    let requestDefaults: RequestDefaults
    /// Whether the network can be reached (nil: the loader is never offline).
    let reachability: (any NetworkReachability)?
    /// The `Accept` header its transfers send for requests that name none
    /// (``Configuration/acceptHeader``, by default its decoders'
    /// ``ImageDecoderRegistry/acceptHeader``).
    public let acceptHeader: String

    /// Creates a loader from a ``Configuration``.
    public init(configuration: Configuration) {
        dataLoader = configuration.dataLoader
        decoders = configuration.decoders
        requestDefaults = RequestDefaults(
            colorManagement: configuration.colorManagement, resizeQuality: configuration.resizeQuality)
        reachability = configuration.reachability
        acceptHeader = configuration.acceptHeader ?? configuration.decoders.acceptHeader
        state = Locked(LoaderState(configuration, accept: acceptHeader))
        if let limit = configuration.pixelPoolByteLimit { PixelBufferPool.shared.byteLimit = limit }
        watchReachability()
    }

    /// Creates a loader.
    ///
    /// - Parameters:
    ///   - cache: where decoded images are kept; nil disables caching.
    ///   - concurrentLoads: the most transfers at once (see ``concurrentLoads``).
    ///   - loadingTimeout: seconds a transfer may take from its start (see ``loadingTimeout``).
    ///   - deliveryQueue: where notifications and actions run. The main queue
    ///     by default: a program that never runs it (a service, a tool without
    ///     `dispatchMain()` or an async `main`) should pass a serial queue of
    ///     its own (the async API never needs it).
    ///   - notificationCenter: where `didFinish`/`didFail` are posted (nil: nowhere).
    ///   - transport: body-size and redirect limits (its timeout is replaced by `loadingTimeout`,
    ///     as for every loader's transfers).
    public convenience init(
        cache: (any ImageCaching)? = AsyncImageLoader.sharedCache, concurrentLoads: Int = AsyncImageLoader.defaultConcurrentLoads,
        loadingTimeout: Double = 60, deliveryQueue: DispatchQueue = .main,
        notificationCenter: NotificationCenter? = .default, transport: TransportConfiguration = TransportConfiguration()
    ) {
        self.init(
            configuration: Configuration(
                cache: cache, concurrentLoads: concurrentLoads, loadingTimeout: loadingTimeout,
                deliveryQueue: deliveryQueue, notificationCenter: notificationCenter,
                dataLoader: Self.defaultDataLoader(transport)))
    }

    /// A loader let go with requests still pending (only queued or
    /// transferring ones can be: decodes and deliveries keep it alive) ends
    /// them cancelled, as any cancel does (silently, each with its
    /// `.cancelled` event), and stops their transfers, which would
    /// otherwise run on with nobody to finish them.
    deinit {
        let timer = mutate { state, effects -> DispatchSourceTimer? in
            for record in state.requests.all.sorted(by: { $0.id < $1.id }) {
                cancelRecord(record, &state, &effects)
            }
            // A job whose transfer's completion is still to come holds that
            // transfer (whose completion holds the job): abandoned, the cycle is broken.
            for job in state.jobs.removeAll() + state.slots.removeAll() {
                job.abandon()
                effects.keep.park(job)
            }
            state.decodes.removeAll()
            // No more word from the reachability; the status streams end.
            if let observation = state.reachabilityObservation { effects.keep.park(observation) }
            state.reachabilityObservation = nil
            let watchers = state.network.watchers.values
            state.network.watchers = [:]
            effects.append { watchers.forEach { $0.finish() } }
            defer { state.sweepTimer = nil }
            return state.sweepTimer
        }
        timer?.cancel()
    }
}

// MARK: - Settings

extension AsyncImageLoader {
    /// The default of ``concurrentLoads``: 32 transfers, what the screen of
    /// a gallery asks for at once (16 cells, a thumbnail and a full image
    /// each), so that over HTTP/2 one round trip serves them all. (Before
    /// 0.10 it was 2: over a link with a 150 ms round trip that left the
    /// last cell of a screen about 20 round trips behind the first.)
    public static let defaultConcurrentLoads = 32

    /// The most decodes at once unless a configuration says otherwise
    /// (``Configuration/concurrentDecodes``): one per core, as the system
    /// reports them when the process starts, at least 1.
    public static let defaultConcurrentDecodes = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// Where decoded images are kept (nil: no caching). A change affects later requests only.
    public var cache: (any ImageCaching)? {
        get { state.withLock { $0.cache } }
        set { replace(\.cache, with: newValue) }
    }

    /// The most transfers in flight at once (default ``defaultConcurrentLoads``,
    /// 32): a true cap, HTTP/2 streams included. A transfer keeps its slot
    /// until a decoder takes its body, so no more than this many bodies wait
    /// undecoded; decodes run one per core (``Configuration/concurrentDecodes``)
    /// while the next transfers proceed.
    /// (While the loader is offline, jobs, which then read the disk, take
    /// slots of a second set of this many, so that they do not wait behind
    /// transfers that started before the network went down: see
    /// ``networkStatus``.)
    ///
    /// The transport keeps a cap of its own on connections per host
    /// (``TransportConfiguration/maxConnectionsPerHost``, 6): over HTTP/1.1
    /// at most 6 of these transfers to one host run at once and the rest
    /// wait for a connection of theirs, in this loader's queue order, their
    /// timeout not yet running; over HTTP/2 all of them are streams of one
    /// connection. See <doc:Scheduling> for choosing both for a link.
    public var concurrentLoads: Int {
        get { state.withLock { $0.slots.concurrentLoads } }
        set {
            mutate { state, effects in
                state.slots.concurrentLoads = newValue
                // The origins' shares follow: lanes parked for a full origin compete again.
                state.slots.unparkAll()
                self.pump(&state, &effects)
            }
        }
    }

    /// Seconds a transfer may take from the moment it starts (default 60);
    /// time spent waiting in the queue, reading the disk cache or decoding
    /// does not count. Past it, every request sharing the transfer fails with
    /// ``AsyncImageError/timedOut(_:seconds:stage:)`` at stage
    /// ``LoadStage/transfer``. Affects later transfers. Zero, a negative
    /// value, NaN or `.infinity` mean no time limit.
    ///
    /// It bounds a load that is loading, retries included: a transfer that
    /// timed out is not tried again (unless its ``RetryPolicy`` asks, with
    /// ``RetryPolicy/retriesTimeouts``), and it covers the connection's
    /// set-up too (a server whose listen queue is full never completes a
    /// connect). A stalled transfer may end sooner, at the transport's
    /// low-speed limit (``TransportConfiguration/lowSpeedLimit``).
    ///
    /// It is the time limit of every transfer the loader makes: it replaces
    /// the transport's own ``TransportConfiguration/timeout``, whichever
    /// initializer made the loader (passed to the ``DataLoading`` as
    /// ``DataRequest/timeout``). A limit on a whole request, whatever it is
    /// doing, is ``requestTimeout`` or ``ImageRequest/timeout``; whichever
    /// passes first ends the request (the rule: ``ImageRequest/timeout``).
    public var loadingTimeout: Double {
        get { state.withLock { $0.loadingTimeout } }
        set { state.withLock { $0.loadingTimeout = newValue } }
    }

    /// The most time a request may take from the moment it is made to its
    /// outcome, for requests that set no ``ImageRequest/timeout`` of their
    /// own (see ``Configuration/requestTimeout``; default nil: no limit).
    /// Affects requests made later.
    public var requestTimeout: Duration? {
        get { state.withLock { $0.requestTimeout } }
        set { state.withLock { $0.requestTimeout = newValue } }
    }

    /// How failed transfers are tried again, for requests without a
    /// ``ImageRequest/retryPolicy`` of their own (see
    /// ``Configuration/retryPolicy`` and ``RetryPolicy``). Affects requests
    /// made later.
    public var retryPolicy: RetryPolicy {
        get { state.withLock { $0.retryPolicy } }
        set { state.withLock { $0.retryPolicy = newValue } }
    }

    /// Where notifications are posted and actions run (default: the main queue).
    /// Use a serial queue: per-target order is kept by running deliveries one at a time.
    public var deliveryQueue: DispatchQueue {
        get { state.withLock { $0.deliveryQueue } }
        set { replace(\.deliveryQueue, with: newValue) }
    }

    /// Where `didFinish`/`didFail` are posted (default
    /// `NotificationCenter.default`); nil posts nothing (see
    /// ``Configuration/notificationCenter``).
    public var notificationCenter: NotificationCenter? {
        get { state.withLock { $0.notificationCenter } }
        set { replace(\.notificationCenter, with: newValue) }
    }

    /// The share of ``concurrentLoads`` that ``ImagePrefetcher`` transfers
    /// may hold while visible requests wait (see ``Configuration/prefetchShare``).
    public var prefetchShare: Double {
        get { state.withLock { $0.slots.prefetchShare } }
        set {
            mutate { state, effects in
                state.slots.prefetchShare = newValue
                self.pump(&state, &effects)
            }
        }
    }

    /// The order among waiting requests of equal priority (see
    /// ``Configuration/queueOrder``; fixed for the loader's life).
    public var queueOrder: QueueOrder { state.withLock { $0.slots.queue.order } }

    /// The disk cache (see ``Configuration/diskCache``). A change affects
    /// transfers started later.
    public var diskCache: (any DataCaching)? {
        get { state.withLock { $0.diskCache } }
        set { replace(\.diskCache, with: newValue) }
    }

    /// What goes to the disk cache (see ``Configuration/diskStorage``). A
    /// change affects requests made later.
    public var diskStorage: DiskStorage {
        get { state.withLock { $0.diskStorage } }
        set { replace(\.diskStorage, with: newValue) }
    }

    /// Called just before each transfer starts (see ``Configuration/requestModifier``).
    public var requestModifier: (@Sendable (inout DataRequest) -> Void)? {
        get { state.withLock { $0.requestModifier } }
        set { replace(\.requestModifier, with: newValue) }
    }

    /// The most requests pending at once (see ``Configuration/maxPendingRequests``).
    /// A change affects requests made later; none pending is cancelled.
    public var maxPendingRequests: Int {
        get { state.withLock { $0.maxPendingRequests } }
        set { state.withLock { $0.maxPendingRequests = newValue } }
    }

    /// Which URLs and addresses the loader may reach (see ``Configuration/urlPolicy``).
    /// A change affects requests made later, and transfers started later.
    public var urlPolicy: URLPolicy {
        get { state.withLock { $0.urlPolicy } }
        set { replace(\.urlPolicy, with: newValue) }
    }

    /// Where the loader logs (see ``Configuration/logger``; silent by default).
    public var logger: Logger {
        get { state.withLock { $0.logger } }
        set { replace(\.logger, with: newValue) }
    }

    /// Called with every ``LoaderEvent`` (from the loader's own threads and
    /// the callers', never under its lock; keep it quick, and never wait on
    /// the delivery queue from it: a caller may be inside an `imageURL` set).
    /// nil (the default) costs nothing. Steps made on different threads at
    /// once can arrive in either order: ``LoaderEvent/sequence`` gives the true order.
    public var eventMonitor: (@Sendable (LoaderEvent) -> Void)? {
        get { state.withLock { $0.eventMonitor } }
        set { replace(\.eventMonitor, with: newValue) }
    }

    /// A snapshot of what the loader is doing.
    public var activity: LoaderActivity {
        state.withLock {
            LoaderActivity(
                queued: $0.slots.queue.count + $0.slots.parkedLanes, inFlight: $0.slots.inFlight, peakInFlight: $0.slots.peakInFlight,
                decoding: $0.decodes.running, pendingRequests: $0.requests.pendingCount,
                delivered: $0.requests.deliveredCount, cancelled: $0.requests.cancelledCount)
        }
    }

    /// Sets a setting; the old value's last release (a cache, a closure and
    /// what it captured) happens after the lock, where a `deinit` may call back in.
    private func replace<Value>(_ setting: WritableKeyPath<LoaderState, Value>, with newValue: Value) {
        var old = newValue
        state.withLock { swap(&$0[keyPath: setting], &old) }
        withExtendedLifetime(old) {}
    }

    /// Runs `body` under the lock, then the effects it collected (outside the lock).
    @discardableResult
    func mutate<T>(_ body: (inout LoaderState, inout Effects) -> T) -> T {
        var effects = Effects()
        let result = state.withLock { state in body(&state, &effects) }
        effects.run()
        return result
    }
}

/// What an ``AsyncImageLoader`` is doing.
public struct LoaderActivity: Sendable, Hashable {
    /// Lanes waiting for a slot: a target's requests (per action), or one
    /// target-less request; those whose origin holds its share of the slots
    /// (``AsyncImageLoader/Configuration/originShare``) included.
    public let queued: Int
    /// Loads holding a transfer slot (transferring, or holding a body for a decoder).
    public let inFlight: Int
    /// The most loads ever in flight at once.
    public let peakInFlight: Int
    /// Decodes running now.
    public let decoding: Int
    /// Requests not yet delivered or cancelled.
    public let pendingRequests: Int
    /// Requests delivered so far (success or failure).
    public let delivered: Int
    /// Requests cancelled so far (explicitly, superseded, or their target gone).
    public let cancelled: Int
}
