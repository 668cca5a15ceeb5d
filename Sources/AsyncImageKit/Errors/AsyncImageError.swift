import Foundation

/// The one error type of AsyncImageKit: every failure a load or a decode can
/// end in. Each case carries the URL where there is one and reads well in a
/// log (``description``).
public enum AsyncImageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The string is not a URL that can be loaded.
    case invalidURL(String)
    /// The URL's scheme is not `http`, `https` or `file`; nothing was sent.
    case unsupportedScheme(URL)
    /// The server answered with an HTTP status of 400 or above; `headers`
    /// are the response's (names lowercased), for a caller that needs them
    /// (`Retry-After`, `WWW-Authenticate`, a request id). The data-level
    /// API (``AsyncImageLoader/data(for:)-(ImageRequest)``) returns such a
    /// response instead of throwing.
    case httpStatus(URL, code: Int, headers: [String: String] = [:])
    /// A time limit passed: `stage` says where the request was at that
    /// moment. Either the transfer did not finish within `seconds` of its
    /// start (``AsyncImageLoader/loadingTimeout``, or a ``DataLoader``'s
    /// ``TransportConfiguration/timeout``: stage ``LoadStage/transfer``,
    /// for every request that shared the transfer), or it stayed under the
    /// low-speed limit for `seconds` (``TransportConfiguration/lowSpeedLimit``
    /// for ``TransportConfiguration/lowSpeedTime``: the same stage; a server
    /// that never answers or drips), or the request did not
    /// end within `seconds` of being made (``ImageRequest/timeout``, or
    /// ``AsyncImageLoader/Configuration/requestTimeout``: that request
    /// alone, in whichever stage it was). How the two combine:
    /// ``ImageRequest/timeout``.
    case timedOut(URL, seconds: Double, stage: LoadStage)
    /// The body grew past the size limit, in bytes (checked while streaming).
    case bodyTooLarge(URL, limit: Int)
    /// The redirect chain was longer than `limit`.
    case tooManyRedirects(URL, limit: Int)
    /// A redirect pointed at a scheme other than `http` or `https` (such as `file`).
    case disallowedRedirect(URL, message: String)
    /// A `file` URL names no readable file.
    case fileNotFound(URL)
    /// The TLS connection to an `https` server could not be set up: its
    /// certificate chains to no trusted authority (such as a self-signed
    /// one, or a private CA's without
    /// ``TransportConfiguration/certificateAuthorities``), names another
    /// host or has expired; the handshake failed; or the configured CA file
    /// cannot be read. libcurl's code and message (which says which).
    case tls(URL, code: Int, message: String)
    /// Any other transport failure (connection refused or reset, a body cut
    /// short, DNS): libcurl's code and message.
    case transport(URL, code: Int, message: String)
    /// The data could not be decoded into an image.
    case decoding(DecodingFailure, url: URL?)
    /// An image could not be encoded (``PNGEncoder``, ``JPEGEncoder``,
    /// ``WebPEncoder``, ``AVIFEncoder``), or an encoder's settings are out of
    /// their range: the format and the codec library's (or the setting's) words.
    case encoding(ImageFormat, reason: String)
    /// The disk cache could not read or write its folder: the path and the
    /// system's words.
    case diskCache(path: String, message: String)
    /// The request could not use the network (``ImageCachePolicy/skipNetwork``)
    /// and no cache held the URL.
    case notCached(URL)
    /// A processor (``ImageProcessing``) failed on a decoded image: its
    /// identifier and why.
    case processing(String, reason: String)
    /// The URL policy (``AsyncImageLoader/Configuration/urlPolicy``,
    /// ``TransportConfiguration/urlPolicy``) refused the URL, a redirect
    /// hop, or the address a connection was about to be opened to: why, in
    /// words (which URL or address, and which rule). Nothing was sent to it.
    case refused(URL, reason: String)
    /// The loader already had ``AsyncImageLoader/Configuration/maxPendingRequests``
    /// requests pending (not yet delivered or cancelled): this one was
    /// refused at once, before any cache or transfer.
    case queueFull(URL, limit: Int)
    /// A response's header block was larger than `limit` bytes: the limit
    /// set (``TransportConfiguration/maxHeaderSize``, counted per response as
    /// the headers arrive), or libcurl's own, which come first for a single
    /// huge line (in libcurl 7.88: 100 KiB for one line, 300 KiB for a whole
    /// block). Nothing of the body was used.
    case headersTooLarge(URL, limit: Int)
    /// The network is unreachable, and nothing the request may be served
    /// is stored. From an ``AsyncImageLoader``: it is offline (its
    /// ``AsyncImageLoader/Configuration/reachability`` says the system has
    /// no route beyond loopback, or a transfer just failed with the network
    /// unreachable: see ``AsyncImageLoader/networkStatus``), and its disk
    /// cache holds no response for the request, or holds one that may not
    /// be served without the server's word (`must-revalidate`, `no-cache`),
    /// or the request is ``ImageCachePolicy/neverStale`` and the stored one
    /// is stale. It comes at once: no transfer, no timeout, no retry. From
    /// a ``DataLoader``: the transfer could not connect because there is no
    /// route to the network (libcurl's "couldn't connect" with the system's
    /// `ENETUNREACH`; `EHOSTUNREACH`, one host that cannot be reached, is a
    /// ``transport(_:code:message:)`` error); a ``DataLoading`` of one's own
    /// reports such a failure the same way, and the loader goes offline on
    /// it.
    case offline(URL)

    /// The URL the failure concerns, if any.
    public var url: URL? {
        switch self {
        case .invalidURL, .encoding, .diskCache, .processing: return nil
        case .unsupportedScheme(let url), .httpStatus(let url, _, _), .timedOut(let url, _, _),
            .bodyTooLarge(let url, _), .tooManyRedirects(let url, _), .disallowedRedirect(let url, _),
            .fileNotFound(let url), .tls(let url, _, _), .transport(let url, _, _), .notCached(let url),
            .refused(let url, _), .queueFull(let url, _), .headersTooLarge(let url, _), .offline(let url):
            return url
        case .decoding(_, let url): return url
        }
    }

    /// The same error with its URL set (used when a decode failure becomes a load failure).
    public func with(url: URL) -> AsyncImageError {
        if case .decoding(let failure, nil) = self { return .decoding(failure, url: url) }
        return self
    }

    /// A readable sentence naming what failed and where.
    public var description: String {
        switch self {
        case .invalidURL(let string):
            return "invalid URL '\(string)'"
        case .unsupportedScheme(let url):
            return "unsupported URL scheme '\(url.scheme ?? "")' in \(url.absoluteString) (only http, https and file are loaded)"
        case .httpStatus(let url, let code, _):
            return "HTTP status \(code) for \(url.absoluteString)"
        case .timedOut(let url, let seconds, let stage):
            return "timed out after \(seconds) s loading \(url.absoluteString) (\(stage.description))"
        case .bodyTooLarge(let url, let limit):
            return "body of \(url.absoluteString) is larger than the limit of \(limit) bytes"
        case .tooManyRedirects(let url, let limit):
            return "more than \(limit) redirects loading \(url.absoluteString)"
        case .disallowedRedirect(let url, let message):
            return "redirect to a scheme other than http or https refused loading \(url.absoluteString): \(message)"
        case .fileNotFound(let url):
            return "no readable file at \(url.absoluteString)"
        case .tls(let url, let code, let message):
            return "TLS failed for \(url.absoluteString) (curl error \(code)): \(message)"
        case .transport(let url, let code, let message):
            return "transfer of \(url.absoluteString) failed (curl error \(code)): \(message)"
        case .decoding(let failure, let url):
            if let url { return "\(failure) (\(url.absoluteString))" }
            return failure.description
        case .encoding(let format, let reason):
            return "\(format) encoding failed: \(reason)"
        case .diskCache(let path, let message):
            return "disk cache at \(path): \(message)"
        case .notCached(let url):
            return "\(url.absoluteString) is in no cache, and the request may not use the network"
        case .processing(let processor, let reason):
            return "processing '\(processor)' failed: \(reason)"
        case .refused(let url, let reason):
            return "\(url.absoluteString) refused by the URL policy: \(reason)"
        case .queueFull(let url, let limit):
            return "\(url.absoluteString) refused: the loader already has \(limit) pending requests (its limit)"
        case .headersTooLarge(let url, let limit):
            return "response headers of \(url.absoluteString) are larger than the limit of \(limit) bytes"
        case .offline(let url):
            return "\(url.absoluteString) cannot be loaded: the network is unreachable (offline), and no stored response may be served for it"
        }
    }
}

