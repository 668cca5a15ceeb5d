import Foundation

/// Which URLs and addresses a loader may reach: for a service that loads
/// URLs it was handed, which must neither read local files nor reach
/// internal hosts.
///
/// ```swift
/// var configuration = AsyncImageLoader.Configuration()
/// configuration.urlPolicy = .publicOnly                      // no file://, no internal addresses
/// configuration.urlPolicy = .publicOnly.restricted(by: URLPolicy(allowsURL: { $0.host != "ads.example" }))
/// configuration.urlPolicy = .publicOnly.allowing(addresses: [IPAddress("127.0.0.1")!])   // tests only
/// ```
///
/// What is checked, and when:
///
/// - **The URL** (``allowsFileURLs``, the URL rule, and the address rule on
///   a literal address such as `http://10.0.0.1/`): when a request is made,
///   before any cache is asked, so a refused URL is never served from a
///   cache either; again when its transfer starts (after
///   ``AsyncImageLoader/Configuration/requestModifier``); and on every
///   redirect hop, before anything is sent to it.
/// - **The address** (the address rule): the address every connection is
///   about to be opened to, after DNS, for the first request and every
///   redirect hop, and the address of a kept-alive connection about to be
///   reused. A host name that resolves to an internal address (DNS
///   rebinding included) is refused at the address it resolved to; nothing
///   is connected to, and no request is sent.
///
/// Through a proxy (``TransportConfiguration/proxy``), the connection opened
/// is the proxy's, and the proxy, not this process, connects to the origin:
///
/// - **A proxy set with** ``ProxyConfiguration/server(_:credentials:bypass:certificateAuthorities:)``
///   is trusted: a connection to its address and port is not held to the
///   address rule (a proxy tier usually sits on a private network or on
///   loopback, which ``publicOnly`` refuses), because whoever configured the
///   loader chose it. Every URL check still applies, before each request is
///   sent to the proxy, the first and every redirect hop: a literal address
///   (`http://10.0.0.5/`) is refused whether or not a proxy would carry it.
/// - **A host name is resolved out of the policy's sight**: by the proxy
///   (`http`, `https`, `socks5h` and `socks4a` proxies), or by libcurl for a
///   `socks5` proxy, which offers no hook there. So the address rule cannot
///   refuse a name that resolves to an internal address: have the proxy
///   refuse internal destinations itself (Squid: `acl internal dst
///   10.0.0.0/8 ...` and `http_access deny internal`).
/// - **A host of the bypass list** (``ProxyConfiguration/bypass``) is
///   connected to directly, and checked as without a proxy.
/// - **A proxy from the environment** (``ProxyConfiguration/environment``:
///   `http_proxy`, `https_proxy`, `all_proxy`) is not trusted: its address
///   is checked like any connection's, so under ``publicOnly`` an
///   environment proxy on an internal address refuses every transfer. Set it
///   with ``ProxyConfiguration/server(_:credentials:bypass:certificateAuthorities:)`` instead.
///
/// A refusal ends the request with ``AsyncImageError/refused(_:reason:)``.
/// The address checks are made by ``DataLoader``; another ``DataLoading``
/// receives the policy in ``DataRequest/policy`` and enforces it as it can
/// (the URL checks are the loader's own, for every transport).
///
/// Policies compare equal when they hold the same rules (the same closures
/// from the same initializer calls, not closures that behave alike).
public struct URLPolicy: Sendable, Hashable {
    /// Whether `file` URLs may be loaded. Default `true`. Redirects to
    /// `file` URLs are never followed, whatever this says.
    public var allowsFileURLs: Bool
    private var urlRules: [Rule<URL>]
    private var addressRules: [Rule<IPAddress>]

    /// A policy.
    ///
    /// - Parameters:
    ///   - allowsFileURLs: whether `file` URLs may be loaded.
    ///   - allowsURL: called with every `http` and `https` URL (the first
    ///     and each redirect hop); false refuses it. Keep it quick: it runs
    ///     on the transport's thread for redirects.
    ///   - allowsAddress: called with every address a connection is about
    ///     to be opened to (or reused at), and with a URL's literal address;
    ///     false refuses it. Keep it quick: it runs on the transport's thread.
    public init(
        allowsFileURLs: Bool = true, allowsURL: (@Sendable (URL) -> Bool)? = nil,
        allowsAddress: (@Sendable (IPAddress) -> Bool)? = nil
    ) {
        self.allowsFileURLs = allowsFileURLs
        urlRules = allowsURL.map { rule in
            [Rule { url in rule(url) ? nil : "\(url.host.map { "host \($0)" } ?? url.absoluteString) refused by the URL rule" }]
        } ?? []
        addressRules = allowsAddress.map { rule in
            [Rule { address in rule(address) ? nil : "address \(address) refused by the address rule" }]
        } ?? []
    }

