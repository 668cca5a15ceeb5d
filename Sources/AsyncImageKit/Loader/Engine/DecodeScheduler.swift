import Foundation

/// The decode stage's queue: bodies that wait for a decoder, and the
/// decoders running. One decoder per core (decoding is CPU-bound); the next
/// body is the one of the highest ``QueueRank`` (the transfer queue's
/// order: priority, then the loader's ``QueueOrder``), ranked when a
/// decoder frees up, so a priority changed while a body waits counts.
///
/// A waiting body still holds its transfer slot (undecoded bodies cannot
/// pile up), so at most ``AsyncImageLoader/concurrentLoads`` wait: picking
/// the best is a walk of those few, never of the request queue.
struct DecodeScheduler {
    private var waiting: [LoadJob] = []
    /// Decodes running, at most ``threads``.
    private(set) var running = 0
    /// One decoder per core.
    let threads = max(1, ProcessInfo.processInfo.activeProcessorCount)
    /// The order among equal priorities (the transfer queue's).
    let order: QueueOrder

    init(order: QueueOrder) { self.order = order }

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
    mutating func finished() { running -= 1 }

    /// Empties the queue (the loader's `deinit`).
    mutating func removeAll() { waiting = [] }
}
