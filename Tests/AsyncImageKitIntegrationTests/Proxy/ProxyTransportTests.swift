import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// ``TransportConfiguration/proxy`` against proxies written for the tests
/// (``LoopbackProxy``, an HTTP proxy with `CONNECT`; ``SOCKSServer``, SOCKS5
/// and SOCKS4a), all on 127.0.0.1: which route each setting takes, what
/// the proxy is sent, how the URL policy applies through it, and what a
/// proxy that is down or refuses gives. Squid, as a fleet's shared tier:
/// ``SquidTierTests``.
///
/// `images.example` is a name only the test proxies know (they map it to
/// 127.0.0.1); nothing resolves it here, which is how a test shows that
/// the proxy, not this process, resolved a name.
final class ProxyTransportTests: XCTestCase {
    private var origin: ImageServer!

    override func setUpWithError() throws {
        origin = try ImageServer()
    }

    override func tearDown() {
        origin.stop()
        origin = nil
    }

    private func transport(_ proxy: ProxyConfiguration, policy: URLPolicy = .unrestricted, authority: URL? = nil) -> DataLoader {
        DataLoader(configuration: TransportConfiguration(timeout: 20, certificateAuthorities: authority, urlPolicy: policy, proxy: proxy))
    }

    /// An image loader (no memory cache) over `proxy`, with `policy` as its own URL policy.
    private func imageLoader(_ proxy: ProxyConfiguration, policy: URLPolicy = .unrestricted) -> AsyncImageLoader {
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: DispatchQueue(label: "proxy tests"), notificationCenter: nil, urlPolicy: policy)
        configuration.dataLoader = DataLoader(configuration: TransportConfiguration(timeout: 20, proxy: proxy))
        return AsyncImageLoader(configuration: configuration)
    }

    /// `http://images.example:PORT/img/N.png`: the origin, by a name only the test proxies resolve.
    private func named(_ n: Int) -> URL { URL(string: "http://images.example:\(origin.url(n).port!)/img/\(n).png")! }

    /// Asserts that `image` is image N of the origin.
    private func assertImage(_ image: Image, _ n: Int, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(image.size, PixelSize(width: 4, height: 4), file: file, line: line)
        XCTAssertEqual(image.pixel(x: 0, y: 0), ImageServer.color(n), file: file, line: line)
    }

    /// Runs `body` with the environment variables set (nil: unset), then
    /// puts them back. libcurl reads them when each transfer is set up, on
    /// its own thread: no transfer runs while they change.
    private func withEnvironment(_ values: [String: String?], _ body: () async throws -> Void) async rethrows {
        let saved = values.keys.map { ($0, getenv($0).map { String(cString: $0) }) }
        func apply(_ name: String, _ value: String?) {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        for (name, value) in values { apply(name, value) }
        defer { for (name, value) in saved { apply(name, value) } }
        try await body()
    }

    /// No proxy variables but `http_proxy` (and no `no_proxy` that could exempt loopback).
    private func proxyEnvironment(_ httpProxy: URL) -> [String: String?] {
        [
            "http_proxy": httpProxy.absoluteString, "https_proxy": nil, "HTTPS_PROXY": nil, "all_proxy": nil,
            "ALL_PROXY": nil, "no_proxy": nil, "NO_PROXY": nil,
        ]
    }

    // MARK: Routes

    /// An explicit `http` proxy carries the request in absolute form, and
    /// resolves the name itself; the image decodes.
    func testExplicitHTTPProxyCarriesTheRequest() async throws {
        let proxy = try LoopbackProxy(hosts: ["images.example"])
        defer { proxy.stop() }
        let loader = imageLoader(.server(proxy.url))
        assertImage(try await loader.image(for: named(1)), 1)
        XCTAssertEqual(proxy.requests.map(\.method), ["GET"])
        XCTAssertEqual(proxy.requests.first?.target, named(1).absoluteString)
        XCTAssertEqual(origin.headers(of: origin.url(1))?["via"], "1.1 loopback-proxy")
    }

    /// `.direct` ignores `http_proxy`; `.environment` (the default) honours
    /// it; an explicit proxy replaces it. Proxied and direct transfers to
    /// one origin never share a connection.
    func testEnvironmentDirectAndExplicitRoutes() async throws {
        let environmentProxy = try LoopbackProxy()
        let explicitProxy = try LoopbackProxy()
        defer {
            environmentProxy.stop()
            explicitProxy.stop()
        }
        try await withEnvironment(proxyEnvironment(environmentProxy.url)) {
            let url = origin.url(2)
            // Direct first: its kept-alive connection to the origin must not carry the proxied transfer.
            let direct = try await transport(.direct).data(from: url)
            XCTAssertEqual(direct.statusCode, 200)
            XCTAssertEqual(environmentProxy.requests.count, 0, "direct ignores http_proxy")

            _ = try await transport(.environment).data(from: url)
            XCTAssertEqual(environmentProxy.requests.map(\.target), [url.absoluteString], "environment honours http_proxy")
            _ = try await DataLoader(configuration: TransportConfiguration(timeout: 20)).data(from: url)
            XCTAssertEqual(environmentProxy.requests.count, 2, "the default is the environment")

            _ = try await transport(.server(explicitProxy.url)).data(from: url)
            XCTAssertEqual(explicitProxy.requests.map(\.target), [url.absoluteString], "an explicit proxy replaces the environment's")
            XCTAssertEqual(environmentProxy.requests.count, 2)

            // The direct connection is still there, reused by direct transfers only.
            let again = try await transport(.direct).data(from: url)
            XCTAssertEqual(again.connection?.newConnections, 0, "the direct connection was kept and reused")
            XCTAssertEqual(environmentProxy.requests.count + explicitProxy.requests.count, 3)
        }
        XCTAssertEqual(origin.requestCount(origin.url(2)), 5)
    }

    /// Hosts of the bypass list are reached directly: by address, CIDR
    /// range or name; the others through the proxy.
    func testBypassList() async throws {
        let proxy = try LoopbackProxy(hosts: ["images.example"])
        defer { proxy.stop() }
        let localhost = URL(string: "http://localhost:\(origin.url(3).port!)/img/3.png")!
        let cases = [(["127.0.0.1"], origin.url(3)), (["10.0.0.0/8, 127.0.0.0/8"], origin.url(3)), (["localhost"], localhost)]
        for (bypass, url) in cases {
            let response = try await transport(.server(proxy.url, bypass: bypass)).data(from: url)
            XCTAssertEqual(response.statusCode, 200, "\(bypass)")
        }
        XCTAssertEqual(proxy.requests.count, 0)
        XCTAssertEqual(origin.requestCount(origin.url(3)), 3)

        _ = try await transport(.server(proxy.url, bypass: ["localhost", "10.0.0.0/8"])).data(from: named(4))
        XCTAssertEqual(proxy.requests.map(\.target), [named(4).absoluteString], "a host not on the list goes through the proxy")
    }

    // MARK: Credentials

    /// Credentials reach the proxy as HTTP Basic (given apart or in the
    /// proxy's URL); without them, or with wrong ones, the proxy's 407 is
    /// the typed answer. The password shows in no error.
    func testCredentialsAreSentToTheProxy() async throws {
        let proxy = try LoopbackProxy(credentials: (user: "fleet", password: "p@ss:wörd"))
        defer { proxy.stop() }
        let url = origin.url(5)
        let credentials = ProxyCredentials(user: "fleet", password: "p@ss:wörd")
        _ = try await transport(.server(proxy.url, credentials: credentials)).data(from: url)
        let expected = "Basic " + Data("fleet:p@ss:wörd".utf8).base64EncodedString()
        XCTAssertEqual(proxy.requests.last?.authorization, expected)

        let inURL = URL(string: "http://fleet:p%40ss%3Aw%C3%B6rd@127.0.0.1:\(proxy.port)")!
        _ = try await transport(.server(inURL)).data(from: url)
        XCTAssertEqual(proxy.requests.last?.authorization, expected)

        for wrong in [nil, ProxyCredentials(user: "fleet", password: "guess")] {
            let error = await asyncImageError { _ = try await self.transport(.server(proxy.url, credentials: wrong)).data(from: url) }
            guard case .httpStatus(let failedURL, 407, let headers) = error else {
                return XCTFail("expected the proxy's 407, got \(String(describing: error))")
            }
            XCTAssertEqual(failedURL, url)
            XCTAssertEqual(headers["proxy-authenticate"], "Basic realm=\"loopback proxy\"")
            XCTAssertFalse(error!.description.contains("guess"))
        }
        XCTAssertEqual(proxy.requests.map { $0.authorization == nil }, [false, false, true, false])
        XCTAssertEqual(origin.requestCount(url), 2)
    }

    // MARK: Tunnels and SOCKS

    /// An `https` origin through an `http` proxy: a `CONNECT` tunnel (the
    /// proxy sees only host and port), with the origin's certificate
    /// verified end to end as without a proxy.
    func testHTTPSOriginTunnelsThroughHTTPProxy() async throws {
        let folder = temporaryFolder("proxy-tls")
        let certificates = try TestCertificates.make(in: folder)
        let docroot = folder.appendingPathComponent("h1")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 4, height: 4, color: ImageServer.color(6)))
        try httpResponse(png, contentType: "image/png").write(to: docroot.appendingPathComponent("a.png"))
        let server = try startHTTP1Server(docroot: docroot, certificates: certificates)
        let proxy = try LoopbackProxy()
        defer { proxy.stop() }
        let url = server.url("/a.png")

        // The origin's certificate is checked through the tunnel, against
        // the system's store unless told otherwise. (First: `s_server`
        // serves one connection at a time, and waits for the client to
        // close the one it answered, which libcurl keeps.)
        let error = await asyncImageError { _ = try await self.transport(.server(proxy.url)).data(from: url) }
        guard case .tls(url, _, let message) = error else { return XCTFail("expected .tls, got \(String(describing: error))") }
        XCTAssertTrue(message.hasPrefix("through proxy \(proxy.url.absoluteString): "), message)

        let response = try await transport(.server(proxy.url), authority: certificates.authority).data(from: url)
        XCTAssertEqual(response.data, png)
        XCTAssertEqual(proxy.requests.map(\.method), ["CONNECT", "CONNECT"])
        XCTAssertEqual(proxy.requests.last?.target, "127.0.0.1:\(server.port)")
    }

    /// A `CONNECT` tunnel (to an HTTP/2 server, which keeps its connection
    /// open) serves the next transfer with the same credentials, never one
    /// without: that one asks for a tunnel of its own, which the proxy
    /// refuses. (libcurl's own doing: this holds with every transfer
    /// allowed to share connections.)
    func testTunnelsAreKeptApartByCredentials() async throws {
        let folder = temporaryFolder("proxy-h2")
        let certificates = try TestCertificates.make(in: folder)
        let docroot = folder.appendingPathComponent("h2")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 4, height: 4, color: ImageServer.color(17)))
        try png.write(to: docroot.appendingPathComponent("a.png"))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let proxy = try LoopbackProxy(credentials: (user: "fleet", password: "secret"))
        defer { proxy.stop() }
        let url = server.url("/a.png")
        let credentials = ProxyCredentials(user: "fleet", password: "secret")
        let trusted = transport(.server(proxy.url, credentials: credentials), authority: certificates.authority)
        _ = try await trusted.data(from: url)
        let again = try await trusted.data(from: url)
        XCTAssertEqual(again.data, png)
        XCTAssertEqual(again.connection?.newConnections, 0, "the tunnel is kept for the same credentials")

        let error = await asyncImageError {
            _ = try await self.transport(.server(proxy.url), authority: certificates.authority).data(from: url)
        }
        XCTAssertEqual(
            error,
            .transport(url, code: 22, message: "through proxy \(proxy.url.absoluteString): the proxy refused the tunnel: CONNECT answered 407"))
        XCTAssertEqual(proxy.requests.map { $0.authorization == nil }, [false, true])
    }

    /// `socks5h` and `socks4a` send the host name (the proxy resolves it);
    /// `socks5` resolves it here and sends the address. Each SOCKS
    /// connection is kept and reused by its own proxy's transfers only.
    func testSOCKSProxies() async throws {
        let first = try SOCKSServer(hosts: ["images.example"])
        let second = try SOCKSServer(hosts: ["images.example"])
        defer {
            first.stop()
            second.stop()
        }
        func socks(_ scheme: String, _ server: SOCKSServer) -> ProxyConfiguration {
            .server(URL(string: "\(scheme)://127.0.0.1:\(server.port)")!)
        }
        let loader = imageLoader(socks("socks5h", first))
        assertImage(try await loader.image(for: named(7)), 7)
        XCTAssertEqual(first.destinations.map(\.description), ["SOCKS5 name images.example:\(origin.url(7).port!)"])

        // `.publicOnly` trusts the configured SOCKS proxy on loopback too.
        assertImage(try await imageLoader(socks("socks4a", second), policy: .publicOnly).image(for: named(8)), 8)
        XCTAssertEqual(second.destinations.map(\.description), ["SOCKS4 name images.example:\(origin.url(8).port!)"])

        let local = URL(string: "http://localhost:\(origin.url(9).port!)/img/9.png")!
        assertImage(try await imageLoader(socks("socks5", second)).image(for: local), 9)
        let sent = try XCTUnwrap(second.destinations.last)
        XCTAssertFalse(sent.isName, "socks5 sends the address it resolved")
        XCTAssertTrue(["127.0.0.1", "::1"].contains(sent.host), sent.description)

        // The first proxy's tunnel to the origin serves its next transfer;
        // a transfer through the second never rides on it.
        let again = try await transport(socks("socks5h", first)).data(from: named(10))
        XCTAssertEqual(again.connection?.newConnections, 0)
        XCTAssertEqual(first.destinations.count, 1)
        let other = try await transport(socks("socks5h", second)).data(from: named(10))
        XCTAssertEqual(other.connection?.newConnections, 1)
        XCTAssertEqual(second.destinations.count, 3)
    }

    // MARK: Failures

    /// A proxy that is down, refuses a tunnel, or cannot be used at all
    /// fails with a typed error whose message names the proxy.
    func testProxyFailuresAreTypedAndNameTheProxy() async throws {
        let port = try ServerProcess.freePort()
        let down = URL(string: "http://127.0.0.1:\(port)")!
        let url = origin.url(11)
        let error = await asyncImageError { _ = try await self.transport(.server(down)).data(from: url) }
        guard case .transport(url, 7, let message) = error else {
            return XCTFail("expected .transport code 7, got \(String(describing: error))")
        }
        XCTAssertTrue(message.hasPrefix("through proxy http://127.0.0.1:\(port): "), message)
        XCTAssertTrue(error!.description.contains("through proxy"), error!.description)

        // Through the image loader: the same error.
        let loaded = await asyncImageError { _ = try await self.imageLoader(.server(down)).image(for: url) }
        XCTAssertEqual(loaded, error)

        let socksDown = URL(string: "socks5h://127.0.0.1:\(port)")!
        let socksError = await asyncImageError { _ = try await self.transport(.server(socksDown)).data(from: url) }
        guard case .transport(url, _, let socksMessage) = socksError else {
            return XCTFail("expected .transport, got \(String(describing: socksError))")
        }
        XCTAssertTrue(socksMessage.hasPrefix("through proxy socks5h://127.0.0.1:\(port): "), socksMessage)

        // A tunnel refused: libcurl's CONNECT failure, naming the proxy.
        let refusing = try LoopbackProxy(refusedTargets: ["127.0.0.1"])
        defer { refusing.stop() }
        let secure = URL(string: "https://127.0.0.1:\(port)/a.png")!
        let tunnel = await asyncImageError { _ = try await self.transport(.server(refusing.url)).data(from: secure) }
        guard case .transport(secure, _, let tunnelMessage) = tunnel else {
            return XCTFail("expected .transport, got \(String(describing: tunnel))")
        }
        XCTAssertEqual(tunnelMessage, "through proxy \(refusing.url.absoluteString): the proxy refused the tunnel: CONNECT answered 403")

        // A scheme no proxy has: every transfer fails at once, saying why.
        let unusable = await asyncImageError {
            _ = try await self.transport(.server(URL(string: "ftp://127.0.0.1:\(port)")!)).data(from: url)
        }
        XCTAssertEqual(
            unusable, .transport(url, code: 1, message: "unsupported proxy scheme 'ftp' (http, https, socks4a, socks5, socks5h)"))
        XCTAssertEqual(origin.requestCount(url), 0)
    }

    // MARK: The URL policy

    /// `.publicOnly` through a proxy on loopback: the configured proxy is
    /// trusted, and a public name loads (the proxy resolves it); a literal
    /// internal address is refused from the URL, and so is a redirect to
    /// one, before the proxy is asked; a bypassed host is checked at its
    /// own address; a proxy from the environment is not trusted.
    func testPublicOnlyThroughAProxy() async throws {
        let proxy = try LoopbackProxy(hosts: ["images.example"])
        defer { proxy.stop() }
        let port = origin.url(1).port!
        origin.respond("/to-loopback") { connection in
            connection.respond(status: 302, headers: [("Location", "http://127.0.0.1:\(port)/img/13.png")], body: Data())
        }
        let trusted = imageLoader(.server(proxy.url), policy: .publicOnly)
        assertImage(try await trusted.image(for: named(12)), 12)
        // The transport's own policy as well as the loader's.
        let response = try await transport(.server(proxy.url), policy: .publicOnly).data(from: named(12))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(proxy.requests.count, 2)

        let literal = origin.url(13)
        let refused = await asyncImageError { _ = try await trusted.image(for: literal) }
        XCTAssertEqual(refused, .refused(literal, reason: "127.0.0.1 is a loopback address"))
        let transportRefused = await asyncImageError {
            _ = try await self.transport(.server(proxy.url), policy: .publicOnly).data(from: URL(string: "http://10.0.0.5/a.png")!)
        }
        XCTAssertEqual(transportRefused, .refused(URL(string: "http://10.0.0.5/a.png")!, reason: "10.0.0.5 is a private address"))
        XCTAssertEqual(proxy.requests.count, 2, "nothing refused reached the proxy")

        let redirecting = URL(string: "http://images.example:\(port)/to-loopback")!
        let redirect = await asyncImageError { _ = try await self.transport(.server(proxy.url), policy: .publicOnly).data(from: redirecting) }
        XCTAssertEqual(
            redirect,
            .refused(redirecting, reason: "redirect to http://127.0.0.1:\(port)/img/13.png: 127.0.0.1 is a loopback address"))
        XCTAssertEqual(proxy.requests.map(\.target).last, redirecting.absoluteString, "the hop was never sent")
        XCTAssertEqual(origin.requestCount(literal), 0)

        // Bypassed: connected to directly, and held to the address rule.
        let bypassed = URL(string: "http://localhost:\(port)/img/14.png")!
        let direct = await asyncImageError { _ = try await self.transport(.server(proxy.url, bypass: ["localhost"]), policy: .publicOnly).data(from: bypassed) }
        guard case .refused(bypassed, let reason) = direct else { return XCTFail("expected .refused, got \(String(describing: direct))") }
        XCTAssertTrue(reason.hasSuffix("is a loopback address"), reason)

        // The environment's proxy is checked like any connection.
        let requestsBefore = proxy.requests.count
        await withEnvironment(proxyEnvironment(proxy.url)) {
            let error = await asyncImageError { _ = try await self.imageLoader(.environment, policy: .publicOnly).image(for: self.named(15)) }
            XCTAssertEqual(error, .refused(named(15), reason: "127.0.0.1 is a loopback address"))
        }
        XCTAssertEqual(proxy.requests.count, requestsBefore)
        XCTAssertEqual(origin.requestCount(origin.url(14)) + origin.requestCount(origin.url(15)), 0)
    }
}
