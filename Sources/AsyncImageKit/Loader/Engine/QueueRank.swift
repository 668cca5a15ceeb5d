/// The one order of the engine's queues, for transfers and decodes alike:
/// higher ``ImagePriority`` first, then the most recently touched (LIFO:
/// the cells on screen now, not those scrolled past).
struct QueueRank: Comparable {
    /// The priority's raw value.
    var level: Int
    /// When last touched: a counter, larger is more recent.
    var stamp: UInt64

    static func < (lhs: QueueRank, rhs: QueueRank) -> Bool { (lhs.level, lhs.stamp) < (rhs.level, rhs.stamp) }
}