    /// Everything `http`, `https` and `file` allowed: the default.
    public static let unrestricted = URLPolicy()

    /// For URLs from untrusted sources: no `file` URLs, and only global
    /// (public) addresses: no loopback, private (`10/8`, `172.16/12`,
    /// `192.168/16`, `100.64/10`, `fc00::/7`), link-local (`169.254/16`,
    /// where cloud metadata services answer; `fe80::/10`), multicast,
    /// unspecified or reserved ones, in IPv4 and IPv6 (an IPv4-mapped IPv6
    /// address counts as its IPv4 address). See ``IPAddress/Scope``.
    public static let publicOnly: URLPolicy = {
        var policy = URLPolicy(allowsFileURLs: false)
        policy.addressRules = [
            Rule { address in
                let scope = address.scope
                return scope == .global ? nil : "\(address) is a \(scope.rawValue) address"
            }
        ]
        return policy
    }()

    /// This policy and `other` both: a URL or address is allowed only when
    /// both allow it.
    public func restricted(by other: URLPolicy) -> URLPolicy {
        var both = self
        both.allowsFileURLs = allowsFileURLs && other.allowsFileURLs
        both.urlRules += other.urlRules.filter { rule in !urlRules.contains { $0.id == rule.id } }
        both.addressRules += other.addressRules.filter { rule in !addressRules.contains { $0.id == rule.id } }
        return both
    }

    /// This policy with `addresses` exempt from its address rules: a
    /// **testing aid**, for a service under test whose sources are served
    /// on loopback while it runs with ``publicOnly``.
    ///
    /// ```swift
    /// configuration.urlPolicy = .publicOnly.allowing(addresses: [IPAddress("127.0.0.1")!])
    /// ```
    ///
    /// The exemption applies wherever the address rules do: to a URL's
    /// literal address when the request is made, and to the address a
    /// connection is about to be opened to (after DNS) or reused at, on
    /// every redirect hop; so `http://localhost:8080/` is allowed when
    /// `localhost` resolves to an exempt address, and a name that resolves
    /// to any other internal address is still refused. Only the rules this
    /// policy holds now are widened: a policy it is later
    /// ``restricted(by:)`` keeps its own. URL rules and ``allowsFileURLs``
    /// are unchanged. Never widen a production policy this way: an exempt
    /// address is reachable by every URL a client can name.
    public func allowing(addresses: Set<IPAddress>) -> URLPolicy {
        guard !addresses.isEmpty else { return self }
        var widened = self
        widened.addressRules = addressRules.map { rule in
            Rule { address in addresses.contains(address) ? nil : rule.check(address) }
        }
        return widened
    }

    /// Whether anything beyond the file rule is checked (the transport then
    /// watches redirect hops and connections).
    var hasRules: Bool { !urlRules.isEmpty || !addressRules.isEmpty }

    /// Whether any rule looks at addresses (the transport then checks every connection).
    var checksAddresses: Bool { !addressRules.isEmpty }

    /// Why `url` is refused, or nil when it is allowed.
    public func refusal(for url: URL) -> String? {
        let scheme = url.scheme?.lowercased()
        if scheme == "file" { return allowsFileURLs ? nil : "file URLs are refused by the URL policy" }
        if checksAddresses, let host = url.host, let address = IPAddress(host), let reason = refusal(for: address) {
            return reason
        }
        for rule in urlRules { if let reason = rule.check(url) { return reason } }
        return nil
    }

    /// Why a connection to `address` is refused, or nil when it is allowed.
    func refusal(for address: IPAddress) -> String? {
        for rule in addressRules { if let reason = rule.check(address) { return reason } }
        return nil
    }

    /// Whether `url` is allowed.
    public func allows(_ url: URL) -> Bool { refusal(for: url) == nil }

    /// Whether a connection to `address` is allowed.
    func allows(_ address: IPAddress) -> Bool { refusal(for: address) == nil }

    /// Equal when file URLs are treated alike and the rules are the same ones.
    public static func == (a: URLPolicy, b: URLPolicy) -> Bool {
        a.allowsFileURLs == b.allowsFileURLs && a.urlRules.map(\.id) == b.urlRules.map(\.id)
            && a.addressRules.map(\.id) == b.addressRules.map(\.id)
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(allowsFileURLs)
        hasher.combine(urlRules.map(\.id))
        hasher.combine(addressRules.map(\.id))
    }

    /// One check: nil allows, a reason refuses. Its id tells rules apart.
    private struct Rule<Subject>: Sendable {
        let id: UInt64
        let check: @Sendable (Subject) -> String?

        init(_ check: @escaping @Sendable (Subject) -> String?) {
            id = ruleIDs.withLock { next in
                next += 1
                return next
            }
            self.check = check
        }
    }
}

/// The last ``URLPolicy`` rule id handed out.
private let ruleIDs = Locked<UInt64>(0)
