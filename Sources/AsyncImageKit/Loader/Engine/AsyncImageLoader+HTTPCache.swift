import Foundation
import Logging

/// The HTTP cache stage, between the transfer slots and the network. Going
/// down, a job's stored response is looked up (on the disk queue) and
/// either answers at once (fresh, or stale where ``StaleRules`` allow), or
/// goes to the network with validators (stale) or a `Range` (the part a
/// cut-off transfer kept). Coming up, the network's answer is read against
/// it: a `304` serves what is stored, its headers refreshed; a `206` is
/// appended to the kept part; a `200` replaces both; an unreachable server
/// serves the stale response where the rules allow. A transfer cut off
/// mid-body keeps what it received for the next one. What may be stored
/// and reused is ``HTTPCache``'s to say (RFC 9111); the layout is
/// ``ImageDiskStore``'s.
extension AsyncImageLoader {
    /// Down, after the lock: what is stored for `transfer`'s job, then the
    /// network unless that answers it. `processings` and `needsFullSize`:
    /// what the disk is asked for (see ``HTTPCache/lookUp(_:requestHeaders:processings:needsFullSize:rules:now:)``).
    func lookUpStored(_ transfer: TransferContext, processings: Set<String>, needsFullSize: Bool) {
        let (job, handle, url) = (transfer.job, transfer.handle, transfer.request.url)
        StageWalk.note(.httpCache, .down, job.url)
        guard let readDisk = transfer.readDisk else {
            if transfer.rules.offline {
                transferFinished(job, handle, .failure(transfer.rules.missError(url)))
            } else {
                fetch(transfer, stale: nil, partial: nil)
            }
            return
        }
        diskQueue.async { [weak self] in
            guard let self, !handle.isCancelled else { return }
            let lookup = readDisk.lookUp(
                job.diskKey, requestHeaders: transfer.request.headers, processings: processings,
                needsFullSize: needsFullSize, rules: transfer.rules, now: Date().timeIntervalSince1970)
            // Going to the network: what an earlier transfer received before
            // it was cut off, to resume; then the disk is read, and a deadline
            // finds the job transferring (a stored answer goes to the decoders).
            var partial: StoredPartial?
            let toNetwork: Bool
            var hit = false
            switch lookup {
            case .usable: (toNetwork, hit) = (false, true)
            case .stale: toNetwork = true
            case .miss: toNetwork = !transfer.rules.offline
            }
            if toNetwork, case .miss = lookup { partial = readDisk.store.partial(for: job.diskKey) }
            self.mutate { state, effects in
                guard case .loading(let current) = job.phase, current === handle else { return }
                if toNetwork { job.readsDisk = false }
                self.report(.diskRead(hit: hit), job.orderedRequests, &state, &effects)
            }
            switch lookup {
            case .usable(let stored, let staleness):
                self.transferFinished(
                    job, handle, .success(stored.response(for: url, policy: readDisk.policy)), stored: stored,
                    stale: staleness)
            case .stale(let stored):
                self.fetch(transfer, stale: stored, partial: nil)
            case .miss where transfer.rules.offline:
                self.transferFinished(job, handle, .failure(transfer.rules.missError(url)))
            case .miss:
                self.fetch(transfer, stale: nil, partial: partial)
            }
        }
    }

