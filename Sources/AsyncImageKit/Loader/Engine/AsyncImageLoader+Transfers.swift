import Foundation

/// The transfer stage: slots, the queue's order, the transport, and the
/// sweep that stops transfers of deallocated targets.
extension AsyncImageLoader {
    /// Starts the best waiting lanes' next jobs while slots are free.
    func pump(_ state: inout LoaderState, _ effects: inout Effects) {
        while state.inFlight < state.concurrentLoads {
            let allowPrefetch = state.prefetchInFlight < state.prefetchCap || !state.queue.hasVisible
            guard let lane = state.queue.pop(allowPrefetch: allowPrefetch) else { break }
            guard let record = lane.nextQueued(), let job = record.job else {
                // Not reachable: a filed lane has a queued request. Left unfiled
                // rather than filed again, which would spin here.
                assertionFailure("a lane was filed with no queued request")
                continue
            }
            var requests = job.orderedRequests
            for waiting in requests where waiting.targetIsDead(&effects.keep) {
                cancelRecord(waiting, &state, &effects)
            }
            // Still queued: it has requests (a job left empty has finished).
            guard job.isQueued else {
                state.queue.refile(lane)
                continue
            }
            requests.removeAll { $0.state != .pending }
            start(job, &state, &effects)
            for waiting in requests {
                guard let other = waiting.lane else { continue }
                other.leaveQueue(waiting.priority)
                state.queue.refile(other)
            }
            state.queue.refile(lane)
            report(.loading, requests, &state, &effects)
        }
        updateSweepTimer(&state)
    }

    /// Takes a slot for `job`; the request modifier and the transport are
    /// called after the lock (they may be anyone's code).
    private func start(_ job: LoadJob, _ state: inout LoaderState, _ effects: inout Effects) {
        state.inFlight += 1
        state.peakInFlight = max(state.peakInFlight, state.inFlight)
        state.holding[ObjectIdentifier(job)] = job
        let handle = TransferHandle()
        job.phase = .loading(handle)
        let request = DataRequest(url: job.url, headers: job.headers, timeout: state.loadingTimeout)
        let modifier = state.requestModifier
        // `file` URLs are already on disk.
        let disk = job.url.isFileURL ? nil : state.diskCache
        job.diskCache = job.policy.contains(.skipDiskWrites) ? nil : disk
        let readDisk = job.policy.contains(.skipDiskReads) ? nil : disk
        let writeDisk = job.diskCache
        // `file` URLs are local: never "not cached".
        let offline = job.policy.contains(.skipNetwork) && !job.url.isFileURL
        let key = job.diskKey
        // The network, with validators when a stale entry is revalidated:
        // a 304 serves the stored body (its metadata refreshed), a 200 replaces it.
        let network: @Sendable (_ stale: (data: Data, metadata: DataCacheMetadata)?) -> Void = { [weak self] stale in
            // From here until the task is attached, a cancel waits for it (see `TransferHandle`).
            guard let self, handle.beginStarting() else { return }
            var request = request
            if let stale { request.headers.merge(HTTPCaching.validators(stale.metadata)) { $1 } }
            modifier?(&request)
            let task = self.dataLoader.loadData(request) { [weak self] result in
                guard let self else { return }
                if let stale, case .success(let response) = result, response.statusCode == 304 {
                    // The refreshed entry is written on the disk queue, not on the
                    // transport's completion queue (handed over before the
                    // deliveries, so `flushDiskWrites()` covers it).
                    let refreshed = HTTPCaching.refreshed(stale.metadata, by: response.headers, now: Date().timeIntervalSince1970)
                    if let writeDisk {
                        self.diskQueue.async { try? writeDisk.store(stale.data, for: key, metadata: refreshed) }
                    }
                    let body = DataResponse(
                        url: response.url, finalURL: response.finalURL, statusCode: 304,
                        contentType: stale.metadata.contentType, data: stale.data, headers: response.headers,
                        httpVersion: response.httpVersion, connection: response.connection)
                    self.transferFinished(job, handle, .success(body), fromDisk: true)
                    return
                }
                self.transferFinished(job, handle, result)
            }
            // Cancelled while starting, and the task will never complete:
            // the slot is freed as for a transfer nobody needs any more.
            if handle.attach(task) { self.transferFinished(job, handle, .failure(.transport(request.url, code: 0, message: "cancelled"))) }
        }
        guard readDisk != nil || offline else {
            effects.append { network(nil) }
            return
        }
        // The disk cache first, on its own queue (never the caller's thread):
        // a fresh entry is used as it is; a stale one is revalidated; offline,
        // any entry is used.
        effects.append {
            self.diskQueue.async { [weak self] in
                guard let self, !handle.isCancelled else { return }
                let now = Date().timeIntervalSince1970
                let entry = readDisk?.entry(for: key).flatMap { entry in
                    HTTPCaching.matches(entry.metadata, requestHeaders: request.headers) ? entry : nil
                }
                if let entry, offline || HTTPCaching.isFresh(entry.metadata, now: now) {
                    let response = DataResponse(
                        url: request.url, statusCode: 200, contentType: entry.metadata.contentType, data: entry.data)
                    self.transferFinished(job, handle, .success(response), fromDisk: true)
                } else if offline {
                    self.transferFinished(job, handle, .failure(.notCached(request.url)))
                } else if let entry, HTTPCaching.canRevalidate(entry.metadata) {
                    network(entry)
                } else {
                    network(nil)
                }
            }
        }
    }

