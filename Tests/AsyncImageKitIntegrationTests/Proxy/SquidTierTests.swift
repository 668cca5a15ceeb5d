import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// A fleet's shared tier: Squid (Debian's `squid`) as a caching forward
/// proxy on 127.0.0.1 in front of an origin that counts its requests, and
/// loaders in other processes (this test binary run again as workers)
/// configured with ``ProxyConfiguration/server(_:credentials:bypass:certificateAuthorities:)``.
///
/// One Squid serves the whole class (``SquidProxy``: started by the first
/// test that needs it, killed in the class's `tearDown`; a watchdog kills it
/// should this process die first). Each test has an origin of its own, so
/// its URLs (the origin's port is in them) are new to Squid's cache.
/// `images.example` resolves to 127.0.0.1 in Squid's hosts file only.
final class SquidTierTests: XCTestCase {
    private static let shared = LoopbackHTTP.Locked<SquidProxy?>(nil)

    override class func tearDown() {
        shared.withLock { squid in
            squid?.stop()
            squid = nil
        }
        super.tearDown()
    }

    /// The class's Squid (with an `https_port` too), started on first use.
    private func squid() throws -> SquidProxy {
        try Self.shared.withLock { squid in
            if let squid { return squid }
            let started = try SquidProxy(hosts: ["images.example"], tls: true)
            squid = started
            return started
        }
    }

    /// An origin whose images may be cached for ten minutes by anyone. With
    /// a `Date` (as RFC 9110 asks of an origin with a clock): Squid 5.7
    /// revalidates a response without one on every request, `max-age` or not.
    private func cacheableOrigin() throws -> ImageServer {
        let origin = try ImageServer()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        origin.extraHeaders = [("Cache-Control", "public, max-age=600"), ("Date", formatter.string(from: Date()))]
        addTeardownBlock { origin.stop() }
        return origin
    }

    private static func named(_ n: Int, port: Int) -> URL { URL(string: "http://images.example:\(port)/img/\(n).png")! }

    private func transport(_ proxy: ProxyConfiguration, policy: URLPolicy = .unrestricted) -> DataLoader {
        DataLoader(configuration: TransportConfiguration(timeout: 20, urlPolicy: policy, proxy: proxy))
    }

    // MARK: The fleet

    /// Two loaders in two processes, one after the other, load the same
    /// images through Squid with ``URLPolicy/publicOnly``: the origin sees
    /// each image once (the first process's misses fill Squid's cache, the
    /// second's requests are hits), both processes decode every image, and
    /// each serves its second request for an image from its own memory cache.
    func testTwoProcessesFetchEachImageFromTheOriginOnce() throws {
        let squid = try squid()
        let origin = try cacheableOrigin()
        let count = 12
        let port = origin.url(0).port!
        let folder = temporaryFolder("fleet")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var reports: [[String]] = []
        for worker in 0..<2 {
            let report = folder.appendingPathComponent("worker-\(worker)")
            let process = try startWorker(
                "SquidTierTests/testFleetWorker", "PROXY_FLEET_WORKER", "\(squid.url.absoluteString)|\(port)|\(count)|\(report.path)")
            XCTAssertTrue(Self.waitForExit(process, seconds: 120), "worker \(worker) finished")
            XCTAssertEqual(process.terminationStatus, 0, "worker \(worker) succeeded")
            let text = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
            reports.append(text.split(separator: "\n").map(String.init))
        }
        // Each line: N, whether its pixels were image N's, Squid's X-Cache verdict, where the repeat came from.
        XCTAssertEqual(reports[0], (0..<count).map { "\($0) decoded MISS memoryCache" }, squid.accessLog)
        XCTAssertEqual(reports[1], (0..<count).map { "\($0) decoded HIT memoryCache" }, squid.accessLog)
        for n in 0..<count {
            XCTAssertEqual(origin.requestCount(origin.url(n)), 1, "image \(n) from the origin once")
        }
        XCTAssertEqual(origin.arrivalOrder.count, count)
    }

