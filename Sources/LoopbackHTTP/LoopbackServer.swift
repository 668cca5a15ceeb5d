import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on 127.0.0.1 for tests, the demo and benchmarks.
///
/// It is built on raw sockets so that a handler can produce any fault a real
/// server or network can: hold a response until released, send a chunked body
/// of any length, close the connection mid-body, redirect in a loop. Each
/// connection runs on its own thread; a handler may block (on a ``Gate``)
/// without holding up other connections. It binds only to the loopback
/// address, on a port the system chooses.
public final class LoopbackServer: Sendable {
    /// Handles one request; it must answer through the connection.
    public typealias Handler = @Sendable (HTTPRequest, HTTPConnection) -> Void

    /// The port the server listens on.
    public let port: UInt16
    private let listener: Int32
    private let handler: Handler
    private let state = Locked(ServerState())

    private struct ServerState {
        var stopped = false
        var connections: [Int32: HTTPConnection] = [:]
        var requestCount = 0
    }

    /// Starts a server that passes every request to `handler`.
    public init(handler: @escaping Handler) throws {
        let (fd, port) = try LoopbackSocket.listen(backlog: 128)
        self.port = port
        self.listener = fd
        self.handler = handler
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "LoopbackServer.accept"
        thread.start()
    }

    /// Starts a server that routes by path (without the query); unknown paths get 404.
    public convenience init(routes: [String: Handler]) throws {
        try self.init { request, connection in
            if let route = routes[request.path] {
                route(request, connection)
            } else {
                connection.respond(status: 404, body: Data("not found".utf8))
            }
        }
    }

    deinit {
        stop()
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? "" : "/")\(path)")!
    }

    /// How many requests have arrived so far.
    public var requestCount: Int { state.withLock { $0.requestCount } }

    /// Stops accepting, and shuts every open connection down.
    public func stop() {
        let connections = state.withLock { state -> [HTTPConnection]? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return Array(state.connections.values)
        }
        guard let connections else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        for connection in connections { connection.shutdownSocket() }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                break
            }
            var yes: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let connection = HTTPConnection(fd: client)
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections[client] = connection
                return true
            }
            guard accepted else {
                connection.close()
                continue
            }
            let thread = Thread { [self] in self.serve(connection) }
            thread.name = "LoopbackServer.connection"
            thread.start()
        }
        close(listener)
    }

    private func serve(_ connection: HTTPConnection) {
        while let request = connection.readRequest() {
            state.withLock { $0.requestCount += 1 }
            handler(request, connection)
            if connection.isClosed || request.wantsClose { break }
        }
        connection.close()
        state.withLock { _ = $0.connections.removeValue(forKey: connection.fd) }
    }
}

/// Why the server could not start.
public enum LoopbackServerError: Error {
    /// A socket call failed with this errno.
    case socket(Int32)
}

/// One request's head.
public struct HTTPRequest: Sendable {
    /// `GET`, `HEAD`, ...
    public let method: String
    /// The path, without the query.
    public let path: String
    /// The query string after `?`, if any.
    public let query: String?
    /// Header fields, keys lower-cased.
    public let headers: [String: String]

    /// Whether the client asked to close the connection after this response.
    var wantsClose: Bool { headers["connection"]?.lowercased() == "close" }
}

/// The server side of one connection: read requests, write anything.
public final class HTTPConnection: Sendable {
    let fd: Int32
    private let closed = Atomic<Bool>(false)
    private let buffer = Locked(Data())

