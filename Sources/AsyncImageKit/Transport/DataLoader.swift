import Foundation

/// Downloads bodies over `http` and `https` with libcurl, and reads `file` URLs.
///
/// A `file` URL must name a regular file (not a directory, FIFO or device)
/// no larger than the body limit; it is read on a background queue, never on
/// the transport thread, and the timeout does not apply to it.
///
/// All transfers of all loaders run on one transport thread (libcurl's multi
/// interface; one per distinct ``TransportConfiguration/maxConnectionsPerHost``),
/// where they share connections, DNS entries and TLS sessions; completion
/// handlers run on ``completionQueue``, never on that thread, so decoding
/// in a handler does not stall other transfers.
///
/// `https` servers' certificates are always verified, against the system's
/// store or ``TransportConfiguration/certificateAuthorities``; a failure is
/// ``AsyncImageError/tls(_:code:message:)``. A connection that finds no
/// route to the network (the system's `ENETUNREACH`) fails with
/// ``AsyncImageError/offline(_:)``; one to a host that cannot be reached
/// (`EHOSTUNREACH`) with ``AsyncImageError/transport(_:code:message:)`` 7,
/// as a refused one. Where a server offers HTTP/2,
/// concurrent transfers to it share one connection
/// (``TransportConfiguration/allowsHTTP2``); ``DataResponse/httpVersion`` and
/// ``DataResponse/connection`` tell which version and connection served each.
///
/// Every transfer keeps to the configuration's limits (body and header
/// bytes, redirects, time) and its ``TransportConfiguration/urlPolicy``:
/// the URL of the first request and of every redirect hop, and the address
/// of every connection before it is opened or reused (see ``URLPolicy``);
/// redirects never lead to `file` or any scheme but `http` and `https`.
/// Transfers go through the proxy the environment names, none, or one of
/// their own (``TransportConfiguration/proxy``).
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
    /// An unsupported scheme, a URL without a host, or one the configuration's
    /// ``TransportConfiguration/urlPolicy`` refuses fails at once (on the
    /// completion queue) without touching the network.
    ///
    /// A request with a `Range` header asks for the body unencoded
    /// (`Accept-Encoding: identity`) even when the configuration accepts
    /// encoded bodies: byte offsets then count the bytes that were stored.
    ///
    /// - Parameters:
    ///   - url: what to fetch.
    ///   - headers: request headers, by name; they replace the
    ///     configuration's of the same name, and an empty value removes one.
    ///   - observer: progress and partial bodies (see ``DataTransferObserver``).
    ///   - completion: the response or the failure, once, on the loader's completion queue.
    @discardableResult
    func loadData(
        from url: URL, headers: [String: String] = [:], observer: DataTransferObserver = DataTransferObserver(),
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> DataTask {
        loadData(from: url, headers: headers, observer: observer, urgency: TransferUrgency(), completion: completion)
    }

    /// ``loadData(from:headers:observer:completion:)`` with the transfer's
    /// place among those waiting for a connection of its host.
    func loadData(
        from url: URL, headers: [String: String], observer: DataTransferObserver, urgency: TransferUrgency,
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> DataTask {
        let transfer = CurlTransfer(
            url: url, configuration: configuration, headers: headers, observer: observer, urgency: urgency,
            completionQueue: completionQueue, completion: completion)
        if let error = Self.validate(url, policy: configuration.urlPolicy) {
            transfer.deliver(.failure(error))
        } else if url.scheme?.lowercased() == "file" {
            FileReader.start(transfer)
        } else {
            CurlEventLoop.shared(maxConnectionsPerHost: configuration.maxConnectionsPerHost).start(transfer)
        }
        return DataTask(transfer: transfer)
    }

    /// Loads `url`; cancelling the calling Swift task cancels the transfer.
    ///
    /// - Throws: ``AsyncImageError``, or `CancellationError` when the task was cancelled.
    public func data(from url: URL) async throws -> DataResponse {
        try await AsyncBridge<DataResponse>.run { bridge in
            let task = self.loadData(from: url) { result in bridge.resume(result.mapError { $0 }) }
            bridge.onCancel { task.cancel() }
        }
    }

    /// Why `url` cannot be loaded, or nil.
    static func validate(_ url: URL, policy: URLPolicy) -> AsyncImageError? {
        guard let scheme = url.scheme?.lowercased(), supportedSchemes.contains(scheme) else {
            return .unsupportedScheme(url)
        }
        if scheme != "file", (url.host ?? "").isEmpty { return .invalidURL(url.absoluteString) }
        if scheme == "file", url.path.isEmpty { return .invalidURL(url.absoluteString) }
        if let reason = policy.refusal(for: url) { return .refused(url, reason: reason) }
        return nil
    }
}
