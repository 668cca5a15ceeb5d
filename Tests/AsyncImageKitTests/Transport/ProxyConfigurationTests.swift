@testable import AsyncImageKit
import Foundation
import XCTest

/// ``ProxyConfiguration`` as a value: what it keeps of a proxy's URL, that
/// credentials never show, and which connections the URL policy trusts as
/// the proxy's (nothing is connected to: the transport's tests are in
/// AsyncImageKitIntegrationTests/Proxy).
final class ProxyConfigurationTests: XCTestCase {
    func testEnvironmentIsTheDefault() {
        XCTAssertEqual(TransportConfiguration().proxy, .environment)
        XCTAssertEqual(ProxyConfiguration.environment.description, "environment")
        XCTAssertEqual(ProxyConfiguration.direct.description, "direct")
        XCTAssertNil(ProxyConfiguration.direct.url)
        XCTAssertNotEqual(ProxyConfiguration.direct, .environment)
    }

    /// The URL keeps scheme, host and port (libcurl's default port made
    /// explicit); user information moves into the credentials.
    func testURLIsNormalized() throws {
        let plain = ProxyConfiguration.server(URL(string: "HTTP://squid.internal:3128/ignored?x#y")!)
        XCTAssertEqual(plain.url?.absoluteString, "http://squid.internal:3128")
        XCTAssertNil(plain.credentials)
        XCTAssertNil(plain.problem)
        XCTAssertEqual(ProxyConfiguration.server(URL(string: "http://squid.internal")!).url?.port, 1080)
        XCTAssertEqual(ProxyConfiguration.server(URL(string: "https://squid.internal")!).url?.port, 443)
        XCTAssertEqual(ProxyConfiguration.server(URL(string: "socks5h://10.0.0.9")!).url?.absoluteString, "socks5h://10.0.0.9:1080")

        let withUser = ProxyConfiguration.server(URL(string: "http://fleet%40a:p%3Ass@squid.internal:3128")!)
        XCTAssertEqual(withUser.url?.absoluteString, "http://squid.internal:3128")
        XCTAssertEqual(withUser.credentials, ProxyCredentials(user: "fleet@a", password: "p:ss"))
        // Explicit credentials win over the URL's.
        let explicit = ProxyConfiguration.server(
            URL(string: "http://a:b@squid.internal:3128")!, credentials: ProxyCredentials(user: "c", password: "d"))
        XCTAssertEqual(explicit.credentials?.user, "c")
    }

    func testUnsupportedProxiesSayWhy() {
        XCTAssertEqual(
            ProxyConfiguration.server(URL(string: "ftp://squid.internal:21")!).problem,
            "unsupported proxy scheme 'ftp' (http, https, socks4a, socks5, socks5h)")
        XCTAssertEqual(ProxyConfiguration.server(URL(string: "http:///nohost")!).problem, "the proxy URL names no host")
        for scheme in ProxyConfiguration.supportedSchemes {
            XCTAssertNil(ProxyConfiguration.server(URL(string: "\(scheme)://p.internal:1")!).problem, scheme)
        }
    }

    /// The password appears in no description, debug description, mirror or dump.
    func testPasswordIsNeverShown() {
        let proxy = ProxyConfiguration.server(
            URL(string: "http://squid.internal:3128")!, credentials: ProxyCredentials(user: "fleet", password: "s3cret-pw"),
            bypass: ["cdn.internal"])
        var transport = TransportConfiguration()
        transport.proxy = proxy
        var dumped = ""
        dump(transport, to: &dumped)
        let texts = [
            proxy.description, proxy.debugDescription, String(describing: proxy), String(reflecting: proxy),
            String(describing: transport), String(reflecting: transport), dumped,
            String(describing: proxy.credentials!), "\(Mirror(reflecting: proxy.credentials!).children.map(\.value))",
        ]
        for text in texts {
            XCTAssertFalse(text.contains("s3cret-pw"), text)
        }
        XCTAssertEqual(proxy.description, "http://squid.internal:3128 (as fleet), bypassing cdn.internal")
    }

    /// libcurl's bypass rules for names (exact, or a subdomain; dots at
    /// either end ignored), and the conservative answer for addresses and `*`.
    func testBypassMatching() {
        let proxy = ProxyConfiguration.server(URL(string: "http://p.internal:3128")!, bypass: [".example.com", "Static.Internal. , other"])
        XCTAssertEqual(proxy.bypass, [".example.com", "Static.Internal.", "other"])
        XCTAssertTrue(proxy.mayBypass("example.com"))
        XCTAssertTrue(proxy.mayBypass("img.EXAMPLE.com."))
        XCTAssertTrue(proxy.mayBypass("static.internal"))
        XCTAssertTrue(proxy.mayBypass("other"))
        XCTAssertFalse(proxy.mayBypass("notexample.com"))
        XCTAssertFalse(proxy.mayBypass("example.com.evil"))
        XCTAssertFalse(proxy.mayBypass("10.0.0.1"))
        let addresses = ProxyConfiguration.server(URL(string: "http://p.internal:3128")!, bypass: ["10.0.0.0/8"])
        XCTAssertTrue(addresses.mayBypass("192.168.0.1"), "any address entry may cover any address: checked, not trusted")
        XCTAssertFalse(addresses.mayBypass("images.example"))
        XCTAssertTrue(ProxyConfiguration.server(URL(string: "http://p.internal:3128")!, bypass: ["*"]).mayBypass("a.b"))
        XCTAssertFalse(ProxyConfiguration.direct.mayBypass("a.b"))
    }

    /// Which connections count as the proxy's (and so skip the address rule).
    func testOnlyTheConfiguredProxyEndpointIsTrusted() {
        let hop = URL(string: "http://images.example/a.png")!
        let literal = ProxyConfiguration.server(URL(string: "http://127.0.0.1:3128")!, bypass: ["cdn.internal"])
        XCTAssertTrue(literal.isProxy(IPAddress("127.0.0.1"), port: 3128, for: hop))
        XCTAssertFalse(literal.isProxy(IPAddress("127.0.0.1"), port: 80, for: hop), "another port")
        XCTAssertFalse(literal.isProxy(IPAddress("127.0.0.2"), port: 3128, for: hop), "another address")
        XCTAssertFalse(literal.isProxy(nil, port: 3128, for: hop))
        XCTAssertFalse(literal.isProxy(IPAddress("127.0.0.1"), port: 3128, for: URL(string: "http://cdn.internal/a.png")!), "bypassed")
        let named = ProxyConfiguration.server(URL(string: "socks5h://proxy.internal:1080")!)
        XCTAssertTrue(named.isProxy(IPAddress("10.1.2.3"), port: 1080, for: hop), "a name: whatever it resolves to")
        XCTAssertFalse(named.isProxy(IPAddress("10.1.2.3"), port: 1081, for: hop))
        XCTAssertFalse(ProxyConfiguration.environment.isProxy(IPAddress("127.0.0.1"), port: 3128, for: hop))
        XCTAssertFalse(ProxyConfiguration.server(URL(string: "ftp://127.0.0.1:3128")!).isProxy(IPAddress("127.0.0.1"), port: 3128, for: hop))
    }
}
