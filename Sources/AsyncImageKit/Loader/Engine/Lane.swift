import Foundation

/// A unit of the transfer queue: the requests of one target and action, in
/// the order they were set, or a target-less request on its own.
///
/// This is where per-target order lives. The queue ranks lanes (priority,
/// then the most recently touched first); a lane offers its *oldest* queued
/// request, so a thumbnail set before the full image starts before it, and
/// the lane keeps its place while it has more. Delivering a request
/// supersedes the lane's earlier ones (``pending(before:)``).
///
/// Requests that end are dropped lazily (skipped, then compacted away), so
/// no operation walks the lane more than once per request over its life.
final class Lane {
    /// nil for a target-less request's own lane.
    let key: TargetKey?
    /// A lane of prefetch requests (capped while visible requests wait).
    let isPrefetch: Bool
    /// When a request was last added: the LIFO order across lanes.
    private(set) var stamp: UInt64
    /// Where the queue has filed the lane (priority level and stamp) and the
    /// serial of that filing (its one live heap entry); nil when not filed.
    var filed: (level: Int, stamp: UInt64, serial: UInt64)?

    /// Requests in the order set; those before `front` have ended, later ones may have.
    private var items: [LoadRequest] = []
    private var front = 0
    /// Items before it are not queued and never will be again.
    private var queueHead = 0
    /// Pending requests in the lane.
    private(set) var live = 0
    /// Queued requests per priority level.
    private var queuedCounts = PriorityCounts()
    private(set) var queuedCount = 0

    init(key: TargetKey?, isPrefetch: Bool, stamp: UInt64) {
        self.key = key
        self.isPrefetch = isPrefetch
        self.stamp = stamp
    }

    /// The highest priority among the queued requests: the lane's rank.
    var level: Int? {
        guard queuedCount > 0 else { return nil }
        return queuedCounts.highest?.rawValue
    }

    /// Adds a pending request (the newest) and touches the lane; the caller
    /// counts it with ``enterQueue(_:)`` if its job is queued.
    func add(_ record: LoadRequest, stamp: UInt64) {
        items.append(record)
        live += 1
        self.stamp = stamp
        record.lane = self
    }

    func enterQueue(_ priority: ImagePriority) {
        queuedCounts.add(1, at: priority)
        queuedCount += 1
    }

    /// Queues `record` again (it was moved to a job still queued, after its
    /// first one started): the queue head goes back to it if it had passed it.
    func requeue(_ record: LoadRequest) {
        // A walk of the lane, on a rare path: a job that had only stored
        // processed images handing its other requests on (see `moveUnservable`).
        if let index = items[front...].firstIndex(where: { $0 === record }) {
            IndexWalk.count(index - front + 1)
            queueHead = min(queueHead, index)
        }
        enterQueue(record.priority)
    }

    func leaveQueue(_ priority: ImagePriority) {
        queuedCounts.add(-1, at: priority)
        queuedCount -= 1
    }

    /// A request of the lane ended (its state is no longer pending). Ended
    /// requests the lane lets go of are parked in `keep`: their last release
    /// (and their closures') must come after the loader's lock.
    func ended(_ keep: inout KeepAlive) {
        live -= 1
        if live == 0 {
            IndexWalk.count(items.count)
            items.forEach { keep.park($0) }
            items = []
            front = 0
            queueHead = 0
            return
        }
        compactIfSparse(&keep)
    }

    /// The oldest queued request: the one to start next.
    func nextQueued() -> LoadRequest? {
        queueHead = max(queueHead, front)
        while queueHead < items.count {
            IndexWalk.count()
            if items[queueHead].isQueued { return items[queueHead] }
            queueHead += 1
        }
        return nil
    }

    /// The newest pending request.
    func latestPending(_ keep: inout KeepAlive) -> LoadRequest? {
        while items.count > front, items[items.count - 1].state != .pending {
            IndexWalk.count()
            keep.park(items.removeLast())
        }
        queueHead = min(queueHead, items.count)
        return items.count > front ? items[items.count - 1] : nil
    }

    /// The pending requests made before `record`, oldest first (superseded
    /// once `record` is delivered).
    func pending(before record: LoadRequest) -> [LoadRequest] {
        while front < items.count, items[front].state != .pending {
            IndexWalk.count()
            front += 1
        }
        var earlier: [LoadRequest] = []
        var index = front
        while index < items.count, items[index].id < record.id {
            IndexWalk.count()
            if items[index].state == .pending { earlier.append(items[index]) }
            index += 1
        }
        return earlier
    }

    /// Every pending request, oldest first.
    var pending: [LoadRequest] {
        IndexWalk.count(items.count - front)
        return items[front...].filter { $0.state == .pending }
    }

    private func compactIfSparse(_ keep: inout KeepAlive) {
        let held = items.count - front
        guard held - live > live + 32 else { return }
        IndexWalk.count(items.count)
        items.forEach { keep.park($0) }
        items = items[front...].filter { $0.state == .pending }
        front = 0
        queueHead = 0
    }
}

