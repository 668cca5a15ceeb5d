/// The transfer stage's slots: the queue of lanes waiting (``TransferQueue``)
/// and the `concurrentLoads` slots of the jobs transferring. A job takes a
/// slot when it starts and gives it back once (``release(of:)``): when its
/// body goes to a decoder, or it ends while loading or waiting for one.
/// Prefetch lanes may hold at most their share of the slots while visible
/// lanes wait. Guarded by the loader's lock.
struct TransferSlots {
    /// The most transfers at once (at least 1).
    var concurrentLoads: Int { didSet { concurrentLoads = max(1, concurrentLoads) } }
    /// The share of the slots prefetch transfers may hold while visible requests wait.
    var prefetchShare: Double
    private(set) var queue: TransferQueue
    /// Slots held now.
    private(set) var inFlight = 0
    private(set) var peakInFlight = 0
    /// The jobs holding a slot (loading, or a body waiting for a decoder).
    private var holding: [ObjectIdentifier: LoadJob] = [:]

    init(concurrentLoads: Int, prefetchShare: Double, order: QueueOrder) {
        self.concurrentLoads = max(1, concurrentLoads)
        self.prefetchShare = prefetchShare
        queue = TransferQueue(order: order)
    }

    /// Files `lane` by its current rank, or takes it out when it has
    /// nothing queued: after anything that changes its queued requests.
    mutating func refile(_ lane: Lane) { queue.refile(lane) }

    /// The best waiting lane, taken out of the queue, if a slot is free
    /// (a prefetch lane only within the prefetch cap, or when no visible lane waits).
    mutating func nextLane() -> Lane? {
        guard inFlight < concurrentLoads else { return nil }
        let allowPrefetch = prefetchInFlight < prefetchCap || !queue.hasVisible
        return queue.pop(allowPrefetch: allowPrefetch)
    }

    /// `job` starts: it holds a slot.
    mutating func take(for job: LoadJob) {
        inFlight += 1
        peakInFlight = max(peakInFlight, inFlight)
        holding[ObjectIdentifier(job)] = job
    }

    /// The one place a slot is given back.
    mutating func release(of job: LoadJob) {
        guard holding.removeValue(forKey: ObjectIdentifier(job)) != nil else { return }
        inFlight -= 1
    }

    /// The jobs holding a slot.
    var holders: Dictionary<ObjectIdentifier, LoadJob>.Values { holding.values }

    /// Empties the slots and the queue (the loader's `deinit`); returns the holders.
    mutating func removeAll() -> [LoadJob] {
        defer { (holding, queue, inFlight) = ([:], TransferQueue(order: queue.order), 0) }
        return Array(holding.values)
    }

    /// Slots held for prefetch requests only (at most `concurrentLoads` jobs to look at).
    private var prefetchInFlight: Int { holding.values.count { !$0.hasVisibleRequest } }

    /// The most transfers prefetch requests may hold while visible requests wait.
    private var prefetchCap: Int {
        let share = prefetchShare.isFinite ? min(1, max(0, prefetchShare)) : 1
        return Int((Double(concurrentLoads) * share).rounded(.down))
    }
}
