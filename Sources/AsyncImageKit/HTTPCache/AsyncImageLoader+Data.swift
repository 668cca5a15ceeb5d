import Foundation

extension AsyncImageLoader {
    /// Loads `url`'s bytes through the loader's HTTP cache, with no decoding.
    ///
    /// See ``data(for:)-(ImageRequest)``.
    public func data(for url: URL) async throws -> HTTPCacheResponse {
        try await data(for: ImageRequest(url: url))
    }

    /// Loads `request`'s bytes through the loader's HTTP cache (its
    /// ``Configuration/diskCache``, by the rules of
    /// ``Configuration/httpCache``), with no decoding: for prefetching bytes
    /// and for assets that are not images (Nuke's `data(for:)`).
    ///
    /// - Any HTTP status is a response with its headers and body, never a
    ///   thrown error; any status RFC 9111 lets a cache store is stored
    ///   (with explicit freshness, or heuristic freshness for the
    ///   heuristically cacheable ones).
    /// - A stored response comes back with its status and headers and an
    ///   `Age`; one the server confirmed (`304`) with the `304`'s headers
    ///   merged in (``HTTPCacheResponse/Source/revalidated``).
    /// - The request's `Cache-Control` (`no-cache`, `no-store`, `max-age`,
    ///   `max-stale`, `min-fresh`, `only-if-cached`, `stale-if-error`) and
    ///   `Pragma: no-cache` are honoured, as are its
    ///   ``ImageRequest/cachePolicy``'s choices (disk reads and writes, the
    ///   network). `only-if-cached` with nothing usable stored answers
    ///   `504`, as RFC 9111 §5.2.1.7 says; ``ImageCachePolicy/cachedOnly``
    ///   throws ``AsyncImageError/notCached(_:)``.
    /// - RFC 9111 exactly: a stale response is served when the server
    ///   cannot be reached (or answers 5xx) only if `stale-if-error` or the
    ///   request's `max-stale` allows it, and within `stale-while-revalidate`
    ///   while it is revalidated in the background; never when the response
    ///   says `must-revalidate` or `no-cache`.
    /// - No `Accept-Encoding` is sent unless the request's headers name one
    ///   (the body is then decoded by the transport).
    /// - A request with a `Range` header goes to the network as it is, and
    ///   its answer is not stored.
    ///
    /// It does not wait for a slot of ``concurrentLoads``: its transfer
    /// starts at once.
    ///
    /// - Throws: ``AsyncImageError`` (a transport failure, a refused URL,
    ///   ``AsyncImageError/notCached(_:)``), or `CancellationError`.
    public func data(for request: ImageRequest) async throws -> HTTPCacheResponse {
        let (timeout, urlPolicy, disk, policy) = state.withLock {
            ($0.loadingTimeout, $0.urlPolicy, $0.diskCache, $0.httpCache)
        }
        if let reason = urlPolicy.refusal(for: request.url) { throw AsyncImageError.refused(request.url, reason: reason) }
        let cache = request.url.isFileURL ? nil : disk.map { HTTPCache(policy: policy, store: ImageDiskStore(cache: $0)) }
        let exchange = DataExchange(
            loader: self, request: request, cache: cache, key: LoadRequest.diskKey(for: request), timeout: timeout,
            urlPolicy: urlPolicy)
        return try await exchange.run()
    }
}

/// One request of the data-level API through the HTTP cache, read top to
/// bottom: look up what is stored, ask ``HTTPCachePolicy`` what the request
/// may do with it, then serve it, validate it, or fetch anew; store what may
/// be stored.
struct DataExchange: Sendable {
    let loader: AsyncImageLoader
    let request: ImageRequest
    let cache: HTTPCache?
    let key: String
    let timeout: Double
    let urlPolicy: URLPolicy

    /// The request's headers with the loader's `Accept` unless it names
    /// one: what is sent and what `Vary` compares.
    private var headers: [String: String] { request.transferHeaders(accept: loader.acceptHeader) }
    private var policy: HTTPCachePolicy { cache?.policy ?? .private }
    private var readsCache: Bool {
        !request.cachePolicy.contains(.skipDiskReads) && HTTPCachePolicy.value("range", in: headers) == nil
    }
    private var writesCache: Bool {
        !request.cachePolicy.contains(.skipDiskWrites) && HTTPCachePolicy.value("range", in: headers) == nil
    }

