/// A target held weakly: the loader never keeps a target alive.
///
/// Reading a weak reference makes a strong one for a moment. If the owner
/// lets go of the target at that moment, that strong reference is the last
/// one and the target's `deinit` runs where it is released: under a lock, that
/// `deinit` could call back into the loader and deadlock. So every read made
/// under a lock parks the strong reference in a ``KeepAlive`` that is emptied
/// after the lock is released.
final class WeakTarget: @unchecked Sendable {
    /// The target, or nil once it has been deallocated. Read it, then use the
    /// strong reference you got: it may be gone on the next read.
    weak var object: AnyObject?
    /// The identity the target had; used only together with a live `object`,
    /// since the address of a dead object can be reused.
    let id: ObjectIdentifier

    init(_ object: AnyObject) {
        self.object = object
        self.id = ObjectIdentifier(object)
    }

    /// Whether the target is alive; a live one is parked in `keep`.
    func isAlive(_ keep: inout KeepAlive) -> Bool {
        guard let live = object else { return false }
        keep.park(live)
        return true
    }

    /// Whether the target is `other`; the target read is parked in `keep`.
    func refers(to other: AnyObject, _ keep: inout KeepAlive) -> Bool {
        guard let live = object else { return false }
        keep.park(live)
        return live === other
    }
}

/// Objects whose last release must not happen under a lock: filled under
/// it, dropped after it.
struct KeepAlive {
    private var objects: [AnyObject] = []

    mutating func park(_ object: AnyObject) { objects.append(object) }
}

/// The per-target queue a request belongs to: one target and one action.
struct TargetKey: Hashable {
    let target: ObjectIdentifier
    let action: String
}
