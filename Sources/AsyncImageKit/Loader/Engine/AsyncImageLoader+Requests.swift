import Foundation

/// The request stage (its state: ``RequestTable``, and the ``JobTable`` a
/// request joins): a request enters (its memory lookup, then a cache hit,
/// a refusal, or a lane and a job), changes priority, or ends (``end(_:as:_:_:)``,
/// reached by every cancel and every delivery).
extension AsyncImageLoader {
    /// Makes a request: a cache hit is scheduled for delivery at once (before
    /// this returns when called on the delivery queue); anything else joins
    /// its target's lane and its URL's job.
    func enqueue(
        _ request: ImageRequest, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction?,
        isPrefetch: Bool = false, onCancelled: (@Sendable () -> Void)? = nil, encoding: ImageEncoding? = nil,
        completion: (@Sendable (Result<ImageResponse, AsyncImageError>) -> Void)? = nil
    ) -> LoadRequest {
        let request = request.resolving(requestDefaults)
        let (cache, deliveryQueue) = state.withLock { ($0.cache, $0.deliveryQueue) }
        let memory = lookUp(request, in: cache)
        let record = LoadRequest(
            request: request, target: target, success: success, failure: failure, cache: cache, isHit: memory.isFound,
            isPrefetch: isPrefetch, onCancelled: onCancelled, encoding: encoding, completion: completion)
        // Inline only outside other deliveries (see `DeliveryDepth`).
        let inline =
            memory.isFound && completion == nil && DeliveryDepth.current == 0 && DeliveryQueueMark.isCurrent(deliveryQueue)
        mutate { state, effects in
            self.add(record, object: target, memory: memory, inline: inline, &state, &effects)
            self.pump(&state, &effects)
        }
        return record
    }

    /// Makes `record`, built elsewhere (a sequence's member), after its
    /// memory lookup (``lookUp(_:in:)``): as `enqueue` does. A record
    /// cancelled before this (``cancel(_:)``) is never made.
    func submit(_ record: LoadRequest, object: AnyObject?, memory: MemoryLookup) {
        mutate { state, effects in
            self.add(record, object: object, memory: memory, &state, &effects)
            self.pump(&state, &effects)
        }
    }

    /// Cancels one request (made or not yet), then refills the slots.
    func cancel(_ record: LoadRequest) {
        cancel { _, _ in [record] }
    }

    /// The one memory-cache lookup every reader makes (a load, a
    /// sequence's member, ``cachedImage(for:)``, ``hasCachedImage(for:)``,
    /// ``encodedImage(for:encoding:)``, the image model, the photo album),
    /// outside the loader's lock (the cache and the URL policy may be
    /// anyone's code), for a request already resolved with the loader's
    /// defaults (`resolving(requestDefaults)`: its key carries the colour
    /// management and the resize quality the loader would use). In order:
    /// the URL policy (a refused URL is never served from the cache
    /// either), the request's cache policy (skipping memory reads), then
    /// the request's pixel limit on what is found.
    func lookUp(_ request: ImageRequest, in cache: (any ImageCaching)?) -> MemoryLookup {
        if let refusal = refusal(for: request) { return .refused(refusal) }
        guard !request.cachePolicy.contains(.skipMemoryReads), let image = cache?.image(for: request.cacheKey) else {
            return .miss
        }
        if let failure = request.options.limitFailure(for: image) {
            return .overLimit(.decoding(failure, url: request.url))
        }
        return .hit(image)
    }

    /// `request`'s image in the loader's memory cache, looked up as a load
    /// would (``lookUp(_:in:)``, the loader's defaults filled in first).
    /// What the image model and the photo album show at once, before any load.
    func memoryCachedImage(for request: ImageRequest) -> Image? {
        lookUp(request.resolving(requestDefaults), in: state.withLock { $0.cache }).image
    }

    /// Why the loader's URL policy refuses `request`, or nil (outside the
    /// lock: the policy's rules are anyone's code).
    func refusal(for request: ImageRequest) -> AsyncImageError? {
        let policy = state.withLock { $0.urlPolicy }
        return policy.refusal(for: request.url).map { .refused(request.url, reason: $0) }
    }

