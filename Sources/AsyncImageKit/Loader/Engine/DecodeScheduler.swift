import Foundation

/// The decode stage's queue: bodies that wait for a decoder, and the
/// decoders running: at most ``threads`` (one per core by default; decoding
/// is CPU-bound). The next
/// body is the one of the highest ``QueueRank`` (the transfer queue's
/// order: priority, then the loader's ``QueueOrder``), ranked when a
/// decoder frees up, so a priority changed while a body waits counts.
///
/// A waiting body still holds its transfer slot (undecoded bodies cannot
/// pile up), so at most ``AsyncImageLoader/concurrentLoads`` wait: picking
/// the best is a walk of those few, never of the request queue.
///
/// A running decode has a ``DecodeStop``: signalled when no request waits
/// for the size it decodes any more (``stop(_:)``), it gives up at its next
/// checkpoint and its decoder is free (a bomb's decode no longer outlives
/// every deadline).
///
/// Each decode runs on a serial queue of its own (``queue()``), not on a
/// shared concurrent one: libdispatch gives a concurrent queue's work
/// threads from a pool as wide as the cores, which the loader's disk
/// queue shares, so two CPU-bound decodes held every disk read (a stored
/// thumbnail's included) until one ended; a serial queue's thread comes
/// from the pool that is not capped. The count of decodes stays this
/// type's (``threads``).
struct DecodeScheduler {
    private var waiting: [LoadJob] = []
    /// Decodes running, at most ``threads``.
    private(set) var running = 0
    /// The stop signal of each running decode, by job.
    private var stops: [ObjectIdentifier: DecodeStop] = [:]
    /// The most decodes at once (``AsyncImageLoader/Configuration/concurrentDecodes``, at least 1).
    let threads: Int
    /// The order among equal priorities (the transfer queue's).
    let order: QueueOrder

    init(order: QueueOrder, threads: Int) {
        self.order = order
        self.threads = max(1, threads)
    }

    var hasFreeDecoder: Bool { running < threads }

    /// `job`'s body waits for a decoder.
    mutating func wait(_ job: LoadJob) { waiting.append(job) }

    /// `job` no longer waits (it ended while waiting).
    mutating func remove(_ job: LoadJob) { waiting.removeAll { $0 === job } }

    /// Takes the best waiting job, if a decoder is free, and counts its decode as running.
    mutating func next() -> LoadJob? {
        guard hasFreeDecoder, var best = waiting.indices.last else { return nil }
        var bestRank = QueueRank.of(waiting[best], order)
        for index in waiting.indices.dropLast() {
            let rank = QueueRank.of(waiting[index], order)
            if rank > bestRank { (best, bestRank) = (index, rank) }
        }
        running += 1
        return waiting.remove(at: best)
    }

    /// A decode that ``next()`` counted has ended.
    mutating func finished(_ job: LoadJob) {
        running -= 1
        stops[ObjectIdentifier(job)] = nil
    }

    /// `job`'s next decode run (a size), under a stop signal of its own.
    mutating func begin(_ job: LoadJob) -> DecodeStop {
        let stop = DecodeStop()
        stops[ObjectIdentifier(job)] = stop
        return stop
    }

    /// Nobody waits for the size `job` decodes now: its decode stops.
    func stop(_ job: LoadJob) { stops[ObjectIdentifier(job)]?.stop() }

    /// Where a decode runs: a serial queue of its own (see the type's notes),
    /// marked with ``queueLabel`` (tests ask which queue ran them).
    static func queue() -> DispatchQueue {
        let queue = DispatchQueue(label: "AsyncImageKit.decode", qos: .userInitiated)
        queue.setSpecific(key: queueLabel, value: "AsyncImageKit.decode")
        return queue
    }

    /// Names a decode's queue: `DispatchQueue.getSpecific(key:)` on a decode
    /// is `"AsyncImageKit.decode"`.
    static let queueLabel = DispatchSpecificKey<String>()

    /// Empties the queue (the loader's `deinit`).
    mutating func removeAll() {
        waiting = []
        stops.values.forEach { $0.stop() }
    }
}
