import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP forward proxy on 127.0.0.1 for tests: requests in
/// absolute form (`GET http://host:port/path`) are passed on, and `CONNECT
/// host:port` opens a tunnel. It records what it was asked, can demand
/// credentials (HTTP Basic, answering 407 without them), and connects to
/// nothing but 127.0.0.1: a name is mapped by ``hosts`` (`localhost` and
/// addresses as they are), and anything else is answered 502.
///
/// One request per client connection: each answer is sent with
/// `Connection: close`, then the connection closed. No caching.
public final class LoopbackProxy: Sendable {
    /// One request as the proxy received it.
    public struct Request: Sendable, Equatable {
        /// `GET`, `CONNECT`, ...
        public let method: String
        /// The request target: an absolute URL, or `host:port` for `CONNECT`.
        public let target: String
        /// The `Proxy-Authorization` header, if any.
        public let authorization: String?
    }

    /// The port the proxy listens on.
    public var port: UInt16 { listener.port }
    private let listener: TCPListener
    private let log: Locked<[Request]>

    /// Starts a proxy.
    ///
    /// - Parameters:
    ///   - hosts: host names mapped to 127.0.0.1 (besides `localhost`).
    ///   - credentials: the user name and password every request must carry
    ///     (`Proxy-Authorization: Basic ...`); nil: none needed.
    ///   - refusedTargets: hosts (as in the request target) answered 403.
    public init(hosts: Set<String> = [], credentials: (user: String, password: String)? = nil, refusedTargets: Set<String> = []) throws {
        let log = Locked([Request]())
        self.log = log
        let expected = credentials.map { "Basic " + Data("\($0.user):\($0.password)".utf8).base64EncodedString() }
        listener = try TCPListener { listener, client in
            guard let head = TCPListener.readHead(client) else { return }
            let lines = String(decoding: head, as: UTF8.self).components(separatedBy: "\r\n")
            let parts = lines[0].split(separator: " ").map(String.init)
            guard parts.count == 3 else { return Self.answer(client, 400) }
            var headers: [(name: String, value: String)] = []
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
            }
            let authorization = headers.first { $0.name.lowercased() == "proxy-authorization" }?.value
            log.withLock { $0.append(Request(method: parts[0], target: parts[1], authorization: authorization)) }
            if let expected, authorization != expected {
                return Self.answer(client, 407, headers: "Proxy-Authenticate: Basic realm=\"loopback proxy\"\r\n")
            }
            let isTunnel = parts[0] == "CONNECT"
            let url = isTunnel ? URL(string: "tunnel://\(parts[1])") : URL(string: parts[1])
            guard let url, let host = url.host, let port = url.port ?? (url.scheme == "http" ? 80 : nil) else {
                return Self.answer(client, 400)
            }
            if refusedTargets.contains(host) { return Self.answer(client, 403) }
            guard Self.isLoopback(host, hosts), let upstream = listener.connectToLoopback(port: port) else {
                return Self.answer(client, 502)
            }
            defer { listener.close(upstream) }
            if isTunnel {
                guard TCPListener.write(client, Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)) else { return }
                return TCPListener.relay(client, upstream)
            }
            // Origin form, without the hop-by-hop and proxy headers; the
            // origin closes after its answer, which ends the relay.
            let path = url.path.isEmpty ? "/" : url.path
            var request = "\(parts[0]) \(path)\(url.query.map { "?" + $0 } ?? "") HTTP/1.1\r\n"
            for (name, value) in headers where !["connection", "proxy-connection", "proxy-authorization", "keep-alive"].contains(name.lowercased()) {
                request += "\(name): \(value)\r\n"
            }
            request += "Via: 1.1 loopback-proxy\r\nConnection: close\r\n\r\n"
            guard TCPListener.write(upstream, Array(request.utf8)), var answer = TCPListener.readHead(upstream) else {
                return Self.answer(client, 502)
            }
            answer.insert(contentsOf: Array("Connection: close\r\n".utf8), at: answer.count - 2)
            guard TCPListener.write(client, answer) else { return }
            TCPListener.relay(client, upstream)
        }
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`: the proxy's URL.
    public var url: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Every request received so far, in order.
    public var requests: [Request] { log.withLock { $0 } }

    /// Stops listening and ends every connection and tunnel.
    public func stop() { listener.stop() }

    private static func isLoopback(_ host: String, _ hosts: Set<String>) -> Bool {
        host == "127.0.0.1" || host == "localhost" || hosts.contains(host.lowercased())
    }

    private static func answer(_ client: Int32, _ status: Int, headers: String = "") {
        let reasons = [400: "Bad Request", 403: "Forbidden", 407: "Proxy Authentication Required", 502: "Bad Gateway"]
        let body = "loopback proxy: \(status)"
        let text = "HTTP/1.1 \(status) \(reasons[status] ?? "Error")\r\n\(headers)Content-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)"
        TCPListener.write(client, Array(text.utf8))
    }
}