    /// From the transport: a failure is delivered at once; a body waits for
    /// a decoder, keeping its transfer slot until one is free.
    private func transferFinished(
        _ job: LoadJob, _ handle: TransferHandle, _ result: Result<DataResponse, AsyncImageError>, fromDisk: Bool = false
    ) {
        mutate { state, effects in
            // Not this transfer's job any more: cancelled (before its task
            // existed) or the loader was let go.
            guard case .loading(let current) = job.phase, current === handle else { return }
            guard !job.requests.isEmpty else {
                self.finish(job, &state, &effects)
                self.pump(&state, &effects)
                return
            }
            switch result {
            case .success(let response):
                job.bodyFromDisk = fromDisk
                job.contentType = response.contentType
                job.statusCode = response.statusCode
                job.responseHeaders = response.headers
                self.report(.transferred(bytes: response.data.count), job.orderedRequests, &state, &effects)
                job.phase = .awaitingDecoder(response.data)
                state.awaitingDecoder.append(job)
                self.startDecodes(&state, &effects)
            case .failure(let error):
                self.report(.transferFailed, job.orderedRequests, &state, &effects)
                let (logger, url, count) = (state.logger, job.url.absoluteString, job.requests.count)
                effects.append { logger.info("transfer failed: \(error)", metadata: ["url": "\(url)", "requests": "\(count)"]) }
                self.finish(job, &state, &effects)
                self.deliverAll(job, .failure(error), &state, &effects)
            }
            self.pump(&state, &effects)
        }
    }

    /// Releases a job's slot (if it held one) and forgets it. The job, and
    /// what its phase held (a transfer task, a body), are released after the lock.
    func finish(_ job: LoadJob, _ state: inout LoaderState, _ effects: inout Effects) {
        switch job.phase {
        case .loading, .awaitingDecoder:
            state.inFlight -= 1
            state.holding[ObjectIdentifier(job)] = nil
        case .queued, .decoding, .finished: break
        }
        let phase = job.phase
        effects.append { withExtendedLifetime(phase) {} }
        effects.keep.park(job)
        job.phase = .finished
        if state.jobs[job.key] === job { state.jobs[job.key] = nil }
    }

    /// Drops the requests of deallocated targets among those holding a slot
    /// (and so their transfers, unless another request needs them). Queued
    /// ones are dropped when they reach the front: no sweep walks the queue.
    func sweepDeadTargets() {
        mutate { state, effects in
            for job in state.holding.values {
                for record in job.orderedRequests where record.targetIsDead(&effects.keep) {
                    self.cancelRecord(record, &state, &effects)
                }
            }
            self.pump(&state, &effects)
        }
    }

    /// Keeps a timer sweeping for dead targets while transfers run.
    private func updateSweepTimer(_ state: inout LoaderState) {
        let busy = state.inFlight > 0
        if busy, state.sweepTimer == nil {
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
            timer.setEventHandler { [weak self] in self?.sweepDeadTargets() }
            timer.resume()
            state.sweepTimer = timer
        } else if !busy, let timer = state.sweepTimer {
            timer.cancel()
            state.sweepTimer = nil
        }
    }
}
