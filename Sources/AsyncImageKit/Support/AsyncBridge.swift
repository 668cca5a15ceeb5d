import Foundation

/// Joins a callback-based operation, a checked continuation, and Swift task
/// cancellation, so that the continuation is resumed exactly once: with the
/// operation's result, or with `CancellationError` when the task is cancelled
/// first (the operation is then cancelled too).
///
/// With `cancelResumes: false` a task cancellation only cancels the
/// operation, which must then resume (with `CancellationError`, or with the
/// result it had already decided on): the operation alone decides which
/// outcome wins.
final class AsyncBridge<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, Error>?
    private var cancelOperation: (() -> Void)?
    private var cancelled = false
    /// Set once the result is in: a cancel operation set after that is dropped.
    private var finished = false
    /// Whether a task cancellation resumes the continuation itself.
    private let cancelResumes: Bool

    private init(cancelResumes: Bool) { self.cancelResumes = cancelResumes }

    /// Runs `start` (which must eventually call ``resume(_:)`` unless cancelled)
    /// and waits for the result.
    static func run(
        cancelResumes: Bool = true, _ start: @escaping (AsyncBridge<Value>) -> Void
    ) async throws -> Value {
        let bridge = AsyncBridge<Value>(cancelResumes: cancelResumes)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard bridge.install(continuation) else { return }
                start(bridge)
            }
        } onCancel: {
            bridge.cancel()
        }
    }

    private func install(_ continuation: CheckedContinuation<Value, Error>) -> Bool {
        lock.lock()
        let isCancelled = cancelled
        if !isCancelled { self.continuation = continuation }
        lock.unlock()
        if isCancelled { continuation.resume(throwing: CancellationError()) }
        return !isCancelled
    }

    /// Sets how to cancel the operation; runs it at once if the task was
    /// already cancelled, and drops it if the result is already in (holding
    /// it would keep the operation, and whatever it holds, alive for good).
    func onCancel(_ operation: @escaping () -> Void) {
        lock.lock()
        let isCancelled = cancelled
        if !isCancelled && !finished { cancelOperation = operation }
        lock.unlock()
        if isCancelled { operation() }
    }

    /// Resumes with the operation's result (ignored after cancellation).
    func resume(_ result: Result<Value, Error>) {
        lock.lock()
        finished = true
        let waiting = continuation
        continuation = nil
        cancelOperation = nil
        lock.unlock()
        waiting?.resume(with: result)
    }

    private func cancel() {
        lock.lock()
        cancelled = true
        let operation = cancelOperation
        cancelOperation = nil
        var waiting: CheckedContinuation<Value, Error>?
        // Not started yet (no continuation): `install` resumes with CancellationError.
        if cancelResumes || continuation == nil {
            finished = true
            waiting = continuation
            continuation = nil
        }
        lock.unlock()
        operation?()
        waiting?.resume(throwing: CancellationError())
    }
}
