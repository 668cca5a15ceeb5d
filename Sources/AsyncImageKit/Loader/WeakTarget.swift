/// A target held weakly: the loader never keeps a target alive.
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

    var isAlive: Bool { object != nil }

    func refers(to other: AnyObject) -> Bool { object === other }
}

/// The per-target queue a request belongs to: one target and one action.
struct TargetKey: Hashable {
    let target: ObjectIdentifier
    let action: String
}