/// A count per priority level, stored inline: a lane (one per target and
/// action, and one per target-less request) then makes no array of its own.
struct PriorityCounts {
    private var veryLow = 0, low = 0, normal = 0, high = 0, veryHigh = 0

    mutating func add(_ amount: Int, at priority: ImagePriority) {
        switch priority {
        case .veryLow: veryLow += amount
        case .low: low += amount
        case .normal: normal += amount
        case .high: high += amount
        case .veryHigh: veryHigh += amount
        }
    }

    /// The highest priority with a count, if any.
    var highest: ImagePriority? {
        if veryHigh > 0 { return .veryHigh }
        if high > 0 { return .high }
        if normal > 0 { return .normal }
        if low > 0 { return .low }
        return veryLow > 0 ? .veryLow : nil
    }
}

/// The target layer's table: the lanes of each live target, by action. The
/// one owner of per-target order, superseding and `url(for:)`.
struct TargetLanes {
    /// A target's lanes by action. Nearly every target uses one action, so
    /// its lane is kept inline and a table is made only for a second one
    /// (saving a table per target, and a memory access per lookup).
    private final class Entry {
        let target: WeakTarget
        private var first: Lane?
        private var others: [String: Lane] = [:]
        init(_ target: WeakTarget) { self.target = target }

        var isEmpty: Bool { first == nil && others.isEmpty }

        var lanes: [Lane] { (first.map { [$0] } ?? []) + others.values }

        subscript(action: String) -> Lane? {
            get { first?.key?.action == action ? first : others[action] }
            set {
                if let first, first.key?.action == action {
                    // One of the others moves up: a lone lane is always inline.
                    self.first = newValue ?? others.popFirst()?.value
                } else if first == nil, newValue != nil {
                    first = newValue
                } else {
                    others[action] = newValue
                }
            }
        }
    }

    private var entries: [ObjectIdentifier: Entry] = [:]

    /// Targets with pending requests (dead ones included until their requests end).
    var targetCount: Int { entries.count }

    /// The lane `record` joins: its target and action's (touched), or a new
    /// one of its own. `stale` lists the requests of a deallocated object
    /// that had the same address (to be cancelled by the caller).
    mutating func lane(
        for record: LoadRequest, object: AnyObject?, stamp: UInt64, _ keep: inout KeepAlive
    ) -> (lane: Lane, stale: [LoadRequest]) {
        guard let object, let key = record.targetKey, let weak = record.target else {
            let lane = Lane(key: nil, isPrefetch: record.isPrefetch, stamp: stamp)
            lane.add(record, stamp: stamp)
            return (lane, [])
        }
        var stale: [LoadRequest] = []
        var entry = entries[key.target]
        if let found = entry, !found.target.refers(to: object, &keep) {
            stale = found.lanes.flatMap(\.pending)
            entry = nil
        }
        let live = entry ?? Entry(weak)
        entries[key.target] = live
        let lane = live[key.action] ?? Lane(key: key, isPrefetch: false, stamp: stamp)
        live[key.action] = lane
        lane.add(record, stamp: stamp)
        return (lane, stale)
    }

    /// `record` (of `lane`) ended; an empty lane and target are forgotten.
    mutating func ended(_ record: LoadRequest, in lane: Lane, _ keep: inout KeepAlive) {
        lane.ended(&keep)
        guard lane.live == 0, let key = lane.key, let entry = entries[key.target] else { return }
        if entry[key.action] === lane { entry[key.action] = nil }
        if entry.isEmpty { entries[key.target] = nil }
    }

    /// The lane of `object` and `action`, if `object` has pending requests there.
    func lane(of object: AnyObject, action: String, _ keep: inout KeepAlive) -> Lane? {
        guard let entry = entries[ObjectIdentifier(object)], entry.target.refers(to: object, &keep) else { return nil }
        return entry[action]
    }

    /// Every lane of `object`.
    func lanes(of object: AnyObject, _ keep: inout KeepAlive) -> [Lane] {
        guard let entry = entries[ObjectIdentifier(object)], entry.target.refers(to: object, &keep) else { return [] }
        return entry.lanes
    }

    /// How many requests of `object` are pending.
    func pendingCount(of object: AnyObject, _ keep: inout KeepAlive) -> Int {
        lanes(of: object, &keep).reduce(0) { $0 + $1.live }
    }

    /// The newest pending URL of `object` and `action`.
    func url(for object: AnyObject, action: String, _ keep: inout KeepAlive) -> URL? {
        lane(of: object, action: action, &keep)?.latestPending(&keep)?.request.url
    }

    /// The newest pending URL of `object`, any action.
    func url(for object: AnyObject, _ keep: inout KeepAlive) -> URL? {
        lanes(of: object, &keep).compactMap { $0.latestPending(&keep) }.max { $0.id < $1.id }?.request.url
    }
}
