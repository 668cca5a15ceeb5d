import Foundation

/// Whether the loader uses the network: the one home of the offline rules
/// (see ``AsyncImageLoader/networkStatus``). What the reachability said,
/// what transfers found, and when one request may try the network again.
/// Guarded by the loader's lock; time is `ProcessInfo.systemUptime`
/// (passed in, so tests give their own).
struct NetworkState {
    /// What a transfer that is about to go to the network may do.
    enum Admission: Equatable {
        /// Go: online, or a local URL.
        case network
        /// Go, as the probe of a network the loader thinks is down: its
        /// answer decides (`probe` names it, see ``answered(_:_:probe:admittedIn:now:)``).
        case probe(UInt64)
        /// Stay off the network: answered from the disk, or ``AsyncImageError/offline(_:)``.
        case offline
    }

    /// What a transfer's answer says about the network.
    enum Verdict: Equatable {
        /// A server answered (a response of any status, or a TLS handshake
        /// that failed): the network works.
        case reached
        /// No route: the network is down.
        case unreachable
        /// Neither (a refused or reset connection, a timeout, a DNS failure
        /// while the system has routes): says nothing of the network, but
        /// for a probe, which counts it as a way out (see ``answered(_:_:probe:admittedIn:now:)``).
        case inconclusive
    }

    /// Whether the loader follows a reachability at all (without one it is
    /// never offline).
    let watches: Bool
    /// The reachability's last word.
    private(set) var systemReachable = true
    /// A transfer found no route while the reachability said there was one.
    private(set) var transferFoundNoRoute = false
    /// A server answered the probe while the reachability said there was
    /// no route: its word is wrong (routes held only in policy routing
    /// tables, a sandbox that hides them), and the loader is online until
    /// it says something else or a transfer finds no route.
    private(set) var serverContradictedSystem = false
    /// Advances at each word of the reachability: a transfer admitted
    /// under an older one ran on routes that may be gone since, and its
    /// "no route" says nothing of the network now (see ``answered(_:_:probe:admittedIn:now:)``).
    private(set) var epoch: UInt64 = 0
    /// The probe on the network now, if any.
    private(set) var probe: UInt64?
    private var probes: UInt64 = 0
    /// When the next probe may start, while the loader is offline.
    private(set) var nextProbe = 0.0
    /// The wait before the next probe (doubles after each failed one).
    private(set) var probeDelay: Double
    /// The first wait and the longest (tests shorten them).
    var firstProbeDelay = 1.0
    var maxProbeDelay = 30.0
    /// The loader's ``AsyncImageLoader/networkStatusUpdates()`` streams.
    var watchers: [UInt64: AsyncStream<NetworkStatus>.Continuation] = [:]
    var nextWatcher: UInt64 = 0

    init(watches: Bool) {
        self.watches = watches
        probeDelay = firstProbeDelay
    }

    var status: NetworkStatus {
        if !systemReachable { return serverContradictedSystem ? .online : .offline(.reachability) }
        return transferFoundNoRoute ? .offline(.transfer) : .online
    }

    /// Whether `url` never counts as offline: a `file` URL, or a host on
    /// this machine (a loopback address, `localhost`).
    static func isLocal(_ url: URL) -> Bool {
        if url.isFileURL { return true }
        guard var host = url.host?.lowercased() else { return false }
        if host.hasSuffix(".") { host.removeLast() }
        if host == "localhost" || host.hasSuffix(".localhost") { return true }
        return IPAddress(host)?.scope == .loopback
    }

    /// Whether a transfer of `url` would be the probe (the loader is
    /// offline, and `url` is beyond this machine).
    func needsProbe(_ url: URL) -> Bool {
        watches && !status.isOnline && !Self.isLocal(url)
    }

    /// Whether a job for `url` starting now should not plan on the network:
    /// offline, and no probe may go now.
    func isOffline(for url: URL, now: Double) -> Bool {
        needsProbe(url) && !mayProbe(now: now)
    }

    private func mayProbe(now: Double) -> Bool {
        probe == nil && now >= nextProbe
    }

