import Foundation
import Logging

/// The offline rules' part in the engine (the rules themselves:
/// `NetworkState`; the guarantees: ``AsyncImageLoader/networkStatus``).
/// The HTTP cache stage asks before a transfer goes to the network
/// (`admitToNetwork`: go, go as the probe, or stay off it) and tells what
/// the network answered (`networkAnswered`); a transfer that may not go,
/// or that failed while the loader is offline, is answered from the disk
/// (`answerOffline`: the lookup again, with offline rules) or fails with
/// ``AsyncImageError/offline(_:)``. The reachability's word comes in
/// through `reachabilityChanged`.
extension AsyncImageLoader {
    /// From `init`: registers for the reachability's changes, then reads
    /// its word (in that order, so a change between the two is not missed).
    func watchReachability() {
        guard let reachability else { return }
        let observation = reachability.observe { [weak self] reachable in self?.reachabilityChanged(reachable) }
        let reachable = reachability.isReachable
        mutate { state, effects in
            state.reachabilityObservation = observation
            let before = state.network.status
            state.network.reachabilityChanged(reachable)
            self.networkStatusChanged(from: before, url: nil, &state, &effects)
        }
    }

    /// The reachability's handler (any thread).
    func reachabilityChanged(_ reachable: Bool) {
        mutate { state, effects in
            let before = state.network.status
            state.network.reachabilityChanged(reachable)
            self.networkStatusChanged(from: before, url: nil, &state, &effects)
        }
    }

    /// Under the lock, after anything that may change the status: the
    /// slots' set, the jobs on the network, the line, the streams. `url`:
    /// the transfer whose answer changed it, if one did.
    func networkStatusChanged(
        from before: NetworkStatus, url: URL?, _ state: inout LoaderState, _ effects: inout Effects
    ) {
        let now = state.network.status
        guard now != before else { return }
        state.slots.offline = !now.isOnline
        if !now.isOnline {
            // Transfers under way are left to end by themselves; a request
            // for their URL from now on gets a job of its own (answered
            // from the disk) rather than waiting for one that may hang.
            for job in state.slots.holders where !NetworkState.isLocal(job.url) && job.probe == nil {
                if case .loading = job.phase, !job.readsDisk { state.jobs.forget(job) }
            }
        }
        let logger = state.logger
        var metadata: Logger.Metadata = ["network": "\(now)"]
        if let url { metadata["url"] = "\(url.absoluteString)" }
        let line: String
        switch now {
        case .online:
            line =
                url == nil
                ? "online: the network is reachable" : "online: a transfer reached the network"
        case .offline(.reachability):
            line = "offline: the network is unreachable; requests are answered from the disk cache until it returns"
        case .offline(.transfer):
            let wait = Int((state.network.nextProbe - state.networkClock()).rounded(.up))
            line =
                "offline: a transfer found no route to the network; requests are answered from the disk cache, "
                + "and one tries the network again in \(max(0, wait)) s"
        }
        effects.append { logger.notice("\(line)", metadata: metadata) }
        for watcher in state.network.watchers.values { watcher.yield(now) }
        // Slots of the other set may be free.
        pump(&state, &effects)
    }

    /// Before `transfer` goes to the network (after the lock): go, go as
    /// the probe, or stay off it.
    func admitToNetwork(_ transfer: TransferContext) -> NetworkState.Admission {
        let job = transfer.job
        return mutate { state, effects in
            // Not this transfer's job any more: it goes no further anyway.
            guard case .loading(let current) = job.phase, current === transfer.handle else { return .network }
            let admission = state.network.admit(job.url, now: state.networkClock())
            if case .probe(let id) = admission {
                job.probe = id
                let (logger, metadata) = (state.logger, job.logMetadata)
                effects.append { logger.info("offline: trying the network again", metadata: metadata) }
            }
            return admission
        }
    }

    /// Before a transfer of the data-level API goes to the network.
    func admitToNetwork(_ url: URL) -> NetworkState.Admission {
        mutate { state, effects in
            let admission = state.network.admit(url, now: state.networkClock())
            if case .probe = admission {
                let logger = state.logger
                effects.append {
                    logger.info("offline: trying the network again", metadata: ["url": "\(url.absoluteString)"])
                }
            }
            return admission
        }
    }

