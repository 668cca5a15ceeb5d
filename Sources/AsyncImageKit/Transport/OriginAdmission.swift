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
struct OriginAdmission {
    /// The cap per origin; 0: none.
    let limit: Int
    /// Transfers holding a place, by origin.
    private var running: [String: Int] = [:]
    /// Transfers waiting for a place, by origin, most urgent first.
    private var waiting: [String: WaitingTransfers] = [:]
    private var sequence: UInt64 = 0
    /// Transfers waiting, cancelled ones not yet swept included.
    private(set) var waitingCount = 0

    init(limit: Int) { self.limit = max(0, limit) }

    /// Whether `transfer` may start now; if not, it waits here.
    /// `multiplexes`: what is known of its origin.
    mutating func admit(_ transfer: CurlTransfer, multiplexes: Bool?) -> Bool {
        sequence &+= 1
        transfer.arrival = sequence
        guard limit > 0, multiplexes != true else { return true }
        let origin = transfer.origin
        if running[origin, default: 0] < limit {
            running[origin, default: 0] += 1
            transfer.holdsOriginPlace = true
            return true
        }
        waiting[origin, default: WaitingTransfers()].push(transfer)
        waitingCount += 1
        return false
    }

    /// `transfer` ended (finished, or cancelled after it started): gives
    /// its place back; returns the transfer that takes it, if one waits.
    mutating func ended(_ transfer: CurlTransfer) -> CurlTransfer? {
        guard transfer.holdsOriginPlace else { return nil }
        transfer.holdsOriginPlace = false
        let origin = transfer.origin
        if let next = pop(origin) {
            if waiting[origin]?.isEmpty == true { waiting[origin] = nil }
            next.holdsOriginPlace = true
            return next
        }
        waiting[origin] = nil
        running[origin, default: 1] -= 1
        if running[origin] == 0 { running[origin] = nil }
        return nil
    }

    /// The origin multiplexes: every transfer waiting for it, to start now.
    mutating func multiplexes(_ origin: String) -> [CurlTransfer] {
        var all: [CurlTransfer] = []
        while let next = pop(origin) { all.append(next) }
        waiting[origin] = nil
        return all
    }

    /// A waiting transfer was cancelled: forgotten (lazily; see `WaitingTransfers`).
    mutating func cancelledWhileWaiting(_ transfer: CurlTransfer) {
        let origin = transfer.origin
        guard var queue = waiting[origin] else { return }
        let before = queue.count
        queue.noteCancelled()
        waitingCount -= before - queue.count
        waiting[origin] = queue.isEmpty ? nil : queue
    }

    /// The origin's most urgent waiting transfer that was not cancelled.
    private mutating func pop(_ origin: String) -> CurlTransfer? {
        guard var queue = waiting[origin] else { return nil }
        let before = queue.count
        let next = queue.pop()
        waitingCount -= before - queue.count
        waiting[origin] = queue.isEmpty ? nil : queue
        return next
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

    /// The most urgent transfer not cancelled, taken out.
    mutating func pop() -> CurlTransfer? {
        while !heap.isEmpty {
            let top = heap[0]
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
            if top.isCancelled {
                cancelled = max(0, cancelled - 1)
                continue
            }
            return top
        }
        cancelled = 0
        return nil
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
