import Foundation

/// A transfer as the engine holds it. The transport (and the
/// ``AsyncImageLoader/Configuration/requestModifier``, user code) is called
/// after the loader's lock is released, so a cancel can come before the
/// transport's task exists: the handle remembers it and cancels the task
/// when it arrives.
final class TransferHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var task: (any DataLoadingTask)?
    private var cancelled = false

    /// Whether it was cancelled before its task existed (the transport is then not called).
    var isCancelled: Bool { lock.withLock { cancelled } }

    /// Hands over the transport's task (cancelled at once if the handle was).
    func attach(_ newTask: any DataLoadingTask) {
        lock.lock()
        let cancelNow = cancelled
        if !cancelNow { task = newTask }
        lock.unlock()
        if cancelNow { newTask.cancel() }
    }

    /// Cancels the transfer. True when its completion is sure never to be
    /// taken by the loader: the task said so, or it did not exist yet (if
    /// its completion runs anyway, the loader finds its job finished and
    /// ignores it).
    @discardableResult
    func cancel() -> Bool {
        lock.lock()
        let current = task
        if current == nil { cancelled = true }
        lock.unlock()
        // (A Swift 6.3 compiler crash, in ClosureLifetimeFixup, comes with
        // `withLock` and an existential here: plain lock and unlock.)
        guard let current else { return true }
        return current.cancel()
    }
}
