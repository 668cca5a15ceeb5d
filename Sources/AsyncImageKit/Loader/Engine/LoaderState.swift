import Foundation
import Logging

/// The loader's mutable state, guarded by its lock: the settings, then one
/// part per stage of the engine (its fields private to it: a stage changes
/// them through its own methods), then delivery's bookkeeping.
struct LoaderState {
    // Settings.
    var cache: (any ImageCaching)?
    var loadingTimeout: Double
    /// The deadline of requests without a timeout of their own (see `RequestDeadline`).
    var requestTimeout: Duration?
    /// How failed transfers of requests without a policy of their own are
    /// tried again (see ``RetryPolicy``).
    var retryPolicy: RetryPolicy
    /// The `0..<1` number each retry's jitter is drawn from (tests replace
    /// it to predict the schedule).
    var retryRandom: @Sendable () -> Double = { Double.random(in: 0..<1) }
    var deliveryQueue: DispatchQueue
    var notificationCenter: NotificationCenter?
    var eventMonitor: (@Sendable (LoaderEvent) -> Void)?
    var logger: Logger
    var requestModifier: (@Sendable (inout DataRequest) -> Void)?
    var diskCache: (any DataCaching)?
    var diskStorage: DiskStorage
    var processedImageEncoding: ImageEncoding
    var endsTransfersAtDCScans: Bool
    var maxPendingRequests: Int
    var urlPolicy: URLPolicy
    /// The HTTP caching rules of the disk cache.
    var httpCache: HTTPCachePolicy

    // The stages' state, each private to its stage (see `AsyncImageLoader`).
    /// The request stage: pending requests by URL and by target (lanes).
    var requests = RequestTable()
    /// The job stage: one transfer per URL.
    var jobs: JobTable
    /// The transfer stage: the queue of lanes and the slots.
    var slots: TransferSlots
    /// The decode stage: bodies waiting for a decoder.
    var decodes: DecodeScheduler
    /// Whether the network is used (the offline rules: see `NetworkState`).
    var network: NetworkState
    /// The clock of the offline rules' waits (`systemUptime`; tests replace it).
    var networkClock: @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    /// The reachability's handler, registered while the loader lives.
    var reachabilityObservation: ReachabilityObservation?
    /// The reachability's handler has been called (its word is newer than
    /// the one `init` reads after registering it).
    var reachabilityHeard = false

    // Delivery and bookkeeping.
    var sweepTimer: DispatchSourceTimer?
    /// The ``LoaderEvent/sequence`` of the last event made.
    var eventSequence: UInt64 = 0
    var mainQueueWatch = MainQueueWatch()
    /// Callers of `waitUntilIdle()`, resumed when no request is pending.
    var idleWaiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    var nextIdleWaiter: UInt64 = 0

    init(_ configuration: AsyncImageLoader.Configuration, accept: String) {
        cache = configuration.cache
        jobs = JobTable(accept: accept)
        slots = TransferSlots(
            concurrentLoads: configuration.concurrentLoads, prefetchShare: configuration.prefetchShare,
            order: configuration.queueOrder, originShare: configuration.originShare)
        decodes = DecodeScheduler(order: configuration.queueOrder, threads: configuration.concurrentDecodes)
        network = NetworkState(watches: configuration.reachability != nil)
        loadingTimeout = configuration.loadingTimeout
        requestTimeout = configuration.requestTimeout
        retryPolicy = configuration.retryPolicy
        deliveryQueue = configuration.deliveryQueue
        notificationCenter = configuration.notificationCenter
        logger = configuration.logger
        requestModifier = configuration.requestModifier
        diskCache = configuration.diskCache
        diskStorage = configuration.diskStorage
        processedImageEncoding = configuration.processedImageEncoding
        endsTransfersAtDCScans = configuration.endsTransfersAtDCScans
        maxPendingRequests = configuration.maxPendingRequests
        urlPolicy = configuration.urlPolicy
        httpCache = configuration.httpCache
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
