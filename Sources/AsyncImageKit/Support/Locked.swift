import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A value guarded by a pthread mutex.
///
/// Used instead of `Synchronization.Mutex`, whose futex-based lock on Linux is
/// invisible to ThreadSanitizer (every access under it is reported as a race),
/// and because it may hold non-`Sendable` references (targets, notification
/// centers) that only ever cross threads under the lock. The value lives
/// behind a pointer, so an access costs no dynamic exclusivity check (on the
/// memory cache's hit path such a check would be about a tenth of the time).
final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let value: UnsafeMutablePointer<Value>

    init(_ initial: Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inline(__always)
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}

/// A value guarded by a spin lock, for critical sections of a few dozen
/// instructions taken at a very high rate (the memory cache's hit path).
/// Uncontended it costs two atomic operations; a waiter spins briefly, then
/// yields the CPU. Acquire/release atomics keep it visible to ThreadSanitizer.
final class SpinLocked<Value>: @unchecked Sendable {
    private let held = Atomic<Bool>(false)
    private let value: UnsafeMutablePointer<Value>

    init(_ initial: Value) {
        value = .allocate(capacity: 1)
        value.initialize(to: initial)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
    }

    @inline(__always)
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        var spins = 0
        while !held.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged {
            spins += 1
            if spins > 64 {
                sched_yield()
                spins = 0
            }
        }
        defer { held.store(false, ordering: .releasing) }
        return try body(&value.pointee)
    }
}
