import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A listening socket on 127.0.0.1 (a port the system chooses) that hands
/// each accepted connection to `serve` on a thread of its own: what the
/// test proxies (``LoopbackProxy``, ``SOCKSServer``) are built on, with the
/// sockets they open tracked so that ``stop()`` ends every one.
final class TCPListener: Sendable {
    let port: UInt16
    private let listener: Int32
    /// Open sockets (accepted and outgoing), and whether the listener stopped.
    private let state = Locked((open: Set<Int32>(), stopped: false))

    init(serve: @escaping @Sendable (TCPListener, Int32) -> Void) throws {
        let (fd, port) = try LoopbackSocket.listen(backlog: 128)
        self.port = port
        listener = fd
        let thread = Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    break
                }
                guard track(client) else { break }
                let connection = Thread { [self] in
                    serve(self, client)
                    close(client)
                }
                connection.name = "TCPListener.connection"
                connection.start()
            }
            Glibc.close(fd)
        }
        thread.name = "TCPListener.accept"
        thread.start()
    }

    deinit { stop() }

    /// Stops accepting and shuts every open socket down (their threads then end).
    func stop() {
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Records `fd` as open; false (and `fd` closed) once stopped.
    private func track(_ fd: Int32) -> Bool {
        let tracked = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.open.insert(fd)
            return true
        }
        if !tracked { Glibc.close(fd) }
        return tracked
    }

    /// Closes `fd`, forgetting it first (so ``stop()`` never shuts a number
    /// down that has been reused).
    func close(_ fd: Int32) {
        let known = state.withLock { $0.open.remove(fd) != nil }
        if known { Glibc.close(fd) }
    }

    /// A connection to 127.0.0.1:`port`, tracked; nil when refused. Nothing
    /// but loopback is ever connected to.
    func connectToLoopback(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard track(fd) else { return nil }
        var address = LoopbackSocket.address(port: UInt16(port))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Copies bytes both ways between `a` and `b` until either side closes or fails.
    static func relay(_ a: Int32, _ b: Int32) {
        var descriptors = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return }
            for index in 0..<2 where descriptors[index].revents != 0 {
                let count = recv(descriptors[index].fd, &buffer, buffer.count, 0)
                if count < 0 && errno == EINTR { continue }
                guard count > 0, write(descriptors[1 - index].fd, buffer[0..<count]) else { return }
            }
        }
    }

    /// Writes all of `bytes`; false if the peer has gone.
    @discardableResult
    static func write<Bytes: Collection<UInt8>>(_ fd: Int32, _ bytes: Bytes) -> Bool {
        Array(bytes).withUnsafeBytes { raw in
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

    /// Exactly `count` bytes, or nil at end of stream.
    static func read(_ fd: Int32, count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let received = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + offset, count - offset, 0) }
            if received < 0 && errno == EINTR { continue }
            guard received > 0 else { return nil }
            offset += received
        }
        return bytes
    }

    /// Bytes up to and including the first `\r\n\r\n` (an HTTP head), or
    /// nil at end of stream or past 64 KiB. Reads one byte at a time, so
    /// nothing after the head is consumed.
    static func readHead(_ fd: Int32) -> [UInt8]? {
        var head: [UInt8] = []
        while !head.reversed().starts(with: [0x0A, 0x0D, 0x0A, 0x0D]) {
            guard head.count < 65_536, let byte = read(fd, count: 1) else { return nil }
            head += byte
        }
        return head
    }
}