    init(fd: Int32) {
        self.fd = fd
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Writes all of `data`; false if the peer has gone.
    @discardableResult
    public func write(_ data: Data) -> Bool {
        guard !isClosed else { return false }
        return data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    /// Writes a UTF-8 string.
    @discardableResult
    public func write(_ text: String) -> Bool { write(Data(text.utf8)) }

    /// Writes a whole response with `Content-Length`; the connection stays open for the next request.
    public func respond(status: Int, headers: [(String, String)] = [], body: Data) {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        write(Data(head.utf8) + body)
    }

    /// Writes a response head for a chunked body; follow with ``writeChunk(_:)`` and ``endChunks()``.
    public func startChunked(status: Int = 200, headers: [(String, String)] = []) {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nTransfer-Encoding: chunked\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        write(head + "\r\n")
    }

    /// Writes one chunk of a chunked body; false if the peer has gone.
    @discardableResult
    public func writeChunk(_ data: Data) -> Bool {
        write(Data(String(data.count, radix: 16).utf8) + Data("\r\n".utf8) + data + Data("\r\n".utf8))
    }

    /// Ends a chunked body.
    public func endChunks() { write("0\r\n\r\n") }

    /// Closes the connection (mid-response if need be).
    public func close() {
        if closed.exchange(true, ordering: .acquiringAndReleasing) == false {
            Glibc.close(fd)
        }
    }

    /// Blocks until the client closes its end (returns true) or `timeout` passes (false).
    /// Any request bytes still arriving are discarded.
    public func waitForPeerClose(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var scratch = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN) | 0x2000 /* POLLRDHUP */, revents: 0)
            let milliseconds = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            let count = recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
            if count == 0 { return true }
            if count < 0 && errno != EAGAIN && errno != EINTR { return true }
        }
        return false
    }

    func shutdownSocket() {
        if !isClosed { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Reads the next request head, or nil at end of stream.
    func readRequest() -> HTTPRequest? {
        var pending = buffer.withLock { buffer -> Data in
            defer { buffer = Data() }
            return buffer
        }
        let terminator = Data("\r\n\r\n".utf8)
        var chunk = [UInt8](repeating: 0, count: 16384)
        while pending.range(of: terminator) == nil {
            guard !isClosed, pending.count < 65536 else { return nil }
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending.append(contentsOf: chunk[0..<count])
        }
        let end = pending.range(of: terminator)!
        let head = String(decoding: pending[pending.startIndex..<end.lowerBound], as: UTF8.self)
        let rest = Data(pending[end.upperBound...])
        buffer.withLock { $0 = rest }
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let target = String(requestLine[1])
        let parts = target.split(separator: "?", maxSplits: 1)
        return HTTPRequest(
            method: String(requestLine[0]), path: String(parts.first ?? ""),
            query: parts.count > 1 ? String(parts[1]) : nil, headers: headers)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 304: return "Not Modified"
        case 404: return "Not Found"
        case 416: return "Range Not Satisfiable"
        case 500: return "Internal Server Error"
        default: return "Status"
        }
    }
}

/// A latch a handler waits on until the test opens it: how a test holds a
/// response for as long as it needs, instead of sleeping.
public final class Gate: Sendable {
    private let condition = NSCondition()
    private let isOpen = Atomic<Bool>(false)

    /// Creates a closed gate.
    public init() {}

    /// Blocks until the gate is opened (returns at once if it already is).
    public func wait() {
        condition.lock()
        while !isOpen.load(ordering: .acquiring) { condition.wait() }
        condition.unlock()
    }

    /// Blocks until the gate is opened or `timeout` seconds pass; returns
    /// whether it was opened.
    @discardableResult
    public func wait(timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !isOpen.load(ordering: .acquiring) {
            if !condition.wait(until: deadline) { return isOpen.load(ordering: .acquiring) }
        }
        return true
    }

    /// Opens the gate for every waiter, now and later.
    public func open() {
        condition.lock()
        isOpen.store(true, ordering: .releasing)
        condition.broadcast()
        condition.unlock()
    }
}

/// A value guarded by an `NSLock` (ThreadSanitizer understands it; it does
/// not see `Synchronization.Mutex` on Linux). Shared by the server, the tests
/// and the benchmarks.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Creates a guarded value.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value while holding the lock.
    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
