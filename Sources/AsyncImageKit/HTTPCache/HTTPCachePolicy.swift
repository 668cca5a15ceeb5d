import Foundation

/// The rules of HTTP caching (RFC 9111), in one place: what may be stored,
/// how long it is fresh, how old it is, what a request may reuse, the
/// conditional request to send, how a `304` refreshes what is stored, and
/// when a stale response may be served and why.
///
/// A loader asks this component and decides no HTTP caching rule itself
/// (see ``AsyncImageLoader/Configuration/httpCache``). ``private`` (the
/// default) is a private cache, as a browser's: one user's responses.
/// ``shared`` adds the shared-cache rules of RFC 9111 §3.5 and §5.2.2 for a
/// service whose cache serves many users: `s-maxage` over `max-age`,
/// `private` responses not stored, `proxy-revalidate`, and a request with
/// `Authorization` stored only when the response allows it.
///
/// What it guarantees:
/// - **Never stale against the origin's word**: a response with
///   `must-revalidate` (or, shared, `proxy-revalidate` or `s-maxage`) or
///   `no-cache` is never served stale, whatever the loader's or the
///   request's own stale policy (RFC 9111 §4.2.4, §5.2.2.2, §5.2.2.4).
/// - **Whole responses**: a stored response keeps its status and every
///   header but the hop-by-hop ones, and comes back with an `Age`.
/// - **Lenient parsing where browsers are, strict where the RFC is**: the
///   three HTTP-date forms, the first of repeated directives, `Age` only as
///   a non-negative integer (see `HTTPFieldParsing`).
public struct HTTPCachePolicy: Sendable, Hashable {
    /// Whether the shared-cache rules apply (RFC 9111 §3.5).
    public var isShared: Bool
    /// The fraction of the time since `Last-Modified` a response without
    /// explicit freshness is taken to be fresh for (RFC 9111 §4.2.2; 10%,
    /// as the browsers).
    public var heuristicFraction: Double

    /// A policy; see each property.
    public init(isShared: Bool = false, heuristicFraction: Double = 0.1) {
        self.isShared = isShared
        self.heuristicFraction = heuristicFraction
    }

    /// A private cache (the default): one user's responses.
    public static let `private` = HTTPCachePolicy()
    /// A shared cache: a service whose cache serves many users.
    public static let shared = HTTPCachePolicy(isShared: true)

