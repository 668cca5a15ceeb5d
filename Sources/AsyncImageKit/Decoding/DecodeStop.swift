import Synchronization

/// Tells a running decode that nobody waits for it any more: the loader's
/// decode stage signals it when the last request for the size being decoded
/// ends (its deadline passed, or it was cancelled), and the decoder gives up
/// at its next checkpoint (every 16 rows of a JPEG or PNG through
/// ``RowSink``, while a progressive JPEG's scans are read, between the
/// frames of an animation) with a failure that ``DecodingFailure/isStopped``
/// marks. Nobody sees that failure: a request that joins after the signal
/// gets a decode of its own (the stage decodes again).
///
/// One per decode run; a flag read with relaxed ordering (a decode that
/// sees it a checkpoint late costs 16 rows).
package final class DecodeStop: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    /// Asks the decode to stop; from any thread.
    package func stop() { flag.store(true, ordering: .relaxed) }

    /// Whether the decode should stop.
    package var isStopped: Bool { flag.load(ordering: .relaxed) }

    /// The failure a decode of `format` ends with once stopped.
    package static func failure(_ format: ImageFormat?) -> AsyncImageError {
        let failure = DecodingFailure(
            format: format, stage: .pixels, reason: "stopped: no request waits for the image", isPixelLimit: false,
            isStopped: true)
        return .decoding(failure, url: nil)
    }
}

/// The ``DecodeStop`` a decode runs under, carried in ``DecodingOptions``
/// without taking part in its equality: two decodes with the same options
/// are the same decode whoever may stop them.
struct DecodeStopSlot: Sendable, Hashable {
    let stop: DecodeStop?

    static func == (lhs: Self, rhs: Self) -> Bool { true }
    func hash(into hasher: inout Hasher) {}
}
