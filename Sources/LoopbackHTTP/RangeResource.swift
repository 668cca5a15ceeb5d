import Foundation

/// A body served as a file server serves it: with an `ETag` and a
/// `Last-Modified`, honouring `Range` and `If-Range`, and with faults on
/// demand (the connection cut, or held on a ``Gate``, after so many body
/// bytes): what resumable downloads are tested against.
///
/// - `Range: bytes=N-`, `bytes=N-M` and `bytes=-S` (one range) get `206
///   Partial Content` with `Content-Range: bytes N-M/total`; a range that
///   starts at or past the end gets `416` with `Content-Range: bytes
///   */total`; anything else in `Range` (several ranges, other units, a
///   malformed value) is ignored: `200` and the whole body.
/// - `If-Range` applies the range only when it is the current strong ETag
///   (exactly) or the current `Last-Modified` (exactly); otherwise the
///   answer is `200` and the whole body.
/// - Every answer carries `ETag`, `Last-Modified` (when set),
///   `Accept-Ranges: bytes` and `Content-Length`.
///
/// ```swift
/// let resource = RangeResource(body: bytes)
/// resource.inject(.cut(after: 1000))     // the next body answer is cut
/// let server = try LoopbackServer(routes: ["/big": resource.handler])
/// ```
public final class RangeResource: Sendable {
    /// What goes wrong with one answer that has a body (200 or 206).
    public enum Fault: Sendable {
        /// Sends the head (with the full `Content-Length`) and `after` body
        /// bytes, then closes the connection.
        case cut(after: Int)
        /// Sends the head and `after` body bytes, then waits for `gate`
        /// before sending the rest (if the client is still there).
        case hold(after: Int, gate: Gate)
        /// Sends the head and `after` body bytes, waits for `gate`, then
        /// closes the connection: a cut at the moment the test chooses.
        case holdThenCut(after: Int, gate: Gate)
    }

    /// One request as it was answered.
    public struct Answer: Sendable {
        /// The request's headers (names lowercased).
        public let requestHeaders: [String: String]
        /// 200, 206 or 416.
        public let status: Int
        /// Body bytes written (fewer than the part's length when cut or held).
        public let bytesSent: Int
    }

    private struct Representation {
        var body: Data
        var etag: String?
        var lastModified: String?
    }

    private struct State {
        var current: Representation
        var faults: [Fault] = []
        var answers: [Answer] = []
    }

    /// The `Content-Type` sent with every answer, if any.
    public let contentType: String?
    private let state: Locked<State>

    /// A resource; by default its ETag is derived from the body and its
    /// `Last-Modified` is a fixed date.
    public init(
        body: Data, etag: String? = nil, lastModified: String? = "Wed, 21 Oct 2015 07:28:00 GMT",
        contentType: String? = "application/octet-stream"
    ) {
        self.contentType = contentType
        state = Locked(
            State(current: Representation(body: Data(body), etag: etag ?? Self.etag(for: body), lastModified: lastModified)))
    }