    /// A transfer of `url` is about to use the network.
    mutating func admit(_ url: URL, now: Double) -> Admission {
        guard needsProbe(url) else { return .network }
        guard mayProbe(now: now) else { return .offline }
        probes += 1
        probe = probes
        return .probe(probes)
    }

    /// The reachability's word (`now`: when it came). A change of it
    /// (either way) ends what the transfers and the probes found, and the
    /// backoff: unreachable, the first probe may go 1 s later.
    mutating func reachabilityChanged(_ reachable: Bool, now: Double) {
        guard watches else { return }
        // Each word is news of the routes (another network while reachable):
        // what transfers admitted before it find is not.
        epoch &+= 1
        guard reachable != systemReachable || transferFoundNoRoute else { return }
        systemReachable = reachable
        transferFoundNoRoute = false
        serverContradictedSystem = false
        probe = nil  // its answer no longer decides anything
        probeDelay = firstProbeDelay
        nextProbe = now + probeDelay
    }

    /// The network's answer to a transfer of `url` (`probe`: the one
    /// ``admit(_:now:)`` made it, if any; `admitted`: the ``epoch`` it was
    /// admitted in).
    mutating func answered(_ url: URL, _ verdict: Verdict, probe answering: UInt64?, admittedIn admitted: UInt64, now: Double) {
        guard watches, !Self.isLocal(url) else { return }
        let isProbe = answering != nil && answering == probe
        if isProbe { probe = nil }
        switch verdict {
        case .unreachable:
            // Found on routes the reachability has spoken of since (the
            // network came back, or changed): nothing to do with it now.
            guard admitted == epoch else { return }
            if !systemReachable {
                if serverContradictedSystem {
                    // The server's word no longer holds: the system's again.
                    serverContradictedSystem = false
                    probeDelay = firstProbeDelay
                    nextProbe = now + probeDelay
                } else if isProbe {
                    backOff(now: now)
                }
            } else if !transferFoundNoRoute {
                transferFoundNoRoute = true
                probeDelay = firstProbeDelay
                nextProbe = now + probeDelay
            } else if isProbe {
                backOff(now: now)
            }
        case .reached:
            transferFoundNoRoute = false
            probeDelay = firstProbeDelay
            // A server answered a transfer admitted since the reachability
            // said "unreachable" (the probe: no other goes): it was wrong.
            if !systemReachable, admitted == epoch { serverContradictedSystem = true }
        case .inconclusive:
            guard isProbe else { return }
            if systemReachable {
                // A probe that found a route (the server refused, or was slow)
                // ends the guess: a wrong "online" costs one more transfer that
                // fails at once, a wrong "offline" every request until the next probe.
                transferFoundNoRoute = false
                probeDelay = firstProbeDelay
            } else {
                // Against the system's word, only a server's answer counts.
                backOff(now: now)
            }
        }
    }

    /// A probe failed: the wait before the next one doubles (at most ``maxProbeDelay``).
    private mutating func backOff(now: Double) {
        probeDelay = min(maxProbeDelay, probeDelay * 2)
        nextProbe = now + probeDelay
    }

    /// The probe `id` ended without an answer (cancelled): the next
    /// request may probe at once.
    mutating func probeAbandoned(_ id: UInt64) {
        if probe == id { probe = nil }
    }

    /// What `result`, the answer to a transfer, says of the network.
    /// `systemReachable`: the reachability's word now, for a host name
    /// that could not be resolved (a DNS failure on a machine without
    /// routes is the network's, else the resolver's).
    static func verdict(_ result: Result<DataResponse, AsyncImageError>, systemReachable: () -> Bool) -> Verdict {
        switch result {
        case .success:
            return .reached
        case .failure(.offline):
            return .unreachable
        case .failure(.httpStatus), .failure(.tls):
            return .reached
        case .failure(.transport(_, let code, _)) where code == 6:  // CURLE_COULDNT_RESOLVE_HOST
            return systemReachable() ? .inconclusive : .unreachable
        default:
            return .inconclusive
        }
    }
}
