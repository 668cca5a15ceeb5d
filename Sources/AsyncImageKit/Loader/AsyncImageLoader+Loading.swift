import Foundation

// MARK: - Loading

extension AsyncImageLoader {
    /// Loads `request` for `target` (nil for none), then calls `success` or `failure`.
    ///
    /// - Returns: a handle to cancel the request or change its priority (it
    ///   may be ignored: every cancel API works without it).
    @discardableResult
    public func loadImage(
        _ request: ImageRequest, target: AnyObject? = nil, success: ImageAction? = nil,
        failure: ImageFailureAction? = nil
    ) -> ImageTask {
        ImageTask(enqueue(request, target: target, success: success, failure: failure), loader: self)
    }

    /// Loads `url` at full size for `target` (nil for none), then calls `success` or `failure`.
    @discardableResult
    public func loadImage(
        _ url: URL, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction? = nil
    ) -> ImageTask {
        loadImage(ImageRequest(url: url), target: target, success: success, failure: failure)
    }

    /// Loads `url` for `target` and calls `action` on success (failures only post `didFail`).
    @discardableResult
    public func loadImage(_ url: URL, target: AnyObject?, action: ImageAction) -> ImageTask {
        loadImage(ImageRequest(url: url), target: target, success: action, failure: nil)
    }

    /// Loads `url` with no target (preloading into the cache; notifications are still posted).
    @discardableResult
    public func loadImage(_ url: URL) -> ImageTask {
        loadImage(ImageRequest(url: url))
    }
}

// MARK: - Cancelling

extension AsyncImageLoader {
    /// Cancels requests for `url` on `target` with `action` (matched by name).
    public func cancelLoading(url: URL, target: AnyObject, action: ImageAction) {
        cancel { state, keep in state.requests.requests(url: url.absoluteString, of: target, action: action.name, &keep) }
    }

    /// Cancels requests for `url` on `target`, whatever their action.
    public func cancelLoading(url: URL, target: AnyObject) {
        cancel { state, keep in state.requests.requests(url: url.absoluteString, of: target, action: nil, &keep) }
    }

    /// Cancels every request for `url`, with or without a target.
    public func cancelLoading(url: URL) {
        cancel { state, keep in state.requests.requests(url: url.absoluteString, of: nil, action: nil, &keep) }
    }

    /// Cancels every request on `target` with `action` (matched by name).
    public func cancelLoadingImages(target: AnyObject, action: ImageAction) {
        cancel { state, keep in state.requests.requests(url: nil, of: target, action: action.name, &keep) }
    }

    /// Cancels every request on `target`.
    public func cancelLoadingImages(target: AnyObject) {
        cancel { state, keep in state.requests.requests(url: nil, of: target, action: nil, &keep) }
    }

    /// Cancels every pending request, with or without a target (a
    /// service's shutdown at its time limit: ``drain(timeout:)``). Each
    /// ends once, as any cancel does: an async caller gets
    /// `CancellationError`, a target hears nothing.
    public func cancelAll() {
        cancel { state, _ in state.requests.all }
    }

    /// The most recent URL set for `target` and `action` that has not yet been delivered or cancelled.
    public func url(for target: AnyObject, action: ImageAction) -> URL? {
        mutate { state, effects in state.requests.targets.url(for: target, action: action.name, &effects.keep) }
    }

    /// The most recent URL set for `target` (any action) not yet delivered or cancelled.
    public func url(for target: AnyObject) -> URL? {
        mutate { state, effects in state.requests.targets.url(for: target, &effects.keep) }
    }

    /// Cancels the requests `select` finds (oldest first), then refills the slots.
    func cancel(_ select: (inout LoaderState, inout KeepAlive) -> [LoadRequest]) {
        mutate { state, effects in
            for record in select(&state, &effects.keep).sorted(by: { $0.id < $1.id }) {
                self.cancelRecord(record, &state, &effects)
            }
            self.pump(&state, &effects)
        }
    }
}
