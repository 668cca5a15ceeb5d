import Foundation

/// Limits and settings for every transfer a ``DataLoader`` makes.
public struct TransportConfiguration: Sendable, Hashable {
    /// Seconds a transfer of a ``DataLoader`` used on its own
    /// (``DataLoader/loadData(_:completion:)``) may take from the
    /// moment it starts. Default 60. Zero, a negative value, NaN or
    /// `.infinity` mean no time limit. `file` URLs are not timed. Past it:
    /// ``AsyncImageError/timedOut(_:seconds:stage:)`` at stage
    /// ``LoadStage/transfer``.
    ///
    /// A transfer made for a request (``DataLoading/loadData(_:completion:)``)
    /// has the request's ``DataRequest/timeout`` instead: an
    /// ``AsyncImageLoader``'s transfers are bounded by its
    /// ``AsyncImageLoader/loadingTimeout``, never by this, whichever
    /// initializer made the loader. (A request's whole time, queue and
    /// decode included: ``ImageRequest/timeout``.)
    public var timeout: Double
    /// The low-speed limit, in bytes per second (default 100,
    /// ``defaultLowSpeedLimit``): a transfer that receives less than this,
    /// on average, for ``lowSpeedTime`` seconds in a row ends with
    /// ``AsyncImageError/timedOut(_:seconds:stage:)`` at stage
    /// ``LoadStage/transfer``, its `seconds` ``lowSpeedTime`` (libcurl's
    /// `CURLOPT_LOW_SPEED_LIMIT`). Zero or less: no limit.
    ///
    /// It ends what the overall timeout would only end much later: a server
    /// that accepts the request and never answers, or drips its answer a
    /// byte at a time, holding one of the loader's
    /// ``AsyncImageLoader/concurrentLoads`` slots (and a connection) all
    /// along. It counts from the request's sending (a connection's set-up
    /// is bounded by the timeout) and applies to a loader's transfers too
    /// (the timeout is replaced by ``AsyncImageLoader/loadingTimeout``,
    /// this is not). Like any timeout, it is not retried by default (see
    /// ``RetryPolicy/retriesTimeouts``).
    public var lowSpeedLimit: Int
    /// Seconds a transfer may stay under ``lowSpeedLimit`` (default 10,
    /// ``defaultLowSpeedTime``: OkHttp's read timeout; a healthy server
    /// answers an image far sooner), rounded up to whole seconds (libcurl's
    /// `CURLOPT_LOW_SPEED_TIME`). Zero, a negative value, NaN or `.infinity`:
    /// no limit.
    public var lowSpeedTime: Double
    /// 100 bytes per second: a server that answers at all sends far more.
    public static let defaultLowSpeedLimit = 100
    /// 10 seconds.
    public static let defaultLowSpeedTime = 10.0
    /// The most body bytes accepted (after content decoding), enforced while
    /// the body streams in, with or without `Content-Length`. Default 50 MB.
    /// One byte more fails with ``AsyncImageError/bodyTooLarge(_:limit:)``
    /// (a `file` URL too).
    public var maxBodySize: Int
    /// The most redirects followed (to `http` and `https` only). Default 10.
    /// One more fails with ``AsyncImageError/tooManyRedirects(_:limit:)``;
    /// zero follows none.
    public var maxRedirects: Int
    /// The most bytes of one response's header block (its status line and
    /// header lines, line ends included; counted again for each response of
    /// a redirect chain), enforced as the lines arrive. Default 64 KiB. One
    /// byte more fails with ``AsyncImageError/headersTooLarge(_:limit:)``.
    ///
    /// libcurl has caps of its own that no setting moves (7.88): a single
    /// header line over 100 KiB fails before this limit sees it, and a
    /// block over 300 KiB whatever this limit; both are
    /// ``AsyncImageError/headersTooLarge(_:limit:)`` too, with libcurl's
    /// figure as the limit. A limit above those is held to them.
    public var maxHeaderSize: Int
    /// Which URLs and addresses transfers may reach (default
    /// ``URLPolicy/unrestricted``): checked for the first URL, every
    /// redirect hop, and the address of every connection before it is
    /// opened or reused (see ``URLPolicy``). A loader's own
    /// ``AsyncImageLoader/Configuration/urlPolicy`` applies as well.
    public var urlPolicy: URLPolicy
    /// Ask for and decode `gzip`, `deflate` and other encodings libcurl supports. Default `true`.
    public var acceptsEncodedBodies: Bool
    /// Whether a status of 400 or more is a response rather than a failure
    /// (set per request: ``DataRequest/acceptsAnyStatus``).
    var returnsAnyStatus = false
    /// Whether libcurl undoes transfer codings (it then fails a response
    /// with one it does not know); false: bodies are passed on as sent, but
    /// for `chunked`, which ``ChunkedDecoder`` removes. Set per request:
    /// false when ``DataRequest/acceptsEncodedBodies`` is false.
    var decodesTransferCodings = true
    /// The `User-Agent` header.
    public var userAgent: String
    /// Headers sent with every transfer (default: an `Accept` naming the
    /// formats the built-in decoders read, ``defaultAccept``). A request's
    /// own headers replace these by name; a loader's transfers always name
    /// their `Accept` (``AsyncImageLoader/Configuration/acceptHeader``), so
    /// this one is for the transport used on its own.
    public var headers: [String: String]
    /// A PEM file of the certificate authorities that `https` servers'
    /// certificates must chain to, in place of the system's store (libcurl's
    /// `CURLOPT_CAINFO`): a private CA, or the throwaway CA of a test server.
    /// Default `nil`: the system's store (Debian's `ca-certificates`).
    ///
    /// A certificate that chains to none of the trusted authorities, or names
    /// another host, fails the transfer with ``AsyncImageError/tls(_:code:message:)``;
    /// so does a file that cannot be read. Verification is never turned off.
    /// Connections are shared only between transfers that trust the same
    /// authorities.
    public var certificateAuthorities: URL?
    /// Whether `https` transfers use HTTP/2 when the server offers it (ALPN).
    /// Default `true`: concurrent transfers to one server then share one
    /// connection (each new transfer waits for the first connection's
    /// handshake rather than opening another), and ``DataResponse/httpVersion``
    /// says which version served each response. `false` keeps to HTTP/1.1.
    /// `http` URLs always use HTTP/1.1.
    public var allowsHTTP2: Bool
    /// How transfers reach servers (default ``ProxyConfiguration/environment``:
    /// the `http_proxy`, `https_proxy`, `all_proxy` and `no_proxy` variables,
    /// as libcurl reads them): ``ProxyConfiguration/direct``, or one proxy
    /// (``ProxyConfiguration/server(_:credentials:bypass:certificateAuthorities:)``).
    /// How ``urlPolicy`` applies through a proxy: see ``URLPolicy``.
    public var proxy: ProxyConfiguration

