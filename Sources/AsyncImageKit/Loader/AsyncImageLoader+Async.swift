import Foundation

extension AsyncImageLoader {
    /// Loads `url` at full size; cancelling the Swift task cancels the request
    /// (and its transfer, unless another request needs it).
    ///
    /// The result comes through the delivery queue like any other (the
    /// `didFinish`/`didFail` notification is posted first), so that queue must
    /// be serviced.
    ///
    /// - Throws: ``AsyncImageError``, or `CancellationError` when the task is
    ///   cancelled or the request is (by `cancelLoading(url:)`, say).
    public func image(for url: URL) async throws -> Image {
        try await image(for: ImageRequest(url: url))
    }

    /// Loads `request`; see ``image(for:)-(URL)``.
    public func image(for request: ImageRequest) async throws -> Image {
        try await AsyncBridge<Image>.run { bridge in
            let name = "async-\(UUID().uuidString)"
            let record = self.enqueue(
                request, target: nil,
                success: ImageAction(name) { _, image, _ in bridge.resume(.success(image)) },
                failure: ImageFailureAction(name) { _, error, _ in bridge.resume(.failure(error)) },
                onCancelled: { bridge.resume(.failure(CancellationError())) })
            bridge.onCancel { [weak self] in self?.cancel { candidate, _ in candidate === record } }
        }
    }
}
