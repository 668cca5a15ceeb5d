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

    /// A response, as a custom ``DataLoading`` makes one.
    public init(
        url: URL, finalURL: URL? = nil, statusCode: Int, contentType: String? = nil, data: Data,
        headers: [String: String] = [:]
    ) {
        self.url = url
        self.finalURL = finalURL ?? url
        self.statusCode = statusCode
        self.contentType = contentType
        self.data = data
        self.headers = headers
    }
}
