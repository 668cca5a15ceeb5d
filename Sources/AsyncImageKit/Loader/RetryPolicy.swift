import Foundation

/// When a transfer that failed for a passing reason is tried again, how
/// often, and how long the loader waits before each try.
///
/// Set the loader's with ``AsyncImageLoader/Configuration/retryPolicy``
/// (default ``standard``), and a request's own with
/// ``ImageRequest/retryPolicy``, which replaces it:
///
/// ```swift
/// var configuration = AsyncImageLoader.Configuration(deliveryQueue: DispatchQueue(label: "images"))
/// configuration.retryPolicy = RetryPolicy(maxRetries: 3, baseDelay: .milliseconds(100))
/// var request = ImageRequest(url: url)
/// request.retryPolicy = .disabled                     // this one fails at the first error
/// ```
///
/// What is retried (the rule, in one place) — a failure before the
/// response's body began, when the server is briefly unavailable or the
/// connection broke:
/// - the connection refused or its host unreachable (libcurl error 7, as
///   `EHOSTUNREACH` is: a firewall's `icmp-host-prohibited`), reset or broken while the
///   request was sent or the answer awaited (55, 56), or closed without a
///   byte of reply (52), before any body byte arrived;
/// - the statuses `408`, `429`, `502`, `503` and `504`; `429` and `503`
///   with a `Retry-After` (delta-seconds, or an HTTP-date, counted from
///   the response's `Date` when it has one) wait as the server asked.
///
/// What is not retried unless asked for (``retriesTimeouts``): a transfer
/// that timed out (``AsyncImageLoader/loadingTimeout``, or the transport's
/// low-speed limit, ``TransportConfiguration/lowSpeedTime``). So
/// ``AsyncImageLoader/loadingTimeout`` bounds a load: a request that is
/// loading has its outcome within it, retries included (a server that
/// never answers would otherwise hold the request, and its slot, for
/// 1 + ``maxRetries`` timeouts: three minutes with the defaults). Browsers,
/// OkHttp and Coil do not retry a read timeout either. With
/// ``retriesTimeouts``, a timeout before any body byte arrived is retried
/// as a connection failure is, each try with the whole timeout.
///
/// What is never retried:
/// - a transfer that found no route to the network
///   (``AsyncImageError/offline(_:)``), or any failure of the network while
///   the loader is offline (see ``AsyncImageLoader/networkStatus``): its
///   requests are answered from the disk cache, or fail, at once;
/// - a cancelled transfer, a refusal by the URL policy, a TLS or
///   certificate failure, any other status (`4xx` other than `408` and
///   `429`; `500` and `501`), a body or headers over their limit, too many
///   redirects, a decode failure;
/// - a failure after body bytes arrived: what was received is kept (when
///   it can be resumed) and the next load of the URL asks for the rest with
///   `Range` (see ``DataTransferObserver``), instead;
/// - a request that is not idempotent. The loader only sends `GET`
///   (``DataRequest`` has no method to change), but a
///   ``AsyncImageLoader/Configuration/requestModifier`` or the request's
///   headers may add a method-override header (`X-HTTP-Method-Override`,
///   `X-HTTP-Method`, `X-Method-Override`) that some servers obey: one
///   naming a method other than `GET`, `HEAD`, `OPTIONS`, `TRACE`, `PUT`
///   or `DELETE` turns retries off for that transfer;
/// - a stale stored response that may be served when the server cannot be
///   reached (see ``ImageCachePolicy/neverStale``) is served at once
///   instead: an image now rather than a better one later. A revalidation
///   that fails and may not serve its stale response is retried as any
///   transfer.
///
/// How the tries go, for every request sharing the transfer:
/// - **The wait** before retry `n` (1 for the first) is
///   ``baseDelay`` × 2^(n−1), at most ``maxDelay``, spread by ``jitter``
///   (``backoff(beforeRetry:random:)``); a `Retry-After` of a `429` or
///   `503` replaces it, unless it asks for more than ``maxRetryAfter``:
///   then the failure is not retried at all.
/// - **Deadlines**: a request whose time limit (``ImageRequest/timeout``,
///   ``AsyncImageLoader/Configuration/requestTimeout``) would pass before
///   the retry starts is not kept waiting: it fails at once with the
///   failure that would have been retried (such as
///   ``AsyncImageError/httpStatus(_:code:headers:)`` 503), not
///   ``AsyncImageError/timedOut(_:seconds:stage:)``. The others wait.
/// - **Shared**: a retry belongs to the transfer, which requests for one
///   URL share only when their retry policies are equal. Cancelling every
///   request cancels the wait and the transfer; a request that joins during
///   the wait shares the next try. Each request still has exactly one outcome.
/// - **The slot**: the transfer keeps its ``AsyncImageLoader/concurrentLoads``
///   slot while it waits, so a failing host never gets more transfers at
///   once than the loader has slots.
/// - **Seen**: each retry is a ``LoaderEvent/Kind/retrying(attempt:delay:)``
///   event for every request waiting for it (with the failure in
///   ``LoaderEvent/error``) and a line at `info` in the loader's
///   ``AsyncImageLoader/Configuration/logger``; a failure after retries
///   is delivered as usual, with the last try's error.
///
/// The data-level API (``AsyncImageLoader/data(for:)-(ImageRequest)``)
/// returns the server's answer as it is and retries nothing.
public struct RetryPolicy: Sendable, Hashable {
    /// How the wait before a retry is spread, so that clients failed by
    /// one outage do not all come back at once.
    public enum Jitter: String, Sendable, Hashable, CaseIterable {
        /// The computed delay exactly (a schedule a test can predict).
        case none
        /// Anywhere from zero to the computed delay ("full jitter"): the
        /// widest spread, but a retry may follow almost at once.
        case full
        /// Half the computed delay, plus up to the other half ("equal
        /// jitter"): spread, and never sooner than half. The default.
        case equal
    }