    /// Under the lock: numbers `record`, files it in its lane, and either
    /// schedules its cache hit, or its failure when it is refused (by the
    /// URL policy, because `maxPendingRequests` are pending, or because its
    /// time limit has passed already), or joins it to its URL's job (and
    /// arms its deadline).
    func add(
        _ record: LoadRequest, object: AnyObject?, memory: MemoryLookup, inline: Bool = false,
        _ state: inout LoaderState, _ effects: inout Effects
    ) {
        // Cancelled before it was admitted (a sequence's member): never made.
        guard record.state == .pending else { return }
        let (lane, stale) = state.requests.admit(record, object: object, &effects.keep)
        StageWalk.note(.requests, .down, record.request.url)
        defer {
            // Requests of a dead object whose address this target now has:
            // cancelled after this one joined, so a transfer they share with
            // it (a recycled cell asking again) goes on.
            for old in stale { cancelRecord(old, &state, &effects) }
            // Touched: its LIFO rank is now.
            state.slots.refile(lane)
        }
        if let found = memory.found {
            // From memory, without the network: the image, or its limits
            // failure when it is over this request's pixel limit.
            record.source = .memoryCache
            report(.cacheHit, [record], &state, &effects)
            scheduleDelivery(record, found, cache: record.heldIn, inline: inline, &state, &effects)
            return
        }
        // Admission: one comparison (the count includes this request).
        let full = state.requests.pendingCount > max(0, state.maxPendingRequests)
        if let error = memory.refusal ?? (full ? .queueFull(record.request.url, limit: max(0, state.maxPendingRequests)) : nil)
            ?? expiredDeadline(of: record, loaderTimeout: state.requestTimeout)
        {
            let (logger, metadata) = (state.logger, record.logMetadata)
            effects.append { logger.info("request refused: \(error)", metadata: metadata) }
            scheduleDelivery(record, .failure(error), cache: nil, &state, &effects)
            return
        }
        // Before it looks for a job: the policy is part of the job's key.
        record.retryPolicy = record.request.retryPolicy ?? state.retryPolicy
        let job = state.jobs.job(for: record)
        job.join(record, storage: record.request.diskStorage ?? state.diskStorage)
        armDeadline(record, &state)
        StageWalk.note(.jobs, .down, record.request.url)
        record.fileProperties = job.fileProperties
        report(.queued, [record], &state, &effects)
        // A request that joins late sees the steps it missed.
        switch job.phase {
        case .queued:
            lane.enterQueue(record.priority)
        case .loading:
            report(.loading, [record], &state, &effects)
        case .awaitingDecoder(let data):
            report(.loading, [record], &state, &effects)
            report(.transferred(bytes: data.count), [record], &state, &effects)
        case .decoding(let data, let key):
            report(.loading, [record], &state, &effects)
            report(.transferred(bytes: data.count), [record], &state, &effects)
            // Its size is decoding now; otherwise `.decoding` comes when its size is next.
            if key == record.request.cacheKey { report(.decoding, [record], &state, &effects) }
        case .finished:
            break  // not reachable: a finished job has left `jobs`
        }
    }

    /// Moves requests a job cannot serve (it turned out to have only stored
    /// processed images, none of their size) to the job that loads the
    /// body; they wait in the queue again.
    func moveUnservable(of job: LoadJob, _ state: inout LoaderState, _ effects: inout Effects) {
        for record in job.orderedRequests where !job.canServe(record) {
            job.leave(record)
            let next = state.jobs.job(for: record)
            next.join(record, storage: record.request.diskStorage ?? state.diskStorage)
            if next.isQueued, let lane = record.lane {
                lane.requeue(record)
                state.slots.refile(lane)
            }
        }
    }

    /// Re-ranks a request (and its lane) while it waits.
    func setPriority(of record: LoadRequest, to priority: ImagePriority) {
        mutate { state, effects in
            guard record.state == .pending, record.priority != priority else { return }
            if record.isQueued, let lane = record.lane {
                lane.leaveQueue(record.priority)
                lane.enterQueue(priority)
                record.priority = priority
                state.slots.refile(lane)
            } else {
                record.priority = priority
            }
        }
    }

    /// Ends `record` `outcome` in the request table, and refiles its lane
    /// (its rank may have changed): the one teardown of a request's indexes.
    func end(_ record: LoadRequest, as outcome: LoadRequest.State, _ state: inout LoaderState, _ effects: inout Effects) {
        if outcome == .delivered { StageWalk.note(.requests, .up, record.request.url) }
        disarmDeadline(record, &effects)
        if let lane = state.requests.end(record, as: outcome, &effects.keep) { state.slots.refile(lane) }
        if state.requests.pendingCount == 0, !state.idleWaiters.isEmpty {
            let waiters = state.idleWaiters.values
            state.idleWaiters = [:]
            effects.append { waiters.forEach { $0.resume() } }
        }
    }

