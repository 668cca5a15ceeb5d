import Foundation

/// A transfer as the engine holds it. The transport (and the
/// ``AsyncImageLoader/Configuration/requestModifier``, user code) is called
/// after the loader's lock is released, so a cancel can come before the
/// transport's task exists.
///
/// - Before the transfer starts (`idle`, a disk lookup may be running): a
///   cancel is final: the transport is never called, and the loader frees
///   the slot at once.
/// - While it starts (`starting`: the modifier and `loadData` run): a cancel
///   is remembered and answers false (the loader keeps the slot); the task
///   is cancelled when it arrives, and if it will never complete,
///   ``attach(_:)`` says so and the loader frees the slot then. So the
///   transport never holds more transfers than the loader has slots.
/// - Once attached: a cancel is the task's.
final class TransferHandle: @unchecked Sendable {
    private enum State {
        case idle, starting, cancelWhileStarting, cancelled
        case attached(any DataLoadingTask)
        /// Its task cancelled or its outcome in: the task is let go (its
        /// closures hold this handle and the job: kept, they made a cycle
        /// that leaked every network transfer; LeakSanitizer found it).
        case ended
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
        if case .cancelWhileStarting = state {
            cancelNow = true
            state = .cancelled
        } else {
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
        case .cancelWhileStarting, .cancelled, .ended:
            task = nil
        case .attached(let attached):
            task = attached
            state = .ended
        }
        lock.unlock()
        guard let task else { return result }
        return task.cancel()
    }

    /// The transfer's outcome is in (``AsyncImageLoader/transferFinished``):
    /// the task is let go, and a later cancel does nothing.
    func end() {
        lock.lock()
        if case .attached = state { state = .ended }
        lock.unlock()
    }
}
