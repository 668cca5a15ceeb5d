import Foundation

extension AsyncImageLoader {
    /// Loads `requests` strictly one after another (ThumbnailService's request
    /// group sequence: small, then big), delivering each in turn to `target`
    /// through `success` or `failure`, and starting each only after the one
    /// before it was delivered: its notification posted and its action run,
    /// on the delivery queue. The next member is made right after that
    /// action returns, on the delivery queue, so an action never sees the
    /// next member queued or its transfer started.
    ///
    /// ```swift
    /// loader.loadImages([small, big], target: cell, success: show)
    /// ```
    ///
    /// - If a later member is already in the cache when the sequence starts
    ///   (or moves on), the members before it are skipped.
    /// - A member that fails is delivered as a failure and the sequence goes
    ///   on; a member that is cancelled (by any cancel API, superseded on the
    ///   target, or its target gone) ends the sequence.
    /// - With a target, the members are in the target's per-target order.
    @discardableResult
    public func loadImages(
        _ requests: [ImageRequest], target: AnyObject? = nil, success: ImageAction? = nil,
        failure: ImageFailureAction? = nil
    ) -> ImageSequenceTask {
        let sequence = ImageSequenceTask(
            loader: self, requests: requests.map { $0.resolving(requestDefaults) }, target: target, success: success, failure: failure)
        sequence.advance(from: 0)
        return sequence
    }
}

/// A sequence started by ``AsyncImageLoader/loadImages(_:target:success:failure:)``:
/// cancelling it cancels what is left.
public final class ImageSequenceTask: @unchecked Sendable {
    /// The members, in order.
    public let requests: [ImageRequest]
    private weak var loader: AsyncImageLoader?
    private let target: WeakTarget?
    private let success: ImageAction?
    private let failure: ImageFailureAction?
    private let cache: (any ImageCaching)?
    /// Where the sequence is. Its own lock: taken under the loader's (a
    /// member's end is told there), never the other way round.
    private struct Progress {
        var current: LoadRequest?
        var ended = false
        var next = 0
    }
    private let progress = Locked(Progress())

    init(
        loader: AsyncImageLoader, requests: [ImageRequest], target: AnyObject?, success: ImageAction?,
        failure: ImageFailureAction?
    ) {
        self.loader = loader
        self.requests = requests
        self.target = target.map(WeakTarget.init)
        self.success = success
        self.failure = failure
        self.cache = loader.cache
    }

    /// Whether every member was delivered, or the sequence was cancelled.
    public var isFinished: Bool {
        progress.withLock { $0.ended }
    }

    /// The index of the member loading now (nil when finished).
    public var currentIndex: Int? {
        progress.withLock { $0.ended ? nil : $0.next }
    }

    /// Cancels the member under way and every later one.
    public func cancel() {
        let current = progress.withLock { progress -> LoadRequest? in
            guard !progress.ended else { return nil }
            progress.ended = true
            defer { progress.current = nil }
            return progress.current
        }
        if let current { loader?.cancel(current) }
    }

    /// Starts the member at `index`, or the last cached one after it
    /// (the cache is asked outside the loader's lock).
    func advance(from index: Int) {
        guard let loader, index < requests.count else {
            progress.withLock { $0.ended = true }
            return
        }
        var start = index
        var memory = MemoryLookup.miss
        for member in stride(from: requests.count - 1, through: index, by: -1) {
            let found = loader.lookUp(requests[member], in: cache)
            // A later member counts only with an image to show; this one
            // also with its refusal or its limits failure.
            if found.image != nil || member == index {
                (start, memory) = (member, found)
                break
            }
        }
        let object = target?.object
        if target != nil && object == nil {
            progress.withLock { $0.ended = true }  // the target is gone
            return
        }
        let record = LoadRequest(
            request: requests[start], target: object, success: success, failure: failure, cache: cache, isHit: memory.isFound)
        // Told under the loader's lock when the member ends, delivered or not.
        record.onEnd = { [self] record, _, _ in
            let following = progress.withLock { progress -> Int? in
                progress.current = nil
                guard record.state == .delivered, start + 1 < self.requests.count, !progress.ended else {
                    progress.ended = true
                    return nil
                }
                progress.next = start + 1
                return start + 1
            }
            // Not at once: after this member's notification and action.
            if let following { record.afterDelivery = { self.advance(from: following) } }
        }
        let proceed = progress.withLock { progress -> Bool in
            guard !progress.ended else { return false }
            (progress.next, progress.current) = (start, record)
            return true
        }
        // A cancel from here on cancels `record`, made or not yet (then it never is).
        if proceed { loader.submit(record, object: object, memory: memory) }
        withExtendedLifetime(object) {}
    }
}