    /// Marks a request cancelled and lets go of its job if nothing else needs it.
    func cancelRecord(_ record: LoadRequest, _ state: inout LoaderState, _ effects: inout Effects) {
        guard record.state == .pending else { return }
        let admitted = record.id != 0
        end(record, as: .cancelled, &state, &effects)
        if admitted { report(.cancelled, [record], &state, &effects) }
        effects.keep.park(record)  // its last release after the lock
        let callbacks = record.takeCallbacks()  // run, and released, after the lock
        effects.append { callbacks.onCancelled?() }
        if let onEnd = record.onEnd {
            record.onEnd = nil
            onEnd(record, &state, &effects)
        }
        guard let job = record.job else { return }
        job.leave(record)
        left(job, &state, &effects)
    }

    /// A request left `job` without an outcome from it (cancelled, or its
    /// deadline passed): a job left with no request is dropped, and a
    /// decode left with none for its size is stopped.
    func left(_ job: LoadJob, _ state: inout LoaderState, _ effects: inout Effects) {
        if job.requests.isEmpty {
            drop(job, &state, &effects)
        } else if case .decoding(_, let key?) = job.phase, job.requests(for: key).isEmpty {
            state.decodes.stop(job)
        }
    }

    /// `job` has no request left: it ends, its transfer is stopped, and a
    /// running decode stops at its next checkpoint (``DecodeStop``; nothing
    /// is cached, a request that joins meanwhile gets a decode of its own).
    func drop(_ job: LoadJob, _ state: inout LoaderState, _ effects: inout Effects) {
        switch job.phase {
        case .queued:
            finish(job, &state, &effects)
        case .loading(let task):
            let (logger, url) = (state.logger, job.url.absoluteString)
            effects.append { logger.debug("cancelling the transfer of \(url): no request needs it any more") }
            if task.cancel() {
                finish(job, &state, &effects)
            } else {
                // Its completion is still to come (or the transfer is starting
                // and is cancelled when its task arrives): it keeps its slot
                // until then, and transferFinished frees it. No new request
                // joins it: a later one starts a transfer of its own.
                state.jobs.forget(job)
            }
        case .awaitingDecoder:
            state.decodes.remove(job)
            finish(job, &state, &effects)
        case .decoding:
            state.decodes.stop(job)  // the job stays in the table until the decode returns
        case .finished:
            break
        }
    }

    /// Reports `kind` for `records` to the event monitor, after the lock is released.
    func report(
        _ kind: LoaderEvent.Kind, _ records: [LoadRequest], _ state: inout LoaderState, _ effects: inout Effects,
        source: ImageResponse.Source? = nil, error: AsyncImageError? = nil
    ) {
        guard let monitor = state.eventMonitor, !records.isEmpty else { return }
        let time = ProcessInfo.processInfo.systemUptime
        let events = records.map {
            state.eventSequence += 1
            return LoaderEvent(
                requestID: $0.id, url: $0.request.url, target: $0.target?.id, kind: kind, time: time,
                sequence: state.eventSequence, source: source, error: error)
        }
        effects.append { events.forEach(monitor) }
    }

    /// `image` for `record`, or a limits failure when the image is over the
    /// record's own pixel limit (it was decoded for another request of its
    /// job; a memory hit is checked by ``lookUp(_:in:)``, by the same rule).
    static func checked(_ image: Image, for record: LoadRequest) -> Result<Image, AsyncImageError> {
        guard let failure = record.request.options.limitFailure(for: image) else { return .success(image) }
        return .failure(.decoding(failure, url: record.request.url))
    }
}

/// What the memory cache gives one request: ``AsyncImageLoader/lookUp(_:in:)``.
enum MemoryLookup {
    /// The URL policy refuses the request (it is not served from the cache either).
    case refused(AsyncImageError)
    /// Nothing there, or the request skips memory reads.
    case miss
    /// The image, within the request's pixel limit.
    case hit(Image)
    /// An image is there, but over the request's pixel limit (it was kept
    /// for another request): a load fails with this limits error without
    /// the network; a reader that wants an image sees none.
    case overLimit(AsyncImageError)

    /// The image a reader may show.
    var image: Image? {
        if case .hit(let image) = self { image } else { nil }
    }

    /// Why the URL policy refuses the request.
    var refusal: AsyncImageError? {
        if case .refused(let error) = self { error } else { nil }
    }

    /// A load's outcome from memory: the image, or its limits failure.
    var found: Result<Image, AsyncImageError>? {
        switch self {
        case .hit(let image): .success(image)
        case .overLimit(let error): .failure(error)
        case .refused, .miss: nil
        }
    }

    /// Whether the cache held an image for the key (within the limit or not).
    var isFound: Bool { found != nil }
}
