import Foundation
import LoopbackHTTP

// Servers the benchmark starts as its children (nginx) must not outlive it,
// however it ends: a normal return (their owner stops them), `exit()` (an
// atexit handler), Ctrl-C or a `kill` (signal handlers for SIGINT, SIGTERM,
// SIGHUP), or SIGKILL, which runs no code here (the child is started under
// `setpriv --pdeathsig`, so the kernel signals it when its parent dies).

/// The children to stop on exit, by pid: a fixed table that a signal handler
/// can read without taking a lock (it only reads pids and calls `kill`).
enum ChildProcessCleanup {
    private static let capacity = 64
    /// Slots hold a pid, or 0 when free. Written under `lock`.
    nonisolated(unsafe) private static let table: UnsafeMutablePointer<pid_t> = {
        let table = UnsafeMutablePointer<pid_t>.allocate(capacity: capacity)
        table.initialize(repeating: 0, count: capacity)
        return table
    }()
    /// The signal each child is stopped with (parallel to `table`).
    nonisolated(unsafe) private static let signals: UnsafeMutablePointer<Int32> = {
        let signals = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
        signals.initialize(repeating: SIGTERM, count: capacity)
        return signals
    }()
    private static let lock = Locked(false)  // true once the handlers are installed

    /// Stops `pid` (with `signal`) when this process exits or is stopped by
    /// SIGINT, SIGTERM or SIGHUP, unless `forget(_:)` is called first.
    static func register(_ pid: pid_t, signal: Int32 = SIGTERM) {
        lock.withLock { installed in
            if !installed {
                installed = true
                atexit { ChildProcessCleanup.stopAll(wait: true) }
                for sig in [SIGINT, SIGTERM, SIGHUP] {
                    Foundation.signal(sig) { received in
                        ChildProcessCleanup.stopAll(wait: false)
                        Foundation.signal(received, SIG_DFL)
                        raise(received)
                    }
                }
            }
            for slot in 0..<capacity where table[slot] == 0 {
                signals[slot] = signal
                table[slot] = pid
                return
            }
        }
    }

    /// The child has been stopped and reaped by its owner.
    static func forget(_ pid: pid_t) {
        lock.withLock { _ in
            for slot in 0..<capacity where table[slot] == pid { table[slot] = 0 }
        }
    }

    /// Signals every registered child; with `wait`, reaps each (at most 5 s each).
    private static func stopAll(wait: Bool) {
        for slot in 0..<capacity {
            let pid = table[slot]
            guard pid > 0 else { continue }
            kill(pid, signals[slot])
            if wait { reap(pid, within: 5) }
            table[slot] = 0
        }
    }

    /// Waits up to `seconds` for `pid` to exit, then kills it (SIGKILL) and
    /// reaps it. Returns whether it exited by itself.
    @discardableResult
    static func reap(_ pid: pid_t, within seconds: Double) -> Bool {
        var status: Int32 = 0
        let deadline = now() + seconds
        while now() < deadline {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result < 0 && errno == ECHILD) { return true }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return false
    }
}
