import Foundation

/// The transfer stage (its state: ``TransferSlots``): going down, the best
/// waiting lanes' jobs take the free slots (`pump`, `start`); coming up, a
/// transfer's outcome arrives (`transferFinished`): a failure is delivered,
/// a body waits for a decoder. And the sweep that stops the transfers of
/// deallocated targets.
extension AsyncImageLoader {
    /// Starts the best waiting lanes' next jobs while slots are free.
    func pump(_ state: inout LoaderState, _ effects: inout Effects) {
        // First the jobs that started and wait for a slot of the network.
        while let resume = state.slots.nextReadyForNetwork() { effects.append(resume) }
        while let lane = state.slots.nextLane() {
            // Its urgency, for the transport's order among transfers that
            // wait for a connection of their host (`TransferUrgency`): the
            // lane's rank now, and among equal priorities a lane's first
            // request in flight (what its target shows first: a cell's
            // thumbnail) before any lane's later ones (full images).
            let urgency = QueueRank.of(lane, state.slots.queue.order).map { rank in
                TransferUrgency(priority: rank.level, isFirstForTarget: lane.queuedCount == lane.live, stamp: rank.stamp)
            }
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
                state.slots.refile(lane)
                continue
            }
            // Its origin holds its share of the slots: the lane waits out of
            // the queue, and is filed again when that origin gives one back
            // (see `TransferSlots`); the lanes behind it go ahead.
            if let origin = state.slots.fullOrigin(for: job) {
                state.slots.park(lane, for: origin)
                continue
            }
            requests.removeAll { $0.state != .pending }
            // Reported before the transfer's first step is handed on (the
            // disk lookup, after the lock), so `.loading` reaches the event
            // monitor before anything that step reports.
            report(.loading, requests, &state, &effects)
            start(job, urgency: urgency ?? TransferUrgency(), &state, &effects)
            for waiting in requests {
                guard let other = waiting.lane else { continue }
                other.leaveQueue(waiting.priority)
                state.slots.refile(other)
            }
            state.slots.refile(lane)
        }
        updateSweepTimer(&state)
    }

    /// Takes a slot for `job`; then, after the lock, the HTTP cache stage
    /// looks up its stored response (on the disk queue) before the network.
    private func start(_ job: LoadJob, urgency: TransferUrgency, _ state: inout LoaderState, _ effects: inout Effects) {
        state.slots.take(for: job)
        StageWalk.note(.transfers, .down, job.url)
        let handle = TransferHandle()
        job.phase = .loading(handle)
        var request = DataRequest(
            url: job.url, headers: job.headers, timeout: state.loadingTimeout, policy: state.urlPolicy)
        request.urgency = urgency
        let modifier = state.requestModifier
        // `file` URLs are already on disk.
        let disk = job.url.isFileURL ? nil : state.diskCache.map { HTTPCache(policy: state.httpCache, store: ImageDiskStore(cache: $0)) }
        job.disk.cache = job.policy.contains(.skipDiskWrites) ? nil : disk
        let readDisk = job.policy.contains(.skipDiskReads) ? nil : disk
        job.readsDisk = readDisk != nil
        let writeDisk = job.disk.cache
        // Offline (and no probe due): the disk, or `.offline`, never the network.
        let offline = state.network.isOffline(for: job.url, now: state.networkClock())
        let rules = StaleRules(job.policy, isFileURL: job.url.isFileURL, networkDown: offline)
        let transfer = TransferContext(
            job: job, handle: handle, request: request, modifier: modifier, writeDisk: writeDisk, readDisk: readDisk,
            policy: state.httpCache, rules: rules, previews: previewPlan(job),
            watchesDC: DCEarlyEnd.watches(job, enabled: state.endsTransfersAtDCScans))
        // What the disk is asked for: the processed images of the sizes
        // wanted now (a size that joins later is served from the body, or
        // by another job), and the body unless they cover every request.
        let processings = job.disk.usesStoredImages ? job.processings : []
        let needsFullSize = job.needsFullSize || !job.disk.usesStoredImages
        effects.append { self.lookUpStored(transfer, processings: processings, needsFullSize: needsFullSize) }
    }

    /// From the transport: a failure is delivered at once; a body waits for
    /// a decoder, keeping its transfer slot until one is free.
    func transferFinished(
        _ job: LoadJob, _ handle: TransferHandle, _ result: Result<DataResponse, AsyncImageError>,
        stored: StoredResponse? = nil, stale: Staleness = .fresh, endedEarly: Bool = false
    ) {
        // A body from disk, a file, or a transport without a probe: its
        // header read here, outside the lock (once per job).
        if case .success(let response) = result, !response.data.isEmpty,
            state.withLock({ _ in job.fileProperties == nil }),
            let properties = ImageFileProperties(data: response.data)
        {
            propertiesKnown(job, properties)
        }
        mutate { state, effects in
            // Not this transfer's job any more: cancelled (before its task
            // existed) or the loader was let go.
            guard case .loading(let current) = job.phase, current === handle else { return }
            StageWalk.note(.transfers, .up, job.url)
            DCEarlyEnd.transferCompleted(job, endedEarly: endedEarly)
            guard !job.requests.isEmpty else {
                self.finish(job, &state, &effects)
                self.pump(&state, &effects)
                return
            }
            switch result {
            case .success(let response):
                if let stored {
                    job.disk.served(stored, stale)
                    // Requests for a size with no stored image, when there is no body.
                    self.moveUnservable(of: job, &state, &effects)
                    guard !job.requests.isEmpty else {
                        self.finish(job, &state, &effects)
                        self.pump(&state, &effects)
                        return
                    }
                }
                job.response.received(response)
                self.report(.transferred(bytes: response.data.count), job.orderedRequests, &state, &effects)
                job.phase = .awaitingDecoder(response.data)
                state.decodes.wait(job)
                self.startDecodes(&state, &effects)
            case .failure(let error):
                self.report(.transferFailed, job.orderedRequests, &state, &effects)
                let (logger, metadata) = (state.logger, job.logMetadata)
                let after = job.retries == 0 ? "" : " after \(job.retries) \(job.retries == 1 ? "retry" : "retries")"
                effects.append { logger.info("transfer failed\(after): \(error)", metadata: metadata) }
                self.finish(job, &state, &effects)
                self.deliverAll(job, .failure(error), &state, &effects)
            }
            self.pump(&state, &effects)
        }
    }

    /// Releases a job's slot (if it held one) and forgets it. The job, and
    /// what its phase held (a transfer task, a body), are released after the lock.
    func finish(_ job: LoadJob, _ state: inout LoaderState, _ effects: inout Effects) {
        // Its slot, if it still holds one (loading, or waiting for a decoder).
        switch job.phase {
        case .loading, .awaitingDecoder: state.slots.release(of: job)
        case .queued, .decoding, .finished: break
        }
        let phase = job.phase
        effects.append { withExtendedLifetime(phase) {} }
        // A probe that ends without the network's answer (cancelled): the
        // next request may try the network at once.
        if let probe = job.probe {
            job.probe = nil
            state.network.probeAbandoned(probe)
        }
        // A wait for a retry nobody needs any more: its timer (whose handler
        // holds the transfer, and so the job) goes now, not when it would fire.
        if let timer = job.retryTimer {
            job.retryTimer = nil
            effects.append { timer.cancel() }
        }
        job.retryContext = nil
        effects.keep.park(job)
        job.phase = .finished
        state.jobs.forget(job)
    }

    /// Drops the requests of deallocated targets among those holding a slot
    /// (and so their transfers, unless another request needs them). Queued
    /// ones are dropped when they reach the front: no sweep walks the queue.
    func sweepDeadTargets() {
        mutate { state, effects in
            for job in state.slots.holders {
                for record in job.orderedRequests where record.targetIsDead(&effects.keep) {
                    self.cancelRecord(record, &state, &effects)
                }
            }
            self.pump(&state, &effects)
        }
    }

    /// Keeps a timer sweeping for dead targets while transfers run.
    private func updateSweepTimer(_ state: inout LoaderState) {
        let busy = state.slots.inFlight > 0
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
