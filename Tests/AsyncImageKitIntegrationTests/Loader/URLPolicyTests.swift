@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The URL policy: `file` URLs refused per loader, hosts refused by name
/// and by the address they resolve to (after DNS, before any connection),
/// on the first request and on every redirect hop, with one typed error;
/// and the next allowed request served normally.
///
/// Only loopback is ever contacted: a refusal of "internal" addresses is
/// shown with loopback ones (`localhost` resolves to 127.0.0.1), and the
/// private and link-local ranges are checked as values, never connected to.
final class URLPolicyTests: XCTestCase {
    private var server: LoopbackServer!
    private let png = try! PNGEncoder().encode(SyntheticImage.solid(width: 3, height: 2, color: RGBA(r: 5, g: 6, b: 7)))
    /// Set while the address rule of `testEveryRedirectHopIsChecked` refuses.
    private let refusing = Box<Bool>(false)

    override func setUpWithError() throws {
        let png = self.png
        let refusing = self.refusing
        let port = Box<UInt16>(0)
        server = try LoopbackServer(routes: [
            "/png": { _, c in c.respond(status: 200, headers: [("Content-Type", "image/png")], body: png) },
            "/to-localhost": { _, c in
                c.respond(status: 302, headers: [("Location", "http://localhost:\(port.value ?? 0)/png")], body: Data())
            },
            "/to-localhost-refusing": { _, c in
                refusing.value = true  // the first hop connected; from here on loopback is refused
                c.respond(status: 302, headers: [("Location", "http://localhost:\(port.value ?? 0)/png")], body: Data())
            },
            "/to-other-loopback": { _, c in
                c.respond(status: 302, headers: [("Location", "http://127.0.0.2:\(port.value ?? 0)/png")], body: Data())
            },
            "/to-file": { _, c in c.respond(status: 302, headers: [("Location", "file:///etc/passwd")], body: Data()) },
        ])
        port.value = server.port
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    private func localhost(_ path: String) -> URL { URL(string: "http://localhost:\(server.port)\(path)")! }

    private func makeLoader(
        _ policy: URLPolicy, cache: ImageCache? = nil, _ configure: (inout AsyncImageLoader.Configuration) -> Void = { _ in }
    ) -> AsyncImageLoader {
        var configuration = AsyncImageLoader.Configuration(
            cache: cache, deliveryQueue: DispatchQueue(label: "policy tests"), notificationCenter: NotificationCenter(),
            urlPolicy: policy)
        configure(&configuration)
        return AsyncImageLoader(configuration: configuration)
    }

    private func outcome(_ loader: AsyncImageLoader, _ url: URL) async -> Result<Image, AsyncImageError> {
        do {
            return .success(try await loader.image(for: url))
        } catch let error as AsyncImageError {
            return .failure(error)
        } catch {
            return .failure(.processing("test", reason: "unexpected \(error)"))
        }
    }

    /// The reason of a `refused` failure for `url`, or a test failure.
    private func refusal(
        _ loader: AsyncImageLoader, _ url: URL, file: StaticString = #filePath, line: UInt = #line
    ) async -> String? {
        switch await outcome(loader, url) {
        case .failure(.refused(let refusedURL, let reason)):
            XCTAssertEqual(refusedURL, url, file: file, line: line)
            return reason
        case let other:
            XCTFail("expected refused for \(url), got \(other)", file: file, line: line)
            return nil
        }
    }

    private func assertLoads(
        _ loader: AsyncImageLoader, _ url: URL, file: StaticString = #filePath, line: UInt = #line
    ) async {
        switch await outcome(loader, url) {
        case .success(let image): XCTAssertEqual(image.size, PixelSize(width: 3, height: 2), file: file, line: line)
        case .failure(let error): XCTFail("\(url): \(error)", file: file, line: line)
        }
    }

    // MARK: Values only (nothing is connected to)

    func testAddressScopes() throws {
        let expected: [(String, IPAddress.Scope)] = [
            ("127.0.0.1", .loopback), ("127.255.0.9", .loopback), ("::1", .loopback), ("[::1]", .loopback),
            ("10.1.2.3", .private), ("172.16.0.1", .private), ("172.31.255.255", .private), ("192.168.1.1", .private),
            ("100.64.0.1", .private), ("fd12:3456::1", .private), ("fc00::1", .private),
            ("169.254.169.254", .linkLocal), ("fe80::1%eth0", .linkLocal),
            ("224.0.0.1", .multicast), ("ff02::1", .multicast),
            ("0.0.0.0", .unspecified), ("::", .unspecified),
            ("255.255.255.255", .reserved), ("192.0.2.1", .reserved), ("2001:db8::1", .reserved),
            ("::ffff:10.0.0.1", .private), ("::ffff:127.0.0.1", .loopback), ("64:ff9b::a9fe:a9fe", .linkLocal),
            ("93.184.216.34", .global), ("172.32.0.1", .global), ("2606:2800:220:1::1", .global),
        ]
        for (text, scope) in expected {
            let address = try XCTUnwrap(IPAddress(text), text)
            XCTAssertEqual(address.scope, scope, text)
        }
        XCTAssertNil(IPAddress("localhost"))
        XCTAssertNil(IPAddress("1.2.3"))
        XCTAssertNil(IPAddress(bytes: [1, 2, 3]))
        XCTAssertEqual(IPAddress("::ffff:10.0.0.1")?.embeddedIPv4, IPAddress("10.0.0.1"))
        XCTAssertEqual(IPAddress("0:0:0:0:0:0:0:1")?.description, "::1")
        XCTAssertEqual(IPAddress(bytes: [10, 0, 0, 7])?.description, "10.0.0.7")
    }

    /// `.publicOnly` refuses `file` URLs and literal internal addresses from
    /// the URL alone; a public address or a host name passes the URL check
    /// (the name's addresses are checked when it connects).
    func testPublicOnlyRefusesFilesAndInternalLiteralsFromTheURL() throws {
        let policy = URLPolicy.publicOnly
        XCTAssertEqual(policy.refusal(for: URL(fileURLWithPath: "/etc/passwd")), "file URLs are refused by the URL policy")
        let refused = [
            "http://127.0.0.1/a.png": "127.0.0.1 is a loopback address",
            "http://[::1]:8080/a.png": "::1 is a loopback address",
            "https://10.0.0.5/a.png": "10.0.0.5 is a private address",
            "http://169.254.169.254/latest/meta-data": "169.254.169.254 is a link-local address",
            "http://[::ffff:192.168.0.1]/": "::ffff:192.168.0.1 is a private address",
            "http://0.0.0.0:80/": "0.0.0.0 is a unspecified address",
        ]
        for (text, reason) in refused {
            XCTAssertEqual(policy.refusal(for: try XCTUnwrap(URL(string: text))), reason, text)
        }
        XCTAssertNil(policy.refusal(for: URL(string: "https://93.184.216.34/a.png")!))
        XCTAssertNil(policy.refusal(for: URL(string: "https://images.example/a.png")!))
        XCTAssertTrue(URLPolicy.unrestricted.allows(URL(fileURLWithPath: "/tmp/a.png")))
        XCTAssertTrue(URLPolicy.unrestricted.allows(IPAddress("127.0.0.1")!))
        XCTAssertFalse(policy.allows(IPAddress("fe80::1")!))
        // Restricting combines: both must allow; the same rules compare equal.
        let noAds = URLPolicy(allowsURL: { $0.host != "ads.example" })
        let both = policy.restricted(by: noAds)
        XCTAssertFalse(both.allows(URL(string: "http://ads.example/x.png")!))
        XCTAssertFalse(both.allows(URL(fileURLWithPath: "/x.png")))
        XCTAssertFalse(both.allows(IPAddress("10.0.0.1")!))
        XCTAssertTrue(both.allows(URL(string: "http://images.example/x.png")!))
        XCTAssertEqual(both, policy.restricted(by: noAds))
        XCTAssertEqual(both.restricted(by: noAds), both)
        XCTAssertNotEqual(both, policy)
        XCTAssertNotEqual(URLPolicy(allowsURL: { _ in true }), URLPolicy(allowsURL: { _ in true }))
        XCTAssertEqual(AsyncImageLoader.Configuration().urlPolicy, .unrestricted)
        XCTAssertEqual(TransportConfiguration().urlPolicy, .unrestricted)
    }

    // MARK: File URLs

    /// A loader can refuse `file` URLs (not even serving one from a shared
    /// memory cache), while another loader reads them; the transport can
    /// refuse them too.
    func testFileURLsCanBeRefusedPerLoader() async throws {
        let file = temporaryFolder("policy").appendingPathExtension("png")
        try png.write(to: file)
        addTeardownBlock { try? FileManager.default.removeItem(at: file) }
        let cache = ImageCache()
        await assertLoads(makeLoader(.unrestricted, cache: cache), file)
        XCTAssertNotNil(cache.image(for: ImageCacheKey(url: file)))
        let refusing = makeLoader(URLPolicy(allowsFileURLs: false), cache: cache)
        let reason = await refusal(refusing, file)
        XCTAssertEqual(reason, "file URLs are refused by the URL policy")
        XCTAssertEqual(
            AsyncImageError.refused(file, reason: reason ?? "").description,
            "\(file.absoluteString) refused by the URL policy: file URLs are refused by the URL policy")
        await assertLoads(refusing, server.url("/png"))
        // The transport's own setting.
        let transport = DataLoader(configuration: TransportConfiguration(urlPolicy: URLPolicy(allowsFileURLs: false)))
        do {
            _ = try await transport.data(from: file)
            XCTFail("the transport read a refused file URL")
        } catch let error as AsyncImageError {
            XCTAssertEqual(error, .refused(file, reason: "file URLs are refused by the URL policy"))
        }
    }

    // MARK: Hosts and addresses

    /// A URL rule refuses a host by name before anything is connected to,
    /// and before any cache is asked.
    func testURLRuleRefusesAHost() async throws {
        let cache = ImageCache()
        let url = localhost("/png")
        await assertLoads(makeLoader(.unrestricted, cache: cache), url)
        let before = server.requestCount
        let loader = makeLoader(URLPolicy(allowsURL: { $0.host != "localhost" }), cache: cache)
        let reason = await refusal(loader, url)
        XCTAssertEqual(reason, "host localhost refused by the URL rule")
        XCTAssertEqual(server.requestCount, before)
        await assertLoads(loader, server.url("/png"))
    }

    /// An address rule refuses a host name by the address it resolves to
    /// (`localhost`: 127.0.0.1), before a connection is opened; a rule that
    /// allows loopback lets the same URL load.
    func testAddressRuleRefusesANameByTheAddressItResolvesTo() async throws {
        let url = localhost("/png")
        let before = server.requestCount
        for policy in [URLPolicy(allowsAddress: { $0.scope != .loopback }), .publicOnly] {
            let loader = makeLoader(policy)
            let reason = await refusal(loader, url) ?? ""
            XCTAssertTrue(reason.contains("127.0.0.1") || reason.contains("::1"), reason)
            XCTAssertEqual(server.requestCount, before, "nothing was sent")
        }
        let allowing = makeLoader(URLPolicy(allowsAddress: { $0.scope == .loopback }))
        await assertLoads(allowing, url)
        XCTAssertEqual(server.requestCount, before + 1)
    }

    /// The testing aid: `.publicOnly` widened for one loopback address loads
    /// from it (its literal passes the URL check, the connection passes the
    /// address check), and still refuses every other internal address: a
    /// redirect to another loopback address, literal private addresses, and
    /// `file` URLs. The policy it was made from is unchanged.
    func testPublicOnlyCanBeWidenedForOneAddress() async throws {
        let loopback = try XCTUnwrap(IPAddress("127.0.0.1"))
        let widened = URLPolicy.publicOnly.allowing(addresses: [loopback])
        XCTAssertNotEqual(widened, .publicOnly)
        XCTAssertEqual(widened.allowing(addresses: []), widened)
        XCTAssertTrue(widened.allows(loopback))
        XCTAssertFalse(URLPolicy.publicOnly.allows(loopback))
        XCTAssertEqual(widened.refusal(for: IPAddress("127.0.0.2")!), "127.0.0.2 is a loopback address")
        XCTAssertEqual(widened.refusal(for: URL(string: "http://10.0.0.5/a.png")!), "10.0.0.5 is a private address")
        XCTAssertEqual(widened.refusal(for: URL(fileURLWithPath: "/etc/passwd")), "file URLs are refused by the URL policy")

        let loader = makeLoader(widened)
        let url = try XCTUnwrap(URL(string: "http://127.0.0.1:\(server.port)/png"))
        await assertLoads(loader, url)
        let before = server.requestCount
        let hop = URL(string: "http://127.0.0.2:\(server.port)/png")!
        let reason = await refusal(loader, URL(string: "http://127.0.0.1:\(server.port)/to-other-loopback")!)
        XCTAssertEqual(reason, "redirect to \(hop.absoluteString): 127.0.0.2 is a loopback address")
        XCTAssertEqual(server.requestCount, before + 1, "the hop was not requested")
        // Restricting the widened policy keeps the other policy's rules whole.
        let restricted = widened.restricted(by: URLPolicy(allowsAddress: { $0.scope != .loopback }))
        XCTAssertFalse(restricted.allows(loopback))
        let strict = await refusal(makeLoader(restricted), url)
        XCTAssertEqual(strict, "address 127.0.0.1 refused by the address rule")
    }

    /// A kept-alive connection is checked before it is reused: a refused
    /// address is refused even when no new connection would be opened.
    func testKeptAliveConnectionIsCheckedBeforeReuse() async throws {
        let url = localhost("/png")
        let open = DataLoader()
        _ = try await open.data(from: url)
        let before = server.requestCount
        let refusing = DataLoader(configuration: TransportConfiguration(urlPolicy: URLPolicy(allowsAddress: { $0.scope != .loopback })))
        do {
            _ = try await refusing.data(from: url)
            XCTFail("loaded over a refused address")
        } catch let error as AsyncImageError {
            guard case .refused(let refusedURL, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(refusedURL, url)
            XCTAssertTrue(reason.contains("refused by the address rule"), reason)
        }
        XCTAssertEqual(server.requestCount, before, "nothing was sent on the kept-alive connection")
        _ = try await open.data(from: url)
    }

    /// Every redirect hop is checked: by the URL rule, by a literal address
    /// in it, and by the address its host name resolves to; the hop is
    /// never requested. A redirect to a `file` URL is never followed.
    func testEveryRedirectHopIsChecked() async throws {
        let hop = localhost("/png")
        let byName = makeLoader(URLPolicy(allowsURL: { $0.host != "localhost" }))
        let nameReason = await refusal(byName, server.url("/to-localhost"))
        XCTAssertEqual(nameReason, "redirect to \(hop.absoluteString): host localhost refused by the URL rule")
        XCTAssertEqual(server.requestCount, 1, "the hop was not requested")

        let literal = URL(string: "http://127.0.0.2:\(server.port)/png")!
        let byLiteral = makeLoader(URLPolicy(allowsAddress: { $0 != IPAddress("127.0.0.2") }))
        let literalReason = await refusal(byLiteral, server.url("/to-other-loopback"))
        XCTAssertEqual(literalReason, "redirect to \(literal.absoluteString): address 127.0.0.2 refused by the address rule")

        // The first hop's address is allowed; by the time the redirect is
        // followed, the rule refuses loopback (a name that resolves to an
        // internal address, as after DNS rebinding).
        let refusing = self.refusing
        let byAddress = makeLoader(URLPolicy(allowsAddress: { _ in !(refusing.value ?? false) }))
        let addressReason = await refusal(byAddress, server.url("/to-localhost-refusing")) ?? ""
        XCTAssertTrue(addressReason.hasPrefix("redirect to \(hop.absoluteString): address "), addressReason)
        XCTAssertEqual(server.requestCount, 3, "the hops were not requested")
        refusing.value = false

        // A redirect to file: refused whatever the policy.
        guard case .failure(.disallowedRedirect(let url, _)) = await outcome(makeLoader(.unrestricted), server.url("/to-file"))
        else { return XCTFail("a redirect to file:// was followed") }
        XCTAssertEqual(url, server.url("/to-file"))
        await assertLoads(byAddress, hop)
    }

    /// The request modifier may change the URL, and may tighten the policy
    /// but not loosen it: the URL it loads is checked.
    func testRequestModifierCannotLeaveThePolicy() async throws {
        let hop = localhost("/png")
        let loader = makeLoader(URLPolicy(allowsURL: { $0.host != "localhost" })) { configuration in
            configuration.requestModifier = { request in
                guard request.url.path == "/elsewhere" else { return }
                request.url = hop
                request.policy = .unrestricted
            }
        }
        let before = server.requestCount
        switch await outcome(loader, server.url("/elsewhere")) {
        case .failure(.refused(let url, let reason)):
            XCTAssertEqual(url, hop)
            XCTAssertEqual(reason, "host localhost refused by the URL rule")
        case let other: XCTFail("expected refused, got \(other)")
        }
        XCTAssertEqual(server.requestCount, before)
        await assertLoads(loader, server.url("/png"))
    }
}
