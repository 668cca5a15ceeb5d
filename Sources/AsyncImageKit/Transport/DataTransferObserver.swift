import Foundation

/// Watches one transfer while it runs: how much of the body has arrived, and
/// what it had received if it ends without the whole body.
///
/// This is what resumable downloads are built on: keep a ``PartialBody``
/// (with its validator) and ask for the rest later with `Range` and
/// `If-Range` (see ``PartialBody/ifRangeValidator``). A `206 Partial Content`
/// answer is then delivered as a success with
/// ``DataResponse/statusCode`` 206 and its `Content-Range` in
/// ``DataResponse/headers``: it holds only the requested bytes, to append to
/// the stored ones. A `200` is the whole body again (the representation
/// changed, or the server ignores ranges): start over. An unsatisfiable range
/// fails with ``AsyncImageError/httpStatus(_:code:headers:)`` 416.
///
/// ```swift
/// let observer = DataTransferObserver(
///     progress: { received, expected in meter.update(received, of: expected) },
///     partial: { partial in store.keep(partial) })
/// let task = loader.loadData(request, observer: observer) { result in ... }
/// ```
///
/// Guarantees of ``DataLoader`` (other ``DataLoading`` types may ignore the
/// observer altogether, as the protocol's default implementation does):
/// - ``progress`` runs on the transport's thread, after each piece of the body
///   (once, with the whole size, for a `file` URL, on the file-reading
///   queue). It is never called after the completion handler has started,
///   nor after ``DataLoadingTask/cancel()`` returned true.
/// - ``partial`` runs at most once per transfer, and only when the transfer
///   failed (cut off, timed out, any transport error) or was cancelled
///   (``DataLoadingTask/cancel()`` returned true), the final response's
///   status was 200 or 206, at least one body byte arrived, the response had
///   no `Content-Encoding` (a range counts bytes of the encoded form, which
///   the transport never keeps) and the body did not exceed
///   ``TransportConfiguration/maxBodySize``. Never for `file` URLs, never
///   for a transfer whose completion handler gets a success.
/// - When the transfer fails, ``partial`` runs (on the transport's thread)
///   before the completion handler, which then runs as usual. The handler
///   is claimed before ``partial`` runs: a cancel from then on returns false.
/// - When ``DataLoadingTask/cancel()`` returned true, ``partial`` runs
///   afterwards (the completion handler never runs), on the transport's
///   thread, once the transfer's handle has been removed, so the bytes are
///   final. If the body had all arrived just before the cancel, ``partial``
///   holds all of it (compare with `Content-Length`). It never runs before
///   `cancel()` has decided: if the caller of `cancel()` holds a lock that
///   the handler also takes, the handler sees everything done under that
///   lock.
public struct DataTransferObserver: Sendable {
    /// Body bytes received so far, and how many this response's body has in
    /// all when known: `Content-Length` (for a 206, the length of the part
    /// sent, from `Content-Length` or `Content-Range`); nil when the length
    /// is unknown or the body is content-encoded (`received` counts decoded
    /// bytes, `Content-Length` encoded ones).
    ///
    /// Runs on the transport's thread, which drives every transfer: it must
    /// be quick. A ``DataLoadingTask/cancel()`` on another thread waits for a
    /// call under way, so the handler must not take a lock that callers of
    /// `cancel()` hold (an ``AsyncImageLoader`` cancels under its own lock),
    /// nor wait for other threads. It may cancel its own transfer.
    public var progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)?

    /// What a transfer had received when it ended without its whole body
    /// (see the guarantees above). Runs on the transport's thread: store the
    /// bytes elsewhere (a disk write belongs on another queue).
    public var partial: (@Sendable (PartialBody) -> Void)?

    /// The body as it arrives: called after each piece with all the bytes
    /// received so far, until it returns false or the body passes
    /// ``bodyStartLimit`` bytes (a header probe reads an image's size there
    /// long before the pixels arrive; progressive previews watch for scans).
    /// Same thread and rules as ``progress``; never for content-encoded bodies.
    public var bodyStart: (@Sendable (Data) -> Bool)?

    /// How many body bytes ``bodyStart`` sees at most (default 1 MiB).
    public var bodyStartLimit = 1 << 20

    /// The response's head, once, before the first body byte: its status,
    /// its headers (names lowercased) and the URL it came from after
    /// redirects. Same thread and rules as ``progress``.
    public var responseHead: (@Sendable (ResponseHead) -> Void)?

    /// An observer; with no handlers it observes nothing.
    public init(
        progress: (@Sendable (_ received: Int, _ expected: Int?) -> Void)? = nil,
        partial: (@Sendable (PartialBody) -> Void)? = nil,
        bodyStart: (@Sendable (Data) -> Bool)? = nil
    ) {
        self.progress = progress
        self.partial = partial
        self.bodyStart = bodyStart
    }
}

