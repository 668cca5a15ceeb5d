import CCurl
import Foundation
import Synchronization

/// The one thread that drives libcurl's multi interface for the process.
///
/// Other threads never touch a libcurl handle: they post transfers to start
/// or cancel into an inbox under a lock and wake the loop with
/// `curl_multi_wakeup`. The loop adds and removes easy handles, runs
/// `curl_multi_perform`, collects finished transfers with
/// `curl_multi_info_read`, and sleeps in `curl_multi_poll` (for how long, and
/// what else it does for libcurl's sake: ``HTTP2WakeUps``). Finished transfers
/// hand their result to a completion queue: nothing is decoded here.
final class CurlEventLoop: Sendable {
    /// The process-wide loop, started on first use.
    static let shared = CurlEventLoop()

    private struct Inbox {
        var started: [CurlTransfer] = []
        var cancelled: [CurlTransfer] = []
    }

    private let inbox = Locked(Inbox())
    /// `CURLM *`. Only the loop thread uses it, but for `curl_multi_wakeup`,
    /// which libcurl documents as safe from any thread.
    private nonisolated(unsafe) let multi: UnsafeMutableRawPointer

    private init() {
        CurlGlobal.initializeOnce()
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed: out of memory") }
        self.multi = multi
        let thread = Thread { [self] in self.run() }
        thread.name = "AsyncImageKit.curl"
        thread.start()
    }

    /// Starts `transfer` on the loop thread.
    func start(_ transfer: CurlTransfer) {
        inbox.withLock { $0.started.append(transfer) }
        curl_multi_wakeup(multi)
    }

    /// Stops `transfer` and frees its handle on the loop thread.
    func cancel(_ transfer: CurlTransfer) {
        inbox.withLock { $0.cancelled.append(transfer) }
        curl_multi_wakeup(multi)
    }

    private func run() {
        // Transfers in flight, by easy handle. Only this thread sees it.
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        var wakeUps = HTTP2WakeUps()
        while true {
            let work = inbox.withLock { inbox -> Inbox in
                defer { inbox = Inbox() }
                return inbox
            }
            for transfer in work.started where !transfer.isCancelled {
                guard let easy = transfer.makeHandle() else { continue }
                if curl_multi_add_handle(multi, easy) == CURLM_OK {
                    active[easy] = transfer
                } else {
                    transfer.finish(multi: nil, code: CURLE_FAILED_INIT)
                }
            }
            for transfer in work.cancelled {
                guard let easy = transfer.easy, active.removeValue(forKey: easy) != nil else { continue }
                curl_multi_remove_handle(multi, easy)
                transfer.finishCancelled()
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
                transfer.finish(multi: multi, code: code)
            }
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
