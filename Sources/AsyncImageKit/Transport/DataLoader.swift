import Foundation
import Synchronization

/// Downloads bodies over `http`, `https` and `file` with libcurl.
///
/// All transfers of all loaders run on one transport thread (libcurl's multi
/// interface); completion handlers run on ``completionQueue``, never on that
/// thread, so decoding in a handler does not stall other transfers.
///
/// ```swift
/// let loader = DataLoader(configuration: .init(timeout: 10))
/// let task = loader.loadData(from: url) { result in
///     switch result {
///     case .success(let response): print(response.data.count, "bytes")
///     case .failure(let error): print(error)   // AsyncImageError
///     }
/// }
/// task.cancel()   // the handler is then never called
/// ```
public final class DataLoader: Sendable {
    /// Limits applied to every transfer.
    public let configuration: TransportConfiguration
    /// Where completion handlers run.
    public let completionQueue: DispatchQueue

    /// Creates a loader.
    ///
    /// - Parameters:
    ///   - configuration: timeout, body limit, redirect limit.
    ///   - completionQueue: where completion handlers run; a concurrent global queue by default.
    public init(
        configuration: TransportConfiguration = TransportConfiguration(),
        completionQueue: DispatchQueue = .global(qos: .userInitiated)
    ) {
        self.configuration = configuration
        self.completionQueue = completionQueue
    }

    /// The schemes a loader accepts.
    public static let supportedSchemes: Set<String> = ["http", "https", "file"]

    /// Starts loading `url`. The handler runs exactly once, on
    /// ``completionQueue``, unless the task is cancelled first.
    ///
    /// An unsupported scheme or a URL without a host fails at once (on the
    /// completion queue) without touching the network.
    @discardableResult
    public func loadData(
        from url: URL, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> DataTask {
        let transfer = CurlTransfer(
            url: url, configuration: configuration, completionQueue: completionQueue, completion: completion)
        if let error = Self.validate(url) {
            transfer.deliver(.failure(error))
        } else {
            CurlEventLoop.shared.start(transfer)
        }
        return DataTask(transfer: transfer)
    }

    /// Loads `url`; cancelling the calling Swift task cancels the transfer.
    ///
    /// - Throws: ``AsyncImageError``, or `CancellationError` when the task was cancelled.
    public func data(from url: URL) async throws -> DataResponse {
        let box = ContinuationBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DataResponse, Error>) in
                guard box.install(continuation) else { return }
                let task = loadData(from: url) { result in box.resume(result.mapError { $0 as Error }) }
                box.attach(task)
            }
        } onCancel: {
            box.cancel()
        }
    }

    /// Why `url` cannot be loaded, or nil.
    static func validate(_ url: URL) -> AsyncImageError? {
        guard let scheme = url.scheme?.lowercased(), supportedSchemes.contains(scheme) else {
            return .unsupportedScheme(url)
        }
        if scheme != "file", (url.host ?? "").isEmpty { return .invalidURL(url.absoluteString) }
        if scheme == "file", url.path.isEmpty { return .invalidURL(url.absoluteString) }
        return nil
    }
}

/// Joins a continuation, the task it waits for, and Swift task cancellation,
/// so that exactly one of them resumes the continuation.
private final class ContinuationBox: Sendable {
    private struct State {
        var continuation: CheckedContinuation<DataResponse, Error>?
        var task: DataTask?
        var cancelled = false
    }
    private let state = Mutex(State())

    /// Stores the continuation; false (after resuming it) if already cancelled.
    func install(_ continuation: CheckedContinuation<DataResponse, Error>) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            if state.cancelled { return true }
            state.continuation = continuation
            return false
        }
        if cancelled { continuation.resume(throwing: CancellationError()) }
        return !cancelled
    }

    func attach(_ task: DataTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func resume(_ result: Result<DataResponse, Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<DataResponse, Error>? in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    func cancel() {
        let (continuation, task) = state.withLock {
            state -> (CheckedContinuation<DataResponse, Error>?, DataTask?) in
            state.cancelled = true
            defer { state.continuation = nil }
            return (state.continuation, state.task)
        }
        task?.cancel()
        continuation?.resume(throwing: CancellationError())
    }
}
