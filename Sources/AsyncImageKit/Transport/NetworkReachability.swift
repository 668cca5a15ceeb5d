import Foundation

/// Whether the network beyond this machine can be reached now, and a way
/// to be told when that changes: what an ``AsyncImageLoader`` asks to know
/// it is offline (``AsyncImageLoader/Configuration/reachability``).
///
/// The default is ``SystemNetworkReachability/shared`` (the kernel's
/// routes, watched with a netlink socket). A program that knows better (a
/// desktop app told by NetworkManager, a test) passes its own:
///
/// ```swift
/// final class Switch: NetworkReachability, @unchecked Sendable {
///     private let lock = NSLock()
///     private var reachable = true
///     private var handlers: [UUID: @Sendable (Bool) -> Void] = [:]
///
///     var isReachable: Bool { lock.withLock { reachable } }
///
///     func observe(_ handler: @escaping @Sendable (Bool) -> Void) -> ReachabilityObservation {
///         let id = UUID()
///         lock.withLock { handlers[id] = handler }
///         return ReachabilityObservation { [weak self] in self?.forget(id) }
///     }
///
///     /// Called when the program's own source says so.
///     func set(_ value: Bool) {
///         let told = lock.withLock { () -> [@Sendable (Bool) -> Void] in
///             defer { reachable = value }
///             return reachable == value ? [] : Array(handlers.values)
///         }
///         told.forEach { $0(value) }  // outside the lock
///     }
///
///     private func forget(_ id: UUID) { _ = lock.withLock { handlers.removeValue(forKey: id) } }
/// }
///
/// var configuration = AsyncImageLoader.Configuration(deliveryQueue: DispatchQueue(label: "images"))
/// configuration.reachability = Switch()
/// ```
///
/// What a conformer promises:
/// - ``isReachable`` may be read from any thread at any time, and is quick
///   (the loader reads it when it is made, and when a transfer fails to
///   resolve a host name, to tell a DNS failure from a network that is gone).
/// - Each handler given to ``observe(_:)`` is called, from any thread,
///   with the new value when it changes, until its observation is
///   cancelled or released; never while the conformer holds a lock the
///   handler could need (the loader takes its own lock in it). A call with
///   `true` again says the network changed while staying reachable (the
///   loader then tries it again if a transfer had found no route); a call
///   with `false` again changes nothing.
/// - It is a guess, and may be wrong either way: the loader also learns
///   from its transfers (a transfer that finds no route takes it offline at
///   once, and one request tries the network again after a short wait; see
///   ``AsyncImageLoader/networkStatus``).
public protocol NetworkReachability: Sendable {
    /// Whether a host beyond this machine can be reached now.
    var isReachable: Bool { get }

    /// Calls `handler` with the new value each time ``isReachable``
    /// changes, until the observation returned is cancelled or released.
    func observe(_ handler: @escaping @Sendable (_ isReachable: Bool) -> Void) -> ReachabilityObservation
}

/// A running ``NetworkReachability/observe(_:)``: cancelled when
/// ``cancel()`` is called or when it is released, whichever comes first.
public final class ReachabilityObservation: Sendable {
    private let onCancel: Locked<(@Sendable () -> Void)?>

    /// An observation whose cancellation calls `cancel` (once, on the
    /// thread that cancels or releases it).
    public init(cancel: @escaping @Sendable () -> Void) {
        onCancel = Locked(cancel)
    }

    /// Stops the handler's calls (those already running may finish).
    /// Later calls do nothing.
    public func cancel() {
        let action = onCancel.withLock { action -> (@Sendable () -> Void)? in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { cancel() }
}

/// Whether an ``AsyncImageLoader`` uses the network (see
/// ``AsyncImageLoader/networkStatus``).
public enum NetworkStatus: Sendable, Hashable, CustomStringConvertible {
    /// Why the loader is offline.
    public enum Cause: String, Sendable, Hashable {
        /// Its ``AsyncImageLoader/Configuration/reachability`` says the
        /// network cannot be reached. It stays offline until it says
        /// otherwise.
        case reachability
        /// A transfer failed because the network is unreachable
        /// (``AsyncImageError/offline(_:)`` from the transport, or a host
        /// name that could not be resolved while the reachability says
        /// there is no network) although the reachability said it was
        /// reachable. One request tries the network again after a short
        /// wait, which doubles while it keeps failing (1 s, 2 s, ... up to
        /// 30 s); any answer from a server, or a change the reachability
        /// reports, puts the loader back online.
        case transfer
    }

    /// Requests use the network.
    case online
    /// Requests for URLs beyond this machine are answered from the disk
    /// cache, without a transfer (see ``AsyncImageLoader/networkStatus``).
    case offline(Cause)

    /// Whether it is ``online``.
    public var isOnline: Bool { self == .online }

    /// `"online"`, `"offline (reachability)"`, `"offline (transfer)"`.
    public var description: String {
        switch self {
        case .online: return "online"
        case .offline(let cause): return "offline (\(cause.rawValue))"
        }
    }
}