    /// The most retries of one transfer after its first try (default 2;
    /// zero or less: none).
    public var maxRetries: Int
    /// The wait before the first retry, before jitter (default 250 ms);
    /// each later one doubles it.
    public var baseDelay: Duration
    /// The longest computed wait, before jitter (default 2 s).
    public var maxDelay: Duration
    /// How the computed wait is spread (default ``Jitter/equal``).
    public var jitter: Jitter
    /// The longest `Retry-After` honoured (default 5 s): a `429` or `503`
    /// asking for more is not retried (the server asked for more patience
    /// than an image load has); nil ignores `Retry-After`, and the computed
    /// wait applies.
    public var maxRetryAfter: Duration?
    /// Whether a transfer that timed out before any body byte arrived is
    /// tried again (default false: ``AsyncImageLoader/loadingTimeout`` then
    /// bounds the whole load). True gives each try the whole timeout, so a
    /// server that never answers holds the request for 1 + ``maxRetries``
    /// timeouts (``AsyncImageLoader/Configuration/requestTimeout`` can
    /// bound the whole).
    public var retriesTimeouts: Bool

    /// A policy; every parameter has the default described on its property.
    public init(
        maxRetries: Int = 2, baseDelay: Duration = .milliseconds(250), maxDelay: Duration = .seconds(2),
        jitter: Jitter = .equal, maxRetryAfter: Duration? = .seconds(5), retriesTimeouts: Bool = false
    ) {
        self.retriesTimeouts = retriesTimeouts
        self.maxRetries = maxRetries
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.maxRetryAfter = maxRetryAfter
    }

    /// The default: 2 retries, 250 ms then 500 ms before equal jitter (so
    /// 125-250 ms, then 250-500 ms), `Retry-After` honoured up to 5 s,
    /// timeouts not retried. A failing image costs at most about three
    /// quarters of a second more, which a brief outage or a dropped
    /// keep-alive connection needs.
    public static let standard = RetryPolicy()

    /// No retries: the first failure is the request's. (Not named `none`:
    /// on an optional such as ``ImageRequest/retryPolicy``, `.none` would
    /// be nil, the loader's policy.)
    public static let disabled = RetryPolicy(maxRetries: 0)

    /// The wait before retry `retry` (1 for the first) when the server did
    /// not say: ``baseDelay`` × 2^(`retry`−1), at most ``maxDelay``, spread
    /// by ``jitter`` with `random`, a number in `0..<1` (the loader draws
    /// one per retry). Never negative.
    public func backoff(beforeRetry retry: Int, random: Double) -> Duration {
        .seconds(backoffSeconds(beforeRetry: retry, random: random))
    }
}

extension RetryPolicy {
    /// ``backoff(beforeRetry:random:)`` in seconds.
    func backoffSeconds(beforeRetry retry: Int, random: Double) -> Double {
        let base = max(0, RequestDeadline.seconds(baseDelay))
        let cap = max(0, RequestDeadline.seconds(maxDelay))
        // 2^(retry-1) grows past any cap long before it overflows a Double.
        let computed = min(cap, base * pow(2, Double(max(0, min(retry - 1, 64)))))
        let unit = min(max(random.isNaN ? 0 : random, 0), 1)
        switch jitter {
        case .none: return computed
        case .full: return computed * unit
        case .equal: return computed / 2 + computed / 2 * unit
        }
    }

