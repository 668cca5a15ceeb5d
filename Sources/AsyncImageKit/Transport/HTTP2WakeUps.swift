import CCurl
import Foundation

/// The event loop's guard against libcurl's missed HTTP/2 wake-ups.
///
/// libcurl before 8.1.0 (Debian 12 ships 7.88.1) reads a multiplexed
/// connection on behalf of whichever stream it is serving and files other
/// streams' data in their buffers, marking them to be run again. Both the
/// mark and the timer behind it can go missing (its `http2.c` was rewritten
/// for 8.1.0: "replace `state.drain` counter with `state.dselect_bits`"):
/// the stream's data is then already off the socket, so nothing wakes the
/// loop for it.
///
/// - A missing timer only: the stream runs at the next `curl_multi_perform`.
///   The loop caps its sleep while transfers are in flight
///   (``pollMilliseconds(activeTransfers:)``): measured with a C program
///   driving libcurl 7.88.1 alone against nghttpd, 8 concurrent transfers
///   over one connection, about 3 rounds in 100 waited for the loop's whole
///   idle interval (a second) without it.
/// - A missing mark: the stream never reads its data again and ends in its
///   timeout ("98304 out of 103000 bytes received", with nothing left
///   unread on the socket). The same C program saw it once in 2,558 rounds;
///   the transport's own test, once in about 360. Pausing and resuming a
///   transfer is libcurl's documented way to make it read again ("the data
///   might've been read off the socket already"), so the loop does that to
///   a stream that has had its response head and then made no progress for
///   ``kickInterval`` (``kick(_:)``).
///
/// With a libcurl that has the fix, neither is done.
struct HTTP2WakeUps {
    /// Whether the running libcurl misses wake-ups (before 8.1.0).
    let isNeeded: Bool
    /// How long a stream may make no progress before it is made to read.
    static let kickInterval: Double = 0.25

    /// Progress counts seen at the last check, by easy handle.
    private var seen: [UnsafeMutableRawPointer: Int] = [:]
    private var lastCheck: Double = 0

    init(libcurlVersion: Int = CurlGlobal.versionNumber) {
        isNeeded = libcurlVersion < 0x08_01_00
    }

    /// The longest the loop sleeps in `curl_multi_poll` before it runs
    /// `curl_multi_perform` again, whatever libcurl asked for: 20 ms while
    /// transfers are in flight on an affected libcurl, else a second (an
    /// idle loop wakes once a second and uses no CPU to speak of).
    func pollMilliseconds(activeTransfers: Int) -> Int32 {
        isNeeded && activeTransfers > 0 ? 20 : 1000
    }

    /// Every ``kickInterval``: makes each HTTP/2 transfer of `active` that
    /// has had response bytes and none since the last check read again.
    mutating func check(_ active: [UnsafeMutableRawPointer: CurlTransfer], now: Double) {
        guard isNeeded, now - lastCheck >= Self.kickInterval else { return }
        lastCheck = now
        var next: [UnsafeMutableRawPointer: Int] = [:]
        next.reserveCapacity(active.count)
        for (easy, transfer) in active {
            let progress = transfer.progressCount
            next[easy] = progress
            if progress > 0, seen[easy] == progress, Self.isHTTP2(easy) { Self.kick(easy) }
        }
        seen = next
    }

    private static func isHTTP2(_ easy: UnsafeMutableRawPointer) -> Bool {
        var version = 0
        return aiv_curl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version) == CURLE_OK
            && version == CURL_HTTP_VERSION_2_0
    }

    /// Pauses and resumes receiving: libcurl then runs the transfer soon and
    /// has it read from its connection (its buffered data first).
    static func kick(_ easy: UnsafeMutableRawPointer) {
        _ = curl_easy_pause(easy, CURLPAUSE_RECV)
        _ = curl_easy_pause(easy, CURLPAUSE_CONT)
    }
}
