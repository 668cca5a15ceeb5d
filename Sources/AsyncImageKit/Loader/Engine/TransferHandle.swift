import Foundation

/// A transfer as the engine holds it. The transport (and the
/// ``AsyncImageLoader/Configuration/requestModifier``, user code) is called
/// after the loader's lock is released, so a cancel can come before the
/// transport's task exists.
///
/// - Before the transfer starts (`idle`, a disk lookup may be running, or
///   a retry's wait: each try has a handle of its own): a cancel is final: the transport is never called, and the loader frees
///   the slot at once.
/// - While it starts (`starting`: the modifier and `loadData` run): a cancel
///   is remembered and answers false (the loader keeps the slot); the task
///   is cancelled when it arrives, and if it will never complete,
///   ``attach(_:)`` says so and the loader frees the slot then. So the
///   transport never holds more transfers than the loader has slots.
/// - Once attached: a cancel is the task's.
/// - Once the task's completion runs (``finished()``), or a cancel made sure
///   it never will: the handle lets go of the task. The task's completion
///   holds the handle (and the job): a handle that kept its task would keep
///   the transfer, its closures and the job alive for good, a cycle per transfer.
final class TransferHandle: @unchecked Sendable {
    private enum State {
        case idle, starting, cancelWhileStarting, cancelled, finished
        case attached(any DataLoadingTask)
    }

    private let lock = NSLock()
    private var state = State.idle

    /// Whether it was cancelled before it started (the transport is then not called).
    var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        if case .cancelled = state { return true }
        return false
    }

    /// Marks the transfer starting; false when it was cancelled first.
    func beginStarting() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard case .idle = state else { return false }
        state = .starting
        return true
    }

    /// Hands over the transport's task. Returns true when the transfer was
    /// cancelled while starting and the task will never complete (the
    /// caller then frees the slot).
    func attach(_ task: any DataLoadingTask) -> Bool {
        lock.lock()
        let cancelNow: Bool
        switch state {
        case .cancelWhileStarting:
            cancelNow = true
            state = .cancelled
        case .finished:
            cancelNow = false  // its completion ran already: nothing to hold
        default:
            cancelNow = false
            state = .attached(task)
        }
        lock.unlock()
        // (Plain lock and unlock: a Swift 6.3 compiler crash, in
        // ClosureLifetimeFixup, comes with `withLock` and an existential here.)
        return cancelNow && task.cancel()
    }

    /// Cancels the transfer. True when its completion is sure never to be
    /// taken by the loader (the loader frees the slot); false when it has
    /// run, is running, or the transfer is starting (see above).
    @discardableResult
    func cancel() -> Bool {
        lock.lock()
        let task: (any DataLoadingTask)?
        var result = false
        switch state {
        case .idle:
            state = .cancelled
            task = nil
            result = true
        case .starting:
            state = .cancelWhileStarting
            task = nil
        case .cancelWhileStarting, .cancelled, .finished:
            task = nil
        case .attached(let attached):
            task = attached
        }
        lock.unlock()
        guard let task else { return result }
        guard task.cancel() else { return false }
        // Its completion will never run (to call `finished()`): let go of it here.
        lock.lock()
        if case .attached = state { state = .cancelled }
        lock.unlock()
        return true
    }

    /// The task's completion is running: the handle lets go of the task
    /// (see above). Called first thing in the completion, which may run
    /// before the task is attached; a later ``attach(_:)`` then keeps nothing.
    func finished() {
        lock.lock()
        let released: (any DataLoadingTask)?
        switch state {
        case .attached(let task):
            released = task
            state = .finished
        case .starting:
            released = nil
            state = .finished
        case .idle, .cancelWhileStarting, .cancelled, .finished:
            released = nil
        }
        lock.unlock()
        withExtendedLifetime(released) {}  // the task's last release, outside the lock
    }
}