    func run() async throws -> HTTPCacheResponse {
        let now = Date().timeIntervalSince1970
        var stored: (entry: HTTPCache.Entry, body: Data)?
        var reuse = HTTPCachePolicy.Reuse.unusable
        if readsCache, let cache, let entry = await onDisk({ cache.entry(for: key, requestHeaders: headers) }) {
            reuse = policy.reuse(entry.head, requestHeaders: headers, now: now)
            if reuse != .unusable, let body = await onDisk({ cache.store.original(for: key, generation: entry.generation) }) {
                stored = (entry, body)
            } else {
                reuse = .unusable
            }
        }
        if let stored {
            switch reuse {
            case .fresh, .staleAllowed:
                // The request's own conditions, answered from the cache (§4.3.2).
                if stored.entry.head.status == 200,
                    policy.requestIsNotModified(stored.entry.head, requestHeaders: headers)
                {
                    return notModified(stored.entry, isStale: reuse == .staleAllowed)
                }
                return served(stored.entry, stored.body, source: .cache, isStale: reuse == .staleAllowed)
            case .staleWhileRevalidate:
                // Served now; the conditional request runs in the background
                // (not while offline).
                let revalidation = self
                let entry = stored.entry
                Task.detached {
                    let admitted = revalidation.loader.admitToNetwork(revalidation.request.url)
                    guard let ticket = NetworkTicket(admitted) else { return }
                    _ = try? await revalidation.validate(entry, body: stored.body, ticket: ticket)
                }
                return served(stored.entry, stored.body, source: .cache, isStale: true)
            case .validate, .unusable:
                break
            }
        }
        let requestDirectives = HTTPFieldParsing.directives(HTTPCachePolicy.value("cache-control", in: headers))
        if requestDirectives["only-if-cached"] != nil {
            return HTTPCacheResponse(url: request.url, statusCode: 504, headers: [:], body: Data(), source: .cache)
        }
        if request.cachePolicy.contains(.skipNetwork) { throw AsyncImageError.notCached(request.url) }
        // Offline: what is stored (a disconnected cache may serve it
        // stale, RFC 9111 §4.2.4), or `.offline` at once.
        guard let ticket = NetworkTicket(loader.admitToNetwork(request.url)) else { return try await servedOffline() }
        if let stored, case .validate = reuse {
            return try await validate(stored.entry, body: stored.body, ticket: ticket)
        }
        return try await fetch(conditional: [:], stored: nil, ticket: ticket)
    }

    /// The loader is offline: the stored response, fresh or stale (marked
    /// so), unless it says `must-revalidate` or `no-cache` (RFC 9111
    /// §4.2.4) or the request is ``ImageCachePolicy/neverStale``; else
    /// ``AsyncImageError/offline(_:)``.
    private func servedOffline() async throws -> HTTPCacheResponse {
        let (headers, key, policy) = (self.headers, self.key, self.policy)
        if readsCache, let cache,
            let (entry, body) = await onDisk({ () -> (HTTPCache.Entry, Data)? in
                guard let entry = cache.entry(for: key, requestHeaders: headers),
                    let body = cache.store.original(for: key, generation: entry.generation)
                else { return nil }
                return (entry, body)
            })
        {
            let isFresh = policy.reuse(entry.head, requestHeaders: headers, now: Date().timeIntervalSince1970) == .fresh
            if isFresh || (!policy.forbidsStale(entry.head) && !request.cachePolicy.contains(.neverStale)) {
                return served(entry, body, source: .cache, isStale: !isFresh)
            }
        }
        throw AsyncImageError.offline(request.url)
    }

    /// Asks the server whether `entry` is still good (a conditional
    /// request): a `304` serves it refreshed, anything else replaces it.
    private func validate(_ entry: HTTPCache.Entry, body: Data, ticket: NetworkTicket) async throws -> HTTPCacheResponse {
        try await fetch(conditional: policy.conditionalHeaders(entry.head), stored: (entry, body), ticket: ticket)
    }

