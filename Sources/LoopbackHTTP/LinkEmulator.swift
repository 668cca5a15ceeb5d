import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A network link between 127.0.0.1 and 127.0.0.1: a TCP relay that adds a
/// round trip and a bandwidth limit to every connection through it, for
/// benchmarks and tests of loading over real networks.
///
/// Clients connect to ``port``; each connection is relayed to the upstream
/// port (a server the caller started on 127.0.0.1). No other address is
/// ever used. The kernel here has no `netem`, so latency has to come from
/// userspace; the rate is paced here too, so the relay works without a
/// network namespace.
///
/// What a connection sees, for a round trip `R` and a rate `B` bits/s:
/// - **Set-up**: the client's connection is accepted at once (the kernel
///   does that), but its first bytes reach the server only `1.5 R` after
///   it connected, as over a real link where the TCP handshake takes a
///   round trip before data leaves: a TLS handshake or a request then costs
///   its own round trips on top, as it would.
/// - **Latency**: every byte is delivered `R / 2` after it left the link,
///   in each direction.
/// - **Rate**: each direction is one link shared by every connection (a
///   bottleneck queue, first in first out): a segment of `n` bytes occupies
///   it `8n / B` seconds. The relay reads from a side only while that
///   connection has less than ``Settings/queueBytes`` plus the bytes in
///   flight (`B R / 2`) waiting, and keeps its receive buffer toward the
///   server small, so a server's writes back up as they would behind a real
///   bottleneck, and a transfer cancelled mid-body stops costing link time
///   soon after the server stops sending.
/// - **Ends**: a side's end (FIN) is passed on after its last byte; a reset
///   or error on either side closes both.
///
/// ``counters`` tells what crossed: connections, bytes each way.
public final class LinkEmulator: Sendable {
    /// The link's shape.
    public struct Settings: Sendable, Hashable, CustomStringConvertible {
        /// The round trip added, in seconds (half each way).
        public var roundTrip: Double
        /// Bits per second in each direction; nil: no limit.
        public var bitsPerSecond: Double?
        /// How many bytes of one connection may wait for the link in one
        /// direction before the relay stops reading that side (the bottleneck's queue).
        public var queueBytes: Int

        public init(roundTrip: Double, bitsPerSecond: Double? = nil, queueBytes: Int = 64 * 1024) {
            self.roundTrip = max(0, roundTrip)
            self.bitsPerSecond = bitsPerSecond.map { max(1, $0) }
            self.queueBytes = max(1500, queueBytes)
        }

        public var description: String {
            let rate = bitsPerSecond.map { "\(Int(($0 / 1e6).rounded())) Mbit/s" } ?? "unlimited"
            return "\(Int((roundTrip * 1000).rounded())) ms, \(rate)"
        }
    }

    /// What crossed the link since it started (or since ``resetCounters()``).
    public struct Counters: Sendable, Hashable {
        /// Connections accepted.
        public var connections = 0
        /// The most connections open at once.
        public var peakConnections = 0
        /// Bytes delivered to clients (server to client).
        public var bytesDown = 0
        /// Bytes delivered to the server (client to server).
        public var bytesUp = 0
    }

    /// The port clients connect to, on 127.0.0.1.
    public let port: UInt16
    public let upstreamPort: UInt16
    public let settings: Settings
    private let listener: Int32
    private let wakePipe: (read: Int32, write: Int32)
    private let shared = Locked(LinkShared())

