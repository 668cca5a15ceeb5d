import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A socket on 127.0.0.1 that listens and never accepts, its queue of
/// connections already full: a new connection's SYN is dropped by the
/// kernel and its connect never completes (a server overloaded or wedged
/// before `accept`, the one fault where no TCP connection is ever made).
public final class NonAcceptingListener: Sendable {
    /// The port it listens on.
    public let port: UInt16
    private let listener: Int32
    /// The connections that fill its queue (some complete, some never will).
    private let fillers: [Int32]

    /// Listens with the smallest backlog and fills it.
    public init() throws {
        let (fd, port) = try LoopbackSocket.listen(backlog: 0)
        listener = fd
        self.port = port
        // Linux keeps backlog + 1 completed connections; a few more make
        // sure the queue is full whatever the kernel's rounding.
        var fillers: [Int32] = []
        for _ in 0..<4 {
            let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard client >= 0 else { continue }
            var address = LoopbackSocket.address(port: port)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            fillers.append(client)
        }
        self.fillers = fillers
    }

    deinit {
        for fd in fillers { close(fd) }
        close(listener)
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path.hasPrefix("/") ? "" : "/")\(path)")!
    }
}
