import Foundation

extension AsyncImageLoader {
    /// `request`'s image as bytes to send (a thumbnail service's answer):
    /// the encoded bytes, their content type, size, and where the image
    /// came from. What a service would otherwise write by hand (an alpha
    /// scan, the JPEG-or-PNG choice, an encode per hit) is done here, and a
    /// thumbnail the disk cache holds is served as it is stored.
    ///
    /// ```swift
    /// let request = ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 256, height: 256)))
    /// let thumbnail = try await loader.encodedImage(for: request)
    /// // respond with thumbnail.data, Content-Type: thumbnail.contentType
    /// ```
    ///
    /// **AVIF and WebP for the clients that take them**: pass the client's
    /// `Accept` field with ``ImageEncoding/negotiated(accept:quality:avifSpeed:)``
    /// and answer with `Vary: Accept` when ``EncodedImage/variesByAccept``
    /// says so (always, for a negotiated answer), so that a shared cache in
    /// front keeps one copy per field rather than serving one client's AVIF
    /// to another that cannot decode it. A handler (Hummingbird 2):
    ///
    /// ```swift
    /// router.get("/thumb") { request, context -> Response in
    ///     let source = try ImageRequest(url: sourceURL(request), sizing: .fitInside(PixelSize(width: 256, height: 256)))
    ///     let thumbnail = try await loader.encodedImage(
    ///         for: source, encoding: .negotiated(accept: request.headers[.accept], quality: 75))
    ///     var headers: HTTPFields = [.contentType: thumbnail.contentType, .cacheControl: "public, max-age=86400"]
    ///     if thumbnail.variesByAccept { headers[.vary] = "Accept" }
    ///     return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: thumbnail.data)))
    /// }
    /// ```
    ///
    /// In order:
    /// 1. **The memory cache**: its image is encoded
    ///    (``ImageResponse/Source/memoryCache``).
    /// 2. **A stored thumbnail** (a display-size request whose processed
    ///    image is on disk, usable now as a load would find it: fresh, or
    ///    stale where ``ImageCachePolicy`` allows): when it is stored as
    ///    what `encoding` asks for (a JPEG, WebP or AVIF at the same
    ///    settings, or a PNG; for a negotiated encoding, what the client's
    ///    field chooses), its bytes are returned as they are, read
    ///    on the disk queue: no decode, no encode
    ///    (``EncodedImage/isStoredEncoding``). This is a read, not a load:
    ///    no notification is posted and nothing goes into the memory cache
    ///    (that would cost the decode it avoids). The default encoding,
    ///    ``ImageEncoding/automatic``, is the disk's default, so that this
    ///    is the usual case.
    /// 3. **A load** through the usual stages, as
    ///    ``response(for:)`` makes one (the disk, decoded; or the network),
    ///    and its image encoded. When the disk stores the thumbnail as
    ///    `encoding` asks, the store stage makes the bytes once, for the
    ///    disk and this answer alike.
    ///
    /// The request's ``ImageRequest/cachePolicy``, URL policy and pixel
    /// limits apply as to a load. An animation is answered with its first
    /// frame (no encoder here writes animations): set
    /// ``ImageRequest/firstFrameOnly`` so that only that frame is decoded.
    /// Encoding runs on the calling task. The request's time limit
    /// (``ImageRequest/timeout``, else the loader's
    /// ``Configuration/requestTimeout``) covers the stored thumbnail's read
    /// too, and what is left of it the load.
    ///
    /// - Parameters:
    ///   - request: what to load; a display size (``ImageRequest/init(url:sizing:maxPixels:maxFrames:priority:headers:cachePolicy:diskStorage:processors:key:)``)
    ///     makes a thumbnail the disk cache keeps.
    ///   - encoding: how to write it (default ``ImageEncoding/automatic``:
    ///     JPEG at quality 90 for an opaque image, PNG for one with
    ///     transparency, by ``Image/isOpaque``; WebP, AVIF, or chosen from
    ///     the client's `Accept` field: ``ImageEncoding``).
    /// - Throws: ``AsyncImageError`` (as a load fails, or
    ///   ``AsyncImageError/encoding(_:reason:)``), or `CancellationError`.
    public func encodedImage(for request: ImageRequest, encoding: ImageEncoding = .automatic) async throws
        -> EncodedImage
    {
        var request = request.resolving(requestDefaults)
        let (cache, loaderTimeout) = state.withLock { ($0.cache, $0.requestTimeout) }
        let asked = ProcessInfo.processInfo.systemUptime
        if case .miss = lookUp(request, in: cache) {
            // The request's time limit covers this read too, and what is
            // left of it the load that may follow.
            let timeout = request.timeout ?? loaderTimeout
            if let stored = try await storedEncoding(for: request, encoding, timeout: timeout) {
                try Task.checkCancellation()
                reportStoredAnswer(request, asked: asked)
                return stored
            }
            if let timeout {
                request.timeout = timeout - .seconds(ProcessInfo.processInfo.systemUptime - asked)
            }
        }
        let response = try await response(for: request, encoding: encoding)
        return try Self.encoded(response, encoding)
    }

