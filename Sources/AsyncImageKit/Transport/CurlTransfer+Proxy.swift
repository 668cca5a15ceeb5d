import CCurl
import Foundation

/// The proxy settings of a transfer (``TransportConfiguration/proxy``), as
/// libcurl options, and what its failures say about the proxy.
extension CurlTransfer {
    /// Sets the easy handle's proxy options (loop thread). Returns whether
    /// libcurl took them all.
    func setProxyOptions(_ easy: UnsafeMutableRawPointer) -> Bool {
        let proxy = configuration.proxy
        var ok = true
        func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        switch proxy.route {
        case .environment:
            // libcurl reads `http_proxy` and the rest when it sets the transfer up.
            break
        case .direct:
            // An empty proxy, not none: none would let the environment's in.
            set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROXY, ""))
        case .server:
            // The scheme prefix chooses the type (http, https, socks...).
            set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROXY, proxy.url?.absoluteString ?? ""))
            // Set even when empty: unset, libcurl would read `no_proxy`.
            set(aiv_curl_easy_setopt_string(easy, CURLOPT_NOPROXY, proxy.bypass.joined(separator: ",")))
            if let credentials = proxy.credentials {
                // Separate options, so that a `:` in the user name is no separator.
                set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROXYUSERNAME, credentials.user))
                set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROXYPASSWORD, credentials.password))
            }
            set(aiv_curl_easy_setopt_long(easy, CURLOPT_PROXY_SSL_VERIFYPEER, 1))
            set(aiv_curl_easy_setopt_long(easy, CURLOPT_PROXY_SSL_VERIFYHOST, 2))
            if let authorities = proxy.certificateAuthorities {
                // In place of the system's store, as for origins (no CA folder).
                set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROXY_CAINFO, authorities.path))
                set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROXY_CAPATH, nil))
            }
            if !Self.mayShareConnections(through: proxy) {
                // A connection of its own, closed after it.
                set(aiv_curl_easy_setopt_long(easy, CURLOPT_FRESH_CONNECT, 1))
                set(aiv_curl_easy_setopt_long(easy, CURLOPT_FORBID_REUSE, 1))
            }
        }
        return ok
    }

    /// Whether a transfer through `proxy` may share connections with the
    /// process's other transfers through it.
    ///
    /// libcurl 7.88 keys a connection to an `https` proxy that carries an
    /// `http` URL by the proxy alone, not by the authorities it was verified
    /// against: a transfer that does not trust the proxy's certificate would
    /// ride on a connection verified by another's authorities. So once
    /// transfers have used one `https` proxy with two settings of
    /// ``ProxyConfiguration/certificateAuthorities``, every later transfer
    /// through it opens a connection of its own (and those made before are
    /// never picked up again). With one setting per proxy, as usual,
    /// connections are shared. (Credentials need no such care: libcurl
    /// opens a tunnel of its own for other credentials, and sends them
    /// with each request through an `http` proxy.)
    static func mayShareConnections(through proxy: ProxyConfiguration) -> Bool {
        guard proxy.route == .server, let url = proxy.url, url.scheme == "https" else { return true }
        return httpsProxyTrust.withLock { trust in
            switch trust[url] {
            case nil:
                trust[url] = .only(proxy.certificateAuthorities)
                return true
            case .only(let authorities) where authorities == proxy.certificateAuthorities:
                return true
            default:
                trust[url] = .mixed
                return false
            }
        }
    }

    /// Why the configured proxy cannot be used, as the transfer's failure, or nil.
    var proxyFailure: AsyncImageError? {
        guard let problem = configuration.proxy.problem else { return nil }
        return .transport(url, code: Int(CURLE_UNSUPPORTED_PROTOCOL.rawValue), message: problem)
    }

    /// The status a proxy answered a `CONNECT` with (0: no tunnel asked
    /// for), before the handle is freed. A refused tunnel leaves no
    /// response from the origin: libcurl's message and response code would
    /// then say nothing of the proxy.
    var tunnelStatus: Int {
        var status = 0
        guard let easy, aiv_curl_easy_getinfo_long(easy, CURLINFO_HTTP_CONNECTCODE, &status) == CURLE_OK else { return 0 }
        return status
    }

    /// libcurl's message for a failed transfer, naming the configured proxy
    /// when the transfer went through it: a proxy that is down or refuses a
    /// tunnel otherwise reads like the origin's failure. The proxy's URL
    /// holds no credentials (see ``ProxyConfiguration/server(_:credentials:bypass:certificateAuthorities:)``).
    func mentioningProxy(_ message: String, hop: URL) -> String {
        let proxy = configuration.proxy
        guard proxy.route == .server, let proxyURL = proxy.url, let host = hop.host, !proxy.mayBypass(host) else {
            return message
        }
        return "through proxy \(proxyURL.absoluteString): \(message)"
    }
}

/// The authorities each `https` proxy (by URL) has been verified against by
/// this process's transfers, or `.mixed` once there were two settings (see
/// `CurlTransfer.mayShareConnections(through:)`).
private enum ProxyTrust {
    case only(URL?)
    case mixed
}

private let httpsProxyTrust = Locked<[URL: ProxyTrust]>([:])
