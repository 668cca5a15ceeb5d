import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One way a broken or hostile HTTP server (or the network in front of it)
/// can answer. ``FaultServer`` serves each at a path of its own.
public enum Fault: Sendable {
    /// Reads the request and answers nothing until the server's held
    /// responses are released (``FaultServer/releaseHeld()``).
    case neverStarts
    /// Sends the head and the first half of `body`, then nothing more until
    /// the held responses are released.
    case stallMidBody(Data)
    /// Sends the head and the first half of `body`, then resets the
    /// connection (TCP RST: `SO_LINGER` 0, then close).
    case resetMidBody(Data)
    /// `Content-Length` says `body.count + missing`, then `body` is sent and
    /// the connection closed.
    case contentLengthLonger(Data, missing: Int)
    /// `Content-Length` says `length` (fewer bytes than `body`), then all of
    /// `body` is sent on a connection kept open.
    case contentLengthShorter(Data, length: Int)
    /// A chunked body that never ends: 16 KiB chunks until the client hangs up.
    case endlessChunked
    /// `line` in place of the status line (`"HTTP/1.1 2OO OK"`), then a
    /// well-formed rest of the response with `body`.
    case statusLine(String, body: Data)
    /// A 200 whose head holds `lines` as they are (not `Name: value` lines,
    /// bytes not allowed in a header), with `body`.
    case headerLines([String], body: Data)
    /// A 200 whose head holds `count` header lines of `lineLength` bytes
    /// each before `body`: a header block of about `count * lineLength` bytes.
    case headerBlock(count: Int, lineLength: Int, body: Data)
    /// A 302 to `location`, as written (another scheme, a loop back here).
    case redirect(to: String)
    /// A 200 with `body` and `contentType`: whatever the client asked for.
    case body(Data, contentType: String)
    /// `body` compressed with gzip, sent with `Content-Encoding: gzip` and
    /// the compressed length (a small body that expands past a limit).
    case gzip(Data)
    /// Reads the request, then closes the connection without a byte of reply.
    case closeWithoutReply
    /// `body`, with its true `Content-Length`, written in `pieces` equal
    /// parts, `interval` seconds apart: a slow link. Stops when the client hangs up.
    case drip(Data, pieces: Int, interval: Double)
    /// A response head that never ends: its status line, then one byte of
    /// a header line every `interval` seconds, until the client hangs up
    /// (a slowloris of responses).
    case dripHead(interval: Double)
    /// `HTTP/1.1 100 Continue` interim responses, one every `interval`
    /// seconds, and never a final one, until the client hangs up.
    case endlessInterim(interval: Double)
}

/// A loopback HTTP/1.1 server (a ``LoopbackServer`` on 127.0.0.1) that
/// answers with injected faults: register a ``Fault`` with ``url(for:)`` and
/// load the URL it returns. `/image` answers the good `image` given at
/// start: what a client loads next to show it still works after a fault.
///
/// Faults that hold a response (``Fault/neverStarts``,
/// ``Fault/stallMidBody(_:)``) wait until ``releaseHeld()`` or ``stop()``:
/// a test stops the server when it ends, so no connection thread is left waiting.
public final class FaultServer: Sendable {
    private let server: LoopbackServer
    private let faults: Locked<[String: Fault]>
    private let held = Gate()

    /// Starts a server on 127.0.0.1 that serves `image` (with `contentType`) at `/image`.
    public init(image: Data, contentType: String = "image/png") throws {
        let faults = Locked([String: Fault]())
        let held = self.held
        self.faults = faults
        server = try LoopbackServer { request, connection in
            if request.path == "/image" {
                connection.respond(status: 200, headers: [("Content-Type", contentType)], body: image)
            } else if let fault = faults.withLock({ $0[request.path] }) {
                Self.answer(fault, on: connection, held: held)
            } else {
                connection.respond(status: 404, body: Data("no such fault".utf8))
            }
        }
    }

    deinit { stop() }

    /// The URL of `/image`, the good image; `query` makes it a distinct URL.
    public func imageURL(_ query: String? = nil) -> URL {
        server.url(query.map { "/image?\($0)" } ?? "/image")
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String) -> URL { server.url(path) }