/// The part of a body a transfer received before it ended (see
/// ``DataTransferObserver/partial``).
public struct PartialBody: Sendable {
    /// The URL that was requested.
    public let url: URL
    /// The URL the bytes came from, after redirects.
    public let finalURL: URL
    /// 200 (``data`` is the body's start) or 206 (``data`` starts where the
    /// response's `Content-Range` says).
    public let statusCode: Int
    /// The response's headers, names lowercased, repeated ones joined with
    /// ", " (as ``DataResponse/headers``): `etag`, `last-modified`,
    /// `content-length`, `content-range`, `accept-ranges`, ...
    public let headers: [String: String]
    /// The body bytes received, exactly as sent (never content-encoded).
    public let data: Data

    /// A partial body, as a custom ``DataLoading`` makes one.
    public init(url: URL, finalURL: URL? = nil, statusCode: Int, headers: [String: String], data: Data) {
        self.url = url
        self.finalURL = finalURL ?? url
        self.statusCode = statusCode
        self.headers = headers
        self.data = data
    }

    /// The value for an `If-Range` header that resumes this body: the strong
    /// `ETag`, or else `Last-Modified`; nil when the response had neither
    /// (a weak ETag cannot be used: RFC 9110 13.1.5), and then resuming is
    /// not safe.
    public var ifRangeValidator: String? {
        if let tag = headers["etag"]?.trimmingCharacters(in: .whitespaces), tag.hasPrefix("\"") { return tag }
        return headers["last-modified"]
    }

    /// The response's `Content-Range`, parsed (206 only).
    var contentRange: ContentRange? { headers["content-range"].flatMap(ContentRange.init) }

    /// The offset in the whole representation of ``data``'s first byte: 0
    /// for a 200, the `Content-Range` start for a 206 (nil when a 206 has no
    /// valid `Content-Range`).
    public var firstByteOffset: Int? {
        statusCode == 206 ? contentRange?.first : 0
    }
}

/// A `Content-Range: bytes first-last/total` header (RFC 9110 14.4); the
/// unsatisfied form (`bytes */total`) and other units are not parsed.
struct ContentRange: Sendable, Hashable {
    /// The first byte's offset.
    let first: Int
    /// The last byte's offset (inclusive).
    let last: Int
    /// The whole representation's length; nil for `*`.
    let total: Int?

    /// How many bytes the range holds.
    var count: Int { last - first + 1 }

    /// A range.
    init(first: Int, last: Int, total: Int?) {
        self.first = first
        self.last = last
        self.total = total
    }

    /// Parses a header value such as `bytes 100-199/1000` or `bytes 100-199/*`.
    init?(_ header: String) {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let first = Int(bounds[0]), let last = Int(bounds[1]), first >= 0, last >= first
        else { return nil }
        var total: Int?
        if halves[1] != "*" {
            guard let length = Int(halves[1]), length > last else { return nil }
            total = length
        }
        self.init(first: first, last: last, total: total)
    }
}

/// A response's head as a transfer receives it (see ``DataTransferObserver/responseHead``).
public struct ResponseHead: Sendable {
    /// The HTTP status.
    public let statusCode: Int
    /// The headers, names lowercased, repeated ones joined with ", ".
    public let headers: [String: String]
    /// The URL the response came from, after redirects.
    public let finalURL: URL

    /// A head.
    public init(statusCode: Int, headers: [String: String], finalURL: URL) {
        self.statusCode = statusCode
        self.headers = headers
        self.finalURL = finalURL
    }
}
