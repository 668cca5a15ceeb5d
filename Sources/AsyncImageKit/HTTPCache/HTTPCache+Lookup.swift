import Foundation

/// What the disk gave a job: the stored response's head, its body when it
/// was needed, and the processed images found for the job's sizes.
struct StoredResponse: Sendable {
    var entry: HTTPCache.Entry
    var body: Data?
    var images: [String: Data]

    /// The response the transfer stage hands on (its body, or none), with
    /// the stored status and headers (and an `Age`, RFC 9111 §5.1);
    /// `confirmedBy`: the `304` that revalidated it (its HTTP version and
    /// connection; its headers are merged into `entry` already).
    func response(for url: URL, policy: HTTPCachePolicy, confirmedBy answer: DataResponse? = nil) -> DataResponse {
        DataResponse(
            url: url, finalURL: answer?.finalURL, statusCode: entry.head.status,
            contentType: entry.head.headers["content-type"], data: body ?? Data(),
            headers: policy.servedHeaders(entry.head, now: Date().timeIntervalSince1970),
            httpVersion: answer?.httpVersion, connection: answer?.connection)
    }
}

/// Whether a stored response was stale when served, and why.
enum Staleness: Sendable {
    case fresh, servedOffline, servedWhileRevalidating, servedOnError

    var isStale: Bool { self != .fresh }
    /// Served at once, stale, to be revalidated by a follow-up request
    /// (``ImageCachePolicy/returnStaleWhileRevalidating``).
    var revalidationFollows: Bool { self == .servedWhileRevalidating }
}

/// When a stale stored response may be served: the one home of these
/// rules, from a request's ``ImageCachePolicy``, the loader's network
/// state and the response's own directives (RFC 9111 §4.2.4: never past
/// `must-revalidate` or `no-cache`).
struct StaleRules: Sendable {
    /// No network: what is stored is all there is (stale where the response
    /// allows it and ``servesStaleOffline``). The request's choice
    /// (``ImageCachePolicy/skipNetwork``), or the loader's: it is offline
    /// (``networkDown``).
    var offline: Bool
    /// Offline because the loader is (see ``AsyncImageLoader/networkStatus``),
    /// not by the request's choice: a miss fails with ``AsyncImageError/offline(_:)``
    /// rather than ``AsyncImageError/notCached(_:)``.
    var networkDown = false
    /// Offline, a stale response may be served (unless ``ImageCachePolicy/neverStale``).
    var servesStaleOffline: Bool
    /// Shown at once while it is revalidated (``ImageCachePolicy/returnStaleWhileRevalidating``).
    var servesWhileRevalidating: Bool
    /// Served when the server cannot be reached (unless ``ImageCachePolicy/neverStale``).
    var servesOnError: Bool

    init(offline: Bool, servesStaleOffline: Bool = true, servesWhileRevalidating: Bool, servesOnError: Bool) {
        (self.offline, self.servesStaleOffline, self.servesWhileRevalidating, self.servesOnError) =
            (offline, servesStaleOffline, servesWhileRevalidating, servesOnError)
    }

    /// The rules of a transfer made with `policy` (`file` URLs are local:
    /// never offline); `networkDown`: the loader is offline for its URL.
    init(_ policy: ImageCachePolicy, isFileURL: Bool, networkDown: Bool = false) {
        let skipsNetwork = policy.contains(.skipNetwork) && !isFileURL
        self.networkDown = networkDown && !skipsNetwork && !isFileURL
        offline = skipsNetwork || self.networkDown
        servesStaleOffline = !policy.contains(.neverStale)
        servesWhileRevalidating = policy.contains(.returnStaleWhileRevalidating) && !policy.contains(.neverStale)
        servesOnError = !policy.contains(.neverStale)
    }

    /// These rules once the loader went offline: what is stored, or
    /// ``AsyncImageError/offline(_:)``.
    var networkIsDown: StaleRules {
        var rules = self
        (rules.offline, rules.networkDown) = (true, true)
        return rules
    }

    /// The failure of a request offline with nothing it may be served.
    func missError(_ url: URL) -> AsyncImageError { networkDown ? .offline(url) : .notCached(url) }

    /// After a revalidation of `stale` failed with `error`: whether the
    /// stale response is served instead, marked stale (a failure to reach
    /// the server: transport errors, timeouts, 5xx).
    func servesStale(
        _ stale: StoredResponse, after error: AsyncImageError, policy: HTTPCachePolicy,
        requestHeaders: [String: String], now: Double
    ) -> Bool {
        servesOnError && error.allowsStaleResponse
            && policy.mayServeStaleOnError(stale.entry.head, requestHeaders: requestHeaders, now: now, callerAllows: true)
    }
}

extension AsyncImageError {
    /// A failure to reach the server, after which a stale stored response
    /// may be served (RFC 9111, 4.2.4): transport errors (a response too
    /// broken to read among them, such as one with oversized headers),
    /// timeouts, 5xx.
    var allowsStaleResponse: Bool {
        switch self {
        case .transport, .timedOut, .headersTooLarge, .offline: return true
        case .httpStatus(_, let code, _): return code >= 500
        default: return false
        }
    }
}

extension HTTPCache {
    enum Lookup {
        /// Usable now: fresh, or stale where that is allowed (offline, or
        /// shown while revalidating; `staleness` says which).
        case usable(StoredResponse, Staleness)
        /// Usable once the server confirms it (a `304`).
        case stale(StoredResponse)
        /// Nothing usable: the network (or "not cached" offline).
        case miss
    }

    /// What is stored for `key` (on the disk queue: this reads files). The
    /// processed images of `processings` are read first; the body only
    /// when they do not cover every request (`needsFullSize`, or a size
    /// without an image), so a thumbnail hit never reads the original. A
    /// stale response counts only when it can be revalidated, or may be
    /// shown stale (``StaleRules``) and its response does not forbid that
    /// (`must-revalidate`, `no-cache`), and what it lacks is not needed.
    /// The image path reuses only a stored `2xx`.
    func lookUp(
        _ key: String, requestHeaders: [String: String], processings: Set<String>, needsFullSize: Bool,
        rules: StaleRules, now: Double
    ) -> Lookup {
        guard let entry = entry(for: key, requestHeaders: requestHeaders), (200..<300).contains(entry.head.status)
        else { return .miss }
        let reuse = policy.reuse(entry.head, requestHeaders: requestHeaders, now: now)
        let isFresh = reuse == .fresh
        let mayBeStale = !policy.forbidsStale(entry.head)
        let staleAllowed =
            rules.offline ? rules.servesStaleOffline : rules.servesWhileRevalidating
        let usableNow = isFresh || reuse == .staleAllowed || (staleAllowed && mayBeStale)
        guard usableNow || (!rules.offline && reuse != .unusable) else { return .miss }
        let generation = entry.generation
        var images: [String: Data] = [:]
        for processing in processings {
            images[processing] = store.processed(for: key, processing: processing, generation: generation)
        }
        let needsBody = needsFullSize || images.count < processings.count
        let body = needsBody ? store.original(for: key, generation: generation) : nil
        // Without the body, a partial answer is worth more than none only
        // offline: the stored images, and "not cached" for the other sizes.
        if needsBody, body == nil, !rules.offline || images.isEmpty { return .miss }
        let stored = StoredResponse(entry: entry, body: body, images: images)
        guard usableNow else { return .stale(stored) }
        let staleness: Staleness = isFresh ? .fresh : rules.offline ? .servedOffline : .servedWhileRevalidating
        return .usable(stored, staleness)
    }
}