    /// The most connections open at once to one host (scheme, name and
    /// port), as browsers keep to: default 6
    /// (``defaultMaxConnectionsPerHost``); 0 for no cap. Over HTTP/1.1 a
    /// connection carries one transfer at a time, so transfers past the cap
    /// wait for one of their host's connections to be free:
    ///
    /// - in the transport, most urgent first (``DataRequest/urgency``;
    ///   equals in the order they were asked for);
    /// - their timeout starts when they get their place, not while they wait;
    /// - a cancel while waiting costs nothing: no connection was opened for it.
    ///
    /// An origin whose connections negotiated HTTP/2 (known from its first
    /// TLS handshake) has no cap: its transfers are streams of one shared
    /// connection, and those waiting start when it is known. A service that
    /// fetches from one HTTP/1.1 origin at high concurrency (object stores
    /// often speak HTTP/1.1 only) raises it to its
    /// ``AsyncImageLoader/concurrentLoads``.
    ///
    /// Transfers with different caps never share a connection (each cap
    /// has a transport thread of its own).
    public var maxConnectionsPerHost: Int
    /// 6, as browsers.
    public static let defaultMaxConnectionsPerHost = 6

    /// `Accept` for the formats of ``ImageDecoderRegistry/default``.
    public static let defaultAccept = ImageDecoderRegistry.default.acceptHeader

    /// Creates a configuration.
    public init(
        timeout: Double = 60, maxBodySize: Int = 50_000_000, maxRedirects: Int = 10,
        acceptsEncodedBodies: Bool = true, userAgent: String = "AsyncImageKit/0.1 (Linux; libcurl)",
        headers: [String: String] = ["Accept": TransportConfiguration.defaultAccept],
        certificateAuthorities: URL? = nil, allowsHTTP2: Bool = true, maxHeaderSize: Int = 65_536,
        urlPolicy: URLPolicy = .unrestricted, proxy: ProxyConfiguration = .environment,
        maxConnectionsPerHost: Int = TransportConfiguration.defaultMaxConnectionsPerHost,
        lowSpeedLimit: Int = TransportConfiguration.defaultLowSpeedLimit,
        lowSpeedTime: Double = TransportConfiguration.defaultLowSpeedTime
    ) {
        self.lowSpeedLimit = lowSpeedLimit
        self.lowSpeedTime = lowSpeedTime
        self.proxy = proxy
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.maxHeaderSize = maxHeaderSize
        self.urlPolicy = urlPolicy
        self.headers = headers
        self.certificateAuthorities = certificateAuthorities
        self.allowsHTTP2 = allowsHTTP2
        self.timeout = timeout
        self.maxBodySize = maxBodySize
        self.maxRedirects = maxRedirects
        self.acceptsEncodedBodies = acceptsEncodedBodies
        self.userAgent = userAgent
    }
}