    /// Starts relaying `127.0.0.1:port` to `127.0.0.1:upstreamPort` with `settings`.
    public init(upstreamPort: UInt16, settings: Settings) throws {
        self.upstreamPort = upstreamPort
        self.settings = settings
        let (fd, port) = try LoopbackSocket.listen(backlog: 256)
        self.port = port
        Self.setNonBlocking(fd)
        listener = fd
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            close(fd)
            throw LoopbackServerError.socket(errno)
        }
        Self.setNonBlocking(fds[0])
        wakePipe = (fds[0], fds[1])
        let thread = Thread { [self] in
            var loop = RelayLoop(settings: settings, upstreamPort: upstreamPort)
            loop.run(listener: listener, wake: wakePipe.read, shared: shared)
        }
        thread.name = "LinkEmulator"
        thread.start()
    }

    deinit { stop() }

    /// What crossed the link so far.
    public var counters: Counters { shared.withLock { $0.counters } }

    /// How many connections are open now.
    public var openConnections: Int { shared.withLock { $0.open } }

    /// Starts counting again from zero.
    public func resetCounters() {
        shared.withLock { state in
            state.counters = Counters()
            state.counters.peakConnections = state.open
        }
    }

    /// Stops accepting and closes every connection (the loop thread closes
    /// them and the listener). Idempotent.
    public func stop() {
        let first = shared.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wakePipe.write, &byte, 1)
    }

    static func setNonBlocking(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// The state the loop thread and callers share.
struct LinkShared: Sendable {
    var stopped = false
    var open = 0
    var counters = LinkEmulator.Counters()
}

/// The relay's loop: every connection of the link, on one thread.
private struct RelayLoop {
    /// One direction of one connection: what was read from its source and
    /// waits to be written to its destination, each segment at its time.
    struct Direction {
        var segments: [(due: Double, bytes: [UInt8])] = []
        var head = 0
        /// Bytes of the head segment already written.
        var written = 0
        /// Bytes read and not yet written.
        var pending = 0
        /// The source ended (FIN) at this time; passed on once the bytes before it are written.
        var endDue: Double?
        var endPassed = false
        /// The destination would block: wait for it to be writable.
        var blocked = false

        var isEmpty: Bool { head == segments.count }

        /// When this direction next needs the loop (a segment or its end due), unless it waits on the socket.
        var nextDue: Double? {
            if blocked { return nil }
            if !isEmpty { return segments[head].due }
            if let endDue, !endPassed { return endDue }
            return nil
        }

        mutating func popFront() {
            head += 1
            written = 0
            if head > 64, head * 2 > segments.count {
                segments.removeFirst(head)
                head = 0
            }
        }
    }

    final class Connection {
        let client: Int32
        let server: Int32
        let opened: Double
        var up = Direction()  // client to server
        var down = Direction()  // server to client
        var dead = false

        init(client: Int32, server: Int32, opened: Double) {
            (self.client, self.server, self.opened) = (client, server, opened)
        }

        var isFinished: Bool { dead || (up.endPassed && down.endPassed) }
    }

    let settings: LinkEmulator.Settings
    let upstreamPort: UInt16
    var connections: [Connection] = []
    /// When each direction's link is next free (the bottleneck's clock).
    var upFree = 0.0
    var downFree = 0.0
    /// The most bytes one connection may have waiting in one direction.
    let window: Int
    static let segmentSize = 8 * 1024
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)

    init(settings: LinkEmulator.Settings, upstreamPort: UInt16) {
        self.settings = settings
        self.upstreamPort = upstreamPort
        let inFlight = settings.bitsPerSecond.map { Int($0 / 8 * settings.roundTrip / 2) } ?? 4 << 20
        window = settings.queueBytes + inFlight
    }

    mutating func run(listener: Int32, wake: Int32, shared: Locked<LinkShared>) {
        defer {
            for connection in connections { closeBoth(connection) }
            shared.withLock { $0.open = 0 }
            close(listener)
            close(wake)
        }
        while !shared.withLock({ $0.stopped }) {
            // What to wait for: new connections, the stop, readable sources
            // with room, blocked destinations; and the next due time.
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            var next = Double.infinity
            for connection in connections {
                var clientEvents: Int16 = 0
                var serverEvents: Int16 = 0
                if connection.up.endDue == nil, connection.up.pending < window { clientEvents |= Int16(POLLIN) }
                if connection.down.endDue == nil, connection.down.pending < window { serverEvents |= Int16(POLLIN) }
                if connection.down.blocked { clientEvents |= Int16(POLLOUT) }
                if connection.up.blocked { serverEvents |= Int16(POLLOUT) }
                fds.append(pollfd(fd: connection.client, events: clientEvents, revents: 0))
                fds.append(pollfd(fd: connection.server, events: serverEvents, revents: 0))
                if let due = connection.up.nextDue { next = min(next, due) }
                if let due = connection.down.nextDue { next = min(next, due) }
            }
            let now = LinkEmulator.now()
            let timeout: Int32 = next.isFinite ? Int32(max(0, min(1000, ((next - now) * 1000).rounded(.up)))) : 1000
            _ = poll(&fds, nfds_t(fds.count), timeout)
            let time = LinkEmulator.now()
            if fds[0].revents & Int16(POLLIN) != 0 { acceptAll(listener, at: time, shared: shared) }
            for (index, connection) in connections.enumerated() where index * 2 + 3 < fds.count {
                let client = fds[2 + index * 2].revents
                let server = fds[3 + index * 2].revents
                if client & Int16(POLLOUT | POLLERR | POLLHUP) != 0 { connection.down.blocked = false }
                if server & Int16(POLLOUT | POLLERR | POLLHUP) != 0 { connection.up.blocked = false }
                if client & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    read(connection, from: connection.client, into: \.up, at: time, upstream: true)
                }
                if server & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    read(connection, from: connection.server, into: \.down, at: time, upstream: false)
                }
            }
            let writeTime = LinkEmulator.now()
            var delivered = (up: 0, down: 0)
            for connection in connections where !connection.dead {
                delivered.up += flush(connection, \.up, to: connection.server, at: writeTime, counter: \.bytesUp, shared)
                delivered.down += flush(connection, \.down, to: connection.client, at: writeTime, counter: \.bytesDown, shared)
            }
            let finished = connections.filter(\.isFinished)
            for connection in finished { closeBoth(connection) }
            if !finished.isEmpty { connections.removeAll(where: \.isFinished) }
            let open = connections.count
            if delivered != (0, 0) || !finished.isEmpty { shared.withLock { $0.open = open } }
        }
    }

    private mutating func acceptAll(_ listener: Int32, at time: Double, shared: Locked<LinkShared>) {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            // A small, fixed receive buffer toward the server (set before
            // connecting, so the window is sized by it): loopback TCP would
            // otherwise grow it to megabytes, and a server's writes would
            // sit there rather than back up behind the link as they do
            // behind a real one (where what is in flight is about a round
            // trip of the rate plus the bottleneck's queue, both modelled here).
            var receiveBuffer: Int32 = 32 * 1024
            if server >= 0 {
                setsockopt(server, SOL_SOCKET, SO_RCVBUF, &receiveBuffer, socklen_t(MemoryLayout<Int32>.size))
            }
            var address = LoopbackSocket.address(port: upstreamPort)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard server >= 0, connected == 0 else {
                if server >= 0 { close(server) }
                Self.reset(client)
                continue
            }
            var yes: Int32 = 1
            for fd in [client, server] {
                LinkEmulator.setNonBlocking(fd)
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            }
            connections.append(Connection(client: client, server: server, opened: time))
            let open = connections.count
            shared.withLock {
                $0.counters.connections += 1
                $0.counters.peakConnections = max($0.counters.peakConnections, open)
                $0.open = open
            }
        }
    }

    /// Reads what `fd` has (as much as the connection's window allows) and
    /// gives each segment its time: when it leaves the link, plus half a round trip.
    private mutating func read(
        _ connection: Connection, from fd: Int32, into direction: ReferenceWritableKeyPath<Connection, Direction>,
        at time: Double, upstream: Bool
    ) {
        guard connection[keyPath: direction].endDue == nil, !connection.dead else { return }
        let room = window - connection[keyPath: direction].pending
        guard room > 0 else { return }
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min(room, $0.count), 0) }
        if count < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return }
            connection.dead = true  // reset: both sides go (closeBoth, with a reset)
            return
        }
        let half = settings.roundTrip / 2
        if count == 0 {
            // The end follows the bytes before it, half a round trip after it was sent.
            let last = connection[keyPath: direction].segments.last?.due ?? 0
            connection[keyPath: direction].endDue = max(last, time + half)
            return
        }
        var offset = 0
        while offset < count {
            let size = min(Self.segmentSize, count - offset)
            var leaves = time
            if let rate = settings.bitsPerSecond {
                let start = max(upstream ? upFree : downFree, time)
                leaves = start + Double(size * 8) / rate
                if upstream { upFree = leaves } else { downFree = leaves }
            }
            // Before the connection's handshake round trip is over, nothing leaves the client.
            if upstream { leaves = max(leaves, connection.opened + settings.roundTrip) }
            let due = max(leaves + half, connection[keyPath: direction].segments.last?.due ?? 0)
            connection[keyPath: direction].segments.append((due, Array(buffer[offset..<(offset + size)])))
            connection[keyPath: direction].pending += size
            offset += size
        }
    }

    /// Writes the segments of `direction` that are due; passes its end on
    /// once everything before it is written. Returns the bytes written.
    /// Sends what is due in `direction` to `fd`; the bytes sent, each
    /// counted in `counter` before its `send`, so a peer that has read the
    /// last byte finds it counted (counted after, a test that read the
    /// counters on its completion saw 98,728 of 100,000 bytes, once under load).
    private func flush(
        _ connection: Connection, _ direction: ReferenceWritableKeyPath<Connection, Direction>, to fd: Int32, at time: Double,
        counter: WritableKeyPath<LinkEmulator.Counters, Int>, _ shared: Locked<LinkShared>
    ) -> Int {
        var total = 0
        while !connection[keyPath: direction].blocked, !connection[keyPath: direction].isEmpty {
            let head = connection[keyPath: direction].head
            let segment = connection[keyPath: direction].segments[head]
            guard segment.due <= time else { break }
            let written = connection[keyPath: direction].written
            let attempt = segment.bytes.count - written
            shared.withLock { $0.counters[keyPath: counter] += attempt }
            let sent = segment.bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL))
            }
            if attempt - max(0, sent) > 0 { shared.withLock { $0.counters[keyPath: counter] -= attempt - max(0, sent) } }
            if sent < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK {
                    connection[keyPath: direction].blocked = true
                } else if errno != EINTR {
                    connection.dead = true
                    return total
                }
                continue
            }
            total += sent
            connection[keyPath: direction].pending -= sent
            if written + sent == segment.bytes.count {
                connection[keyPath: direction].popFront()
            } else {
                connection[keyPath: direction].written = written + sent
            }
        }
        if connection[keyPath: direction].isEmpty, let due = connection[keyPath: direction].endDue,
            !connection[keyPath: direction].endPassed, due <= time
        {
            connection[keyPath: direction].endPassed = true
            shutdown(fd, Int32(SHUT_WR))
        }
        return total
    }

    private func closeBoth(_ connection: Connection) {
        if connection.dead {
            Self.reset(connection.client)
            Self.reset(connection.server)
        } else {
            close(connection.client)
            close(connection.server)
        }
    }

    /// Closes with a reset (linger 0), as a connection that failed does.
    private static func reset(_ fd: Int32) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }
}
