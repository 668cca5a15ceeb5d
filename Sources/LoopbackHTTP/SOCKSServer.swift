import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal SOCKS server on 127.0.0.1 for tests: SOCKS5 without
/// authentication (RFC 1928, `CONNECT` only) and SOCKS4a, one thread per
/// connection. It records each destination as the client named it (so a
/// test tells `socks5h`, which sends the host name, from `socks5`, which
/// sends an address), and connects to nothing but 127.0.0.1: a name is
/// mapped by ``hosts`` (`localhost` and `::1` as they are), anything else refused.
public final class SOCKSServer: Sendable {
    /// One destination a client asked for.
    public struct Destination: Sendable, Equatable, CustomStringConvertible {
        /// 4 (SOCKS4a) or 5.
        public let version: Int
        /// The host as sent: a name, or an address's text.
        public let host: String
        /// Whether the client sent a name (not an address).
        public let isName: Bool
        /// The port as sent.
        public let port: Int

        /// `SOCKS5 name images.example:8080`, `SOCKS5 address 127.0.0.1:8080`.
        public var description: String { "SOCKS\(version) \(isName ? "name" : "address") \(host):\(port)" }
    }

    /// The port the server listens on.
    public var port: UInt16 { listener.port }
    private let listener: TCPListener
    private let log: Locked<[Destination]>

    /// Starts a server; `hosts`: names mapped to 127.0.0.1 (besides `localhost`).
    public init(hosts: Set<String> = []) throws {
        let log = Locked([Destination]())
        self.log = log
        listener = try TCPListener { listener, client in
            guard let version = TCPListener.read(client, count: 1)?.first else { return }
            let destination = version == 5 ? Self.greet5(client) : version == 4 ? Self.request4(client) : nil
            guard let destination else { return }
            log.withLock { $0.append(destination) }
            let allowed = ["127.0.0.1", "::1", "localhost"].contains(destination.host) || hosts.contains(destination.host.lowercased())
            let upstream = allowed ? listener.connectToLoopback(port: destination.port) : nil
            // SOCKS5: succeeded / host unreachable, bound to 0.0.0.0:0.
            // SOCKS4: granted (0x5A) / rejected (0x5B).
            let reply: [UInt8] =
                version == 5 ? [5, upstream == nil ? 4 : 0, 0, 1, 0, 0, 0, 0, 0, 0] : [0, upstream == nil ? 0x5B : 0x5A, 0, 0, 0, 0, 0, 0]
            guard TCPListener.write(client, reply), let upstream else { return }
            defer { listener.close(upstream) }
            TCPListener.relay(client, upstream)
        }
    }

    deinit { stop() }

    /// Every destination asked for so far, in order.
    public var destinations: [Destination] { log.withLock { $0 } }

    /// Stops listening and ends every connection.
    public func stop() { listener.stop() }

    /// SOCKS5 after the version byte: the method choice (no authentication
    /// only), then a `CONNECT` request; its destination, or nil.
    private static func greet5(_ client: Int32) -> Destination? {
        guard let count = TCPListener.read(client, count: 1)?.first, let methods = TCPListener.read(client, count: Int(count)),
            TCPListener.write(client, [5, methods.contains(0) ? 0 : 0xFF]), methods.contains(0),
            let head = TCPListener.read(client, count: 4), head[0] == 5, head[1] == 1
        else { return nil }
        var host: String
        var isName = false
        switch head[3] {
        case 1:
            guard let bytes = TCPListener.read(client, count: 4) else { return nil }
            host = bytes.map(String.init).joined(separator: ".")
        case 3:
            guard let length = TCPListener.read(client, count: 1)?.first, let name = TCPListener.read(client, count: Int(length))
            else { return nil }
            host = String(decoding: name, as: UTF8.self)
            isName = true
        case 4:
            guard let bytes = TCPListener.read(client, count: 16) else { return nil }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &text, socklen_t(text.count)) }
            host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        default:
            return nil
        }
        guard let port = TCPListener.read(client, count: 2) else { return nil }
        return Destination(version: 5, host: host, isName: isName, port: Int(port[0]) << 8 | Int(port[1]))
    }

    /// SOCKS4a after the version byte: `CONNECT`, port, address (0.0.0.x
    /// when a name follows), user id, then the name; its destination, or nil.
    private static func request4(_ client: Int32) -> Destination? {
        guard let head = TCPListener.read(client, count: 7), head[0] == 1, readString(client) != nil else { return nil }
        let port = Int(head[1]) << 8 | Int(head[2])
        let address = Array(head[3..<7])
        if address[0...2] == [0, 0, 0], address[3] != 0 {
            guard let name = readString(client) else { return nil }
            return Destination(version: 4, host: name, isName: true, port: port)
        }
        return Destination(version: 4, host: address.map(String.init).joined(separator: "."), isName: false, port: port)
    }

    /// A NUL-terminated string (at most 255 bytes).
    private static func readString(_ client: Int32) -> String? {
        var bytes: [UInt8] = []
        while let byte = TCPListener.read(client, count: 1)?.first, byte != 0 {
            bytes.append(byte)
            if bytes.count > 255 { return nil }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
