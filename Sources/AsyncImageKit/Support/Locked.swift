import Foundation

/// A value guarded by a lock (`NSLock`, i.e. a pthread mutex).
///
/// Used instead of `Synchronization.Mutex`, whose futex-based lock on Linux is
/// invisible to ThreadSanitizer (every access under it is reported as a race),
/// and because it may hold non-`Sendable` references (targets, notification
/// centers) that only ever cross threads under the lock.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
