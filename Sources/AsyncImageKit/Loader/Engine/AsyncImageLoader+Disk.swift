import Foundation

/// What the disk gave a job: the stored response's head, its body when it
/// was needed, and the processed images found for the job's sizes.
struct StoredResponse: Sendable {
    var entry: HTTPCache.Entry
    var body: Data?
    var images: [String: Data]

    /// The response the transfer stage hands on (its body, or none), with
    /// the stored status and headers (and an `Age`, RFC 9111 §5.1);
    /// `confirmedBy`: the `304` that revalidated it (its HTTP version and
    /// connection; its headers are merged into `entry` already).
    func response(for url: URL, policy: HTTPCachePolicy, confirmedBy answer: DataResponse? = nil) -> DataResponse {
        DataResponse(
            url: url, finalURL: answer?.finalURL, statusCode: entry.head.status,
            contentType: entry.head.headers["content-type"], data: body ?? Data(),
            headers: policy.servedHeaders(entry.head, now: Date().timeIntervalSince1970),
            httpVersion: answer?.httpVersion, connection: answer?.connection)
    }
}

/// The disk stage: reading a job's stored response before the network, and
/// storing what a decode made after it. What may be stored and reused is
/// ``HTTPCache``'s to say (RFC 9111); the layout is ``ImageDiskStore``'s.
extension AsyncImageLoader {
    enum StoredLookup {
        /// Usable now: fresh, or stale where that is allowed (offline, or
        /// shown while revalidating; `isStale` says which).
        case usable(StoredResponse, isStale: Bool)
        /// Usable once the server confirms it (a `304`).
        case stale(StoredResponse)
        /// Nothing usable: the network (or "not cached" offline).
        case miss
    }

    /// On the disk queue: what is stored for `key`. The processed images of
    /// `processings` are read first; the body only when they do not cover
    /// every request (`needsFullSize`, or a size without an image), so a
    /// thumbnail hit never reads the original. A stale response counts only
    /// when it can be revalidated, or may be shown stale (offline, or
    /// `acceptStale`) and its response does not forbid that
    /// (`must-revalidate`, `no-cache`), and what it lacks is not needed.
    /// The image path reuses only a stored `2xx`.
    static func readStored(
        _ cache: HTTPCache, key: String, requestHeaders: [String: String], processings: Set<String>,
        needsFullSize: Bool, offline: Bool, acceptStale: Bool, now: Double
    ) -> StoredLookup {
        guard let entry = cache.entry(for: key, requestHeaders: requestHeaders), (200..<300).contains(entry.head.status)
        else { return .miss }
        let reuse = cache.policy.reuse(entry.head, requestHeaders: requestHeaders, now: now)
        let isFresh = reuse == .fresh
        let mayBeStale = !cache.policy.forbidsStale(entry.head)
        let usableNow = isFresh || reuse == .staleAllowed || ((offline || acceptStale) && mayBeStale)
        guard usableNow || (!offline && reuse != .unusable) else { return .miss }
        let generation = entry.generation
        let store = cache.store
        var images: [String: Data] = [:]
        for processing in processings {
            images[processing] = store.processed(for: key, processing: processing, generation: generation)
        }
        let needsBody = needsFullSize || images.count < processings.count
        let body = needsBody ? store.original(for: key, generation: generation) : nil
        // Without the body, a partial answer is worth more than none only
        // offline: the stored images, and "not cached" for the other sizes.
        if needsBody, body == nil, !offline || images.isEmpty { return .miss }
        let stored = StoredResponse(entry: entry, body: body, images: images)
        return usableNow ? .usable(stored, isStale: !isFresh) : .stale(stored)
    }

    /// Under the lock: schedules the delivery of `outcome`, made by `job`, to
    /// `record` (which has left the job). The one home of the stale rules:
    /// a stale image shown while revalidating brings a follow-up request on
    /// the same target and actions
    /// (``ImageCachePolicy/returnStaleWhileRevalidating``), and that
    /// follow-up is delivered only if the image changed.
    func deliver(
        _ record: LoadRequest, from job: LoadJob, _ outcome: Result<Image, AsyncImageError>,
        _ state: inout LoaderState, _ effects: inout Effects
    ) {
        record.source = job.bodyFromDisk ? .diskCache : .network
        record.isStale = job.servedStale
        record.earlyEnd = job.earlyEnd
        // Its HTTP response, as a cache returns it: from the network, or
        // stored (with `Age`, and a confirming 304's headers merged in).
        if job.statusCode != 0, let finalURL = job.finalURL, !job.url.isFileURL {
            record.http = ImageResponse.HTTPInfo(
                finalURL: finalURL, statusCode: job.statusCode, headers: job.responseHeaders,
                isRevalidated: job.revalidated)
        }
        if record.deliversOnlyIfChanged, job.bodyFromDisk || outcome.isFailure {
            // The image shown is still the server's (a 304), or there is
            // nothing better to show: nothing more to deliver.
            cancelRecord(record, &state, &effects)
            return
        }
        if job.revalidationFollows, case .success = outcome,
            record.request.cachePolicy.contains(.returnStaleWhileRevalidating), record.completion == nil,
            !record.isPrefetch
        {
            followUp(record, &state, &effects)
        }
        scheduleDelivery(record, outcome, cache: record.cache, &state, &effects)
    }