    /// The network: the request (with `conditional` headers unless it
    /// carries conditions of its own), then what its answer means for the
    /// stored response. `ticket`: its admission to the network (the probe
    /// of a network the loader thinks is down, see
    /// ``AsyncImageLoader/networkStatus``, and the epoch it was admitted in).
    private func fetch(
        conditional: [String: String], stored: (entry: HTTPCache.Entry, body: Data)?, ticket: NetworkTicket
    ) async throws -> HTTPCacheResponse {
        var transferHeaders = headers
        let ownConditions = headers.keys.contains {
            let name = $0.lowercased()
            return name == "if-none-match" || name == "if-modified-since"
        }
        if !ownConditions { transferHeaders.merge(conditional) { $1 } }
        var transfer = DataRequest(url: request.url, headers: transferHeaders, timeout: timeout, policy: urlPolicy)
        transfer.acceptsAnyStatus = true
        transfer.acceptsEncodedBodies = HTTPCachePolicy.value("accept-encoding", in: headers) != nil
        let requestTime = Date().timeIntervalSince1970
        let result: Result<DataResponse, AsyncImageError>
        do {
            result = try await load(transfer)
        } catch {
            if let probe = ticket.probe { loader.probeAbandoned(probe) }
            throw error
        }
        let responseTime = Date().timeIntervalSince1970
        // What the answer says of the network; offline now, a failure of
        // the network is answered as an offline request is.
        let offline = loader.networkAnswered(request.url, result, probe: ticket.probe, epoch: ticket.epoch)
        if offline, case .failure(let error) = result, error.isNetworkFailure { return try await servedOffline() }

        switch result {
        case .failure(let error):
            // The server could not be reached: stale only where allowed.
            if let stored, error.allowsStaleResponse, staleOnErrorAllowed(stored.entry, now: responseTime) {
                return served(stored.entry, stored.body, source: .cache, isStale: true)
            }
            throw error
        case .success(let response):
            if let stored, response.statusCode == 304, !ownConditions, let cache {
                guard
                    let refreshed = cache.refresh(
                        stored.entry, by: response.headers, requestTime: requestTime, responseTime: responseTime,
                        for: key)
                else {
                    // About another representation: nothing stored matches,
                    // so the request goes again without conditions (§4.3.4).
                    // (Admitted already: not the probe, whose answer this was.)
                    return try await fetch(conditional: [:], stored: nil, ticket: NetworkTicket(probe: nil, epoch: ticket.epoch))
                }
                if writesCache { await onDisk(writing: true) { try? cache.write(refreshed, for: key) } }
                return served(refreshed, stored.body, source: .revalidated, isStale: false)
            }
            if let stored, (500...599).contains(response.statusCode),
                staleOnErrorAllowed(stored.entry, now: responseTime)
            {
                return served(stored.entry, stored.body, source: .cache, isStale: true)
            }
            if writesCache, let cache,
                let head = cache.headToStore(
                    status: response.statusCode, responseHeaders: response.headers, requestHeaders: headers,
                    requestTime: requestTime, responseTime: responseTime)
            {
                let body = response.data
                await onDisk(writing: true) { _ = try? cache.store(head, body: body, for: key) }
            }
            return HTTPCacheResponse(
                url: request.url, finalURL: response.finalURL, statusCode: response.statusCode,
                headers: response.headers, body: response.data, source: .network)
        }
    }

    private func staleOnErrorAllowed(_ entry: HTTPCache.Entry, now: Double) -> Bool {
        !request.cachePolicy.contains(.neverStale)
            && policy.mayServeStaleOnError(entry.head, requestHeaders: headers, now: now, callerAllows: false)
    }

    /// A `304` for a request whose own conditions the stored response meets:
    /// the stored headers (but the body's length), no body.
    private func notModified(_ entry: HTTPCache.Entry, isStale: Bool) -> HTTPCacheResponse {
        var headers = policy.servedHeaders(entry.head, now: Date().timeIntervalSince1970)
        headers["content-length"] = nil
        return HTTPCacheResponse(
            url: request.url, statusCode: 304, headers: headers, body: Data(), source: .cache, isStale: isStale)
    }

    private func served(_ entry: HTTPCache.Entry, _ body: Data, source: HTTPCacheResponse.Source, isStale: Bool)
        -> HTTPCacheResponse
    {
        HTTPCacheResponse(
            url: request.url, statusCode: entry.head.status,
            headers: policy.servedHeaders(entry.head, now: Date().timeIntervalSince1970), body: body, source: source,
            isStale: isStale)
    }

    /// The transfer's outcome; throws only `CancellationError`.
    private func load(_ transfer: DataRequest) async throws -> Result<DataResponse, AsyncImageError> {
        let dataLoader = loader.dataLoader
        do {
            let response = try await AsyncBridge<DataResponse>.run { bridge in
                let task = dataLoader.loadData(transfer) { result in bridge.resume(result.mapError { $0 }) }
                bridge.onCancel { task.cancel() }
            }
            return .success(response)
        } catch let error as AsyncImageError {
            return .failure(error)
        }
    }

    /// Runs `body` on the loader's disk queue, or its disk write queue
    /// (files are read and written off the Swift concurrency pool's
    /// threads; writes in the order the image path's are).
    private func onDisk<T: Sendable>(writing: Bool = false, _ body: @escaping @Sendable () -> T) async -> T {
        let queue = writing ? loader.diskWrites : loader.diskQueue
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: body()) }
        }
    }
}
