import Foundation

extension AsyncImageLoader {
    /// Loads `url` at full size; cancelling the Swift task cancels the request
    /// (and its transfer, unless another request needs it).
    ///
    /// The result comes straight from the loader's own threads: no queue has
    /// to be serviced, so a command-line tool or a service that never runs
    /// the main queue can `await` it. The `didFinish`/`didFail` notification
    /// is still posted, on the delivery queue.
    ///
    /// Cancellation ends one way for everyone: either the task gets the
    /// outcome and the notification is posted, or the task throws
    /// `CancellationError` and nothing is posted.
    ///
    /// - Throws: ``AsyncImageError``, or `CancellationError` when the task is
    ///   cancelled or the request is (by `cancelLoading(url:)`, say).
    public func image(for url: URL) async throws -> Image {
        try await image(for: ImageRequest(url: url))
    }

    /// Loads `request`; see ``image(for:)-(URL)``.
    public func image(for request: ImageRequest) async throws -> Image {
        try await response(for: request).image
    }

    /// Loads `request`, with where the image came from and whether it is
    /// stale; see ``image(for:)-(URL)``.
    public func response(for request: ImageRequest) async throws -> ImageResponse {
        try await response(for: request, encoding: nil)
    }

    /// Loads `request` for a caller that will write the image as `encoding`
    /// (``encodedImage(for:encoding:)``), so that the store stage can hand
    /// it bytes it made or read (``ImageResponse/encoded``).
    func response(for request: ImageRequest, encoding: ImageEncoding?) async throws -> ImageResponse {
        try await AsyncBridge<ImageResponse>.run(cancelResumes: false) { bridge in
            let record = self.enqueue(
                request, target: nil, success: nil, failure: nil,
                onCancelled: { bridge.resume(.failure(CancellationError())) }, encoding: encoding,
                completion: { outcome in bridge.resume(outcome.mapError { $0 }) })
            bridge.onCancel { [weak self] in self?.cancel { _, _ in [record] } }
        }
    }
}
