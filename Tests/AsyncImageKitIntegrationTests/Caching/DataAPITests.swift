@testable import AsyncImageKit
import Foundation
import LoopbackHTTP
import TestSupport
import XCTest

/// The data-level API (`AsyncImageLoader.data(for:)`) through the HTTP
/// cache, against a real server on 127.0.0.1: any status is a response,
/// stored responses come back whole with an `Age`, request directives, the
/// stale rules of RFC 9111 exactly, no `Accept-Encoding` unless asked.
final class DataAPITests: XCTestCase {
    private var server: ImageServer!
    private var disk: DataCache!

    override func setUpWithError() throws {
        server = try ImageServer()
        disk = try DataCache(directory: temporaryFolder("data-api"))
    }

    override func tearDown() {
        server.stop()
    }

    /// A new loader over the shared disk (no memory cache): every call below
    /// goes through the HTTP cache alone.
    private func loader(_ httpCache: HTTPCachePolicy = .private) -> AsyncImageLoader {
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: DispatchQueue(label: "data-api"), notificationCenter: NotificationCenter(),
            diskCache: disk)
        configuration.httpCache = httpCache
        return AsyncImageLoader(configuration: configuration)
    }

    /// Serves `path` with `status`, `headers` and a body naming the request's number.
    private func serve(_ path: String, status: Int = 200, _ headers: [(String, String)]) -> URL {
        let url = server.url(path: path)
        let count = LoopbackHTTP.Locked(0)
        server.respond(path) { connection in
            let n = count.withLock { value -> Int in
                value += 1
                return value
            }
            connection.respond(status: status, headers: headers, body: Data("body \(n)".utf8))
        }
        return url
    }

    private func text(_ response: HTTPCacheResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    func testAnyStatusIsAResponseAndStoredWhenHTTPAllows() async throws {
        let notFound = serve("/missing.txt", status: 404, [("Cache-Control", "max-age=60"), ("X-Why", "gone")])
        let first = try await loader().data(for: notFound)
        XCTAssertEqual(first.statusCode, 404, "a status is a response, not a thrown error")
        XCTAssertEqual(text(first), "body 1")
        XCTAssertEqual(first.source, .network)
        let second = try await loader().data(for: notFound)
        XCTAssertEqual(second.statusCode, 404)
        XCTAssertEqual(second.source, .cache, "a 404 with explicit freshness is reused (RFC 9111 §3)")
        XCTAssertEqual(text(second), "body 1")
        XCTAssertEqual(second.headers["x-why"], "gone", "stored whole: every header")
        XCTAssertNotNil(second.headers["age"].flatMap { Int($0) }, "served with an Age")
        XCTAssertEqual(server.requestCount(notFound), 1)

        let error = serve("/error.txt", status: 500, [])
        _ = try await loader().data(for: error)
        let again = try await loader().data(for: error)
        XCTAssertEqual(again.source, .network, "a 500 without explicit freshness is not reused")
        XCTAssertEqual(server.requestCount(error), 2)
    }

    func testA304RefreshesTheStoredResponse() async throws {
        let url = server.url(path: "/validated.txt")
        let count = LoopbackHTTP.Locked(0)
        let server = self.server!
        server.respond("/validated.txt") { connection in
            count.withLock { $0 += 1 }
            if server.headers(of: url)?["if-none-match"] == "\"v1\"" {
                connection.respond(
                    status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60"), ("X-Version", "b")],
                    body: Data())
            } else {
                connection.respond(
                    status: 200, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=0"), ("X-Version", "a")],
                    body: Data("the body".utf8))
            }
        }
        _ = try await loader().data(for: url)
        let revalidated = try await loader().data(for: url)
        XCTAssertEqual(revalidated.source, .revalidated)
        XCTAssertEqual(revalidated.statusCode, 200, "the stored status, not the 304's")
        XCTAssertEqual(text(revalidated), "the body")
        XCTAssertEqual(revalidated.headers["x-version"], "b", "the 304's headers merged in (RFC 9111 §4.3.4)")
        let fresh = try await loader().data(for: url)
        XCTAssertEqual(fresh.source, .cache, "fresh for the 304's max-age")
        XCTAssertEqual(count.withLock { $0 }, 2)
    }

    func testRequestDirectives() async throws {
        let url = serve("/fresh.txt", [("Cache-Control", "max-age=600"), ("ETag", "\"e\"")])
        _ = try await loader().data(for: url)
        let cached = try await loader().data(for: url)
        XCTAssertEqual(cached.source, .cache)
        let noCache = try await loader().data(for: ImageRequest(url: url, headers: ["Cache-Control": "no-cache"]))
        XCTAssertEqual(noCache.source, .network, "no-cache: asked again (the server answers 200)")
        XCTAssertEqual(server.headers(of: url)?["if-none-match"], "\"e\"", "conditionally")
        let pragma = try await loader().data(for: ImageRequest(url: url, headers: ["Pragma": "no-cache"]))
        XCTAssertEqual(pragma.source, .network)
        let onlyIfCached = serve("/never-stored.txt", [])
        let gateway = try await loader().data(
            for: ImageRequest(url: onlyIfCached, headers: ["Cache-Control": "only-if-cached"]))
        XCTAssertEqual(gateway.statusCode, 504, "only-if-cached with nothing stored (RFC 9111 §5.2.1.7)")
        XCTAssertEqual(server.requestCount(onlyIfCached), 0)
        do {
            _ = try await loader().data(for: ImageRequest(url: onlyIfCached, cachePolicy: .cachedOnly))
            XCTFail("cachedOnly with nothing stored")
        } catch let error as AsyncImageError {
            XCTAssertEqual(error, .notCached(onlyIfCached))
        }
    }

    /// RFC 9111 exactly: no stale response on a failure unless the response
    /// (stale-if-error) or the request (max-stale) allows it; never past
    /// must-revalidate.
    func testStaleOnlyWhereTheResponseOrTheRequestAllowsIt() async throws {
        let failing = LoopbackHTTP.Locked(false)
        func serveFailing(_ path: String, _ cacheControl: String) -> URL {
            let url = server.url(path: path)
            server.respond(path) { connection in
                if failing.withLock({ $0 }) { return connection.respond(status: 503, body: Data("down".utf8)) }
                connection.respond(status: 200, headers: [("Cache-Control", cacheControl), ("ETag", "\"x\"")], body: Data("ok".utf8))
            }
            return url
        }
        let plain = serveFailing("/plain.txt", "max-age=0")
        let allowed = serveFailing("/allowed.txt", "max-age=0, stale-if-error=600")
        let strict = serveFailing("/strict.txt", "max-age=0, stale-if-error=600, must-revalidate")
        for url in [plain, allowed, strict] { _ = try await loader().data(for: url) }
        failing.withLock { $0 = true }
        let plainAnswer = try await loader().data(for: plain)
        XCTAssertEqual(plainAnswer.statusCode, 503, "no permission: the server's answer")
        let allowedAnswer = try await loader().data(for: allowed)
        XCTAssertEqual(allowedAnswer.statusCode, 200)
        XCTAssertTrue(allowedAnswer.isStale, "stale-if-error")
        let strictAnswer = try await loader().data(for: strict)
        XCTAssertEqual(strictAnswer.statusCode, 503, "must-revalidate wins")
        let maxStale = try await loader().data(for: ImageRequest(url: plain, headers: ["Cache-Control": "max-stale"]))
        XCTAssertTrue(maxStale.isStale, "the request's max-stale")
        XCTAssertEqual(maxStale.source, .cache)
    }

    /// stale-while-revalidate: served at once, revalidated in the background.
    func testStaleWhileRevalidate() async throws {
        let url = server.url(path: "/swr.txt")
        let version = LoopbackHTTP.Locked(1)
        server.respond("/swr.txt") { connection in
            let current = version.withLock { $0 }
            connection.respond(
                status: 200, headers: [("Cache-Control", "max-age=0, stale-while-revalidate=600")],
                body: Data("v\(current)".utf8))
        }
        _ = try await loader().data(for: url)
        version.withLock { $0 = 2 }
        let stale = try await loader().data(for: url)
        XCTAssertEqual(text(stale), "v1")
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.source, .cache)
        // The background revalidation stores v2: polled for (there is no
        // event for its store), within 5 s.
        var latest = ""
        for _ in 0..<500 {
            latest = text(try await loader().data(for: ImageRequest(url: url, headers: ["Cache-Control": "max-stale"])))
            if latest == "v2" { break }
            try await Task.sleep(nanoseconds: 10_000_000)
        }
        XCTAssertEqual(latest, "v2", "the revalidation's answer was stored")
    }

    func testNoAcceptEncodingUnlessAskedAndKeyedByURL() async throws {
        let url = serve("/plain-key.txt", [("Cache-Control", "max-age=600")])
        _ = try await loader().data(for: ImageRequest(url: url, headers: ["X-Trace": "1"]))
        XCTAssertNil(server.headers(of: url)?["accept-encoding"], "no Accept-Encoding sent")
        let other = try await loader().data(for: ImageRequest(url: url, headers: ["X-Trace": "2", "Cookie": "a=b"]))
        XCTAssertEqual(other.source, .cache, "request headers count only through Vary")

        let varied = serve("/varied.txt", [("Cache-Control", "max-age=600"), ("Vary", "Accept-Language")])
        _ = try await loader().data(for: ImageRequest(url: varied, headers: ["Accept-Language": "en,fr"]))
        let same = try await loader().data(for: ImageRequest(url: varied, headers: ["Accept-Language": "en, fr"]))
        XCTAssertEqual(same.source, .cache, "Vary compares normalised values")
        let different = try await loader().data(for: ImageRequest(url: varied, headers: ["Accept-Language": "de"]))
        XCTAssertEqual(different.source, .network)

        // Authorization stays in the key (a documented deviation, for privacy).
        let private1 = try await loader().data(for: ImageRequest(url: url, headers: ["Authorization": "Bearer a"]))
        XCTAssertEqual(private1.source, .network)
    }

    func testSharedCacheRules() async throws {
        let url = serve("/private.txt", [("Cache-Control", "private, max-age=600")])
        _ = try await loader(.shared).data(for: url)
        let again = try await loader(.shared).data(for: url)
        XCTAssertEqual(again.source, .network, "a shared cache stores no private response")
        let smax = serve("/smax.txt", [("Cache-Control", "max-age=0, s-maxage=600")])
        _ = try await loader(.shared).data(for: smax)
        let sharedHit = try await loader(.shared).data(for: smax)
        XCTAssertEqual(sharedHit.source, .cache, "s-maxage, shared")
        let privateMiss = try await loader(.private).data(for: smax)
        XCTAssertEqual(privateMiss.source, .network, "max-age=0, private")
    }
}