    /// The data-level API's probe ended without an answer (cancelled).
    func probeAbandoned(_ probe: UInt64) {
        state.withLock { $0.network.probeAbandoned(probe) }
    }

    /// What the network answered `url`'s transfer (`probe`: if it was the
    /// probe) does to the status; true when the loader is offline for
    /// `url` now. The reachability is asked (outside the lock) only about
    /// a host name that could not be resolved.
    func networkAnswered(
        _ url: URL, _ result: Result<DataResponse, AsyncImageError>, probe: UInt64?,
        _ changed: (inout LoaderState) -> Void = { _ in }
    ) -> Bool {
        let reachability = self.reachability
        var verdict: NetworkState.Verdict?
        switch result {
        case .failure(.refused):
            verdict = nil  // refused before it was sent: says nothing
        default:
            verdict = NetworkState.verdict(result) { reachability?.isReachable ?? true }
        }
        return mutate { state, effects in
            changed(&state)
            let before = state.network.status
            let now = state.networkClock()
            if let verdict {
                let wasProbe = probe != nil && state.network.probe == probe
                state.network.answered(url, verdict, probe: probe, now: now)
                if wasProbe, state.network.status == .offline(.transfer) {
                    let (logger, wait) = (state.logger, Int((state.network.nextProbe - now).rounded(.up)))
                    effects.append {
                        logger.info(
                            "offline: the network is still unreachable; the next try in \(wait) s",
                            metadata: ["url": "\(url.absoluteString)"])
                    }
                }
            } else if let probe {
                state.network.probeAbandoned(probe)
            }
            self.networkStatusChanged(from: before, url: url, &state, &effects)
            return state.network.watches && !state.network.status.isOnline && !NetworkState.isLocal(url)
        }
    }

    /// The image path's answer to `job`'s transfer (which is no longer the probe).
    func networkAnswered(_ job: LoadJob, _ result: Result<DataResponse, AsyncImageError>) -> Bool {
        let probe = state.withLock { _ in job.probe }
        return networkAnswered(job.url, result, probe: probe) { _ in
            if job.probe == probe { job.probe = nil }
        }
    }

    /// `transfer` may not use the network, or failed on it, and the loader
    /// is offline: its stored response as offline rules allow it (stale,
    /// marked stale; never past `must-revalidate` or `no-cache`), read
    /// again, or ``AsyncImageError/offline(_:)``. `afterTransfer`: its
    /// transfer ran (the read gets a handle of its own, idle, so a cancel
    /// during it is final, as before any transfer).
    func answerOffline(_ transfer: TransferContext, afterTransfer: Bool) {
        let job = transfer.job
        guard transfer.readDisk != nil, !transfer.rules.offline else {
            return transferFinished(job, transfer.handle, .failure(.offline(job.url)))
        }
        let next = mutate { state, effects -> (TransferContext, Set<String>, Bool)? in
            guard case .loading(let current) = job.phase, current === transfer.handle, !job.requests.isEmpty else {
                return nil
            }
            var again = transfer
            again.rules = transfer.rules.networkIsDown
            if afterTransfer {
                again.handle = TransferHandle()
                job.phase = .loading(again.handle)
            }
            job.readsDisk = true
            let (logger, metadata) = (state.logger, job.logMetadata)
            effects.append { logger.debug("offline: answering from the disk cache", metadata: metadata) }
            // What start asks the disk for, for the requests it has now.
            let processings = job.disk.usesStoredImages ? job.processings : []
            return (again, processings, job.needsFullSize || !job.disk.usesStoredImages)
        }
        // Nobody needs it any more: the transfer stage drops it.
        guard let (again, processings, needsFullSize) = next else {
            return transferFinished(job, transfer.handle, .failure(.offline(job.url)))
        }
        lookUpStored(again, processings: processings, needsFullSize: needsFullSize)
    }
}

extension AsyncImageError {
    /// A failure of the network itself (no answer from a server): what,
    /// while the loader is offline, is answered as an offline request is.
    var isNetworkFailure: Bool {
        switch self {
        case .transport, .offline: return true
        case .timedOut(_, _, let stage): return stage == .transfer
        default: return false
        }
    }
}
