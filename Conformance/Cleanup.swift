import Dispatch
import Foundation
import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// What must be undone however the command ends (the origin and the client
/// stopped, the relay stopped, the temporary folder removed): on a normal end
/// (``runAll()``), on `exit()` (an atexit handler) and on SIGINT, SIGTERM or
/// SIGHUP (dispatch signal sources, so the work runs on an ordinary thread,
/// not in a signal handler). A SIGKILL runs nothing here: the node processes
/// then end by themselves (Scripts/parent-watch.mjs).
enum Cleanup {
    private struct State {
        var installed = false
        var actions: [(id: Int, action: @Sendable () -> Void)] = []
        var nextID = 0
    }

    private static let state = Locked(State())
    /// The signal sources, kept alive for the life of the process.
    private static let sources = Locked<[any DispatchSourceSignal]>([])

    /// Registers `action`; returns a token for ``forget(_:)``. Actions run
    /// once, the latest first.
    @discardableResult
    static func add(_ action: @escaping @Sendable () -> Void) -> Int {
        installIfNeeded()
        return state.withLock { state in
            state.nextID += 1
            state.actions.append((state.nextID, action))
            return state.nextID
        }
    }

    /// Drops an action whose owner has already done it.
    static func forget(_ id: Int) {
        state.withLock { $0.actions.removeAll { $0.id == id } }
    }

    /// Held while actions run: a second caller (the main thread ending while
    /// a signal's cleanup runs) waits until they are done.
    private static let running = NSLock()
    /// Set once a signal arrived: its handler ends the process.
    private static let signalled = Locked(false)

    /// Whether a signal is stopping the command (its errors are not worth reporting).
    static var isInterrupted: Bool { signalled.withLock { $0 } }

    /// Runs every registered action (latest first) and forgets them.
    static func runAll() {
        running.lock()
        defer { running.unlock() }
        let actions = state.withLock { state -> [@Sendable () -> Void] in
            defer { state.actions = [] }
            return state.actions.reversed().map(\.action)
        }
        for action in actions { action() }
    }

    /// Runs every action, then exits with `status`; after a signal, leaves
    /// the exit (and its status, 128 + the signal) to the signal's handler.
    static func exit(_ status: Int32) -> Never {
        runAll()
        while isInterrupted { sleep(60) }
        Glibc.exit(status)
    }

    private static func installIfNeeded() {
        let first = state.withLock { state -> Bool in
            defer { state.installed = true }
            return !state.installed
        }
        guard first else { return }
        atexit { Cleanup.runAll() }
        let queue = DispatchQueue(label: "asyncimage-conformance.signals")
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                signalled.withLock { $0 = true }
                FileHandle.standardError.write(Data("\nasyncimage-conformance: stopped by signal \(number)\n".utf8))
                runAll()
                _exit(128 + number)
            }
            source.resume()
            sources.withLock { $0.append(source) }
        }
    }
}