    /// Statuses that may be reused with heuristic freshness (RFC 9110 §15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Header fields never stored or forwarded from a cache (RFC 9111 §3.1).
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authentication-info", "proxy-authorization",
    ]

    // MARK: Storing

    /// Whether a response to a `GET` may be stored (RFC 9111 §3): a final
    /// status other than `206` and `304`, no `no-store` on either side, no
    /// `Vary: *`, shared-cache limits, and something that makes it reusable
    /// (explicit freshness, a heuristically cacheable status, a validator).
    func isStorable(status: Int, responseHeaders: [String: String], requestHeaders: [String: String]) -> Bool {
        guard status >= 200, status != 206, status != 304 else { return false }
        let response = HTTPFieldParsing.directives(responseHeaders["cache-control"])
        let request = HTTPFieldParsing.directives(Self.value("cache-control", in: requestHeaders))
        guard response["no-store"] == nil, request["no-store"] == nil else { return false }
        if Self.varyNames(responseHeaders).contains("*") { return false }
        if isShared {
            guard response["private"] == nil else { return false }
            if Self.value("authorization", in: requestHeaders) != nil {
                guard response["public"] != nil || response["s-maxage"] != nil || response["must-revalidate"] != nil
                else { return false }
            }
        }
        let explicit =
            response["max-age"] != nil || responseHeaders["expires"] != nil || response["public"] != nil
            || (!isShared && response["private"] != nil) || (isShared && response["s-maxage"] != nil)
        return explicit || Self.heuristicallyCacheable.contains(status)
    }

    /// Whether a response may be kept in no cache at all, the memory cache
    /// included (`no-store`, RFC 9111 §5.2.2.5).
    static func forbidsStorage(_ responseHeaders: [String: String]) -> Bool {
        HTTPFieldParsing.directives(responseHeaders["cache-control"])["no-store"] != nil
    }

    /// What to store for a response: its status, its headers but the
    /// hop-by-hop ones (and those its `Connection` names), the request
    /// headers its `Vary` names (normalised), and when it was asked for and
    /// received (for its age).
    func storedHead(
        status: Int, responseHeaders: [String: String], requestHeaders: [String: String], requestTime: Double,
        responseTime: Double
    ) -> StoredHTTPHead {
        var vary: [String: String]?
        let names = Self.varyNames(responseHeaders)
        if !names.isEmpty {
            vary = Dictionary(
                names.map { ($0, Self.normalised(Self.value($0, in: requestHeaders))) }, uniquingKeysWith: { a, _ in a })
        }
        return StoredHTTPHead(
            status: status, headers: Self.endToEnd(responseHeaders), varyRequestHeaders: vary, requestTime: requestTime,
            responseTime: responseTime)
    }

    // MARK: Freshness and age

    /// The freshness lifetime (RFC 9111 §4.2.1): `s-maxage` (shared),
    /// `max-age`, `Expires - Date`, else the heuristic (a fraction of
    /// `Date - Last-Modified`, for a heuristically cacheable status or a
    /// `public` response), else 0.
    func freshnessLifetime(_ head: StoredHTTPHead) -> Double {
        let directives = HTTPFieldParsing.directives(head.headers["cache-control"])
        if isShared, let value = directives["s-maxage"], let seconds = HTTPFieldParsing.deltaSeconds(value) { return seconds }
        if let value = directives["max-age"] {
            if let seconds = HTTPFieldParsing.deltaSeconds(value) { return seconds }
            return 0  // present but invalid: stale (RFC 9111 §4.2.1)
        }
        let date = HTTPFieldParsing.date(head.headers["date"]) ?? head.responseTime
        if let expiresText = head.headers["expires"] {
            guard let expires = HTTPFieldParsing.date(firstMember(expiresText)) else { return 0 }  // invalid: expired
            return max(0, expires - date)
        }
        guard Self.heuristicallyCacheable.contains(head.status) || directives["public"] != nil,
            let modified = HTTPFieldParsing.date(head.headers["last-modified"]), modified < date
        else { return 0 }
        return (date - modified) * heuristicFraction
    }

    /// How old a stored response is now (RFC 9111 §4.2.3): the larger of
    /// its apparent age (`response time - Date`) and its `Age` plus the
    /// time the request took, then the time it has spent stored.
    func currentAge(_ head: StoredHTTPHead, now: Double) -> Double {
        let date = HTTPFieldParsing.date(head.headers["date"]) ?? head.responseTime
        let apparentAge = max(0, head.responseTime - date)
        let responseDelay = max(0, head.responseTime - head.requestTime)
        let correctedAge = (HTTPFieldParsing.age(head.headers["age"]) ?? 0) + responseDelay
        return max(apparentAge, correctedAge) + max(0, now - head.responseTime)
    }

    // MARK: Reuse

    /// What a request may do with a stored response (RFC 9111 §4).
    enum Reuse: Equatable, Sendable {
        /// Fresh enough for the request: served as it is.
        case fresh
        /// Stale, and the request allows it (`max-stale`).
        case staleAllowed
        /// Stale within the response's `stale-while-revalidate`: served as
        /// it is, and revalidated in the background.
        case staleWhileRevalidate
        /// Must be validated with the server first: these conditional headers.
        case validate([String: String])
        /// Cannot be used for this request (another variant, or stale with
        /// no validator): the network, unconditionally.
        case unusable
    }

    /// What `requestHeaders` may do with the stored response `head` now.
    func reuse(_ head: StoredHTTPHead, requestHeaders: [String: String], now: Double) -> Reuse {
        guard matchesVary(head, requestHeaders: requestHeaders) else { return .unusable }
        let response = HTTPFieldParsing.directives(head.headers["cache-control"])
        let requestCacheControl = Self.value("cache-control", in: requestHeaders)
        let request = HTTPFieldParsing.directives(requestCacheControl)
        let validation = conditionalHeaders(head)
        let mustValidate: Reuse = validation.isEmpty ? .unusable : .validate(validation)
        // no-cache, either side: never without a successful validation
        // (`Pragma: no-cache` counts only without a request `Cache-Control`).
        let pragmaNoCache =
            requestCacheControl == nil
            && HTTPGrammar.listMembers(Self.value("pragma", in: requestHeaders) ?? "").contains {
                $0.lowercased() == "no-cache"
            }
        if response["no-cache"] != nil || request["no-cache"] != nil || pragmaNoCache { return mustValidate }
        let age = currentAge(head, now: now)
        let lifetime = freshnessLifetime(head)
        var fresh = lifetime > age
        if let value = request["max-age"], let limit = HTTPFieldParsing.deltaSeconds(value), age > limit {
            return mustValidate  // older than the request accepts, stale or not
        }
        if let value = request["min-fresh"], let margin = HTTPFieldParsing.deltaSeconds(value) {
            fresh = lifetime - age >= margin
        }
        if fresh { return .fresh }
        guard !forbidsStale(response) else { return mustValidate }
        let staleness = age - lifetime
        if let value = request["max-stale"] {
            if value.isEmpty || HTTPFieldParsing.deltaSeconds(value).map({ staleness <= $0 }) == true {
                return .staleAllowed
            }
        }
        if let value = response["stale-while-revalidate"], let window = HTTPFieldParsing.deltaSeconds(value),
            staleness <= window
        {
            return .staleWhileRevalidate
        }
        return mustValidate
    }

    /// Whether the response forbids serving it stale, for any reason:
    /// `must-revalidate`, `no-cache`, and for a shared cache
    /// `proxy-revalidate` and `s-maxage` (RFC 9111 §4.2.4, §5.2.2). Otherwise
    /// a caller that is offline, or shows stale content while it
    /// revalidates (the loader's own choices), may serve it stale.
    func forbidsStale(_ head: StoredHTTPHead) -> Bool {
        forbidsStale(HTTPFieldParsing.directives(head.headers["cache-control"]))
    }

    private func forbidsStale(_ response: [String: String]) -> Bool {
        response["must-revalidate"] != nil || response["no-cache"] != nil
            || (isShared && (response["proxy-revalidate"] != nil || response["s-maxage"] != nil))
    }

    /// Whether a stale stored response may be served because the server
    /// could not be reached or answered with a 5xx (RFC 9111 §4.2.4, RFC
    /// 5861 `stale-if-error`): never when the response forbids stale; else
    /// when `stale-if-error` (the response's or the request's) or the
    /// request's `max-stale` covers its staleness, or when the caller's own
    /// policy allows stale on error (`callerAllows`: an image loader's
    /// default; the data-level API passes false: RFC 9111 exactly).
    func mayServeStaleOnError(
        _ head: StoredHTTPHead, requestHeaders: [String: String], now: Double, callerAllows: Bool
    ) -> Bool {
        guard !forbidsStale(head) else { return false }
        if callerAllows { return true }
        let staleness = currentAge(head, now: now) - freshnessLifetime(head)
        let response = HTTPFieldParsing.directives(head.headers["cache-control"])
        let request = HTTPFieldParsing.directives(Self.value("cache-control", in: requestHeaders))
        for value in [response["stale-if-error"], request["stale-if-error"]] {
            if let window = HTTPFieldParsing.deltaSeconds(value), staleness <= window { return true }
        }
        if let value = request["max-stale"] {
            return value.isEmpty || HTTPFieldParsing.deltaSeconds(value).map { staleness <= $0 } == true
        }
        return false
    }

    // MARK: Validation

    /// The headers of a conditional request for `head` (RFC 9111 §4.3.1):
    /// `If-None-Match` with its `ETag`, `If-Modified-Since` with its
    /// `Last-Modified`; empty when it has no validator.
    func conditionalHeaders(_ head: StoredHTTPHead) -> [String: String] {
        var headers: [String: String] = [:]
        if let etag = head.headers["etag"] { headers["If-None-Match"] = etag }
        if let modified = head.headers["last-modified"] { headers["If-Modified-Since"] = modified }
        return headers
    }

    /// Whether a `304` refers to the stored response `head` (RFC 9111
    /// §4.3.4): the same strong `ETag` when it sends one, else the same
    /// `Last-Modified` when it sends one; a `304` with neither refers to it.
    func validates(_ head: StoredHTTPHead, with notModified: [String: String]) -> Bool {
        if let etag = notModified["etag"], !etag.hasPrefix("W/") {
            return head.headers["etag"] == etag
        }
        if let modified = notModified["last-modified"], let stored = head.headers["last-modified"] {
            return HTTPFieldParsing.date(modified) == HTTPFieldParsing.date(stored)
        }
        return true
    }

    /// The stored response refreshed by a `304` (RFC 9111 §3.2, §4.3.4):
    /// every header the `304` sends replaces the stored one, except
    /// `Content-Length` and the hop-by-hop ones; the times are the `304`'s.
    func refreshed(
        _ head: StoredHTTPHead, by notModified: [String: String], requestTime: Double, responseTime: Double
    ) -> StoredHTTPHead {
        var head = head
        for (name, value) in Self.endToEnd(notModified) where name != "content-length" {
            head.headers[name] = value
        }
        head.requestTime = requestTime
        head.responseTime = responseTime
        return head
    }

    /// Whether a request's own conditions (`If-None-Match`, else
    /// `If-Modified-Since`) are met by the stored response `head` it would
    /// be served, so that a cache answers `304` (RFC 9111 §4.3.2, RFC 9110
    /// §13.1): an entity tag that matches weakly (or `*`), or a stored
    /// `Last-Modified` (else `Date`, else the time it was received) no later
    /// than the date asked about.
    func requestIsNotModified(_ head: StoredHTTPHead, requestHeaders: [String: String]) -> Bool {
        if let tags = Self.value("if-none-match", in: requestHeaders) {
            guard let stored = head.headers["etag"] else { return false }
            func opaque(_ tag: Substring) -> Substring { tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            let storedTag = opaque(Substring(stored))
            return HTTPGrammar.listMembers(tags).contains { $0 == "*" || opaque($0) == storedTag }
        }
        if let since = Self.value("if-modified-since", in: requestHeaders).flatMap({ HTTPFieldParsing.date($0) }) {
            let modified =
                HTTPFieldParsing.date(head.headers["last-modified"]) ?? HTTPFieldParsing.date(head.headers["date"])
                ?? head.responseTime
            return modified <= since
        }
        return false
    }

    // MARK: Serving

    /// The headers a stored response is served with: those stored, with
    /// `Age` set to its current age in whole seconds (RFC 9111 §5.1).
    func servedHeaders(_ head: StoredHTTPHead, now: Double) -> [String: String] {
        var headers = head.headers
        headers["age"] = String(Int(min(currentAge(head, now: now), 2_147_483_648).rounded(.down)))
        return headers
    }

    // MARK: Vary

    /// Whether the request's headers match those the stored response
    /// varied on (RFC 9111 §4.1), after normalising both.
    func matchesVary(_ head: StoredHTTPHead, requestHeaders: [String: String]) -> Bool {
        guard let vary = head.varyRequestHeaders else { return true }
        if vary.keys.contains("*") { return false }
        return vary.allSatisfy { Self.normalised(Self.value($0.key, in: requestHeaders)) == $0.value }
    }

    /// The field names a response's `Vary` lists, lowercased.
    static func varyNames(_ headers: [String: String]) -> [String] {
        HTTPGrammar.listMembers(headers["vary"] ?? "").map { $0.lowercased() }
    }

    /// A request header's value as `Vary` compares it: list members
    /// trimmed and joined with ", " (so whitespace and line folding do not
    /// matter), "" when absent.
    static func normalised(_ value: String?) -> String {
        guard let value else { return "" }
        return HTTPGrammar.listMembers(value).joined(separator: ", ")
    }

    /// A header's value in a dictionary whose names may be in any case.
    static func value(_ name: String, in headers: [String: String]) -> String? {
        if let value = headers[name] { return value }
        return headers.first { $0.key.lowercased() == name }?.value
    }

    /// `headers` with names lowercased, without the hop-by-hop fields and
    /// those their `Connection` names.
    static func endToEnd(_ headers: [String: String]) -> [String: String] {
        let named = Set(HTTPGrammar.listMembers(value("connection", in: headers) ?? "").map { $0.lowercased() })
        var kept: [String: String] = [:]
        for (name, value) in headers {
            let lower = name.lowercased()
            guard !hopByHop.contains(lower), !named.contains(lower) else { continue }
            kept[lower] = value
        }
        return kept
    }

    private func firstMember(_ text: String) -> String {
        // Two Expires lines joined: the first (RFC 9111 §4.2.1). A date has
        // one comma of its own, after the day name.
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count > 2 else { return text }
        return parts.prefix(2).joined(separator: ",")
    }
}

/// A stored response but its body: what RFC 9111 needs to reuse it.
package struct StoredHTTPHead: Sendable, Hashable, Codable {
    /// The status.
    package var status: Int
    /// Every header but the hop-by-hop ones, names lowercased.
    package var headers: [String: String]
    /// The request headers `Vary` named, normalised ("" for absent); nil
    /// without `Vary`.
    package var varyRequestHeaders: [String: String]?
    /// When the request that brought it was sent, and when it arrived
    /// (seconds since 1970): its age is counted from these.
    package var requestTime: Double
    package var responseTime: Double

    package init(
        status: Int, headers: [String: String], varyRequestHeaders: [String: String]?, requestTime: Double,
        responseTime: Double
    ) {
        self.status = status
        self.headers = headers
        self.varyRequestHeaders = varyRequestHeaders
        self.requestTime = requestTime
        self.responseTime = responseTime
    }
}
