/// The engine's promise at scale: no call walks every pending request.
/// Cancelling, `url(for:)`, re-ranking and starting the next transfer go
/// through indexes (by URL, by target and action, the transfer queue's
/// heaps); what loops remain walk only what the call itself affects, or
/// work that was put off (ended requests dropped lazily from a lane, stale
/// heap entries swept), which is paid for once per request.
///
/// Debug builds count the elements those loops visit, for the tests that
/// hold the engine to it (IndexWalkTests): the count per call must not grow
/// with the number of pending requests. Release builds count nothing.
/// (Heap sifts are O(log n) by construction and are not counted.)
enum IndexWalk {
    #if DEBUG
    /// Filled by the engine on the thread that binds it (see ``counter``).
    final class Counter: @unchecked Sendable {
        var steps = 0
        init() {}
    }

    /// Bound by a test around the calls it measures: only work done on that
    /// thread, inside them, is counted (the loader's own threads see nil).
    @TaskLocal static var counter: Counter?

    @inline(__always) static func count(_ steps: Int = 1) {
        counter?.steps += steps
    }
    #else
    @inline(__always) static func count(_ steps: Int = 1) {}
    #endif
}