/// The transport's own `chunked` decoding, for transfers that take bodies as
/// sent (libcurl's transfer decoding off).
final class ChunkedDecoderTests: XCTestCase {
    private func decode(_ pieces: [String]) -> (Data, Bool) {
        var decoder = ChunkedDecoder()
        var output = Data()
        for piece in pieces {
            let bytes = Array(piece.utf8)
            bytes.withUnsafeBytes { decoder.decode($0, into: &output) }
        }
        return (output, decoder.isMalformed)
    }

    func testRFC9112_7_1_ChunkedFramingIsRemoved() {
        let whole = "3\r\nhel\r\n2;name=value\r\nlo\r\nA\r\n, chunked!\r\n0\r\nTrailer: x\r\n\r\n"
        XCTAssertEqual(decode([whole]).0, Data("hello, chunked!".utf8))
        XCTAssertFalse(decode([whole]).1)
        // Split at every byte: the same.
        XCTAssertEqual(decode(whole.map { String($0) }).0, Data("hello, chunked!".utf8))
        XCTAssertEqual(decode(["0\r\n\r\n"]).0, Data())
        XCTAssertTrue(decode(["zz\r\nhello"]).1, "a size that is no hex number")
        XCTAssertTrue(decode(["3\r\nhelXX"]).1, "data not followed by CRLF")
    }

    func testBodiesAsSentThroughTheDataAPI() async throws {
        let server = try LoopbackServer { request, connection in
            switch request.path {
            case "/chunked":
                connection.startChunked(headers: [("Cache-Control", "max-age=60")])
                _ = connection.writeChunk(Data("hel".utf8))
                _ = connection.writeChunk(Data("lo".utf8))
                connection.endChunks()
            default:
                // A transfer coding libcurl does not know: the body runs to
                // the connection's close (RFC 9112 §6.3).
                _ = connection.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: zzz\r\nConnection: close\r\n\r\nraw body")
                connection.close()
            }
        }
        defer { server.stop() }
        let loader = AsyncImageLoader(
            configuration: .init(cache: nil, deliveryQueue: DispatchQueue(label: "chunked"), notificationCenter: NotificationCenter()))
        let chunked = try await loader.data(for: server.url("/chunked"))
        XCTAssertEqual(String(decoding: chunked.body, as: UTF8.self), "hello")
        let unknown = try await loader.data(for: server.url("/unknown"))
        XCTAssertEqual(String(decoding: unknown.body, as: UTF8.self), "raw body")
        XCTAssertEqual(unknown.statusCode, 200)
    }
}
