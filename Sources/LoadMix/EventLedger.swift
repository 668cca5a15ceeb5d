import AsyncImageKit
import Foundation

/// Counts every request's end through the loader's event monitor: each
/// request number, from 1 up, must end exactly once (``LoaderEvent/Kind/delivered(success:)``
/// or ``LoaderEvent/Kind/cancelled``), and no event may follow its end in
/// the loader's order of events (``LoaderEvent/sequence``: the monitor may
/// see two threads' events in either order).
///
/// Its memory stays bounded however long it runs: requests are forgotten a
/// while after they end (a low-water mark below which every request has
/// ended, and a window of recent ends kept for events that arrive late).
final class EventLedger: @unchecked Sendable {
    private let lock = NSLock()
    /// Every request at or below this number has ended (and left the window).
    private var watermark: UInt64 = 0
    /// Ended requests above the watermark, and the ends kept in the window: number -> the end's sequence.
    private var ended: [UInt64: UInt64] = [:]
    /// Ended requests at or below the watermark still kept, oldest first.
    private var window: [UInt64] = []
    private static let windowSize = 4096
    private(set) var highestID: UInt64 = 0
    private var counts = Counts()
    private var problems = Problems()

    struct Counts: Sendable {
        var delivered = 0
        var succeeded = 0
        var cancelled = 0
        /// Ends of requests for `/async/` URLs (the async API's).
        var asyncDelivered = 0
        var asyncCancelled = 0
        var events = 0
    }

    func record(_ event: LoaderEvent) {
        lock.withLock {
            counts.events += 1
            let id = event.requestID
            highestID = max(highestID, id)
            let isEnd: Bool
            switch event.kind {
            case .delivered, .cancelled: isEnd = true
            default: isEnd = false
            }
            if let end = ended[id] {
                if isEnd {
                    problems.add("request \(id) ended twice (\(event.kind) after an earlier end)")
                } else if event.sequence > end {
                    problems.add("request \(id): \(event.kind) after its end")
                }
                return
            }
            if id <= watermark {
                problems.add("request \(id): \(event.kind) long after its end")
                return
            }
            guard isEnd else { return }
            ended[id] = event.sequence
            let async = LoadImageServer.isAsync(event.url)
            if case .delivered(let success) = event.kind {
                counts.delivered += 1
                if success { counts.succeeded += 1 }
                if async { counts.asyncDelivered += 1 }
            } else {
                counts.cancelled += 1
                if async { counts.asyncCancelled += 1 }
            }
            // Moves the watermark over the run of ended requests just above it.
            while ended[watermark + 1] != nil {
                watermark += 1
                window.append(watermark)
            }
            if window.count > 2 * Self.windowSize {
                for old in window.prefix(Self.windowSize) { ended[old] = nil }
                window.removeFirst(Self.windowSize)
            }
        }
    }

    /// Requests made and not yet ended (by the events seen so far).
    var open: Int {
        lock.withLock { Int(highestID) - counts.delivered - counts.cancelled }
    }

    var snapshot: (counts: Counts, highestID: UInt64, watermark: UInt64, problems: Problems) {
        lock.withLock { (counts, highestID, watermark, problems) }
    }
}

/// Violations found, the first few kept in full.
struct Problems: Sendable {
    private(set) var count = 0
    private(set) var first: [String] = []

    mutating func add(_ text: String) {
        count += 1
        if first.count < 40 { first.append(text) }
    }

    mutating func add(_ other: Problems) {
        count += other.count
        first += other.first.prefix(max(0, 40 - first.count))
    }
}
