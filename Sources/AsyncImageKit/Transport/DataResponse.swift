import Foundation

/// A successful transfer: the whole body and what the server said about it.
public struct DataResponse: Sendable {
    /// The URL that was requested.
    public let url: URL
    /// The URL the body came from, after redirects.
    public let finalURL: URL
    /// The HTTP status code (0 for `file` URLs).
    public let statusCode: Int
    /// The `Content-Type` header, if any. Informational only: decoders sniff the bytes.
    public let contentType: String?
    /// The body, content-decoded (gzip and the like already undone).
    public let data: Data
    /// The final response's headers, names lowercased (repeated ones joined
    /// with ", "); empty for `file` URLs.
    public let headers: [String: String]
    /// The HTTP version of the final response; `nil` for `file` URLs and for
    /// a body read from the disk cache.
    public let httpVersion: HTTPVersion?
    /// The connection that carried the final response; `nil` where
    /// ``httpVersion`` is.
    public let connection: Connection?

    /// A response, as a custom ``DataLoading`` makes one.
    public init(
        url: URL, finalURL: URL? = nil, statusCode: Int, contentType: String? = nil, data: Data,
        headers: [String: String] = [:], httpVersion: HTTPVersion? = nil, connection: Connection? = nil
    ) {
        self.url = url
        self.finalURL = finalURL ?? url
        self.statusCode = statusCode
        self.contentType = contentType
        self.data = data
        self.headers = headers
        self.httpVersion = httpVersion
        self.connection = connection
    }
}

extension DataResponse {
    /// The version of HTTP a response came in.
    public enum HTTPVersion: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// HTTP/1.0.
        case http1_0 = "1.0"
        /// HTTP/1.1.
        case http1_1 = "1.1"
        /// HTTP/2 (over TLS, negotiated with ALPN; see ``TransportConfiguration/allowsHTTP2``).
        case http2 = "2"
        /// HTTP/3 (not offered by the libcurl this package is built against
        /// on Debian 12, but reported if a libcurl with it used it).
        case http3 = "3"

        /// `"HTTP/1.1"`, `"HTTP/2"`.
        public var description: String { "HTTP/\(rawValue)" }
    }

    /// Which connection carried a response, to see connections being shared:
    /// responses multiplexed over one HTTP/2 connection (or served one after
    /// the other over a kept-alive one) report the same ``localPort`` and no
    /// ``newConnections``, but for the transfer that opened it.
    public struct Connection: Sendable, Hashable {
        /// The local (client side) TCP port of the connection. Two responses
        /// from one server with the same port came over the same connection
        /// (as long as the first connection was still open when the second
        /// response arrived).
        public let localPort: Int
        /// How many connections the transfer opened: 0 when it used one
        /// already open (multiplexed or kept alive), 1 when it opened its own,
        /// more after redirects to other servers.
        public let newConnections: Int

        /// Whether the transfer opened no connection of its own.
        public var isReused: Bool { newConnections == 0 }

        /// A connection, as a custom ``DataLoading`` describes one.
        public init(localPort: Int, newConnections: Int) {
            self.localPort = localPort
            self.newConnections = newConnections
        }
    }
}