    /// A strong ETag for `body` (its length and a checksum).
    public static func etag(for body: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in body {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return "\"\(body.count)-\(String(hash, radix: 16))\""
    }

    /// The body served now.
    public var body: Data { state.withLock { $0.current.body } }
    /// The ETag served now.
    public var etag: String? { state.withLock { $0.current.etag } }
    /// The `Last-Modified` served now.
    public var lastModified: String? { state.withLock { $0.current.lastModified } }

    /// Serves a new version from now on (a stale `If-Range` then gets the whole body).
    public func replace(body: Data, etag: String? = nil, lastModified: String? = "Thu, 22 Oct 2015 07:28:00 GMT") {
        state.withLock {
            $0.current = Representation(body: Data(body), etag: etag ?? Self.etag(for: body), lastModified: lastModified)
        }
    }

    /// Applies `fault` to the next answer with a body (faults queue up, one per answer).
    public func inject(_ fault: Fault) {
        state.withLock { $0.faults.append(fault) }
    }

    /// Every request answered so far, in order.
    public var answers: [Answer] { state.withLock { $0.answers } }

    /// A handler for ``LoopbackServer/init(routes:)``.
    public var handler: LoopbackServer.Handler {
        { [self] request, connection in respond(to: request, on: connection) }
    }

    /// What a `Range` header asks for, against a body of `length` bytes.
    public enum RangeRequest: Equatable, Sendable {
        /// Bytes `first...last` (clamped to the body).
        case bytes(first: Int, last: Int)
        /// Starts at or past the end (or a zero-length suffix): 416.
        case unsatisfiable
        /// Not a single byte range: ignored.
        case ignored
    }

    /// Parses one `bytes=` range.
    public static func parse(range header: String, length: Int) -> RangeRequest {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return .ignored }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        let bounds = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2 else { return .ignored }
        let (start, end) = (bounds[0].trimmingCharacters(in: .whitespaces), bounds[1].trimmingCharacters(in: .whitespaces))
        guard start.allSatisfy(\.isNumber), end.allSatisfy(\.isNumber) else { return .ignored }
        if start.isEmpty {
            // A suffix: the last N bytes.
            guard let suffix = Int(end) else { return .ignored }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .bytes(first: max(0, length - suffix), last: length - 1)
        }
        guard let first = Int(start) else { return .ignored }
        var last = length - 1
        if !end.isEmpty {
            guard let given = Int(end), given >= first else { return .ignored }
            last = min(given, length - 1)
        }
        return first < length ? .bytes(first: first, last: last) : .unsatisfiable
    }

    /// Answers `request` (any method is answered as `GET`).
    public func respond(to request: HTTPRequest, on connection: HTTPConnection) {
        let (current, fault, status, part) = state.withLock { state -> (Representation, Fault?, Int, Range<Int>) in
            let current = state.current
            let length = current.body.count
            var status = 200
            var part = 0..<length
            if let range = request.headers["range"], Self.ifRangeMatches(request.headers["if-range"], current) {
                switch Self.parse(range: range, length: length) {
                case .bytes(let first, let last):
                    status = 206
                    part = first..<(last + 1)
                case .unsatisfiable:
                    status = 416
                    part = 0..<0
                case .ignored:
                    break
                }
            }
            let fault = status == 416 || state.faults.isEmpty ? nil : state.faults.removeFirst()
            return (current, fault, status, part)
        }
        var head = "HTTP/1.1 \(status) \(HTTPConnection.reason(status))\r\nContent-Length: \(part.count)\r\n"
        if let etag = current.etag { head += "ETag: \(etag)\r\n" }
        if let lastModified = current.lastModified { head += "Last-Modified: \(lastModified)\r\n" }
        head += "Accept-Ranges: bytes\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        if status == 206 { head += "Content-Range: bytes \(part.lowerBound)-\(part.upperBound - 1)/\(current.body.count)\r\n" }
        if status == 416 { head += "Content-Range: bytes */\(current.body.count)\r\n" }
        head += "\r\n"
        let bytes = current.body.subdata(in: part)
        var sent = bytes.count
        switch fault {
        case .cut(let after)?, .hold(let after, _)?, .holdThenCut(let after, _)?: sent = min(max(0, after), bytes.count)
        case nil: break
        }
        // Recorded first: a client may see the answer before this thread runs again.
        state.withLock { $0.answers.append(Answer(requestHeaders: request.headers, status: status, bytesSent: sent)) }
        connection.write(Data(head.utf8) + bytes.prefix(sent))
        switch fault {
        case nil:
            break
        case .cut?:
            connection.close()
        case .hold(_, let gate)?:
            gate.wait()
            if connection.write(bytes.dropFirst(sent)) == false { connection.close() }
        case .holdThenCut(_, let gate)?:
            gate.wait()
            connection.close()
        }
    }

    /// Whether a range may be applied: no `If-Range`, or one naming the
    /// current representation (a strong ETag, or the exact date).
    private static func ifRangeMatches(_ ifRange: String?, _ current: Representation) -> Bool {
        guard let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) else { return true }
        if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
            guard let etag = current.etag, etag.hasPrefix("\"") else { return false }
            return ifRange == etag
        }
        return ifRange == current.lastModified
    }
}
