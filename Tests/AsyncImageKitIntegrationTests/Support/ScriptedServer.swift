import Foundation
import LoopbackHTTP
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback server that answers one path from a script, one answer per
/// request in the order they arrive, and records when each arrived and
/// when its answer was sent: what a retry test measures its schedule by.
/// An answer can be held: its request waits (its arrival recorded) until
/// the test releases it, so a test sees each try before it is answered.
/// Every answer closes its connection, so each try is a connection of its
/// own (libcurl retries a request by itself once when a connection it
/// reused dies, which would be a try the loader never made).
final class ScriptedServer: @unchecked Sendable {
    enum Answer {
        /// A status with an empty body, and these headers.
        case status(Int, [(String, String)])
        /// Reads the request, then resets the connection (TCP RST) before a byte of reply.
        case reset
        /// Reads the request, then closes the connection without a byte of reply.
        case closeWithoutReply
        /// A `200` head and half of `body`, then a reset.
        case resetMidBody(Data)
        /// A `200` with `body`.
        case body(Data)
    }

    private let lock = NSLock()
    private var script: [Answer]
    private var held: Set<Int> = []
    private var gates: [Int: Gate] = [:]
    private var arrived: [Double] = []
    private var sent: [Double] = []
    private var arrivalWaiters: [(count: Int, expectation: XCTestExpectation)] = []
    private var server: LoopbackServer!

    /// Answers `script` in order (past its end: `404`); the answers at the
    /// indices in `holding` (0 for the first) wait for ``release(_:)``.
    init(_ script: [Answer], holding: Set<Int> = []) throws {
        self.script = script
        self.held = holding
        server = try LoopbackServer { [weak self] request, connection in
            guard let self else { return connection.close() }
            self.handle(connection)
        }
    }

    deinit { stop() }

    func stop() {
        lock.withLock { gates.values.forEach { $0.open() } }
        server?.stop()
    }

    let path = "/scripted.png"
    var url: URL { server.url(path) }

    /// When each request arrived (`ProcessInfo.systemUptime`), in order.
    var arrivals: [Double] { lock.withLock { arrived } }
    /// When each answer was sent (just before its first byte or its reset).
    var answered: [Double] { lock.withLock { sent } }

    /// Fulfilled once `count` requests have arrived.
    func arrival(_ count: Int, _ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "request \(count) arrived")
        let done = lock.withLock { () -> Bool in
            if arrived.count >= count { return true }
            arrivalWaiters.append((count, expectation))
            return false
        }
        if done { expectation.fulfill() }
        return expectation
    }

    /// Lets the held answer at `index` go.
    func release(_ index: Int) { gate(index).open() }

    private func gate(_ index: Int) -> Gate {
        lock.withLock {
            if let gate = gates[index] { return gate }
            let gate = Gate()
            gates[index] = gate
            return gate
        }
    }

    private func handle(_ connection: HTTPConnection) {
        let now = ProcessInfo.processInfo.systemUptime
        let (index, ready) = lock.withLock { () -> (Int, [XCTestExpectation]) in
            arrived.append(now)
            let ready = arrivalWaiters.filter { $0.count <= arrived.count }.map(\.expectation)
            arrivalWaiters.removeAll { $0.count <= arrived.count }
            return (arrived.count - 1, ready)
        }
        ready.forEach { $0.fulfill() }
        if lock.withLock({ held.contains(index) }) { gate(index).wait() }
        let answer = lock.withLock { index < script.count ? script[index] : nil }
        lock.withLock { sent.append(ProcessInfo.processInfo.systemUptime) }
        switch answer {
        case .status(let code, let headers):
            connection.respond(status: code, headers: headers + [("Connection", "close")], body: Data())
        case .reset:
            connection.reset()
        case .closeWithoutReply:
            break
        case .resetMidBody(let body):
            connection.write(
                Data("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8)
                    + body.prefix(body.count / 2))
            connection.reset()
        case .body(let body):
            connection.respond(
                status: 200, headers: [("Content-Type", "image/png"), ("Connection", "close")], body: body)
        case nil:
            connection.respond(status: 404, headers: [("Connection", "close")], body: Data())
        }
        connection.close()
    }

    /// A port on 127.0.0.1 with nothing listening (bound, then closed):
    /// connecting to it is refused.
    static func closedPort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        close(fd)
        return UInt16(bigEndian: address.sin_port)
    }
}