    /// Down to the network: the request with `stale`'s validators, or a
    /// `Range` after `partial`'s bytes; unless the loader is offline (it
    /// went offline since the lookup, or a retry's wait): then what the
    /// disk holds, or ``AsyncImageError/offline(_:)``.
    private func fetch(_ transfer: TransferContext, stale: StoredResponse?, partial: StoredPartial?) {
        let admission = admitToNetwork(transfer) { [weak self] in self?.fetch(transfer, stale: stale, partial: partial) }
        // Waiting for a slot of the network: started again then.
        guard let admission else { return }
        if admission == .offline { return answerOffline(transfer, afterTransfer: false) }
        var request = transfer.request
        if let stale { request.headers.merge(transfer.policy.conditionalHeaders(stale.entry.head)) { $1 } }
        if let partial {
            request.headers["Range"] = "bytes=\(partial.data.count)-"
            request.headers["If-Range"] = partial.validator
        }
        var storePartial: (@Sendable (PartialBody) -> Void)?
        if let store = transfer.writeDisk?.store {
            storePartial = { [weak self] received in self?.storePartial(received, resuming: partial, in: store, transfer.job) }
        }
        startTransfer(transfer, request, resumes: partial != nil, storePartial: storePartial) {
            [weak self] result, requestTime, responseTime, attempt in
            self?.answered(
                transfer, stale: stale, partial: partial, result, attempt, requestTime: requestTime,
                responseTime: responseTime)
        }
    }

    /// Up from the network: its answer read against what is stored, then
    /// on to the transfer stage, unless a transient failure is tried again
    /// (the same request: validators and `Range` included).
    private func answered(
        _ transfer: TransferContext, stale: StoredResponse?, partial: StoredPartial?,
        _ result: Result<DataResponse, AsyncImageError>, _ attempt: TransferAttempt, requestTime: Double,
        responseTime: Double
    ) {
        let (job, handle) = (transfer.job, transfer.handle)
        StageWalk.note(.httpCache, .up, job.url)
        state.withLock { _ in (job.response.requestTime, job.response.responseTime) = (requestTime, responseTime) }
        // What the answer says of the network (it may go offline, or come back).
        let offline = networkAnswered(job, result)
        var result = result
        if let partial {
            switch result {
            case .success(let response) where response.statusCode == 206:
                guard let whole = Self.appending(response, to: partial) else {
                    return restart(transfer, stale: stale, dropping: "a 206 that does not continue the stored part")
                }
                result = .success(whole)
            case .failure(.httpStatus(_, code: 416, _)):
                return restart(transfer, stale: stale, dropping: "416: the stored part no longer fits")
            default:
                break
            }
            if case .success = result, let store = transfer.writeDisk?.store {
                diskWrites.async { store.removePartial(for: job.diskKey) }
            }
        }
        if let stale, case .success(let response) = result, response.statusCode == 304 {
            // Refreshed by the 304's headers (RFC 9111 §4.3.4): only the
            // small headers entry is rewritten (the body and processed
            // images keep their generation), on the disk write queue,
            // handed over before the deliveries. A 304 about another
            // response (its validator differs) confirms nothing: loaded again.
            guard let cache = transfer.readDisk ?? transfer.writeDisk,
                let refreshedEntry = cache.refresh(
                    stale.entry, by: response.headers, requestTime: requestTime, responseTime: responseTime,
                    for: job.diskKey)
            else {
                return restart(transfer, stale: nil, dropping: "a 304 for another validator")
            }
            var refreshed = stale
            refreshed.entry = refreshedEntry
            if let store = transfer.writeDisk {
                diskWrites.async { try? store.write(refreshedEntry, for: job.diskKey) }
            }
            state.withLock { _ in job.response.revalidated = true }
            return transferFinished(
                job, handle,
                .success(refreshed.response(for: response.url, policy: transfer.policy, confirmedBy: response)),
                stored: refreshed)
        }
        // The network failed and the loader is offline (this failure took
        // it there, or it went while the transfer ran): answered as an
        // offline request is, from the disk or `.offline`, not retried.
        if offline, case .failure(let error) = result, error.isNetworkFailure {
            return answerOffline(transfer, afterTransfer: true)
        }
        // The server could not be reached to revalidate: the stale
        // response, marked stale, where the rules allow it. Before any
        // retry: an image now rather than, perhaps, a fresher one later.
        if let stale, case .failure(let error) = result,
            transfer.rules.servesStale(
                stale, after: error, policy: transfer.policy, requestHeaders: transfer.request.headers, now: responseTime)
        {
            let (logger, metadata) = state.withLock { ($0.logger, job.logMetadata) }
            logger.info("serving a stale image: revalidation failed: \(error)", metadata: metadata)
            return transferFinished(
                job, handle, .success(stale.response(for: job.url, policy: transfer.policy)), stored: stale,
                stale: .servedOnError)
        }
        if case .failure(let error) = result,
            retry(transfer, after: error, attempt, responseTime: responseTime, again: { [weak self] next in
                self?.fetch(next, stale: stale, partial: partial)
            })
        {
            return
        }
        transferFinished(job, handle, result)
    }

