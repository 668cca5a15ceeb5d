import CCurl
import Foundation
import Synchronization

/// A thread that drives one libcurl multi handle: the transfers of every
/// loader whose transport allows the same number of connections per host.
///
/// One loop per cap (``TransportConfiguration/maxConnectionsPerHost``,
/// libcurl's `CURLMOPT_MAX_HOST_CONNECTIONS`, a setting of the multi
/// handle): a process usually has one. Within a loop, transfers share
/// connections (kept alive, HTTP/2 multiplexed), the DNS cache and TLS
/// sessions (a `CURLSH` share: a new connection to a server resumes the
/// session of an earlier one rather than doing a full handshake).
///
/// Other threads never touch a libcurl handle: they post transfers to start
/// or cancel into an inbox under a lock and wake the loop with
/// `curl_multi_wakeup`. The loop adds and removes easy handles, runs
/// `curl_multi_perform`, collects finished transfers with
/// `curl_multi_info_read`, and sleeps in `curl_multi_poll` (for how long, and
/// what else it does for libcurl's sake: ``HTTP2WakeUps``). Finished transfers
/// hand their result to a completion queue: nothing is decoded here.
final class CurlEventLoop: Sendable {
    /// The loops by their cap on connections per host, each started on first use.
    private static let loops = Locked([Int: CurlEventLoop]())

    /// The loop for transfers with at most `maxConnectionsPerHost` connections per host (0: no cap).
    static func shared(maxConnectionsPerHost: Int) -> CurlEventLoop {
        let cap = max(0, maxConnectionsPerHost)
        return loops.withLock { loops in
            if let loop = loops[cap] { return loop }
            let loop = CurlEventLoop(maxConnectionsPerHost: cap)
            loops[cap] = loop
            return loop
        }
    }

    private struct Inbox {
        var started: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
    }

    private let inbox = Locked(Inbox())
    /// Whether each origin's last new connection negotiated HTTP/2, by
    /// `scheme://host:port` (see ``CurlTransfer/keepsConnectionOnCancel``);
    /// forgotten all at once past 1,000 origins.
    private let multiplexing = Locked([String: Bool]())
    /// Origins just found to multiplex, for the loop to start what waits for them.
    private let newlyMultiplexing = Locked([String]())
    /// The cap on connections per origin (0: none).
    private let maxConnectionsPerHost: Int
    private let waiting = Locked(0)

    /// Transfers waiting for a place among their origin's connections (as
    /// of the loop's last turn; cancelled ones not yet swept included).
    var waitingTransfers: Int { waiting.withLock { $0 } }
    /// `CURLM *`. Only the loop thread uses it, but for `curl_multi_wakeup`,
    /// which libcurl documents as safe from any thread.
    private nonisolated(unsafe) let multi: UnsafeMutableRawPointer
    /// `CURLSH *`: TLS sessions and DNS entries, for the easy handles of this
    /// loop only (all on its thread, so libcurl needs no lock callbacks).
    private nonisolated(unsafe) let share: UnsafeMutableRawPointer?

