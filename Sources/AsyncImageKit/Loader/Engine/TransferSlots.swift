import Foundation

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
///
/// Only the online set's slots reach the network, so `concurrentLoads`
/// stays a hard cap on transfers in flight: a job of the offline set that
/// is admitted to the network (a local URL, the probe, or any job once the
/// loader is back online) is charged to the online set
/// (``chargeToNetwork(_:)``), and when that set is full it waits for one of
/// its slots (``waitForNetwork(_:resume:)``; the probe is answered from the
/// disk instead).
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
    /// Jobs of the offline set admitted to the network while the online
    /// set was full, in the order they came, each with what starts its
    /// transfer once it holds a slot of the online set.
    private var waitingForNetwork: [(id: ObjectIdentifier, resume: @Sendable () -> Void)] = []
    /// The share of the slots one origin may hold (see ``originCap``).
    var originShare: Double
    /// Slots held per origin (only URLs with a host: not `file`).
    private var heldByOrigin: [String: Int] = [:]
    /// Lanes parked per origin, in the order they reached the front (some
    /// may be filed again since, or have nothing queued: skipped then).
    private var parked: [String: ParkedLanes] = [:]

    init(concurrentLoads: Int, prefetchShare: Double, order: QueueOrder, originShare: Double = 1) {
        self.concurrentLoads = max(1, concurrentLoads)
        self.prefetchShare = prefetchShare
        self.originShare = originShare
        queue = TransferQueue(order: order)
    }

    /// The most slots one origin may hold: ``concurrentLoads`` ×
    /// ``originShare``, rounded up, at least 1 (a share that is not a number
    /// in 0...1 counts as 1: no cap).
    var originCap: Int {
        let share = originShare.isFinite ? min(1, max(0, originShare)) : 1
        return max(1, Int((Double(concurrentLoads) * share).rounded(.up)))
    }

    /// `scheme://host:port` of `url`, the unit of ``originCap``; nil for a
    /// URL without a host (`file`), which no origin's share counts.
    static func origin(of url: URL) -> String? {
        guard let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(host):\(port)"
    }

    /// The origin whose share `job` would pass if it started now; nil when it may start.
    func fullOrigin(for job: LoadJob) -> String? {
        guard originCap < concurrentLoads, let origin = Self.origin(of: job.url),
            heldByOrigin[origin, default: 0] >= originCap
        else { return nil }
        return origin
    }

    /// `lane` (taken out of the queue) waits for a slot of `origin`.
    mutating func park(_ lane: Lane, for origin: String) {
        parked[origin, default: ParkedLanes()].append(lane)
    }

    /// Files back the first parked lane of `origin` that still waits,
    /// now that the origin is under its share.
    private mutating func unpark(_ origin: String) {
        guard var lanes = parked.removeValue(forKey: origin) else { return }
        while let lane = lanes.popFirst() {
            // Filed again since it was parked (a change of its rank), or nothing left to queue.
            guard lane.filed == nil else { continue }
            queue.refile(lane)
            if lane.filed != nil { break }
        }
        if !lanes.isEmpty { parked[origin] = lanes }
    }

    /// Files back every parked lane (the share or the slots changed).
    mutating func unparkAll() {
        let all = parked
        parked = [:]
        for lanes in all.values {
            var lanes = lanes
            while let lane = lanes.popFirst() {
                if lane.filed == nil { queue.refile(lane) }
            }
        }
    }

    /// Lanes parked now with something queued, each once: the activity's
    /// snapshot (it walks the parked lanes; no engine step calls it).
    var parkedLanes: Int {
        var lanes = Set<ObjectIdentifier>()
        for waiting in parked.values {
            waiting.forEach { lane in
                if lane.filed == nil, lane.queuedCount > 0 { lanes.insert(ObjectIdentifier(lane)) }
            }
        }
        return lanes.count
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
        if let origin = Self.origin(of: job.url) { heldByOrigin[origin, default: 0] += 1 }
    }

    /// The one place a slot is given back.
    mutating func release(of job: LoadJob) {
        guard holding.removeValue(forKey: ObjectIdentifier(job)) != nil else { return }
        offlineHolders.remove(ObjectIdentifier(job))
        waitingForNetwork.removeAll { $0.id == ObjectIdentifier(job) }
        inFlight -= 1
        if let origin = Self.origin(of: job.url), let held = heldByOrigin[origin] {
            heldByOrigin[origin] = held > 1 ? held - 1 : nil
            if held - 1 < originCap { unpark(origin) }
        }
    }

    /// Slots of the online set held (what may be on the network).
    var onlineHeld: Int { inFlight - offlineHolders.count }

    /// `job` is about to use the network: true when its slot is of the
    /// online set, or was just moved there (one was free); false when the
    /// online set is full.
    mutating func chargeToNetwork(_ job: LoadJob) -> Bool {
        let id = ObjectIdentifier(job)
        guard offlineHolders.contains(id) else { return true }
        guard onlineHeld < concurrentLoads else { return false }
        offlineHolders.remove(id)
        return true
    }

    /// `job` (of the offline set, the online set full) waits for a slot of
    /// the online set: ``nextReadyForNetwork()`` moves it there and gives
    /// back `resume`, which starts its transfer.
    mutating func waitForNetwork(_ job: LoadJob, resume: @escaping @Sendable () -> Void) {
        let id = ObjectIdentifier(job)
        waitingForNetwork.removeAll { $0.id == id }
        waitingForNetwork.append((id, resume))
    }

    /// The first job waiting for the network, moved to the online set, if
    /// it has a free slot (before any lane is started: these jobs started first).
    mutating func nextReadyForNetwork() -> (@Sendable () -> Void)? {
        guard !waitingForNetwork.isEmpty, onlineHeld < concurrentLoads else { return nil }
        let (id, resume) = waitingForNetwork.removeFirst()
        offlineHolders.remove(id)
        return resume
    }

    /// The jobs waiting for the network whose URLs `matching` accepts,
    /// no longer waiting (the loader went offline: they are answered from
    /// the disk, still in their slots of the offline set).
    mutating func stopWaitingForNetwork(where matching: (LoadJob) -> Bool) -> [@Sendable () -> Void] {
        var stopped: [@Sendable () -> Void] = []
        waitingForNetwork.removeAll { waiting in
            guard let job = holding[waiting.id], matching(job) else { return false }
            stopped.append(waiting.resume)
            return true
        }
        return stopped
    }

    /// How many jobs wait for a slot of the online set (tests).
    var waitingForNetworkCount: Int { waitingForNetwork.count }

    /// Slots held of the set jobs take now.
    private var heldInCurrentSet: Int { offline ? offlineHolders.count : inFlight - offlineHolders.count }

    /// Whether `job`'s slot is of the set jobs take now.
    private func inCurrentSet(_ job: LoadJob) -> Bool { offlineHolders.contains(ObjectIdentifier(job)) == offline }

    /// The jobs holding a slot.
    var holders: Dictionary<ObjectIdentifier, LoadJob>.Values { holding.values }

    /// Empties the slots and the queue (the loader's `deinit`); returns the holders.
    mutating func removeAll() -> [LoadJob] {
        defer {
            (holding, offlineHolders, queue, inFlight) = ([:], [], TransferQueue(order: queue.order), 0)
            waitingForNetwork = []
            (heldByOrigin, parked) = ([:], [:])
        }
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

/// Lanes parked for one origin, first in, first out (a head index over an
/// array, compacted as it is consumed: O(1) amortized).
struct ParkedLanes {
    private var lanes: [Lane] = []
    private var head = 0

    var isEmpty: Bool { head == lanes.count }
    var count: Int { lanes.count - head }

    mutating func append(_ lane: Lane) { lanes.append(lane) }

    func forEach(_ body: (Lane) -> Void) { lanes[head...].forEach(body) }

    mutating func popFirst() -> Lane? {
        guard head < lanes.count else { return nil }
        let lane = lanes[head]
        head += 1
        if head == lanes.count {
            (lanes, head) = ([], 0)
        } else if head >= 64, head * 2 >= lanes.count {
            lanes.removeFirst(head)
            head = 0
        }
        return lane
    }
}