    /// Serves `fault` at `path` (default: a new path of its own) and returns its URL.
    public func url(for fault: Fault, path: String? = nil) -> URL {
        let path = path ?? "/fault/\(UUID().uuidString)"
        faults.withLock { $0[path] = fault }
        return server.url(path)
    }

    /// How many requests have arrived so far.
    public var requestCount: Int { server.requestCount }

    /// Lets every held response go on (now and later).
    public func releaseHeld() { held.open() }

    /// Releases held responses, stops accepting, and shuts every open connection down.
    public func stop() {
        held.open()
        server.stop()
    }

    private static func answer(_ fault: Fault, on connection: HTTPConnection, held: Gate) {
        switch fault {
        case .neverStarts:
            held.wait()
            connection.close()
        case .stallMidBody(let body):
            connection.write(head(200, ["Content-Length: \(body.count)"]) + body.prefix(body.count / 2))
            held.wait()
            connection.close()
        case .resetMidBody(let body):
            connection.write(head(200, ["Content-Length: \(body.count)"]) + body.prefix(body.count / 2))
            connection.reset()
        case .contentLengthLonger(let body, let missing):
            connection.write(head(200, ["Content-Length: \(body.count + missing)"]) + body)
            connection.close()
        case .contentLengthShorter(let body, let length):
            connection.write(head(200, ["Content-Length: \(length)"]) + body)
        case .endlessChunked:
            connection.startChunked()
            let chunk = Data(repeating: 0x41, count: 16 * 1024)
            while connection.writeChunk(chunk) {}  // until the client hangs up
            connection.close()
        case .statusLine(let line, let body):
            connection.write(Data("\(line)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body)
        case .headerLines(let lines, let body):
            connection.write(head(200, lines + ["Content-Length: \(body.count)"]) + body)
        case .headerBlock(let count, let lineLength, let body):
            let name = "X-Padding-"
            var block = Data()
            block.reserveCapacity(count * lineLength)
            for n in 0..<count {
                let prefix = "\(name)\(n): "
                block.append(Data(prefix.utf8))
                block.append(Data(repeating: 0x61, count: max(1, lineLength - prefix.utf8.count - 2)))
                block.append(Data("\r\n".utf8))
            }
            connection.write(
                Data("HTTP/1.1 200 OK\r\n".utf8) + block + Data("Content-Length: \(body.count)\r\n\r\n".utf8) + body)
            connection.close()
        case .redirect(let location):
            connection.respond(status: 302, headers: [("Location", location)], body: Data())
        case .body(let body, let contentType):
            connection.respond(status: 200, headers: [("Content-Type", contentType)], body: body)
        case .gzip(let body):
            connection.respond(status: 200, headers: [("Content-Encoding", "gzip")], body: Gzip.compress(body))
        case .closeWithoutReply:
            connection.close()
        case .drip(let body, let pieces, let interval):
            guard connection.write(head(200, ["Content-Length: \(body.count)"])) else { return connection.close() }
            let size = max(1, (body.count + pieces - 1) / max(1, pieces))
            var offset = body.startIndex
            while offset < body.endIndex {
                // The pacing is the fault itself (a slow link), not a way to order events.
                Thread.sleep(forTimeInterval: interval)
                let end = min(body.endIndex, offset + size)
                guard connection.write(body[offset..<end]) else { break }
                offset = end
            }
        case .dripHead(let interval):
            guard connection.write("HTTP/1.1 200 OK\r\nX-Slow: ") else { return connection.close() }
            // Pacing as the fault (a slow sender), not to order events.
            repeat { Thread.sleep(forTimeInterval: interval) } while connection.write("a")
            connection.close()
        case .endlessInterim(let interval):
            while connection.write("HTTP/1.1 100 Continue\r\n\r\n") { Thread.sleep(forTimeInterval: interval) }
            connection.close()
        }
    }

    /// A response head with `status` and `lines` (written as they are).
    private static func head(_ status: Int, _ lines: [String]) -> Data {
        var text = "HTTP/1.1 \(status) \(HTTPConnection.reason(status))\r\n"
        for line in lines { text += "\(line)\r\n" }
        return Data((text + "\r\n").utf8)
    }
}

extension HTTPConnection {
    /// Resets the connection: `SO_LINGER` with a zero timeout, then close,
    /// so the peer gets a TCP RST ("connection reset by peer") rather than
    /// an orderly end of stream.
    public func reset() {
        guard !isClosed else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }
}
