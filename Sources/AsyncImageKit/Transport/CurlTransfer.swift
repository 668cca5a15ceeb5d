import CCurl
import Foundation
import Synchronization

/// One transfer: its libcurl easy handle, the body as it streams in, and the
/// rule that it ends in exactly one of "completed" (the handler runs once) or
/// "cancelled" (the handler never runs).
///
/// The handle, the body and the flags are touched only on the loop thread;
/// `state` is the one thing shared between threads.
final class CurlTransfer: @unchecked Sendable {
    enum State {
        case pending, cancelled, delivered
    }

    let url: URL
    let configuration: TransportConfiguration
    /// The request's headers (over the configuration's).
    let headers: [String: String]
    /// Progress and partial bodies (see `DataTransferObserver`).
    let observer: DataTransferObserver
    private let completionQueue: DispatchQueue
    private let completion: @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    private let state = Locked(State.pending)
    /// The loop it was started on (set before it is handed to it).
    var loop: CurlEventLoop?
    /// Its place among transfers waiting for a connection of their origin (see `OriginAdmission`).
    let urgency: TransferUrgency
    /// Loop thread: when it reached the loop, and whether it holds one of
    /// its origin's places (`OriginAdmission`).
    var arrival: UInt64 = 0
    var holdsOriginPlace = false
    /// Held by `cancel()` while it decides and by a progress call, so no
    /// progress is reported after `cancel()` returned true. Recursive: a
    /// progress handler may cancel its own transfer.
    private let observerLock = NSRecursiveLock()

    // Loop thread only.
    private(set) var easy: UnsafeMutableRawPointer?
    /// Header and body callbacks so far (for ``HTTP2WakeUps``).
    private(set) var progressCount = 0
    private var body = Data()
    private var bodyTooLarge = false
    /// Bytes of the current hop's header block, and that hop (its redirect count).
    private var headerBytes = 0
    private var headerHop = 0
    private var headersTooLarge = false
    /// Why the URL policy refused a redirect hop or an address (see `URLPolicy`).
    private var refusal: String?
    /// It opened a connection of its own, whose set-up is not over yet
    /// (no request sent), and it was cancelled meanwhile (see `keepsConnectionOnCancel`).
    private var openedConnection = false
    private var sentRequest = false
    private(set) var isAbandoned = false
    /// Whether the observer's `bodyStart` still wants the body's start.
    private var wantsBodyStart = true
    /// The body's expected length for progress, read at its first bytes.
    private var expectedLength: Int?
    /// Strips `chunked` framing when libcurl's transfer decoding is off
    /// (``TransportConfiguration/decodesTransferCodings``), from the body's first bytes.
    private var chunked: ChunkedDecoder?
    /// The headers of the response being read (each new status line, as
    /// after a redirect, starts them again).
    private var responseHeaders: [String: String] = [:]
    private var errorBuffer: UnsafeMutablePointer<CChar>?
    /// The header list handed to libcurl; freed with the handle.
    private var headerList: UnsafeMutablePointer<curl_slist>?

    init(
        url: URL, configuration: TransportConfiguration, headers: [String: String] = [:],
        observer: DataTransferObserver = DataTransferObserver(), urgency: TransferUrgency = TransferUrgency(),
        completionQueue: DispatchQueue, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) {
        self.urgency = urgency
        self.url = url
        self.configuration = configuration
        self.headers = headers
        self.observer = observer
        self.completionQueue = completionQueue
        self.completion = completion
    }

    deinit {
        errorBuffer?.deallocate()
    }

    var isCancelled: Bool { state.withLock { $0 == .cancelled } }

    /// Marks the transfer cancelled (if it has not delivered) and asks the loop
    /// to drop it. Returns whether it did: false once the handler has been
    /// claimed (it then runs, or has run).
    @discardableResult
    func cancel() -> Bool {
        observerLock.lock()
        defer { observerLock.unlock() }
        let cancelled = state.withLock { state -> Bool in
            guard state == .pending else { return false }
            state = .cancelled
            return true
        }
        if cancelled { loop?.cancel(self) }
        return cancelled
    }

    /// Reports progress unless the transfer was cancelled (loop thread, or
    /// the file queue for `file` URLs).
    func reportProgress(_ received: Int, expected: Int?) {
        guard let progress = observer.progress else { return }
        observerLock.lock()
        defer { observerLock.unlock() }
        guard !isCancelled else { return }
        progress(received, expected)
    }

