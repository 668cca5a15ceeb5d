import Foundation
import Logging

/// The loader's mutable state; guarded by its lock. Each stage of the
/// engine owns a part: the job table (coalescing), the transfer queue and
/// slots, the decode scheduler's waiting bodies, the target layer's lanes,
/// and delivery's watch on the main queue.
struct LoaderState {
    // Settings.
    var cache: (any ImageCaching)?
    var concurrentLoads: Int
    var loadingTimeout: Double
    var deliveryQueue: DispatchQueue
    var notificationCenter: NotificationCenter
    var eventMonitor: (@Sendable (LoaderEvent) -> Void)?
    var logger: Logger
    var prefetchShare: Double
    var requestModifier: (@Sendable (inout DataRequest) -> Void)?
    var diskCache: (any DataCaching)?
    var diskStorage: DiskStorage
    var processedImageEncoding: ProcessedImageEncoding
    var endsTransfersAtDCScans: Bool
    var maxPendingRequests: Int
    var urlPolicy: URLPolicy
    /// The HTTP caching rules of the disk cache.
    var httpCache: HTTPCachePolicy

    // Requests.
    var nextID: UInt64 = 0
    /// A counter that stamps lanes when touched (their LIFO order).
    var nextStamp: UInt64 = 0
    /// Pending requests per URL (absolute string), by id: cancelling by URL,
    /// and the loader's `deinit`, never look beyond them.
    var byURL: [String: RequestSet] = [:]
    var pendingCount = 0
    /// The target layer: lanes per target and action.
    var targets = TargetLanes()

    // Jobs and transfers.
    /// Jobs by URL (absolute string): one transfer per URL.
    var jobs: [String: LoadJob] = [:]
    var queue = TransferQueue()
    var inFlight = 0
    /// The jobs holding a slot (loading, or a body waiting for a decoder).
    var holding: [ObjectIdentifier: LoadJob] = [:]
    var peakInFlight = 0
    /// Slots held for prefetch requests only (at most `concurrentLoads` jobs to look at).
    var prefetchInFlight: Int { holding.values.count { !$0.hasVisibleRequest } }

    // Decoding.
    /// Jobs whose body waits for a decoder (each still holds a transfer slot).
    var awaitingDecoder: [LoadJob] = []
    /// Decodes running, at most `decoders`.
    var decoding = 0
    /// One decoder per core: decoding is CPU-bound.
    let decoders = max(1, ProcessInfo.processInfo.activeProcessorCount)

    // Delivery and bookkeeping.
    var deliveredCount = 0
    var cancelledCount = 0
    var sweepTimer: DispatchSourceTimer?
    /// The ``LoaderEvent/sequence`` of the last event made.
    var eventSequence: UInt64 = 0
    var mainQueueWatch = MainQueueWatch()

    init(_ configuration: AsyncImageLoader.Configuration) {
        cache = configuration.cache
        concurrentLoads = max(1, configuration.concurrentLoads)
        loadingTimeout = configuration.loadingTimeout
        deliveryQueue = configuration.deliveryQueue
        notificationCenter = configuration.notificationCenter
        logger = configuration.logger
        prefetchShare = configuration.prefetchShare
        requestModifier = configuration.requestModifier
        diskCache = configuration.diskCache
        diskStorage = configuration.diskStorage
        processedImageEncoding = configuration.processedImageEncoding
        endsTransfersAtDCScans = configuration.endsTransfersAtDCScans
        maxPendingRequests = configuration.maxPendingRequests
        urlPolicy = configuration.urlPolicy
        httpCache = configuration.httpCache
    }

    /// The most transfers prefetch requests may hold while visible requests wait.
    var prefetchCap: Int {
        let share = prefetchShare.isFinite ? min(1, max(0, prefetchShare)) : 1
        return Int((Double(concurrentLoads) * share).rounded(.down))
    }
}

/// Work collected under the lock and run after it is released.
struct Effects {
    private var actions: [() -> Void] = []
    /// Objects released only after the lock (see ``KeepAlive``).
    var keep = KeepAlive()

    mutating func append(_ action: @escaping () -> Void) { actions.append(action) }

    func run() { actions.forEach { $0() } }
}

/// Whether deliveries to the main queue are being run: a program that never
/// services it (a service, a tool without `dispatchMain()`) would otherwise
/// wait forever without a word. The loader logs one warning per loader.
struct MainQueueWatch {
    /// Deliveries handed to the main queue and not yet run.
    var waiting = 0
    /// Advances each time `waiting` drops to zero: a check scheduled for an
    /// older generation finds its deliveries have run.
    var generation: UInt64 = 0
    var warned = false
    /// Seconds a main-queue delivery may wait before the warning.
    var threshold: Double = 5
}
