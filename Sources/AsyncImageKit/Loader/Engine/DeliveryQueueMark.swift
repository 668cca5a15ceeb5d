import Dispatch
import Foundation

/// Tells whether code runs on a given delivery queue, so work that must not
/// race a delivery (clearing a target's image) can run inline there and be
/// handed to the queue from anywhere else.
///
/// A queue is marked with a dispatch-specific value the first time it is
/// asked about. The main queue also counts as current on the main thread:
/// nothing else runs main-queue work, so nothing can race it there.
enum DeliveryQueueMark {
    /// The value a marked queue holds; compared by identity.
    final class Mark: Sendable {}

    private static let key = DispatchSpecificKey<Mark>()
    /// Serializes marking, so a queue marked from two threads at once keeps one mark.
    private static let lock = NSLock()

    /// Whether the calling code runs on `queue` (or a queue that targets it).
    static func isCurrent(_ queue: DispatchQueue) -> Bool {
        let mark = mark(of: queue)
        if DispatchQueue.getSpecific(key: key) === mark { return true }
        return Thread.isMainThread && DispatchQueue.main.getSpecific(key: key) === mark
    }

    /// Runs `body` now if the caller is on `queue`, else asynchronously on it.
    static func run(on queue: DispatchQueue, _ body: @escaping @Sendable () -> Void) {
        if isCurrent(queue) { body() } else { queue.async(execute: body) }
    }

    private static func mark(of queue: DispatchQueue) -> Mark {
        lock.withLock {
            if let mark = queue.getSpecific(key: key) { return mark }
            let mark = Mark()
            queue.setSpecific(key: key, value: mark)
            return mark
        }
    }
}
