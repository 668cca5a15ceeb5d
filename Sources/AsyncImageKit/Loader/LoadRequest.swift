import Foundation

/// One call of `loadImage`: its own target, actions and outcome.
///
/// Every request ends in exactly one of: delivered (success or failure,
/// with a notification), or cancelled (silently). The loader's lock guards
/// every mutable field.
final class LoadRequest: @unchecked Sendable {
    enum State {
        case pending, delivered, cancelled
    }

    /// Increasing: a later `loadImage` call has a larger id.
    var id: UInt64
    let request: ImageRequest
    let target: WeakTarget?
    let success: ImageAction?
    let failure: ImageFailureAction?

    var state = State.pending
    /// The job loading it; nil for a cache hit waiting for delivery.
    var job: LoadJob?

    init(id: UInt64, request: ImageRequest, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction?) {
        self.id = id
        self.request = request
        self.target = target.map(WeakTarget.init)
        self.success = success
        self.failure = failure
    }

    /// The per-target queue it joins, if it has a target.
    var targetKey: TargetKey? {
        target.map { TargetKey(target: $0.id, action: actionName) }
    }

    /// The action name that identifies it: the success action's, else the failure action's.
    var actionName: String { success?.name ?? failure?.name ?? "" }

    /// Whether it was made with a target that has since been deallocated.
    var targetIsDead: Bool {
        guard let target else { return false }
        return !target.isAlive
    }
}
