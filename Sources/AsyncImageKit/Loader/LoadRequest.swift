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
    /// Called (outside the loader's lock) when the request is cancelled, by
    /// whatever API; `image(for:)` turns it into `CancellationError`.
    let onCancelled: (@Sendable () -> Void)?

    var state = State.pending
    /// The job loading it; nil for a cache hit waiting for delivery.
    var job: LoadJob?

    init(
        id: UInt64, request: ImageRequest, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction?,
        onCancelled: (@Sendable () -> Void)? = nil
    ) {
        self.id = id
        self.request = request
        self.target = target.map(WeakTarget.init)
        self.success = success
        self.failure = failure
        self.onCancelled = onCancelled
    }

    /// The per-target queue it joins, if it has a target.
    var targetKey: TargetKey? {
        target.map { TargetKey(target: $0.id, action: actionName) }
    }

    /// The action name that identifies it: the success action's, else the failure action's.
    var actionName: String { success?.name ?? failure?.name ?? "" }

    /// Whether it was made with a target that has since been deallocated (a
    /// live target is parked in `keep`).
    func targetIsDead(_ keep: inout KeepAlive) -> Bool {
        guard let target else { return false }
        return !target.isAlive(&keep)
    }

    /// Whether its target is `object` (the target read is parked in `keep`).
    func targets(_ object: AnyObject, _ keep: inout KeepAlive) -> Bool {
        target?.refers(to: object, &keep) == true
    }
}