/// Where a request was when its time ran out (see
/// ``AsyncImageError/timedOut(_:seconds:stage:)``): the stages of a load, in
/// the order a request passes them.
public enum LoadStage: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Waiting in the loader's queue for a transfer slot
    /// (``AsyncImageLoader/concurrentLoads``).
    case queued
    /// Holding a slot, reading the disk cache for a stored response
    /// (``AsyncImageLoader/Configuration/diskCache``), before any transfer.
    case diskRead
    /// Transferring: the network, or reading a `file` URL.
    case transfer
    /// The body is in: waiting for a decoder (one per core), decoding, or
    /// running the request's processors.
    case decode

    /// `"waiting in the queue"`, `"reading the disk cache"`, `"transferring"`, `"decoding"`.
    public var description: String {
        switch self {
        case .queued: return "waiting in the queue"
        case .diskRead: return "reading the disk cache"
        case .transfer: return "transferring"
        case .decode: return "decoding"
        }
    }
}

/// Why data could not be decoded: which format, at which stage, and what was wrong.
public struct DecodingFailure: Sendable, Hashable, CustomStringConvertible {
    /// Where in the decode the failure happened.
    public enum Stage: String, Sendable, Hashable {
        /// Recognising the format from the first bytes.
        case sniffing
        /// The signature, header or coding parameters.
        case header
        /// Rejected by the pixel limit before any pixel buffer was allocated.
        case limits
        /// The image data (scanlines, LZW data, frames).
        case pixels
        /// After the image data: the end of the stream.
        case trailer
        /// An allocation failed.
        case memory
    }

