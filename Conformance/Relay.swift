import AsyncImageKit
import Foundation
import LoopbackHTTP

/// Which kind of HTTP cache the relay's loader is.
enum CacheMode: String, Sendable {
    case `private`
    case shared
}

/// An HTTP server on 127.0.0.1 that answers the suite's `/test/...`
/// requests through ``AsyncImageLoader/data(for:)-(ImageRequest)``, so the
/// suite judges the loader's HTTP cache and nothing else: a request goes to
/// the origin (or not) only as the loader decides, and the client sees
/// exactly the status, headers and body the loader returns.
///
/// - Request headers are forwarded except hop-by-hop ones, `Host` (the
///   transport sets the origin's), `Accept-Encoding` (node's fetch always
///   sends one; the suite's bodies are plain text, and the data API sends
///   none unless asked) and `Content-Length`.
/// - Response headers are relayed except hop-by-hop ones, `Content-Length`
///   and `Transfer-Encoding` (the relay frames the body itself); the fields
///   a `Connection` header names are kept, since omitting them from a stored
///   response is the cache's job, which a test judges.
/// - A thrown error closes the connection without a response, so the
///   client's fetch fails as a browser's does on a network error: a `502`
///   would be a response the suite could count as a cache's own error
///   (stale-close-must-revalidate passes for any `5xx` without the origin's
///   headers), which the loader never produced. The one exception is
///   ``AsyncImageError/notCached(_:)`` (`only-if-cached` with nothing
///   stored), which becomes the `504` RFC 9111 §5.2.1.7 says a cache answers.
/// - Only GET: the data API has no methods. Anything else (it only comes
///   from the suite's shared-cache client) gets a `501` and a closed
///   connection, since its body, if any, is not read.
final class Relay: Sendable {
    /// `http://127.0.0.1:PORT`.
    let url: URL
    /// The cache mode the relay was asked for.
    let mode: CacheMode
    private let server: LoopbackServer
    private let loader: AsyncImageLoader

    /// How long a request may wait for the loader: past the suite's own 10 s
    /// per request (test-engine/client/config.mjs) and the loader's
    /// ``loadingTimeout``, so every handler ends even if the loader did not.
    static let answerTimeout = 15.0
    /// The loader's time limit per transfer: the suite aborts a request after 10 s.
    static let loadingTimeout = 12.0

    /// Starts a relay to `origin` whose loader keeps its disk cache in `cacheDirectory`.
    init(origin: URL, mode: CacheMode, cacheDirectory: URL) throws {
        let loader = try Self.makeLoader(mode: mode, cacheDirectory: cacheDirectory)
        self.loader = loader
        self.mode = mode
        server = try LoopbackServer { request, connection in
            Self.handle(request, on: connection, origin: origin, loader: loader)
        }
        url = URL(string: "http://127.0.0.1:\(server.port)")!
    }

    /// Stops accepting and closes open connections.
    func stop() {
        server.stop()
    }

    /// Whether the loader has the shared-cache switch (``AsyncImageLoader/Configuration/httpCache``).
    static let hasSharedSwitch = true

    /// The loader under test: its disk cache only (no memory cache, which
    /// holds decoded images, not HTTP responses), in a folder of its own.
    static func makeLoader(mode: CacheMode, cacheDirectory: URL) throws -> AsyncImageLoader {
        var configuration = AsyncImageLoader.Configuration(
            cache: nil,
            // The suite plays 25 tests at once, one request each at a time:
            // none waits in the loader's queue behind another test's.
            concurrentLoads: 25,
            loadingTimeout: loadingTimeout,
            // This command never runs the main queue.
            deliveryQueue: DispatchQueue(label: "asyncimage-conformance.delivery"),
            diskCache: try DataCache(directory: cacheDirectory))
        apply(mode, to: &configuration)
        return AsyncImageLoader(configuration: configuration)
    }

    /// Makes the loader's HTTP cache private or shared.
    static func apply(_ mode: CacheMode, to configuration: inout AsyncImageLoader.Configuration) {
        configuration.httpCache = mode == .shared ? .shared : .private
    }

