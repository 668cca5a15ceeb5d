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
    /// its word (in that order, so a change between the two is not missed;
    /// and a word the handler brought meanwhile is newer than this read,
    /// which then goes unused).
    func watchReachability() {
        guard let reachability else { return }
        let observation = reachability.observe { [weak self] reachable in self?.reachabilityChanged(reachable) }
        let reachable = reachability.isReachable
        mutate { state, effects in
            state.reachabilityObservation = observation
            guard !state.reachabilityHeard else { return }
            let before = state.network.status
            state.network.reachabilityChanged(reachable, now: state.networkClock())
            self.networkStatusChanged(from: before, url: nil, &state, &effects)
        }
    }

    /// The reachability's handler (any thread: `SystemNetworkReachability.shared`'s
    /// one thread, which every loader shares). The status changes here,
    /// under the lock; what follows from it (the log line, events, the
    /// next transfers: user code) runs on the loader's own
    /// `networkStatusQueue`, so a slow logger or event monitor of one
    /// loader never holds up the word to the others.
    func reachabilityChanged(_ reachable: Bool) {
        var effects = Effects()
        state.withLock { state in
            state.reachabilityHeard = true
            let before = state.network.status
            state.network.reachabilityChanged(reachable, now: state.networkClock())
            self.networkStatusChanged(from: before, url: nil, &state, &effects)
        }
        let handed = HandedEffects(effects)
        networkStatusQueue.async { handed.run() }
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
            // No wait for the network while it is down: jobs waiting for a
            // slot of it, or for a retry, are answered now (from the disk,
            // or `.offline`), as offline requests are.
            for resume in state.slots.stopWaitingForNetwork(where: { !NetworkState.isLocal($0.url) }) {
                effects.append(resume)
            }
            for job in state.slots.holders where !NetworkState.isLocal(job.url) {
                guard let timer = job.retryTimer, let waiting = job.retryContext else { continue }
                (job.retryTimer, job.retryContext) = (nil, nil)
                let (logger, metadata) = (state.logger, job.logMetadata)
                effects.append {
                    timer.cancel()
                    logger.info("offline: not waiting for the retry", metadata: metadata)
                    self.answerOffline(waiting, afterTransfer: true)
                }
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
            let wait = Int((state.network.nextProbe - state.networkClock()).rounded(.up))
            line =
                "offline: the network is unreachable; requests are answered from the disk cache until it returns, "
                + "and one tries the network in \(max(0, wait)) s"
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
    /// the probe, or stay off it; nil when it waits for a slot of the
    /// online set (its job holds one of the offline set, and every online
    /// one is taken: see ``TransferSlots``), which `resume` then starts
    /// (its admission asked again).
    func admitToNetwork(
        _ transfer: TransferContext, resume: @escaping @Sendable () -> Void
    ) -> NetworkState.Admission? {
        let job = transfer.job
        return mutate { state, effects -> NetworkState.Admission? in
            // Not this transfer's job any more: it goes no further anyway.
            guard case .loading(let current) = job.phase, current === transfer.handle else { return .network }
            let now = state.networkClock()
            // On the network, a job holds a slot of the online set:
            // `concurrentLoads` transfers at most, whichever set it started in.
            if !state.network.isOffline(for: job.url, now: now), !state.slots.chargeToNetwork(job) {
                // The probe does not wait behind transfers that may hang:
                // answered from the disk; a later request probes.
                if state.network.needsProbe(job.url) { return .offline }
                state.slots.waitForNetwork(job, resume: resume)
                let (logger, metadata) = (state.logger, job.logMetadata)
                effects.append { logger.debug("waiting for a transfer slot of the network", metadata: metadata) }
                return nil
            }
            let admission = state.network.admit(job.url, now: now)
            job.networkEpoch = state.network.epoch
            if case .probe(let id) = admission {
                job.probe = id
                let (logger, metadata) = (state.logger, job.logMetadata)
                effects.append { logger.info("offline: trying the network again", metadata: metadata) }
            }
            return admission
        }
    }

    /// Before a transfer of the data-level API goes to the network (it
    /// holds no slot); with the ``NetworkState/epoch`` it is admitted in,
    /// for ``networkAnswered(_:_:probe:epoch:_:)``.
    func admitToNetwork(_ url: URL) -> (admission: NetworkState.Admission, epoch: UInt64) {
        mutate { state, effects in
            let admission = state.network.admit(url, now: state.networkClock())
            if case .probe = admission {
                let logger = state.logger
                effects.append {
                    logger.info("offline: trying the network again", metadata: ["url": "\(url.absoluteString)"])
                }
            }
            return (admission, state.network.epoch)
        }
    }

    /// The data-level API's probe ended without an answer (cancelled).
    func probeAbandoned(_ probe: UInt64) {
        state.withLock { $0.network.probeAbandoned(probe) }
    }

    /// What the network answered `url`'s transfer (`probe`: if it was the
    /// probe; `epoch`: the one it was admitted in) does to the status; true
    /// when the loader is offline for `url` now. The reachability is asked
    /// (outside the lock) only about a host name that could not be resolved.
    func networkAnswered(
        _ url: URL, _ result: Result<DataResponse, AsyncImageError>, probe: UInt64?, epoch: UInt64,
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
                state.network.answered(url, verdict, probe: probe, admittedIn: epoch, now: now)
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
        let (probe, epoch) = state.withLock { _ in (job.probe, job.networkEpoch) }
        return networkAnswered(job.url, result, probe: probe, epoch: epoch) { _ in
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

/// A data-level transfer's admission to the network: the probe it is, if
/// any, and the ``NetworkState/epoch`` it was admitted in.
struct NetworkTicket: Sendable {
    let probe: UInt64?
    let epoch: UInt64

    init(probe: UInt64?, epoch: UInt64) { (self.probe, self.epoch) = (probe, epoch) }

    /// Nil when the transfer may not go (offline).
    init?(_ admitted: (admission: NetworkState.Admission, epoch: UInt64)) {
        switch admitted.admission {
        case .offline: return nil
        case .probe(let id): probe = id
        case .network: probe = nil
        }
        epoch = admitted.epoch
    }
}

/// Effects handed to another queue (they were made under the lock, and
/// are run once, there).
struct HandedEffects: @unchecked Sendable {
    let effects: Effects

    init(_ effects: Effects) { self.effects = effects }

    func run() { effects.run() }
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
