import Foundation

/// A response as the loader's HTTP cache returns it (see
/// ``AsyncImageLoader/data(for:)-(ImageRequest)``): any status, its headers
/// and its body, from the network or from the disk cache.
///
/// A stored response comes back as RFC 9111 says a cache returns one: its
/// status and every header it was stored with (those of a `304` that
/// refreshed it merged in), with an `Age` header for the time it has spent
/// in the cache.
public struct HTTPCacheResponse: Sendable {
    /// Where a response came from.
    public enum Source: Sendable, Hashable {
        /// The server sent it now.
        case network
        /// The disk cache, used without asking the server (fresh, or stale
        /// where that was allowed: ``HTTPCacheResponse/isStale``).
        case cache
        /// The disk cache, after the server confirmed it (a `304`).
        case revalidated
    }

    /// The URL requested.
    public let url: URL
    /// The URL the response came from, after redirects.
    public let finalURL: URL
    /// The HTTP status (any: a `404` is a response, not an error).
    public let statusCode: Int
    /// The headers, names lowercased; a repeated header's values joined
    /// with ", ".
    public let headers: [String: String]
    /// The body as it came (undecoded: no `Accept-Encoding` is sent unless
    /// the request asks for it).
    public let body: Data
    /// Where it came from.
    public let source: Source
    /// Whether it was stale when served (offline, after a failed
    /// revalidation that the response or the request allowed, or under
    /// `max-stale`).
    public let isStale: Bool

    /// A response.
    public init(
        url: URL, finalURL: URL? = nil, statusCode: Int, headers: [String: String], body: Data,
        source: Source = .network, isStale: Bool = false
    ) {
        self.url = url
        self.finalURL = finalURL ?? url
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.source = source
        self.isStale = isStale
    }
}