    // MARK: - Forwarding

    /// Header names never forwarded in either direction (RFC 9110 §7.6.1).
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade",
    ]
    /// Request headers not forwarded besides the hop-by-hop ones.
    static let droppedRequestHeaders: Set<String> = ["host", "accept-encoding", "content-length"]
    /// Response headers not relayed besides the hop-by-hop ones.
    static let droppedResponseHeaders: Set<String> = ["content-length", "transfer-encoding"]

    /// The request headers to forward: without hop-by-hop ones, those the
    /// `Connection` header names, and ``droppedRequestHeaders``.
    static func forwardedRequestHeaders(_ headers: [String: String]) -> [String: String] {
        let named = Set(
            (headers.first { $0.key.lowercased() == "connection" }?.value ?? "")
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
        return headers.filter { name, _ in
            let name = name.lowercased()
            return !hopByHop.contains(name) && !named.contains(name) && !droppedRequestHeaders.contains(name)
        }
    }

    /// The response headers to relay: without hop-by-hop ones and
    /// ``droppedResponseHeaders``. The fields a response's `Connection`
    /// names are kept: leaving them out of a stored response is the cache's
    /// job (RFC 9111 §3.1), which `headers-omit-headers-listed-in-Connection`
    /// judges. (A value with CR or LF, which no parser returns, is dropped.)
    static func relayedResponseHeaders(_ headers: [String: String]) -> [String: String] {
        headers.filter { name, value in
            let name = name.lowercased()
            return !hopByHop.contains(name) && !droppedResponseHeaders.contains(name)
                && !value.contains("\r") && !value.contains("\n")
        }
    }

    private static func handle(
        _ request: HTTPRequest, on connection: HTTPConnection, origin: URL, loader: AsyncImageLoader
    ) {
        guard request.method == "GET" else {
            connection.respond(status: 501, headers: [("Connection", "close")], body: Data("GET only\n".utf8))
            connection.close()
            return
        }
        guard request.path.hasPrefix("/test/"),
            let url = URL(string: origin.absoluteString + request.path + (request.query.map { "?" + $0 } ?? ""))
        else {
            connection.respond(status: 404, body: Data("the relay serves /test/ only\n".utf8))
            return
        }
        let imageRequest = ImageRequest(url: url, headers: forwardedRequestHeaders(request.headers))
        switch answer(within: answerTimeout, { try await loader.data(for: imageRequest) }) {
        case .success(let response)?:
            write(response, to: connection)
        case .failure(AsyncImageError.notCached)?:
            connection.respond(status: 504, body: Data("not cached (only-if-cached)\n".utf8))
        case .failure, nil:
            connection.close()  // the client's fetch fails, as a browser's does on a network error
        }
    }

    /// Runs `operation` and blocks this (server) thread until it ends, at
    /// most `seconds`: nil when it did not end in time.
    private static func answer<T: Sendable>(
        within seconds: Double, _ operation: @escaping @Sendable () async throws -> T
    ) -> Result<T, any Error>? {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = Task {
            let result: Result<T, any Error>
            do { result = .success(try await operation()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + seconds) == .success else {
            task.cancel()
            return nil
        }
        return outcome.withLock { $0 }
    }

    /// Writes `response` as HTTP/1.1 with a `Content-Length` (none, and no
    /// body, for the statuses that have none: 1xx, 204, 304).
    private static func write(_ response: HTTPCacheResponse, to connection: HTTPConnection) {
        let status = response.statusCode
        let bodiless = (100..<200).contains(status) || status == 204 || status == 304
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        let headers = relayedResponseHeaders(response.headers)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if !bodiless { head += "content-length: \(response.body.count)\r\n" }
        head += "\r\n"
        connection.write(Data(head.utf8) + (bodiless ? Data() : response.body))
    }

    /// A reason phrase (the data API does not return the origin's; clients ignore it).
    private static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 304: return "Not Modified"
        case 999: return "304 Not Generated"  // the suite's origin: a request it expected to be conditional was not
        default: return "Status"
        }
    }
}
