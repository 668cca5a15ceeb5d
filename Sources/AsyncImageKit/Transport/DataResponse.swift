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
}
