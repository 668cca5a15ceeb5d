import AsyncImageKit
import Foundation

/// A ``NetworkReachability`` a test flips: setting ``isReachable`` calls
/// every handler on the setting thread, before the setter returns, so
/// what the loader does about it is done when the next line runs.
public final class FakeReachability: NetworkReachability, @unchecked Sendable {
    private let lock = NSLock()
    private var reachable: Bool
    private var handlers: [UInt64: @Sendable (Bool) -> Void] = [:]
    private var nextID: UInt64 = 0
    private var reads = 0

    public init(reachable: Bool = true) {
        self.reachable = reachable
    }

    public var isReachable: Bool {
        get {
            lock.withLock {
                reads += 1
                return reachable
            }
        }
        set {
            let told = lock.withLock { () -> [@Sendable (Bool) -> Void] in
                reachable = newValue
                return Array(handlers.values)
            }
            told.forEach { $0(newValue) }
        }
    }

    /// Changes the answer without telling the handlers (a reachability
    /// whose notification has not come yet).
    public func setSilently(_ value: Bool) { lock.withLock { reachable = value } }

    /// How many times ``isReachable`` was read.
    public var readCount: Int { lock.withLock { reads } }

    /// The handlers registered now.
    public var observerCount: Int { lock.withLock { handlers.count } }

    public func observe(_ handler: @escaping @Sendable (Bool) -> Void) -> ReachabilityObservation {
        let id = lock.withLock { () -> UInt64 in
            nextID += 1
            handlers[nextID] = handler
            return nextID
        }
        return ReachabilityObservation { [weak self] in self?.remove(id) }
    }

    private func remove(_ id: UInt64) {
        _ = lock.withLock { handlers.removeValue(forKey: id) }
    }
}
