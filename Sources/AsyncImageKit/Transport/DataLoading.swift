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
///   sure never to run (the loader then frees the transfer's slot itself);
/// - a transfer that could not be made because there is no route to the
///   server fails with ``AsyncImageError/offline(_:)`` (the loader goes
///   offline on it: see ``AsyncImageLoader/networkStatus``), and one that
///   could not resolve the host name with ``AsyncImageError/transport(_:code:message:)``
///   code 6, as libcurl's.
///
/// A custom transport implements ``loadData(_:completion:)``; it may also
/// implement ``loadData(_:observer:completion:)`` to report progress and
/// partial bodies (the default implementation ignores the observer).
public protocol DataLoading: Sendable {
    /// Starts loading `request`. The loader never calls it under its own lock.
    func loadData(
        _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask

    /// Starts loading `request`, reporting to `observer` while it runs (see
    /// ``DataTransferObserver`` for what ``DataLoader`` guarantees). The
    /// loader never calls it under its own lock.
    func loadData(
        _ request: DataRequest, observer: DataTransferObserver,
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask
}

extension DataLoading {
    /// Ignores `observer` and calls ``loadData(_:completion:)``: a transport
    /// that does not implement observation reports neither progress nor
    /// partial bodies (so nothing is ever resumed through it).
    public func loadData(
        _ request: DataRequest, observer: DataTransferObserver,
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        loadData(request, completion: completion)
    }
}

/// What a transfer asks for: a URL, request headers and a time limit.
public struct DataRequest: Sendable, Hashable {
    /// The URL (`http`, `https` or `file`; headers are ignored for `file`).
    public var url: URL
    /// Request headers, by name. They replace the transport's own of the same
    /// name (`User-Agent`, `Accept`); an empty value removes that header.
    public var headers: [String: String]
    /// Seconds the transfer may take from its start (zero, negative, NaN or
    /// infinite: no limit). ``DataLoader`` uses it in place of its
    /// ``TransportConfiguration/timeout``; an ``AsyncImageLoader`` passes
    /// its ``AsyncImageLoader/loadingTimeout``.
    public var timeout: Double
    /// Which URLs and addresses the transfer may reach, redirects included
    /// (see ``URLPolicy``; the loader passes its
    /// ``AsyncImageLoader/Configuration/urlPolicy``). ``DataLoader`` applies
    /// it together with its own ``TransportConfiguration/urlPolicy``.
    public var policy: URLPolicy
    /// Whether any HTTP status is a response (with its headers and body)
    /// rather than ``AsyncImageError/httpStatus(_:code:headers:)``: what the HTTP
    /// cache and ``AsyncImageLoader/data(for:)-(ImageRequest)`` ask for.
    /// Default false: a status of 400 or more fails the transfer.
    public var acceptsAnyStatus = false
    /// Whether to ask for and decode compressed bodies (`Accept-Encoding`);
    /// nil: the transport's own setting
    /// (``TransportConfiguration/acceptsEncodedBodies``). False also passes
    /// on a body whose `Transfer-Encoding` names a coding libcurl does not
    /// know, as sent, read until the connection closes (RFC 9112 §6.3),
    /// where libcurl would fail the transfer; `chunked` is still undone.
    public var acceptsEncodedBodies: Bool?
    /// Its place among the transfers waiting for a connection of their host
    /// (``TransportConfiguration/maxConnectionsPerHost``): the more urgent
    /// first, equals in the order they were asked for. An
    /// ``AsyncImageLoader`` passes its queue's order (see
    /// ``TransferUrgency``); default: all equal.
    public var urgency = TransferUrgency()

    /// A request.
    public init(url: URL, headers: [String: String] = [:], timeout: Double = 60, policy: URLPolicy = .unrestricted) {
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.policy = policy
    }
}

/// How urgent a transfer is, for the order in which transfers waiting for
/// a connection of their host get one: a higher ``priority`` first, then
/// among equal priorities a transfer ``isFirstForTarget`` first, then a
/// higher ``stamp``. Equals go in the order they were asked for.
///
/// An ``AsyncImageLoader`` passes its queue's order at the moment the
/// transfer starts: the request's ``ImagePriority``; whether it is the first
/// request in flight of its target and action (what the target shows first:
/// a cell's thumbnail, before any cell's full image); and, as the stamp,
/// when the target was last touched (``QueueOrder/lifo``: the cells on
/// screen now before those scrolled past) or how long the request has
/// waited (``QueueOrder/fifo``).
///
/// One exception keeps a link busy over HTTP/1.1, where each connection
/// carries one transfer at a time and spends a round trip idle before each
/// answer: first-for-target transfers (small, round-trip bound) hold at
/// most all but one of their origin's connections while transfers of the
/// same priority that are not first for their target wait. The one left
/// carries bytes (full images) while the others go round trips.
public struct TransferUrgency: Sendable, Hashable, Comparable {
    /// The first key (an ``ImagePriority``'s raw value, for a loader).
    public var priority: Int
    /// The second key: the first request in flight of its target (what the
    /// target shows first).
    public var isFirstForTarget: Bool
    /// The third key.
    public var stamp: UInt64

    /// An urgency; the default is the same for every transfer.
    public init(priority: Int = 0, isFirstForTarget: Bool = false, stamp: UInt64 = 0) {
        self.priority = priority
        self.isFirstForTarget = isFirstForTarget
        self.stamp = stamp
    }

    /// Less urgent: a lower priority; the same, and not first for its
    /// target while the other is; or both the same and a lower stamp.
    public static func < (lhs: TransferUrgency, rhs: TransferUrgency) -> Bool {
        (lhs.priority, lhs.isFirstForTarget ? 1 : 0, lhs.stamp) < (rhs.priority, rhs.isFirstForTarget ? 1 : 0, rhs.stamp)
    }
}

/// A transfer started by a ``DataLoading``.
public protocol DataLoadingTask: Sendable {
    /// Cancels the transfer. Returns true when the completion handler is now
    /// sure never to run, false when it has run or is already running.
    /// The loader may call it under its own lock: it must not call back into
    /// the loader (nor wait for a thread that does).
    @discardableResult
    func cancel() -> Bool
}

extension DataLoader: DataLoading {
    /// Loads `request` with this loader's limits, the request's headers and timeout.
    public func loadData(
        _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        loadData(request, observer: DataTransferObserver(), completion: completion)
    }

    /// Loads `request` with this loader's limits, the request's headers and
    /// timeout, reporting to `observer` (see ``DataTransferObserver``).
    public func loadData(
        _ request: DataRequest, observer: DataTransferObserver,
        completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        var configuration = self.configuration
        configuration.timeout = request.timeout
        configuration.urlPolicy = configuration.urlPolicy.restricted(by: request.policy)
        configuration.returnsAnyStatus = request.acceptsAnyStatus
        if let encoded = request.acceptsEncodedBodies {
            configuration.acceptsEncodedBodies = encoded
            configuration.decodesTransferCodings = encoded
        }
        return DataLoader(configuration: configuration, completionQueue: completionQueue)
            .loadData(
                from: request.url, headers: request.headers, observer: observer, urgency: request.urgency,
                completion: completion)
    }
}

extension DataTask: DataLoadingTask {}
