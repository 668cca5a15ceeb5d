/// Which transfers may have a connection of their origin now: at most
/// ``TransportConfiguration/maxConnectionsPerHost`` per origin that is not
/// known to multiplex; the rest wait here, not inside libcurl, until one
/// of their origin's transfers ends. The loop thread's alone.
///
/// Why here rather than libcurl's own cap (`CURLMOPT_MAX_HOST_CONNECTIONS`,
/// which stays as a backstop): libcurl serves the transfers waiting for a
/// connection first in, first out, and its timeout counts their wait. Here
/// they wait in the order of their ``TransferUrgency`` (an
/// ``AsyncImageLoader`` passes its queue's order: under LIFO, the cells on
/// screen now before those scrolled past), their timeout starts only when
/// they get their place, and a cancel while waiting costs nothing (no easy
/// handle exists yet, no connection is opened for it and closed again).
///
/// An origin known to multiplex (its connections said HTTP/2, see
/// ``CurlEventLoop/noteMultiplexing(_:_:)``) has no cap: its transfers are
/// streams of one connection. When an origin is found to multiplex, all
/// that wait for it start at once.
///
/// The order has one exception (see ``TransferUrgency``): transfers first
/// for their target hold at most all but one of an origin's places while
/// transfers of the same priority that are not first for their target
/// wait. Over HTTP/1.1 each connection spends a round trip idle before
/// each answer; small first images (thumbnails) on every connection leave
/// the link idle for those round trips, and one connection carrying a
/// full image keeps it busy (measured: 150 ms, 10 Mbit/s, the scroll's
/// final screen 1.14x its limit with every place to thumbnails, see
/// BENCHMARKS.md).
struct OriginAdmission {
    /// The cap per origin; 0: none.
    let limit: Int
    /// The origins with a transfer holding a place or waiting for one.
    private var origins: [String: Places] = [:]
    private var sequence: UInt64 = 0
    /// Transfers waiting, cancelled ones not yet swept included.
    private(set) var waitingCount = 0

    /// One origin's places.
    private struct Places {
        /// Transfers holding a place, and how many of them are first for their target.
        var running = 0
        var runningFirsts = 0
        /// Waiting transfers, most urgent first, apart by ``TransferUrgency/isFirstForTarget``.
        var firsts = WaitingTransfers()
        var others = WaitingTransfers()

        var isUnused: Bool { running == 0 && firsts.isEmpty && others.isEmpty }
        var waiting: Int { firsts.count + others.count }

        mutating func take(_ transfer: CurlTransfer) {
            running += 1
            if transfer.urgency.isFirstForTarget { runningFirsts += 1 }
            transfer.holdsOriginPlace = true
        }

        mutating func give(_ transfer: CurlTransfer) {
            running -= 1
            if transfer.urgency.isFirstForTarget { runningFirsts -= 1 }
            transfer.holdsOriginPlace = false
        }

        /// The waiting transfer to take a free place: the most urgent, but
        /// not the last place to a first-for-target transfer while another
        /// of its priority waits (the exception above).
        mutating func next(limit: Int) -> CurlTransfer? {
            guard let first = firsts.peek() else { return others.pop() }
            guard let other = others.peek() else { return firsts.pop() }
            if other.urgency > first.urgency { return others.pop() }
            let lastPlace = limit >= 2 && runningFirsts >= limit - 1
            return lastPlace && other.urgency.priority == first.urgency.priority ? others.pop() : firsts.pop()
        }
    }

    init(limit: Int) { self.limit = max(0, limit) }

    /// Whether `transfer` may start now; if not, it waits here.
    /// `multiplexes`: what is known of its origin.
    mutating func admit(_ transfer: CurlTransfer, multiplexes: Bool?) -> Bool {
        sequence &+= 1
        transfer.arrival = sequence
        guard limit > 0, multiplexes != true else { return true }
        var places = origins[transfer.origin, default: Places()]
        defer { origins[transfer.origin] = places }
        if places.running < limit {
            places.take(transfer)
            return true
        }
        if transfer.urgency.isFirstForTarget { places.firsts.push(transfer) } else { places.others.push(transfer) }
        waitingCount += 1
        return false
    }

    /// `transfer` ended (finished, or cancelled after it started): gives
    /// its place back; returns the transfer that takes it, if one waits.
    mutating func ended(_ transfer: CurlTransfer) -> CurlTransfer? {
        guard transfer.holdsOriginPlace, var places = origins[transfer.origin] else { return nil }
        places.give(transfer)
        let before = places.waiting
        let next = places.next(limit: limit)
        waitingCount -= before - places.waiting
        if let next { places.take(next) }
        origins[transfer.origin] = places.isUnused ? nil : places
        return next
    }

    /// The origin multiplexes: every transfer waiting for it, to start now,
    /// most urgent first.
    mutating func multiplexes(_ origin: String) -> [CurlTransfer] {
        guard var places = origins[origin] else { return [] }
        var all: [CurlTransfer] = []
        waitingCount -= places.waiting
        while let next = places.next(limit: 0) { all.append(next) }
        places.firsts = WaitingTransfers()
        places.others = WaitingTransfers()
        origins[origin] = places.isUnused ? nil : places
        return all
    }

    /// A waiting transfer was cancelled: forgotten (lazily; see `WaitingTransfers`).
    mutating func cancelledWhileWaiting(_ transfer: CurlTransfer) {
        guard var places = origins[transfer.origin] else { return }
        let before = places.waiting
        if transfer.urgency.isFirstForTarget { places.firsts.noteCancelled() } else { places.others.noteCancelled() }
        waitingCount -= before - places.waiting
        origins[transfer.origin] = places.isUnused ? nil : places
    }
}

/// A max-heap of waiting transfers: the most urgent first, then the first
/// to arrive. Cancelled ones are skipped when they reach the top, and swept
/// when the cancels noted outnumber the entries left.
struct WaitingTransfers {
    private var heap: [CurlTransfer] = []
    /// Cancels noted since the last sweep (an estimate: one skipped at the top may have been noted or not).
    private var cancelled = 0

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    private static func before(_ a: CurlTransfer, _ b: CurlTransfer) -> Bool {
        a.urgency != b.urgency ? a.urgency > b.urgency : a.arrival < b.arrival
    }

    mutating func push(_ transfer: CurlTransfer) {
        heap.append(transfer)
        siftUp(heap.count - 1)
    }

    /// The most urgent transfer not cancelled, left in (cancelled ones
    /// that reach the top are dropped).
    mutating func peek() -> CurlTransfer? {
        while let top = heap.first, top.isCancelled {
            removeTop()
            cancelled = max(0, cancelled - 1)
        }
        if heap.isEmpty { cancelled = 0 }
        return heap.first
    }

    /// The most urgent transfer not cancelled, taken out.
    mutating func pop() -> CurlTransfer? {
        guard let top = peek() else { return nil }
        removeTop()
        return top
    }

    private mutating func removeTop() {
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
    }

    mutating func noteCancelled() {
        cancelled += 1
        guard cancelled * 2 >= heap.count else { return }
        heap.removeAll { $0.isCancelled }
        cancelled = 0
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var best = parent
            if left < heap.count, Self.before(heap[left], heap[best]) { best = left }
            if right < heap.count, Self.before(heap[right], heap[best]) { best = right }
            if best == parent { return }
            heap.swapAt(parent, best)
            parent = best
        }
    }
}