    /// The wait in seconds before retry `retry` after `failure`, or nil
    /// when it is not to be made: past ``maxRetries``, or a `Retry-After`
    /// over ``maxRetryAfter``.
    func wait(beforeRetry retry: Int, after failure: TransientFailure, random: Double) -> Double? {
        guard retry <= maxRetries else { return nil }
        if let asked = failure.retryAfter, let limit = maxRetryAfter {
            return asked <= RequestDeadline.seconds(limit) ? asked : nil
        }
        return backoffSeconds(beforeRetry: retry, random: random)
    }

    /// A short form for the key of a transfer (requests share one only
    /// when their policies are equal).
    var keyPart: String {
        let limit = maxRetryAfter.map { "\(RequestDeadline.seconds($0))" } ?? "-"
        return "\(maxRetries),\(RequestDeadline.seconds(baseDelay)),\(RequestDeadline.seconds(maxDelay)),"
            + "\(jitter.rawValue),\(limit),\(retriesTimeouts ? "t" : "-")"
    }
}

/// A failed transfer that may be tried again (see ``RetryPolicy`` for the
/// rule): the one place that says which failures pass.
struct TransientFailure: Sendable, Equatable {
    /// Seconds the server asked to wait (`Retry-After` of a `429` or
    /// `503`); nil when it did not say.
    let retryAfter: Double?

    /// libcurl's codes for a connection that failed before a reply: refused
    /// (7), broken while sending (55) or receiving (56), closed with no
    /// reply at all (52).
    static let connectionCodes: Set<Int> = [7, 52, 55, 56]
    /// Statuses that say "not now": request timeout, too many requests,
    /// bad gateway, unavailable, gateway timeout.
    static let statuses: Set<Int> = [408, 429, 502, 503, 504]

    /// `error`, which ended a transfer: transient, or nil. `bodyArrived`:
    /// some of the response's body was received (a connection failure or
    /// timeout then is not retried: the kept part is resumed instead).
    /// `now`: when the answer came (seconds since 1970), for a
    /// `Retry-After` date. `retriesTimeouts`: the policy's
    /// ``RetryPolicy/retriesTimeouts`` (a timeout is transient only then).
    init?(_ error: AsyncImageError, bodyArrived: Bool, now: Double, retriesTimeouts: Bool = false) {
        switch error {
        case .transport(_, let code, _) where Self.connectionCodes.contains(code) && !bodyArrived:
            retryAfter = nil
        case .timedOut(_, _, .transfer) where retriesTimeouts && !bodyArrived:
            retryAfter = nil
        case .httpStatus(_, let code, let headers) where Self.statuses.contains(code):
            retryAfter = code == 429 || code == 503 ? Self.retryAfter(headers, now: now) : nil
        default:
            return nil
        }
    }

    /// A `Retry-After` in seconds from now (RFC 9110 §10.2.3): delay-seconds,
    /// or an HTTP-date, counted from the response's `Date` when it has a
    /// valid one (the server's clock on both sides), else from `now`; a
    /// date in the past is zero. Nil when absent or unreadable.
    static func retryAfter(_ headers: [String: String], now: Double) -> Double? {
        guard let value = headers["retry-after"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
            return nil
        }
        if value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return HTTPFieldParsing.deltaSeconds(value) }
        guard let date = HTTPFieldParsing.date(value, now: now) else { return nil }
        let base = HTTPFieldParsing.date(headers["date"], now: now) ?? now
        return max(0, date - base)
    }

    /// Methods that may be repeated (RFC 9110 §9.2.2).
    static let idempotentMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]
    /// Headers some servers take in place of the request's method.
    static let methodOverrides: Set<String> = ["x-http-method-override", "x-http-method", "x-method-override"]

    /// Whether `request` (as sent: after the request modifier) may be
    /// repeated: it is a `GET`, unless a method-override header names a
    /// method that is not idempotent.
    static func isIdempotent(_ request: DataRequest) -> Bool {
        for (name, value) in request.headers where methodOverrides.contains(name.lowercased()) {
            let method = value.trimmingCharacters(in: .whitespaces).uppercased()
            if !method.isEmpty, !idempotentMethods.contains(method) { return false }
        }
        return true
    }
}