    /// The image of `response` as `encoding` says: the bytes the store
    /// stage made or read when they are what is asked, else encoded now.
    static func encoded(_ response: ImageResponse, _ encoding: ImageEncoding) throws(AsyncImageError) -> EncodedImage {
        let still = response.image.stillImage(frame: 0)
        let kind = encoding.answerKind(opaque: still.isOpaque)
        let payload: EncodedPayload
        if let made = response.encoded, made.kind == kind {
            payload = made
        } else {
            EncodeWatch.note(response.url)
            payload = try EncodedPayload(still, as: kind)
        }
        return EncodedImage(
            data: payload.data, format: kind.format, quality: kind.quality, width: still.width, height: still.height,
            source: response.source, isStale: response.isStale, fileProperties: response.image.fileProperties,
            variesByAccept: encoding.variesByAccept)
    }

    /// A stored answer's events, for the event monitor (and so for
    /// metrics): `.queued` when it was asked, `.diskRead(hit: true)` and a
    /// successful `.delivered` from the disk cache when it was read. It is
    /// a read, not a load: numbered like a request, but never in the
    /// request table, and with no `.loading` (it takes no transfer slot).
    private func reportStoredAnswer(_ request: ImageRequest, asked: Double) {
        mutate { state, effects in
            guard let monitor = state.eventMonitor else { return }
            let id = state.requests.numberOutsideTheTable()
            let now = ProcessInfo.processInfo.systemUptime
            let steps: [(LoaderEvent.Kind, Double, ImageResponse.Source?)] = [
                (.queued, asked, nil), (.diskRead(hit: true), now, nil), (.delivered(success: true), now, .diskCache),
            ]
            let events = steps.map { kind, time, source in
                state.eventSequence += 1
                return LoaderEvent(
                    requestID: id, url: request.url, target: nil, kind: kind, time: time, sequence: state.eventSequence,
                    source: source)
            }
            effects.append { events.forEach(monitor) }
        }
    }

    /// `request`'s stored thumbnail as it is stored, when that is what
    /// `encoding` asks for and a load may use it now; read on the disk
    /// queue. Nil otherwise (a load then answers). A read still running
    /// when `timeout` passes fails the request as a load's disk read would
    /// (``AsyncImageError/timedOut(_:seconds:stage:)`` at ``LoadStage/diskRead``):
    /// it is not in the request table, so no deadline of the loader's
    /// covers it.
    private func storedEncoding(for request: ImageRequest, _ encoding: ImageEncoding, timeout: Duration?)
        async throws(AsyncImageError) -> EncodedImage?
    {
        let processing = request.cacheKey.processing
        guard !ImageCacheKey.isFullSize(processing), !request.cachePolicy.contains(.skipDiskReads), !request.url.isFileURL,
            let (disk, policy, offline) = state.withLock({ state in
                let offline = state.network.isOffline(for: request.url, now: state.networkClock())
                return state.diskCache.map { ($0, state.httpCache, offline) }
            })
        else { return nil }
        let accept = acceptHeader
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<StoredRead, Never>) in
            // Whichever comes first, the read or the time limit, answers.
            let answered = Locked(false)
            let answer: @Sendable (StoredRead) -> Void = { read in
                guard answered.withLock({ done in defer { done = true }; return !done }) else { return }
                continuation.resume(returning: read)
            }
            if let timeout, let deadline = RequestDeadline.deadline(after: timeout) {
                timerQueue.asyncAfter(deadline: deadline) { answer(.timedOut) }
            }
            diskQueue.async {
                let httpCache = HTTPCache(policy: policy, store: ImageDiskStore(cache: disk))
                let key = LoadRequest.diskKey(for: request)
                // The lookup a load makes (`HTTPCache.lookUp`), for the
                // headers entry alone: whether the response may be used now.
                let lookup = httpCache.lookUp(
                    key, requestHeaders: request.transferHeaders(accept: accept), processings: [], needsFullSize: false,
                    rules: StaleRules(request.cachePolicy, isFileURL: false, networkDown: offline),
                    now: Date().timeIntervalSince1970)
                guard case .usable(let stored, let staleness) = lookup,
                    let data = httpCache.store.processed(for: key, processing: processing, generation: stored.entry.generation),
                    let parts = StoredImage.stored(data), let payload = parts.encoded, let opaque = parts.isOpaque,
                    encoding.answerKind(opaque: opaque) == payload.kind,
                    request.options.limitFailure(
                        format: parts.metadata.format.flatMap(ImageFormat.init(rawValue:)), originalSize: parts.originalSize,
                        frameCount: parts.frameCount, countedPixels: parts.metadata.countedPixels) == nil
                else { return answer(.none) }
                answer(
                    .found(EncodedImage(
                        data: payload.data, format: payload.kind.format, quality: payload.kind.quality,
                        width: parts.size.width, height: parts.size.height, source: .diskCache, isStoredEncoding: true,
                        isStale: staleness.isStale, fileProperties: parts.metadata.fileProperties,
                        variesByAccept: encoding.variesByAccept)))
            }
        }
        switch outcome {
        case .found(let image): return image
        case .none: return nil
        case .timedOut:
            throw .timedOut(request.url, seconds: timeout.map(RequestDeadline.seconds) ?? 0, stage: .diskRead)
        }
    }
}

/// What the read of a stored answer found, or that the time ran out first.
private enum StoredRead: Sendable {
    case found(EncodedImage)
    case none
    case timedOut
}