    /// Queues the revalidation that follows `record`'s stale delivery: the
    /// same request (past the memory cache, which holds the stale image),
    /// target and actions, in the same lane, after it.
    private func followUp(_ record: LoadRequest, _ state: inout LoaderState, _ effects: inout Effects) {
        let object = record.target?.object
        guard record.target == nil || object != nil else { return }
        // Something newer was set on the target meanwhile: it wins, and no
        // fresher copy of this image may come after it.
        if let lane = record.lane, lane.key != nil, lane.latestPending(&effects.keep) !== record { return }
        var request = record.request
        request.cachePolicy.remove(.returnStaleWhileRevalidating)
        request.cachePolicy.insert(.skipMemoryReads)
        let next = LoadRequest(
            request: request, target: object, success: record.success, failure: record.failure, cache: record.cache)
        next.deliversOnlyIfChanged = true
        add(next, object: object, hit: nil, &state, &effects)
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

extension AsyncImageError {
    /// A failure to reach the server, after which a stale stored response
    /// may be served (RFC 9111, 4.2.4): transport errors (a response too
    /// broken to read among them, such as one with oversized headers),
    /// timeouts, 5xx.
    var allowsStaleResponse: Bool {
        switch self {
        case .transport, .timedOut, .headersTooLarge: return true
        case .httpStatus(_, let code, _): return code >= 500
        default: return false
        }
    }
}

extension AsyncImageLoader {

    /// Under the lock, after `job` decoded `image` for `key` from `body`:
    /// the disk write to hand to ``diskWrites``, or nil. A body from the
    /// network is stored once (its headers, and the body itself when a
    /// request keeps originals) under a new generation; each size's
    /// processed image once, when a request keeps processed images and the
    /// disk does not already hold it.
    func diskWrite(for job: LoadJob, body: Data, key: ImageCacheKey, image: Image, _ state: inout LoaderState)
        -> (@Sendable () -> Void)?
    {
        guard let cache = job.httpCache else { return nil }
        var response: (head: StoredHTTPHead, body: Data?)?
        if !job.bodyFromDisk, job.generation == nil {
            // What HTTP allows to be stored (RFC 9111: no `no-store`, no
            // `Vary: *`, reusable), as a whole response.
            guard
                let head = cache.headToStore(
                    status: job.statusCode, responseHeaders: job.responseHeaders, requestHeaders: job.headers,
                    requestTime: job.requestTime, responseTime: job.responseTime)
            else {
                job.generation = ""  // not storable: nothing of it is
                return nil
            }
            job.generation = ImageDiskStore.newGeneration()
            // A body that ended at the DC coefficients is a prefix: never the original.
            response = (head, job.storesOriginal && job.earlyEnd == nil ? body : nil)
        }
        guard let generation = job.generation, !generation.isEmpty else { return nil }
        let processing = key.processing
        let storesImage =
            !processing.isEmpty && job.storedProcessings.contains(processing)
            && !job.processingsOnDisk.contains(processing)
        if storesImage { job.processingsOnDisk.insert(processing) }
        guard response != nil || storesImage else { return nil }
        let newResponse = response
        let (diskKey, encoding, logger, url) = (job.diskKey, state.processedImageEncoding, state.logger, job.url)
        return { [diskWrites] in
            diskWrites.async {
                do {
                    if let response = newResponse {
                        try cache.store(response.head, body: response.body, for: diskKey, generation: generation)
                    }
                    if storesImage {
                        let bytes = try StoredImage.encode(image, encoding: encoding)
                        try cache.store.storeProcessed(
                            bytes, for: diskKey, processing: processing, generation: generation)
                    }
                } catch {
                    logger.warning("could not store \(url.absoluteString) on disk: \(error)")
                }
            }
        }
    }
}
