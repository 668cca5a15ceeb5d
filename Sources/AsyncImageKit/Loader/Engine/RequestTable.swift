import Foundation

/// The request stage's table: every pending request, by URL and by target
/// (the target layer's lanes), numbered in the order made, with the
/// counts. A request enters once (``admit(_:object:_:)``) and leaves once
/// (``end(_:as:_:)``): the one place a request's indexes change.
///
/// Guarded by the loader's lock, like the requests it holds.
struct RequestTable {
    private var nextID: UInt64 = 0
    /// Stamps lanes when touched (their LIFO order).
    private var nextStamp: UInt64 = 0
    /// Pending requests per URL (absolute string), by id: cancelling by
    /// URL, and the loader's `deinit`, never look beyond them.
    private var byURL: [String: RequestSet] = [:]
    /// The target layer: lanes per target and action.
    private(set) var targets = TargetLanes()
    private(set) var pendingCount = 0
    private(set) var deliveredCount = 0
    private(set) var cancelledCount = 0

    /// Numbers `record` (a later request has a larger id), indexes it by
    /// URL, and files it in its lane (its target and action's, touched, or
    /// its own). `stale`: the requests of a deallocated object that had
    /// `object`'s address, for the caller to cancel.
    mutating func admit(_ record: LoadRequest, object: AnyObject?, _ keep: inout KeepAlive)
        -> (lane: Lane, stale: [LoadRequest])
    {
        nextID += 1
        record.id = nextID
        byURL[record.urlKey, default: RequestSet()].insert(record)
        pendingCount += 1
        nextStamp += 1
        return targets.lane(for: record, object: object, stamp: nextStamp, &keep)
    }

    /// A number for an answer that is not a request in the table (a stored
    /// thumbnail served as it is stored): unique among the requests' ids.
    mutating func numberOutsideTheTable() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Ends a pending request `outcome` (delivered or cancelled): it leaves
    /// every index. Returns its lane, whose rank in the transfer queue may
    /// have changed (the caller refiles it), or nil for a request that was
    /// never admitted.
    mutating func end(_ record: LoadRequest, as outcome: LoadRequest.State, _ keep: inout KeepAlive) -> Lane? {
        let wasQueued = record.isQueued
        record.state = outcome
        // Cancelled before it was admitted (a sequence's next member): it never counted.
        guard record.id != 0 else { return nil }
        if outcome == .delivered { deliveredCount += 1 } else { cancelledCount += 1 }
        // In place (a copy of the inner table would be copied on write).
        let key = record.urlKey
        if byURL[key]?.remove(record) == true, byURL[key]?.isEmpty == true { byURL[key] = nil }
        pendingCount -= 1
        guard let lane = record.lane else { return nil }
        if wasQueued { lane.leaveQueue(record.priority) }
        targets.ended(record, in: lane, &keep)
        record.lane = nil
        return lane
    }

    /// The pending requests for `url` (absolute string, or any URL when
    /// nil) on `object` (or any target, or none, when nil) with `action`
    /// (any when nil). Looked up in whichever index is smaller: the URL's
    /// requests or the target's lanes; nothing else is walked.
    func requests(url: String?, of object: AnyObject?, action: String?, _ keep: inout KeepAlive) -> [LoadRequest] {
        guard let object else { return url.map { Array(byURL[$0] ?? RequestSet()) } ?? [] }
        if let action {
            // None: the target has nothing pending with this action.
            guard let lane = targets.lane(of: object, action: action, &keep) else { return [] }
            guard let url else { return lane.pending }
            let forURL = byURL[url] ?? RequestSet()
            if lane.live < forURL.count { return lane.pending.filter { $0.urlKey == url } }
            return forURL.filter { $0.actionName == action && $0.targets(object, &keep) }
        }
        guard let url else { return targets.lanes(of: object, &keep).flatMap(\.pending) }
        let forURL = byURL[url] ?? RequestSet()
        if targets.pendingCount(of: object, &keep) < forURL.count {
            return targets.lanes(of: object, &keep).flatMap(\.pending).filter { $0.urlKey == url }
        }
        return forURL.filter { $0.targets(object, &keep) }
    }

    /// Every pending request (the loader's `deinit`, `cancelAll()`).
    var all: [LoadRequest] { byURL.values.flatMap { $0 } }

    // MARK: Superseding (the one home of the rule)

    /// The requests `record`'s delivery supersedes: the pending requests
    /// made before it on its target and action, oldest first.
    func superseded(by record: LoadRequest) -> [LoadRequest] {
        guard let lane = record.lane, lane.key != nil else { return [] }
        return lane.pending(before: record)
    }

    /// Whether something newer than `record` is pending on its target and
    /// action (it wins: nothing of `record`'s may come after it).
    func isSuperseded(_ record: LoadRequest, _ keep: inout KeepAlive) -> Bool {
        guard let lane = record.lane, lane.key != nil else { return false }
        return lane.latestPending(&keep) !== record
    }
}
