/// The transfer stage's slots: the queue of lanes waiting (``TransferQueue``)
/// and the `concurrentLoads` slots of the jobs transferring. A job takes a
/// slot when it starts and gives it back once (``release(of:)``): when its
/// body goes to a decoder, or it ends while loading or waiting for one.
/// Prefetch lanes may hold at most their share of the slots while visible
/// lanes wait. Guarded by the loader's lock.
///
/// While the loader is offline (``offline``), jobs take slots of a second
/// set of `concurrentLoads`: they read the disk and need no network, and
/// must not wait behind transfers that started before the network went
/// down and may hang until their timeout. Each job gives its slot back to
/// the set it took it from.
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
    /// Those of ``holding`` whose slot is of the offline set.
    private var offlineHolders: Set<ObjectIdentifier> = []
    /// Whether jobs take slots of the offline set now (the loader is offline).
    var offline = false

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
        guard heldInCurrentSet < concurrentLoads else { return nil }
        let allowPrefetch = prefetchInFlight < prefetchCap || !queue.hasVisible
        return queue.pop(allowPrefetch: allowPrefetch)
    }

    /// `job` starts: it holds a slot.
    mutating func take(for job: LoadJob) {
        inFlight += 1
        peakInFlight = max(peakInFlight, inFlight)
        holding[ObjectIdentifier(job)] = job
        if offline { offlineHolders.insert(ObjectIdentifier(job)) }
    }

    /// The one place a slot is given back.
    mutating func release(of job: LoadJob) {
        guard holding.removeValue(forKey: ObjectIdentifier(job)) != nil else { return }
        offlineHolders.remove(ObjectIdentifier(job))
        inFlight -= 1
    }

    /// Slots held of the set jobs take now.
    private var heldInCurrentSet: Int { offline ? offlineHolders.count : inFlight - offlineHolders.count }

    /// Whether `job`'s slot is of the set jobs take now.
    private func inCurrentSet(_ job: LoadJob) -> Bool { offlineHolders.contains(ObjectIdentifier(job)) == offline }

    /// The jobs holding a slot.
    var holders: Dictionary<ObjectIdentifier, LoadJob>.Values { holding.values }

    /// Empties the slots and the queue (the loader's `deinit`); returns the holders.
    mutating func removeAll() -> [LoadJob] {
        defer { (holding, offlineHolders, queue, inFlight) = ([:], [], TransferQueue(order: queue.order), 0) }
        return Array(holding.values)
    }

    /// Slots of the current set held for prefetch requests only (at most
    /// twice `concurrentLoads` jobs to look at).
    private var prefetchInFlight: Int { holding.values.count { !$0.hasVisibleRequest && inCurrentSet($0) } }

    /// The most transfers prefetch requests may hold while visible requests wait.
    private var prefetchCap: Int {
        let share = prefetchShare.isFinite ? min(1, max(0, prefetchShare)) : 1
        return Int((Double(concurrentLoads) * share).rounded(.down))
    }
}
