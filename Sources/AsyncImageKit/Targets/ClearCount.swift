/// The one rule `imageURL` adds to the loader's per-target order (which
/// already drops earlier URLs once a later one is delivered): an outcome of
/// a URL set before the target's `imageURL` was last set to nil is dropped.
/// Its delivery may already be under way when the clear comes (from a
/// `didFinish` observer, say, or another thread), past the loader's reach.
///
/// A load carries the count of its time (``token``); its outcome is shown
/// only if the count has not moved since (``admits(_:)``), checked under the
/// same lock as the state it would change. ``ImageURLRegistry`` keeps one
/// per object for ``ImageDisplaying``; ``AsyncImageView`` keeps its own
/// under its lock.
struct ClearCount: Equatable {
    private var clears: UInt64 = 0

    /// What a load started now carries.
    var token: UInt64 { clears }

    /// `imageURL` was set to nil.
    mutating func clear() { clears &+= 1 }

    /// Whether an outcome of a load that carries `token` may be shown.
    func admits(_ token: UInt64) -> Bool { clears == token }
}
