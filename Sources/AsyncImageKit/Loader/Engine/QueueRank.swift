/// The one order of the engine's queues, for transfers and decodes alike:
/// higher ``ImagePriority`` first, then, among equals, what the loader's
/// ``QueueOrder`` says: the most recently touched first (LIFO: the cells on
/// screen now, not those scrolled past) or the longest waiting first (FIFO).
struct QueueRank: Comparable {
    /// The priority's raw value.
    var level: Int
    /// Larger is served first: when last touched (LIFO), or the complement
    /// of when the oldest request arrived (FIFO).
    var stamp: UInt64

    static func < (lhs: QueueRank, rhs: QueueRank) -> Bool { (lhs.level, lhs.stamp) < (rhs.level, rhs.stamp) }

    /// A lane's rank while it has queued requests (nil when it has none):
    /// its most urgent queued request's priority, then when it was last
    /// touched (LIFO) or how long its oldest queued request has waited (FIFO;
    /// request ids increase in the order requests are made).
    static func of(_ lane: Lane, _ order: QueueOrder) -> QueueRank? {
        guard let level = lane.level else { return nil }
        switch order {
        case .lifo: return QueueRank(level: level, stamp: lane.stamp)
        case .fifo: return QueueRank(level: level, stamp: UInt64.max - (lane.nextQueued()?.id ?? 0))
        }
    }

    /// A job's rank among the bodies waiting for a decoder: its most urgent
    /// request's priority, then its most recently touched lane (LIFO) or its
    /// oldest request (FIFO).
    static func of(_ job: LoadJob, _ order: QueueOrder) -> QueueRank {
        let level = job.priority.rawValue
        switch order {
        case .lifo:
            return QueueRank(level: level, stamp: job.requests.lazy.map { $0.lane?.stamp ?? 0 }.max() ?? 0)
        case .fifo:
            return QueueRank(level: level, stamp: UInt64.max - (job.requests.lazy.map(\.id).min() ?? 0))
        }
    }
}

/// The order in which an ``AsyncImageLoader`` serves waiting requests of
/// equal ``ImagePriority``: to transfer slots, and then to decoders.
public enum QueueOrder: Sendable, Hashable {
    /// Last in, first out (the default, as AsyncImageView's): the target
    /// touched most recently first, so the cells on screen now load before
    /// those scrolled past. Within one target and action, requests still
    /// start in the order they were set.
    case lifo
    /// First in, first out: the request that has waited longest first. For
    /// a service, where every request is a client waiting, LIFO would leave
    /// the earliest ones waiting longest under load.
    case fifo
}