    /// A worker of ``testTwoProcessesFetchEachImageFromTheOriginOnce()`` (does
    /// nothing otherwise): a loader with a memory cache of its own, through
    /// Squid, loads every image (all at once), then each again; writes a
    /// line per image to the report file.
    func testFleetWorker() async throws {
        guard let spec = ProcessInfo.processInfo.environment["PROXY_FLEET_WORKER"] else { return }
        let parts = spec.split(separator: "|").map(String.init)
        let proxy = try XCTUnwrap(URL(string: parts[0]))
        let (port, count) = (Int(parts[1])!, Int(parts[2])!)
        var configuration = AsyncImageLoader.Configuration(
            cache: ImageCache(), concurrentLoads: 4, deliveryQueue: DispatchQueue(label: "fleet worker"),
            notificationCenter: nil, urlPolicy: .publicOnly)
        configuration.dataLoader = DataLoader(configuration: TransportConfiguration(urlPolicy: .publicOnly, proxy: .server(proxy)))
        let loader = AsyncImageLoader(configuration: configuration)
        let first = try await withThrowingTaskGroup(of: (Int, ImageResponse).self) { group in
            for n in 0..<count {
                group.addTask { (n, try await loader.response(for: ImageRequest(url: Self.named(n, port: port)))) }
            }
            return try await group.reduce(into: [Int: ImageResponse]()) { $0[$1.0] = $1.1 }
        }
        var lines: [String] = []
        for n in 0..<count {
            let response = try XCTUnwrap(first[n])
            let again = try await loader.response(for: ImageRequest(url: Self.named(n, port: port)))
            let pixels = response.image.pixel(x: 0, y: 0) == ImageServer.color(n) ? "decoded" : "wrong-pixels"
            let verdict = response.http?.headers["x-cache"]?.split(separator: " ").first.map(String.init) ?? "no-x-cache"
            lines.append("\(n) \(pixels) \(verdict) \(again.source)")
        }
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: parts[3]))
    }

    /// Waits for `process` to exit; kills it after `seconds` (false).
    private static func waitForExit(_ process: Process, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { usleep(20_000) }  // polling interval, not an ordering
        guard process.isRunning else { return true }
        ServerProcess.kill(process)
        return false
    }

    // MARK: TLS to the proxy

    /// An `https` proxy (Squid's `https_port`) is verified against the
    /// authorities configured for it; without them the transfer fails with
    /// a TLS error that names the proxy, even while a connection to the
    /// proxy verified with them is open and idle.
    func testHTTPSProxyIsVerifiedAgainstItsAuthorities() async throws {
        let squid = try squid()
        let origin = try cacheableOrigin()
        let httpsURL = try XCTUnwrap(squid.httpsURL)
        let authority = try XCTUnwrap(squid.certificates?.authority)
        let url = Self.named(1, port: origin.url(1).port!)
        let loader = transport(.server(httpsURL, certificateAuthorities: authority))
        let first = try await loader.data(from: url)
        let second = try await loader.data(from: url)
        XCTAssertEqual(first.data, second.data)
        XCTAssertEqual(first.headers["x-cache"]?.hasPrefix("MISS"), true)
        XCTAssertEqual(second.headers["x-cache"]?.hasPrefix("HIT"), true)
        XCTAssertEqual(second.connection?.newConnections, 0, "one setting: the connection is shared")
        XCTAssertEqual(origin.requestCount(origin.url(1)), 1)

        let error = await asyncImageError { _ = try await self.transport(.server(httpsURL)).data(from: url) }
        guard case .tls(url, _, let message) = error else { return XCTFail("expected .tls, got \(String(describing: error))") }
        XCTAssertTrue(message.hasPrefix("through proxy \(httpsURL.absoluteString): "), message)
        // The loader that trusts the proxy still gets through (on a connection of its own now).
        let third = try await loader.data(from: url)
        XCTAssertEqual(third.data, first.data)
        XCTAssertEqual(third.connection?.newConnections, 1)
    }

    // MARK: Refusals

    /// Squid's own refusals are typed: a plain request it denies is its 403
    /// (``AsyncImageError/httpStatus(_:code:headers:)``, with Squid's error
    /// header); a tunnel it denies is a transport error naming the proxy.
    /// And `.publicOnly` refuses a literal internal origin before Squid is asked.
    func testRefusalsAreTyped() async throws {
        let squid = try squid()
        let origin = try cacheableOrigin()
        // TEST-NET-1: Squid's rules deny it before connecting anywhere.
        let denied = URL(string: "http://192.0.2.1/a.png")!
        let status = await asyncImageError { _ = try await self.transport(.server(squid.url)).data(from: denied) }
        guard case .httpStatus(denied, 403, let headers) = status else {
            return XCTFail("expected Squid's 403, got \(String(describing: status))")
        }
        XCTAssertEqual(headers["x-squid-error"]?.hasPrefix("ERR_ACCESS_DENIED"), true, "\(headers)")

        let tunnel = URL(string: "https://192.0.2.1/a.png")!
        let refused = await asyncImageError { _ = try await self.transport(.server(squid.url)).data(from: tunnel) }
        guard case .transport(tunnel, _, let message) = refused else {
            return XCTFail("expected .transport, got \(String(describing: refused))")
        }
        XCTAssertTrue(message.hasPrefix("through proxy \(squid.url.absoluteString): "), message)
        XCTAssertTrue(message.contains("403"), message)

        let literal = origin.url(2)
        let policy = await asyncImageError { _ = try await self.transport(.server(squid.url), policy: .publicOnly).data(from: literal) }
        XCTAssertEqual(policy, .refused(literal, reason: "127.0.0.1 is a loopback address"))
        let named = Self.named(2, port: literal.port!)
        let allowed = try await transport(.server(squid.url), policy: .publicOnly).data(from: named)
        XCTAssertEqual(allowed.statusCode, 200)
        XCTAssertEqual(origin.requestCount(literal), 1, "only the request by name reached the origin")
    }
}