    /// Delivers `result` on the completion queue, unless cancelled first.
    func deliver(_ result: Result<DataResponse, AsyncImageError>) {
        completionQueue.async { [self] in
            let claimed = state.withLock { state -> Bool in
                guard state == .pending else { return false }
                state = .delivered
                return true
            }
            if claimed { completion(result) }
        }
    }

    // MARK: Loop thread

    /// Creates and configures the easy handle; on failure delivers an error and returns nil.
    func makeHandle(share: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        if let failure = proxyFailure {
            deliver(.failure(failure))
            return nil
        }
        guard let easy = curl_easy_init() else {
            deliver(.failure(.transport(url, code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_easy_init failed")))
            return nil
        }
        self.easy = easy
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE))
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        errorBuffer = buffer

        let timeoutMilliseconds = Self.milliseconds(configuration.timeout)
        var ok = true
        func set(_ code: CURLcode) { if code != CURLE_OK { ok = false } }
        set(aiv_curl_easy_setopt_string(easy, CURLOPT_URL, url.absoluteString))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1))
        if let share { set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_SHARE, share)) }
        set(aiv_curl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https,file"))
        set(aiv_curl_easy_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, Self.redirectSchemes.sorted().joined(separator: ",")))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_MAXREDIRS, max(0, configuration.maxRedirects)))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMilliseconds))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Self.connectMilliseconds(configuration.timeout)))
        if let (limit, seconds) = Self.lowSpeed(configuration) {
            set(aiv_curl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, limit))
            set(aiv_curl_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, seconds))
        }
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_FAILONERROR, configuration.returnsAnyStatus ? 0 : 1))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1))
        set(aiv_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2))
        if let authorities = configuration.certificateAuthorities {
            // In place of the system's store: the bundle, and no CA folder
            // (libcurl's default folder would add the system's CAs back).
            set(aiv_curl_easy_setopt_string(easy, CURLOPT_CAINFO, authorities.path))
            set(aiv_curl_easy_setopt_string(easy, CURLOPT_CAPATH, nil))
        }
        if !setProxyOptions(easy) { ok = false }
        let http2 = configuration.allowsHTTP2
        set(aiv_curl_easy_setopt_long(
            easy, CURLOPT_HTTP_VERSION, http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1))
        if http2, url.scheme?.lowercased() == "https" {
            // Wait for a connection being set up to this server to say (in
            // its TLS handshake) whether it multiplexes, rather than open
            // another. Not for `http`: libcurl 7.88 would hold the transfer
            // until a whole earlier response to that server had arrived.
            if loop?.mayMultiplex(origin) == true { set(aiv_curl_easy_setopt_long(easy, CURLOPT_PIPEWAIT, 1)) }
        }
        set(aiv_curl_easy_setopt_string(easy, CURLOPT_USERAGENT, configuration.userAgent))
        set(aiv_curl_easy_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxBodySize)))
        if !configuration.decodesTransferCodings {
            // Both off, or libcurl still builds its decoding stack for the
            // transfer coding (and fails on one it does not know).
            set(aiv_curl_easy_setopt_long(easy, CURLOPT_HTTP_TRANSFER_DECODING, 0))
            set(aiv_curl_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0))
        }
        if configuration.acceptsEncodedBodies {
            // A range counts bytes of the encoded form: ask for the body as
            // it is stored (identity), so offsets mean the bytes kept. A
            // server that encodes anyway is still decoded (and no partial
            // body is reported for it).
            set(aiv_curl_easy_setopt_string(easy, CURLOPT_ACCEPT_ENCODING, requestsRange ? "identity" : ""))
        }
        // Headers: the configuration's, then the request's over them. An
        // empty value ("Name:") makes libcurl send none of that name. An
        // invalid name or value is dropped (see `HTTPHeader`: no injection).
        // Merged by name, case-insensitively (HTTP names are).
        var merged: [String: (name: String, value: String)] = [:]
        for (name, value) in configuration.headers { merged[name.lowercased()] = (name, value) }
        for (name, value) in headers { merged[name.lowercased()] = (name, value) }
        for (_, (name, value)) in merged.sorted(by: { $0.key < $1.key }) {
            guard HTTPHeader.isValid(name: name, value: value) else { continue }
            let line = value.isEmpty ? "\(name):" : "\(name): \(value)"
            guard let list = curl_slist_append(headerList, line) else {
                ok = false
                break
            }
            headerList = list
        }
        if let headerList { set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_HTTPHEADER, headerList)) }
        set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_ERRORBUFFER, buffer))
        set(aiv_curl_easy_setopt_write_function(easy, curlWrite))
        set(aiv_curl_easy_setopt_header_function(easy, curlHeader))
        set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, Unmanaged.passUnretained(self).toOpaque()))
        set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, Unmanaged.passUnretained(self).toOpaque()))
        // Every connection's address before it is opened, and every
        // request's URL and address (a reused connection's too) before it is
        // sent: the first and each redirect hop (the URL policy; and what
        // `keepsConnectionOnCancel` needs to know).
        set(aiv_curl_easy_setopt_opensocket_function(easy, curlOpenSocket))
        set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, Unmanaged.passUnretained(self).toOpaque()))
        set(aiv_curl_easy_setopt_prereq_function(easy, curlPrerequest))
        set(aiv_curl_easy_setopt_pointer(easy, CURLOPT_PREREQDATA, Unmanaged.passUnretained(self).toOpaque()))
        guard ok else {
            releaseHandle()
            deliver(.failure(.transport(url, code: Int(CURLE_FAILED_INIT.rawValue), message: "could not configure the transfer")))
            return nil
        }
        return easy
    }

    /// Whether a `Range` header will be sent (the request's, or else the configuration's).
    var requestsRange: Bool {
        let value =
            headers.first { $0.key.lowercased() == "range" }?.value
            ?? configuration.headers.first { $0.key.lowercased() == "range" }?.value
        return !(value ?? "").isEmpty
    }

    /// The schemes a redirect may lead to (`CURLOPT_REDIR_PROTOCOLS_STR`).
    static let redirectSchemes: Set<String> = ["http", "https"]

    /// libcurl's timeout for `seconds`: 0 (none) unless it is finite and positive.
    static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        return max(1, Int(min(seconds * 1000, 1e15).rounded(.up)))
    }

    /// libcurl's low-speed limit (bytes per second) and time (whole
    /// seconds, rounded up) for `configuration`; nil when either is off.
    static func lowSpeed(_ configuration: TransportConfiguration) -> (limit: Int, seconds: Int)? {
        let time = configuration.lowSpeedTime
        guard configuration.lowSpeedLimit > 0, time.isFinite, time > 0 else { return nil }
        return (configuration.lowSpeedLimit, Int(min(time, 1e9).rounded(.up)))
    }

    /// libcurl's message for a transfer under the low-speed limit (7.88's
    /// `Curl_speedcheck`): the one way to tell it from the overall timeout,
    /// which has the same code (28).
    static let lowSpeedMessagePrefix = "Operation too slow"

    /// libcurl's connect timeout for `seconds`: the same limit as the whole
    /// transfer. libcurl's own default (300 s) would otherwise apply to the
    /// connection under "no limit", and cut a longer limit short. Its cap is
    /// `INT_MAX` ms (24.8 days), which is what "no limit" gets.
    static func connectMilliseconds(_ seconds: Double) -> Int {
        let total = milliseconds(seconds)
        let cap = Int(Int32.max)
        return total == 0 ? cap : min(total, cap)
    }

    /// Appends body bytes; returns fewer than `count` (aborting the transfer) past the size limit.
    func receive(_ bytes: UnsafeRawPointer, count: Int) -> Int {
        progressCount &+= 1
        if !configuration.decodesTransferCodings {
            if body.isEmpty, chunked == nil,
                HTTPGrammar.listMembers(responseHeaders["transfer-encoding"] ?? "").last?.lowercased() == "chunked"
            {
                chunked = ChunkedDecoder()
            }
            if var decoder = chunked {
                var data = Data()
                decoder.decode(UnsafeRawBufferPointer(start: bytes, count: count), into: &data)
                chunked = decoder
                guard !data.isEmpty else { return count }
                let accepted = data.withUnsafeBytes { appendBody($0.baseAddress!, count: $0.count) }
                return accepted == data.count ? count : 0
            }
        }
        return appendBody(bytes, count: count)
    }

    /// Appends body bytes (decoded); returns fewer than `count` past the size limit.
    private func appendBody(_ bytes: UnsafeRawPointer, count: Int) -> Int {
        if body.count + count > configuration.maxBodySize {
            bodyTooLarge = true
            return 0
        }
        if body.isEmpty, let easy {
            var length: curl_off_t = -1
            if aiv_curl_easy_getinfo_off_t(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK, length > 0 {
                body.reserveCapacity(Int(min(length, curl_off_t(configuration.maxBodySize))))
            }
            if observer.progress != nil { expectedLength = expectedBodyLength() }
            reportResponseHead()
        }
        body.append(bytes.assumingMemoryBound(to: UInt8.self), count: count)
        reportProgress(body.count, expected: expectedLength)
        reportBodyStart()
        return count
    }

    /// Gives the observer the response's head, before its first body byte (loop thread).
    private func reportResponseHead() {
        guard let handler = observer.responseHead, let easy else { return }
        var status = 0
        _ = aiv_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        var finalURL = url
        var text: UnsafeMutablePointer<CChar>?
        if aiv_curl_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &text) == CURLE_OK, let text,
            let effective = URL(string: String(cString: text))
        {
            finalURL = effective
        }
        let head = ResponseHead(statusCode: status, headers: responseHeaders, finalURL: finalURL)
        observerLock.lock()
        defer { observerLock.unlock() }
        guard !isCancelled else { return }
        handler(head)
    }

    /// Shows the body so far to the observer's `bodyStart` (loop thread),
    /// until it has seen enough or the limit is passed.
    private func reportBodyStart() {
        guard let bodyStart = observer.bodyStart, wantsBodyStart else { return }
        guard body.count <= observer.bodyStartLimit, !isContentEncoded else {
            wantsBodyStart = false
            return
        }
        observerLock.lock()
        defer { observerLock.unlock() }
        guard !isCancelled else { return }
        wantsBodyStart = bodyStart(body)
    }

    /// The length of the response's body as sent, when it is known and
    /// counts the bytes the write callback sees (no content encoding).
    private func expectedBodyLength() -> Int? {
        guard let easy, !isContentEncoded else { return nil }
        var length: curl_off_t = -1
        if aiv_curl_easy_getinfo_off_t(easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK, length >= 0 {
            return Int(length)
        }
        return responseHeaders["content-range"].flatMap(ContentRange.init)?.count
    }

    /// Whether the response names a content coding (other than `identity`).
    private var isContentEncoded: Bool {
        guard let encoding = responseHeaders["content-encoding"] else { return false }
        return encoding.trimmingCharacters(in: .whitespaces).lowercased() != "identity"
    }

    /// What was received, when it can be resumed: a 200 or 206 with body
    /// bytes, no content encoding, within the size limit (loop thread,
    /// before the handle is freed).
    private func partialBody() -> PartialBody? {
        guard observer.partial != nil, !body.isEmpty, !bodyTooLarge, let easy else { return nil }
        var status = 0
        _ = aiv_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        guard status == 200 || status == 206 else { return nil }
        guard !isContentEncoded else { return nil }
        var finalURL = url
        var text: UnsafeMutablePointer<CChar>?
        if aiv_curl_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &text) == CURLE_OK, let text,
            let effective = URL(string: String(cString: text))
        {
            finalURL = effective
        }
        return PartialBody(url: url, finalURL: finalURL, statusCode: status, headers: responseHeaders, data: body)
    }

    /// One header line of the response (loop thread). Past the header
    /// size limit, returns 0: libcurl then ends the transfer. Parsed as
    /// bytes, and a repeated name's values appended in place: a hostile
    /// server's block of thousands of tiny lines costs the transport thread,
    /// which every transfer shares, little time.
    func receiveHeader(_ bytes: UnsafeRawPointer, count: Int) -> Int {
        progressCount &+= 1
        // Counted per hop of a redirect chain (interim 1xx responses included).
        var hop = 0
        if let easy { _ = aiv_curl_easy_getinfo_long(easy, CURLINFO_REDIRECT_COUNT, &hop) }
        if hop != headerHop { (headerHop, headerBytes) = (hop, 0) }
        headerBytes += count
        if headerBytes > configuration.maxHeaderSize {
            headersTooLarge = true
            return 0
        }
        let line = UnsafeRawBufferPointer(start: bytes, count: count)
        if line.starts(with: Self.statusLinePrefix) {
            responseHeaders = [:]
        } else if responseHeaders.count < 200, let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = String(decoding: Self.trimmed(line[..<colon]), as: UTF8.self).lowercased()
            let value = String(decoding: Self.trimmed(line[(colon + 1)...]), as: UTF8.self)
            if let index = responseHeaders.index(forKey: name) {
                responseHeaders.values[index].append(", " + value)
            } else {
                responseHeaders[name] = value
            }
        }
        return count
    }

    private static let statusLinePrefix = Array("HTTP/".utf8)

    /// `bytes` without the spaces, tabs, CRs and LFs at either end.
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    /// Reads the outcome off the finished handle, frees it, and delivers.
    func finish(multi: UnsafeMutableRawPointer?, code: CURLcode) {
        let result = outcome(code)
        let partial = partialBody()
        releaseHandle()
        body = Data()
        guard let partial, let report = observer.partial else { return deliver(result) }
        // The completion is claimed here, not on the completion queue, so
        // that a failure's partial body comes first and a later cancel()
        // answers false. If a cancel() won, the handle is gone all the same:
        // the partial body (the whole body, if it had all arrived) is its.
        let claimed = observerLock.withLock {
            state.withLock { state -> Bool in
                guard state == .pending else { return false }
                state = .delivered
                return true
            }
        }
        if !claimed || code != CURLE_OK { report(partial) }
        if claimed { completionQueue.async { [completion] in completion(result) } }
    }

    /// Whether a cancel should leave the transfer to finish setting up the
    /// connection it opened, rather than remove it now (loop thread).
    ///
    /// libcurl closes a connection whose set-up (TCP, TLS) is cut short by
    /// removing the transfer that opened it, and the transfers waiting to
    /// share it (`CURLOPT_PIPEWAIT`) must start over on a new one. Over a
    /// link with a 150 ms round trip a TLS connection takes 300 ms to set
    /// up: a scrolling screen whose cells pass by faster than that would
    /// never get one. So a transfer cancelled in that phase is *abandoned*
    /// instead: its outcome is already "cancelled" (the handler never runs),
    /// but it stays in the multi handle until its connection is ready and
    /// is stopped at its pre-request callback, before a request is sent. An
    /// HTTP/2 connection then stays open for the others; an HTTP/1.1 one
    /// is closed as before (libcurl closes a connection whose first
    /// transfer ends before its response). Only where the connection may
    /// multiplex: `https` with ``TransportConfiguration/allowsHTTP2``.
    ///
    /// An origin whose last new connection negotiated HTTP/1.1 (ALPN, read
    /// at the pre-request callback) is known not to multiplex: its cancelled
    /// transfers are removed at once, freeing their place among the host's
    /// connections rather than holding it for a connection that will close.
    var keepsConnectionOnCancel: Bool {
        openedConnection && !sentRequest && configuration.allowsHTTP2 && url.scheme?.lowercased() == "https"
            && loop?.mayMultiplex(origin) != false
    }

    /// `scheme://host:port` of the first URL.
    var origin: String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }

    /// Marks the transfer abandoned (see `keepsConnectionOnCancel`): its
    /// pre-request callback will stop it.
    func abandon() { isAbandoned = true }

    /// Ends a cancelled transfer (its handle already removed from the multi
    /// handle): reports what it had received, and frees the handle.
    func finishCancelled() {
        let partial = partialBody()
        releaseHandle()
        body = Data()
        if let partial { observer.partial?(partial) }
    }

    /// Frees the easy handle (after it was removed from the multi handle).
    func releaseHandle() {
        if let easy { curl_easy_cleanup(easy) }
        easy = nil
        curl_slist_free_all(headerList)
        headerList = nil
    }

    private func outcome(_ code: CURLcode) -> Result<DataResponse, AsyncImageError> {
        var status = 0
        var finalURL = url
        var contentType: String?
        var redirects = 0
        var httpVersion: DataResponse.HTTPVersion?
        var connection: DataResponse.Connection?
        var systemError = 0
        if let easy {
            if code == CURLE_COULDNT_CONNECT { _ = aiv_curl_easy_getinfo_long(easy, CURLINFO_OS_ERRNO, &systemError) }
            _ = aiv_curl_easy_getinfo_long(easy, CURLINFO_REDIRECT_COUNT, &redirects)
            _ = aiv_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            var text: UnsafeMutablePointer<CChar>?
            if aiv_curl_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &text) == CURLE_OK, let text,
                let effective = URL(string: String(cString: text))
            {
                finalURL = effective
            }
            text = nil
            if aiv_curl_easy_getinfo_string(easy, CURLINFO_CONTENT_TYPE, &text) == CURLE_OK, let text {
                contentType = String(cString: text)
            }
            var version = 0
            if aiv_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version) == CURLE_OK {
                httpVersion = Self.httpVersion(version)
            }
            var localPort = 0
            var connects = 0
            if httpVersion != nil, aiv_curl_easy_getinfo_long(easy, CURLINFO_LOCAL_PORT, &localPort) == CURLE_OK,
                aiv_curl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK
            {
                connection = DataResponse.Connection(localPort: localPort, newConnections: connects)
            }
        }
        let message = mentioningProxy(errorMessage(code), hop: finalURL)
        switch code {
        case _ where refusal != nil && code != CURLE_OK:
            return .failure(.refused(url, reason: refusal ?? message))
        case _ where code != CURLE_OK && !(200..<300).contains(tunnelStatus) && tunnelStatus != 0:
            let refused = "the proxy refused the tunnel: CONNECT answered \(tunnelStatus)"
            return .failure(.transport(url, code: Int(code.rawValue), message: mentioningProxy(refused, hop: finalURL)))
        case CURLE_WRITE_ERROR where headersTooLarge:
            return .failure(.headersTooLarge(url, limit: configuration.maxHeaderSize))
        case CURLE_OK:
            return .success(
                DataResponse(
                    url: url, finalURL: finalURL, statusCode: status, contentType: contentType, data: body,
                    headers: responseHeaders, httpVersion: httpVersion, connection: connection))
        case CURLE_HTTP_RETURNED_ERROR:
            return .failure(.httpStatus(finalURL, code: status, headers: responseHeaders))
        case CURLE_OPERATION_TIMEDOUT where errorMessage(code).hasPrefix(Self.lowSpeedMessagePrefix):
            // Stalled: under the low-speed limit for its whole time.
            let seconds = Self.lowSpeed(configuration).map { Double($0.seconds) } ?? configuration.lowSpeedTime
            return .failure(.timedOut(url, seconds: seconds, stage: .transfer))
        case CURLE_OPERATION_TIMEDOUT:
            return .failure(.timedOut(url, seconds: configuration.timeout, stage: .transfer))
        case CURLE_FILESIZE_EXCEEDED:
            return .failure(.bodyTooLarge(url, limit: configuration.maxBodySize))
        case CURLE_WRITE_ERROR where bodyTooLarge:
            return .failure(.bodyTooLarge(url, limit: configuration.maxBodySize))
        case CURLE_TOO_MANY_REDIRECTS:
            return .failure(.tooManyRedirects(url, limit: configuration.maxRedirects))
        case CURLE_UNSUPPORTED_PROTOCOL where redirects > 0 && redirectSchemeWasRefused(finalURL: finalURL):
            // The first URL's scheme was checked before starting: the
            // redirect's is refused. (The same code with an allowed scheme
            // is a reply libcurl refuses, such as HTTP/0.9: a transport error.)
            return .failure(.disallowedRedirect(url, message: message))
        case CURLE_OUT_OF_MEMORY where body.isEmpty && !bodyTooLarge && isHTTP:
            // libcurl 7.88 reports a header line over its limit as out of
            // memory (8.6 has CURLE_TOO_LARGE for it).
            return .failure(.headersTooLarge(url, limit: Self.headerLineLimit))
        case CURLE_RECV_ERROR where body.isEmpty && !bodyTooLarge && curlHeaderBytes > Self.headerBlockLimit:
            // "Too large response headers" (not a connection reset mid-body).
            return .failure(.headersTooLarge(url, limit: Self.headerBlockLimit))
        case CURLE_FILE_COULDNT_READ_FILE:
            return .failure(.fileNotFound(url))
        case CURLE_COULDNT_CONNECT where Self.unreachableErrors.contains(Int32(truncatingIfNeeded: systemError)):
            // No route at all: the network is down (or this host's part of
            // it), not the server. A refused or timed-out connect, or one
            // host that cannot be reached (`EHOSTUNREACH`: a firewall's
            // `icmp-host-prohibited` for one closed port, a host down on
            // the LAN), is the server's, and stays a transport error.
            return .failure(.offline(url))
        case _ where Self.tlsCodes.contains(code):
            return .failure(.tls(url, code: Int(code.rawValue), message: message))
        default:
            return .failure(.transport(url, code: Int(code.rawValue), message: message))
        }
    }

    /// The system's errors of a connect that found no route to the network:
    /// `ENETUNREACH` only. `EHOSTUNREACH` says one host cannot be reached
    /// (the next hop did not answer, a router or a firewall said so: a
    /// REJECT with `icmp-host-prohibited` for one server's closed port):
    /// that server's failure, a transport error (libcurl's 7, "couldn't
    /// connect"), retried as a refused connection is (see ``RetryPolicy``).
    static let unreachableErrors: Set<Int32> = [ENETUNREACH]

    /// libcurl's limit on one response header line (`CURL_MAX_HTTP_HEADER`), in bytes.
    static let headerLineLimit = 100 * 1024
    /// libcurl's limit on a response's header block (`MAX_HTTP_RESP_HEADER_SIZE`), in bytes.
    static let headerBlockLimit = 300 * 1024

    /// Whether the transfer is over HTTP (a `file` URL has no headers).
    private var isHTTP: Bool { ["http", "https"].contains(url.scheme?.lowercased() ?? "") }

    /// The header bytes libcurl has counted so far (every response of the
    /// transfer; `CURLINFO_HEADER_SIZE`), before the handle is freed.
    private var curlHeaderBytes: Int {
        var size = 0
        guard let easy, aiv_curl_easy_getinfo_long(easy, CURLINFO_HEADER_SIZE, &size) == CURLE_OK else { return 0 }
        return size
    }

    /// Whether a redirect failed for its target's scheme: the URL it led to
    /// has a scheme a redirect may not use, or the last response's
    /// `Location` does (libcurl leaves the effective URL at the redirecting
    /// one when it cannot parse the target, as for a scheme it does not
    /// know, such as `data:`).
    private func redirectSchemeWasRefused(finalURL: URL) -> Bool {
        func refused(_ target: URL) -> Bool { !Self.redirectSchemes.contains(target.scheme?.lowercased() ?? "") }
        if refused(finalURL) { return true }
        guard let location = responseHeaders["location"], let target = URL(string: location, relativeTo: finalURL) else {
            return false
        }
        return refused(target.absoluteURL)
    }

    /// libcurl's codes for a failed TLS setup: the peer's certificate, the
    /// handshake, the trusted authorities' or revocation files.
    static let tlsCodes: Set<CURLcode> = [
        CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE,
        CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CERTPROBLEM,
        CURLE_SSL_CIPHER, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED,
        CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_CLIENTCERT,
    ]

    /// `CURLINFO_HTTP_VERSION`'s value as a version; nil for none (0: no
    /// response) or one this code does not know.
    static func httpVersion(_ value: Int) -> DataResponse.HTTPVersion? {
        switch value {
        case CURL_HTTP_VERSION_1_0: return .http1_0
        case CURL_HTTP_VERSION_1_1: return .http1_1
        case CURL_HTTP_VERSION_2_0: return .http2
        case CURL_HTTP_VERSION_3: return .http3
        default: return nil
        }
    }

    // MARK: The URL policy (loop thread)

    /// Why the policy refuses the request about to be made (the first, or
    /// a redirect hop once libcurl follows it): its URL, or then the
    /// address it connects to (nil: not an IPv4 or IPv6 address) at `port`,
    /// unless that is the configured proxy's. Nil when allowed.
    private func refusal(connectingTo address: IPAddress?, port: Int) -> String? {
        let policy = configuration.urlPolicy
        var hop = url
        var text: UnsafeMutablePointer<CChar>?
        if let easy, aiv_curl_easy_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &text) == CURLE_OK, let text,
            let effective = URL(string: String(cString: text))
        {
            hop = effective
        }
        var reason = policy.refusal(for: hop)
        if reason == nil, policy.checksAddresses, !configuration.proxy.isProxy(address, port: port, for: hop) {
            reason = address.map(policy.refusal(for:)) ?? "an address that is neither IPv4 nor IPv6"
        }
        guard let reason else { return nil }
        return hop == url ? reason : "redirect to \(hop.absoluteString): \(reason)"
    }

    /// libcurl is about to open a socket to `address`: the socket, or none
    /// when the policy refuses the hop or the address.
    func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        let family = address.pointee.family
        var resolved: IPAddress?
        var port = 0
        let raw = UnsafeRawPointer(aiv_curl_sockaddr_address(address))
        let length = Int(address.pointee.addrlen)
        if let raw, family == AF_INET, length >= MemoryLayout<sockaddr_in>.size {
            let offset = MemoryLayout<sockaddr_in>.offset(of: \.sin_addr)!
            resolved = IPAddress(bytes: Array(UnsafeRawBufferPointer(start: raw + offset, count: 4)))
        } else if let raw, family == AF_INET6, length >= MemoryLayout<sockaddr_in6>.size {
            let offset = MemoryLayout<sockaddr_in6>.offset(of: \.sin6_addr)!
            resolved = IPAddress(bytes: Array(UnsafeRawBufferPointer(start: raw + offset, count: 16)))
        }
        if let raw, resolved != nil {
            // Where both families keep it (`sin_port`, `sin6_port`), in network order.
            let offset = MemoryLayout<sockaddr_in>.offset(of: \.sin_port)!
            port = Int(UInt16(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
        }
        if let reason = refusal(connectingTo: resolved, port: port) {
            refusal = reason
            return CURL_SOCKET_BAD
        }
        // Another of the host's addresses is allowed: a failure from here
        // on is this connection's, not the policy's.
        refusal = nil
        let fd = socket(family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
        if fd >= 0 { openedConnection = true }
        return fd
    }

    /// libcurl is about to send a request on a connection to `address`:`port`
    /// (new or reused): whether the policy lets it, and the transfer was
    /// not cancelled while it set the connection up.
    func prerequest(_ address: String, port: Int) -> Bool {
        sentRequest = true
        if openedConnection, let easy, let loop {
            let alpn = aiv_curl_alpn_is_h2(easy)
            if alpn >= 0 { loop.noteMultiplexing(origin, alpn == 1) }
        }
        if isAbandoned { return false }
        if let reason = refusal(connectingTo: IPAddress(address), port: port) {
            refusal = reason
            return false
        }
        return true
    }

    private func errorMessage(_ code: CURLcode) -> String {
        if let errorBuffer, errorBuffer.pointee != 0 { return String(cString: errorBuffer) }
        return String(cString: curl_easy_strerror(code))
    }
}

/// libcurl's write callback: hands the bytes to the transfer in `userdata`.
private let curlWrite: aiv_curl_write_callback = { pointer, size, count, userdata in
    guard let userdata else { return 0 }
    let total = size * count
    guard total > 0, let pointer else { return total }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receive(pointer, count: total)
}

/// libcurl's socket callback: the transfer in `clientp` opens the socket, or refuses.
private let curlOpenSocket: curl_opensocket_callback = { clientp, _, address in
    guard let clientp, let address else { return CURL_SOCKET_BAD }
    return Unmanaged<CurlTransfer>.fromOpaque(clientp).takeUnretainedValue().openSocket(address)
}

/// libcurl's pre-request callback: the transfer in `clientp` lets the request go, or aborts it.
private let curlPrerequest: curl_prereq_callback = { clientp, primaryIP, _, primaryPort, _ in
    guard let clientp, let primaryIP else { return CURL_PREREQFUNC_ABORT }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(clientp).takeUnretainedValue()
    let allowed = transfer.prerequest(String(cString: primaryIP), port: Int(primaryPort))
    return allowed ? CURL_PREREQFUNC_OK : CURL_PREREQFUNC_ABORT
}

/// libcurl's header callback: one header line at a time, to its transfer.
private let curlHeader: aiv_curl_write_callback = { pointer, size, count, userdata in
    guard let pointer, let userdata else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
    return transfer.receiveHeader(pointer, count: size * count)
}