    /// The sniffed format, `nil` when it could not be recognised.
    public let format: ImageFormat?
    /// The stage that failed.
    public let stage: Stage
    /// What was wrong, in the codec library's words where it gave any.
    public let reason: String
    /// Whether the pixel or frame limit (``DecodingOptions/maxPixels``,
    /// ``DecodingOptions/maxFrames``) refused the image, rather than another
    /// limit (a JPEG's scan count): a request with a higher limit that
    /// shares the body is then decoded again.
    let isPixelLimit: Bool
    /// Whether the decode was stopped because nobody waited for it any more
    /// (``DecodeStop``): never delivered, the stage decodes again for a
    /// request that joined late.
    let isStopped: Bool

    /// Creates a failure.
    public init(format: ImageFormat?, stage: Stage, reason: String) {
        self.init(format: format, stage: stage, reason: reason, isPixelLimit: false)
    }

    init(format: ImageFormat?, stage: Stage, reason: String, isPixelLimit: Bool, isStopped: Bool = false) {
        self.format = format
        self.stage = stage
        self.reason = reason
        self.isPixelLimit = isPixelLimit
        self.isStopped = isStopped
    }

    /// Equal when format, stage and reason are.
    public static func == (a: DecodingFailure, b: DecodingFailure) -> Bool {
        a.format == b.format && a.stage == b.stage && a.reason == b.reason
    }

    /// Hashes format, stage and reason.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(format)
        hasher.combine(stage)
        hasher.combine(reason)
    }

    /// `"cannot decode jpeg (pixels): Premature end of JPEG file"`.
    public var description: String {
        "cannot decode \(format?.rawValue ?? "data") (\(stage.rawValue)): \(reason)"
    }
}
