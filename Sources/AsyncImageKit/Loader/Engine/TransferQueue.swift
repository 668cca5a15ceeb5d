/// The lanes waiting for a transfer slot, in ``QueueRank`` order: higher
/// priority first, and within a priority the most recently touched lane
/// first (LIFO: the cells on screen now, not those scrolled past). Prefetch lanes are kept apart so
/// the loader can cap them while visible lanes wait.
///
/// Each priority level is a max-heap of (stamp, lane) entries. A lane that
/// changes rank is filed again and its old entry goes stale; stale entries
/// are skipped when they reach the top and swept when they outnumber the
/// live ones, so every operation is O(log n) amortized, whatever the number
/// of lanes.
struct TransferQueue {
    private struct Entry {
        let stamp: UInt64
        /// Which filing of the lane made it: only the latest one's entry is
        /// live (a lane filed at a rank it had before has an old entry there too).
        let serial: UInt64
        let lane: Lane
    }

    private struct Levels {
        var heaps = [MaxHeap<Entry>](
            repeating: MaxHeap(key: { $0.stamp }), count: ImagePriority.allCases.count)
        /// Lanes filed here now.
        var filed = 0
        /// Entries in the heaps, stale ones included.
        var entries = 0

        static func isLive(_ entry: Entry, level: Int) -> Bool {
            entry.lane.filed?.serial == entry.serial
        }

        /// The best live entry, stale tops dropped on the way.
        mutating func top() -> (level: Int, entry: Entry)? {
            for level in heaps.indices.reversed() {
                while let entry = heaps[level].top, !Self.isLive(entry, level: level) {
                    IndexWalk.count()
                    heaps[level].pop()
                    entries -= 1
                }
                if let entry = heaps[level].top { return (level, entry) }
            }
            return nil
        }

        mutating func sweepIfStale() {
            guard entries > 2 * filed + 64 else { return }
            IndexWalk.count(entries)
            entries = 0
            for level in heaps.indices {
                heaps[level].retain { Self.isLive($0, level: level) }
                entries += heaps[level].count
            }
        }
    }

    private var visible = Levels()
    private var prefetch = Levels()
    private var filings: UInt64 = 0
    /// The order among equal priorities.
    let order: QueueOrder

    init(order: QueueOrder) { self.order = order }

    /// Lanes waiting.
    var count: Int { visible.filed + prefetch.filed }
    /// Heap entries, stale ones included (tests).
    var entryCount: Int { visible.entries + prefetch.entries }
    /// Whether a lane of visible (not prefetch) requests waits.
    var hasVisible: Bool { visible.filed > 0 }

    /// Files `lane` by its current rank, or takes it out when it has nothing
    /// queued. Call after anything that changes its queued requests.
    mutating func refile(_ lane: Lane) {
        let wanted = QueueRank.of(lane, order).map { (level: $0.level, stamp: $0.stamp) }
        if let filed = lane.filed, let wanted, filed.level == wanted.level, filed.stamp == wanted.stamp { return }
        filings += 1
        lane.isPrefetch
            ? Self.refile(lane, wanted, serial: filings, &prefetch) : Self.refile(lane, wanted, serial: filings, &visible)
    }

    private static func refile(
        _ lane: Lane, _ wanted: (level: Int, stamp: UInt64)?, serial: UInt64, _ levels: inout Levels
    ) {
        if lane.filed == nil, wanted != nil { levels.filed += 1 }
        if lane.filed != nil, wanted == nil { levels.filed -= 1 }
        lane.filed = wanted.map { ($0.level, $0.stamp, serial) }
        if let wanted {
            levels.heaps[wanted.level].push(Entry(stamp: wanted.stamp, serial: serial, lane: lane))
            levels.entries += 1
        }
        levels.sweepIfStale()
    }

    /// Takes the best lane out of the queue; prefetch lanes only when allowed.
    mutating func pop(allowPrefetch: Bool) -> Lane? {
        let best = visible.top()
        let other = allowPrefetch ? prefetch.top() : nil
        let takePrefetch: Bool
        switch (best, other) {
        case (nil, nil): return nil
        case (_?, nil): takePrefetch = false
        case (nil, _?): takePrefetch = true
        case (let v?, let p?):
            takePrefetch = QueueRank(level: p.level, stamp: p.entry.stamp) > QueueRank(level: v.level, stamp: v.entry.stamp)
        }
        return takePrefetch ? Self.take(&prefetch) : Self.take(&visible)
    }

    private static func take(_ levels: inout Levels) -> Lane? {
        guard let (level, entry) = levels.top() else { return nil }
        levels.heaps[level].pop()
        levels.entries -= 1
        levels.filed -= 1
        entry.lane.filed = nil
        return entry.lane
    }
}
