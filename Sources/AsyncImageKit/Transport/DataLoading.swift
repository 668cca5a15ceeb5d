import Foundation

/// Where an ``AsyncImageLoader`` gets bytes: the transport seam.
///
/// ``DataLoader`` (libcurl, and `file` URLs) is the default. Tests and
/// programs with their own transport pass another through
/// ``AsyncImageLoader/Configuration/dataLoader``.
///
/// What the loader relies on:
/// - `completion` is called at most once, from any thread but never from
///   inside `loadData` itself, unless the returned task was cancelled first;
/// - ``DataLoadingTask/cancel()`` says truthfully whether `completion` is now
///   sure never to run (the loader then frees the transfer's slot itself).
public protocol DataLoading: Sendable {
    /// Starts loading `url`; `timeout` is in seconds from the start (zero,
    /// negative, NaN or infinite: no limit).
    func loadData(
        from url: URL, timeout: Double, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask
}

/// A transfer started by a ``DataLoading``.
public protocol DataLoadingTask: Sendable {
    /// Cancels the transfer. Returns true when the completion handler is now
    /// sure never to run, false when it has run or is already running.
    @discardableResult
    func cancel() -> Bool
}

extension DataLoader: DataLoading {
    /// Loads `url` with this loader's configuration and `timeout`.
    public func loadData(
        from url: URL, timeout: Double, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        var configuration = self.configuration
        configuration.timeout = timeout
        return DataLoader(configuration: configuration, completionQueue: completionQueue)
            .loadData(from: url, completion: completion)
    }
}

extension DataTask: DataLoadingTask {}