    /// From the completion of a resumed transfer whose range did not fit (a
    /// `416`, or a `206` that does not continue the stored part): drops the
    /// stored part and starts the transfer again, whole, under a new handle
    /// in the same slot (the old task may not even be attached yet), unless
    /// nobody needs it any more.
    private func restart(_ transfer: TransferContext, stale: StoredResponse?, dropping reason: String) {
        let job = transfer.job
        if let store = transfer.writeDisk?.store { diskWrites.async { store.removePartial(for: job.diskKey) } }
        let (logger, next) = state.withLock { state -> (Logger, TransferHandle?) in
            guard case .loading(let current) = job.phase, current === transfer.handle, !job.requests.isEmpty else {
                return (state.logger, nil)
            }
            let handle = TransferHandle()
            job.phase = .loading(handle)
            return (state.logger, handle)
        }
        logger.debug("resuming \(job.url.absoluteString) failed (\(reason)): loading it whole")
        guard let next else {
            return transferFinished(job, transfer.handle, .failure(.transport(job.url, code: 0, message: "cancelled")))
        }
        var again = transfer
        again.handle = next
        fetch(again, stale: stale, partial: nil)
    }

    /// The whole body: `partial`'s bytes, then the `206`'s, or nil when the
    /// part does not start where the stored bytes end (or is encoded).
    static func appending(_ response: DataResponse, to partial: StoredPartial) -> DataResponse? {
        let encoding = response.headers["content-encoding"]?.lowercased() ?? "identity"
        guard encoding == "identity", let range = response.headers["content-range"].flatMap(ContentRange.init),
            range.first == partial.data.count, range.count == response.data.count,
            range.total.map({ $0 == range.last + 1 }) ?? true
        else { return nil }
        var headers = response.headers
        headers["content-range"] = nil
        headers["content-length"] = String(range.last + 1)
        return DataResponse(
            url: response.url, finalURL: response.finalURL, statusCode: 200, contentType: response.contentType,
            data: partial.data + response.data, headers: headers)
    }

    /// From the transport's thread: keeps what a cut-off or cancelled
    /// transfer received (after the stored part it resumed, for a `206`),
    /// when it can be resumed (a strong ETag or a Last-Modified) and is not
    /// in fact the whole body. Written on the disk write queue.
    private func storePartial(_ received: PartialBody, resuming previous: StoredPartial?, in store: ImageDiskStore, _ job: LoadJob) {
        guard let validator = received.ifRangeValidator else { return }
        let data: Data
        switch received.statusCode {
        case 200:
            data = received.data
        case 206:
            guard let previous, previous.validator == validator, received.firstByteOffset == previous.data.count else { return }
            data = previous.data + received.data
        default:
            return
        }
        let total = received.contentRange?.total ?? received.headers["content-length"].flatMap { Int($0) }
        guard total.map({ data.count < $0 }) ?? true else { return }  // all of it: nothing to resume
        let (logger, url) = (state.withLock { $0.logger }, job.url.absoluteString)
        let partial = StoredPartial(data: data, validator: validator, contentType: received.headers["content-type"])
        diskWrites.async {
            do {
                try store.storePartial(partial, for: job.diskKey)
                logger.debug("kept \(data.count) bytes of \(url) to resume")
            } catch {
                logger.warning("could not keep the partial body of \(url): \(error)")
            }
        }
    }
}
