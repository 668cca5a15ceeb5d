import Foundation

/// How a ``DataLoader``'s `http` and `https` transfers reach their servers:
/// through the proxy the environment names (the default), directly, or
/// through one proxy set here (``TransportConfiguration/proxy``).
///
/// ```swift
/// var transport = TransportConfiguration()
/// transport.proxy = .server(URL(string: "http://images-cache.internal:3128")!, bypass: ["static.internal"])
/// var configuration = AsyncImageLoader.Configuration()
/// configuration.dataLoader = DataLoader(configuration: transport)
/// ```
///
/// - ``environment``: libcurl's rule: `http_proxy` for `http` URLs (only
///   the lowercase name), `https_proxy` or `HTTPS_PROXY` for `https`,
///   `all_proxy` or `ALL_PROXY` for both, and `no_proxy` or `NO_PROXY` to
///   bypass them, read when each transfer is set up. What loaders did before
///   this setting existed.
/// - ``direct``: no proxy, whatever the environment says.
/// - ``server(_:credentials:bypass:certificateAuthorities:)``: this proxy
///   for every `http` and `https` transfer (the environment is ignored), but
///   for the hosts of its bypass list. An `https` origin is reached through
///   an `http` proxy by a `CONNECT` tunnel: the proxy then sees neither the
///   request nor the response, and cannot cache them.
///
/// What holds whichever is set:
///
/// - `file` URLs never use a proxy.
/// - Transfers through different proxies never share a connection, nor do
///   proxied and direct ones (libcurl keys its connections by the proxy's
///   scheme, host and port).
/// - Transfers through one `https` proxy that verify it against different
///   ``certificateAuthorities`` never share a connection.
/// - A `CONNECT` tunnel serves only transfers with the same ``credentials``.
/// - The credentials are in no description, mirror, log line or error
///   message.
///
/// How ``URLPolicy`` applies through a proxy: see ``URLPolicy``.
public struct ProxyConfiguration: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The schemes a proxy's URL may have: `http`; `https` (TLS to the
    /// proxy); `socks5h` and `socks4a` (the proxy resolves host names);
    /// `socks5` (host names are resolved here and the address sent).
    public static let supportedSchemes: Set<String> = ["http", "https", "socks4a", "socks5", "socks5h"]

    enum Route: Hashable {
        case environment, direct, server
    }

    let route: Route
    /// The proxy, as `scheme://host:port` (always with a port, without user
    /// information); nil for ``environment`` and ``direct``.
    public let url: URL?
    /// The user name and password the proxy is sent (nil: none). A
    /// `CONNECT` tunnel serves only transfers with the same credentials.
    public let credentials: ProxyCredentials?
    /// Hosts reached directly, not through the proxy (libcurl's
    /// `CURLOPT_NOPROXY`): each a host name (which also covers its
    /// subdomains: `example.com` covers `img.example.com`), an IP address,
    /// or a CIDR range (`10.0.0.0/8`); `*` alone bypasses every host.
    public let bypass: [String]
    /// A PEM file of the authorities an `https` proxy's certificate must
    /// chain to, in place of the system's store (nil: the system's store,
    /// not ``TransportConfiguration/certificateAuthorities``, which is for
    /// origins). A proxy whose certificate chains to none fails the
    /// transfer with ``AsyncImageError/tls(_:code:message:)``.
    ///
    /// Connections to an `https` proxy are shared only between transfers
    /// that verify it against the same authorities. (libcurl 7.88 does not
    /// tell them apart for `http` URLs: once transfers in one process have
    /// used one `https` proxy with two settings of this, each later transfer
    /// through it opens a connection of its own.)
    public let certificateAuthorities: URL?
    /// Why this proxy cannot be used (an unsupported scheme, no host), or nil.
    let problem: String?

    /// The proxies the environment names, as libcurl reads them: the default.
    public static let environment = ProxyConfiguration(route: .environment)

    /// No proxy, whatever the environment says.
    public static let direct = ProxyConfiguration(route: .direct)

    /// One proxy for every `http` and `https` transfer but those to the
    /// `bypass` hosts.
    ///
    /// - Parameters:
    ///   - url: `http://host:port`, `https://host:port`,
    ///     `socks5h://host:port`, `socks5://host:port` or
    ///     `socks4a://host:port`. Without a port, libcurl's default is
    ///     used: 443 for `https`, 1080 for the others (Squid listens on
    ///     3128: say so). User information in the URL
    ///     (`http://user:password@host:3128`) is taken out of it into
    ///     ``credentials`` when `credentials` is nil. Another scheme, or no
    ///     host, fails every transfer at once with
    ///     ``AsyncImageError/transport(_:code:message:)``, which says why.
    ///   - credentials: sent to the proxy (HTTP Basic to an `http` or
    ///     `https` proxy, username and password authentication to a SOCKS5
    ///     one); never part of ``description`` or of an error message.
    ///   - bypass: hosts reached directly (see ``bypass``).
    ///   - certificateAuthorities: for an `https` proxy (see ``certificateAuthorities``).
    public static func server(
        _ url: URL, credentials: ProxyCredentials? = nil, bypass: [String] = [], certificateAuthorities: URL? = nil
    ) -> ProxyConfiguration {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false) ?? URLComponents()
        let scheme = components.scheme?.lowercased() ?? ""
        var credentials = credentials
        if credentials == nil, let user = components.user {
            credentials = ProxyCredentials(
                user: user.removingPercentEncoding ?? user,
                password: components.password.map { $0.removingPercentEncoding ?? $0 } ?? "")
        }
        components.user = nil
        components.password = nil
        components.scheme = scheme
        components.path = ""
        components.query = nil
        components.fragment = nil
        var problem: String?
        if !supportedSchemes.contains(scheme) {
            problem = "unsupported proxy scheme '\(scheme)' (\(supportedSchemes.sorted().joined(separator: ", ")))"
        } else if (components.host ?? "").isEmpty {
            problem = "the proxy URL names no host"
        } else if components.port == nil {
            components.port = scheme == "https" ? 443 : 1080
        }
        let entries = bypass.flatMap { $0.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }) }.map(String.init)
        return ProxyConfiguration(
            route: .server, url: components.url ?? url, credentials: credentials, bypass: entries,
            certificateAuthorities: certificateAuthorities, problem: problem)
    }

    private init(
        route: Route, url: URL? = nil, credentials: ProxyCredentials? = nil, bypass: [String] = [],
        certificateAuthorities: URL? = nil, problem: String? = nil
    ) {
        self.route = route
        self.url = url
        self.credentials = credentials
        self.bypass = bypass
        self.certificateAuthorities = certificateAuthorities
        self.problem = problem
    }

    /// `environment`, `direct`, or the proxy's URL, its bypass list, and
    /// whether credentials are set (never the credentials themselves).
    public var description: String {
        switch route {
        case .environment: return "environment"
        case .direct: return "direct"
        case .server:
            var text = url?.absoluteString ?? "?"
            if let credentials { text += " (as \(credentials.user))" }
            if !bypass.isEmpty { text += ", bypassing \(bypass.joined(separator: ","))" }
            return text
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    // MARK: For the transport

    /// The proxy's host (without IPv6 brackets) and port, when one is set and usable.
    var endpoint: (host: String, port: Int)? {
        guard route == .server, problem == nil, let url, let host = url.host, let port = url.port else { return nil }
        return (host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, port)
    }

    /// Whether a connection to `address`:`port`, made for a request to
    /// `hop`, is to the configured proxy: the proxy carries `hop` (the
    /// bypass list might not exempt it), the port is the proxy's, and the
    /// address is the proxy's when its host is an address.
    ///
    /// The bypass test errs towards "bypassed" (any entry that could match,
    /// `*` anywhere, any address entry for a host that is an address):
    /// where it and libcurl disagree, a connection is checked by the URL
    /// policy like any other, never trusted wrongly.
    func isProxy(_ address: IPAddress?, port: Int, for hop: URL) -> Bool {
        guard let endpoint, port == endpoint.port, let host = hop.host, !mayBypass(host) else { return false }
        if let literal = IPAddress(endpoint.host) { return address == literal }
        return true
    }

    /// Whether libcurl may reach `host` directly under the bypass list.
    func mayBypass(_ host: String) -> Bool {
        guard !bypass.isEmpty else { return false }
        var name = host.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        let isAddress = IPAddress(name) != nil
        for entry in bypass {
            var token = entry.lowercased()
            if token == "*" { return true }
            if isAddress {
                if token.contains("/") || token.contains(":") || IPAddress(token) != nil { return true }
                continue
            }
            while token.hasSuffix(".") { token.removeLast() }
            while token.hasPrefix(".") { token.removeFirst() }
            if !token.isEmpty, name == token || name.hasSuffix("." + token) { return true }
        }
        return false
    }
}

/// A user name and password for a proxy (``ProxyConfiguration/credentials``).
///
/// The password is never shown: not by ``description``, `debugDescription`,
/// nor by `dump` or a mirror; only the user name is.
public struct ProxyCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The user name.
    public var user: String
    /// The password.
    public var password: String

    /// Credentials.
    public init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// `user NAME, password hidden`.
    public var description: String { "user \(user), password hidden" }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// The user name, and the password hidden.
    public var customMirror: Mirror { Mirror(self, children: ["user": user, "password": "<hidden>"]) }
}