    private init(maxConnectionsPerHost: Int) {
        self.maxConnectionsPerHost = maxConnectionsPerHost
        CurlGlobal.initializeOnce()
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.multi = multi
        // Transfers past the cap wait in `OriginAdmission`, not in libcurl;
        // libcurl's own cap stays as a backstop.
        _ = aiv_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnectionsPerHost)
        share = curl_share_init()
        if let share {
            _ = aiv_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue))
            _ = aiv_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue))
        }
        let thread = Thread { [self] in self.run() }
        thread.name = maxConnectionsPerHost == TransportConfiguration.defaultMaxConnectionsPerHost
            ? "AsyncImageKit.curl" : "AsyncImageKit.curl.\(maxConnectionsPerHost)"
        thread.start()
    }

    /// Starts `transfer` on the loop thread.
    func start(_ transfer: CurlTransfer) {
        transfer.loop = self
        inbox.withLock { $0.started.append(transfer) }
        curl_multi_wakeup(multi)
    }

    /// Notes what an origin's connection negotiated (loop thread, at a request's start).
    func noteMultiplexing(_ origin: String, _ multiplexes: Bool) {
        multiplexing.withLock { table in
            if table.count >= 1000, table[origin] == nil { table.removeAll() }
            table[origin] = multiplexes
        }
        if multiplexes { newlyMultiplexing.withLock { $0.append(origin) } }
    }

    /// The origins noted to multiplex since the last call (loop thread).
    private func takeNewlyMultiplexing() -> [String] {
        newlyMultiplexing.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }

    /// Whether the origin's connections may multiplex: nil when not known yet.
    func mayMultiplex(_ origin: String) -> Bool? { multiplexing.withLock { $0[origin] } }

    /// Stops `transfer` and frees its handle on the loop thread.
    func cancel(_ transfer: CurlTransfer) {
        inbox.withLock { $0.cancelled.append(transfer) }
        curl_multi_wakeup(multi)
    }

    private func run() {
        // Transfers in flight, by easy handle, and the places per origin.
        // Only this thread sees them.
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var admission = OriginAdmission(limit: maxConnectionsPerHost)
        var wakeUps = HTTP2WakeUps()
        // Starts `transfer` (it has its origin's place, or needs none); one
        // that cannot start passes its place on, and so on.
        func begin(_ transfer: CurlTransfer) {
            var next: CurlTransfer? = transfer
            while let transfer = next {
                next = nil
                guard let easy = transfer.makeHandle(share: share) else {
                    next = admission.ended(transfer)
                    continue
                }
                if curl_multi_add_handle(multi, easy) == CURLM_OK {
                    active[easy] = transfer
                } else {
                    transfer.finish(multi: nil, code: CURLE_FAILED_INIT)
                    next = admission.ended(transfer)
                }
            }
        }
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                defer { inbox = Inbox() }
                return inbox
            }
            for transfer in work.started where !transfer.isCancelled {
                if admission.admit(transfer, multiplexes: mayMultiplex(transfer.origin)) { begin(transfer) }
            }
            for transfer in work.cancelled {
                guard let easy = transfer.easy, active[easy] != nil else {
                    // Still waiting for its origin's place (or never started): nothing to undo.
                    if !transfer.holdsOriginPlace, transfer.arrival != 0 { admission.cancelledWhileWaiting(transfer) }
                    continue
                }
                // A connection being set up for it may serve others: it is
                // left to finish that, and stopped before its request.
                if transfer.keepsConnectionOnCancel {
                    transfer.abandon()
                    continue
                }
                active.removeValue(forKey: easy)
                curl_multi_remove_handle(multi, easy)
                transfer.finishCancelled()
                if let next = admission.ended(transfer) { begin(next) }
            }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                    let transfer = active.removeValue(forKey: easy)
                else { continue }
                let code = aiv_curl_msg_result(message)
                curl_multi_remove_handle(multi, easy)
                if transfer.isAbandoned {
                    transfer.finishCancelled()
                } else {
                    transfer.finish(multi: multi, code: code)
                }
                if let next = admission.ended(transfer) { begin(next) }
            }
            // Origins found to multiplex during `perform` (a handle cannot
            // be added from inside libcurl's callbacks): all that wait start.
            for origin in takeNewlyMultiplexing() {
                for transfer in admission.multiplexes(origin) { begin(transfer) }
            }
            let waitingNow = admission.waitingCount
            waiting.withLock { $0 = waitingNow }
            wakeUps.check(active, now: Double(DispatchTime.now().uptimeNanoseconds) / 1e9)
            var ready: Int32 = 0
            curl_multi_poll(multi, nil, 0, wakeUps.pollMilliseconds(activeTransfers: active.count), &ready)
        }
    }
}

/// `curl_global_init`, exactly once, before any other libcurl call.
enum CurlGlobal {
    private static let initialized: Bool = {
        curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
    }()

    static func initializeOnce() {
        precondition(initialized, "curl_global_init failed")
    }

    /// The running libcurl's version as 0xXXYYZZ (8.1.0 is 0x080100).
    static let versionNumber: Int = {
        guard let info = aiv_curl_version_info_now() else { return 0 }
        return Int(info.pointee.version_num)
    }()
}
