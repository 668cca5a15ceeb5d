import Foundation

extension AsyncImageLoader {
    /// Loads `url`'s bytes through the loader's HTTP cache, with no decoding.
    ///
    /// See ``data(for:)-(ImageRequest)``.
    public func data(for url: URL) async throws -> HTTPResponse {
        try await data(for: ImageRequest(url: url))
    }

    /// Loads `request`'s bytes through the loader's HTTP cache (its disk
    /// cache, by RFC 9111), with no decoding: for prefetching bytes and for
    /// assets that are not images.
    ///
    /// - Any HTTP status is a response with its headers and body, never a
    ///   thrown error.
    /// - The request's `Cache-Control` (`no-cache`, `no-store`, `max-age`,
    ///   `max-stale`, `min-fresh`, `only-if-cached`) and `Pragma: no-cache`
    ///   are honoured, as are its ``ImageRequest/cachePolicy``'s choices.
    /// - RFC 9111 exactly: a stale response is served on a failure to reach
    ///   the server only when the response (`stale-if-error`) or the request
    ///   (`max-stale`) allows it.
    /// - No `Accept-Encoding` is sent unless the request's headers name one.
    ///
    /// - Throws: ``AsyncImageError`` (a transport failure, a refused URL,
    ///   ``AsyncImageError/notCached(_:)`` for `only-if-cached` or
    ///   ``ImageCachePolicy/cachedOnly`` with nothing stored), or
    ///   `CancellationError`.
    public func data(for request: ImageRequest) async throws -> HTTPResponse {
        let (timeout, policy) = state.withLock { ($0.loadingTimeout, $0.urlPolicy) }
        var transfer = DataRequest(url: request.url, headers: request.headers, timeout: timeout, policy: policy)
        transfer.acceptsAnyStatus = true
        transfer.acceptsEncodedBodies = request.headers.keys.contains { $0.lowercased() == "accept-encoding" }
        let dataLoader = self.dataLoader
        let response = try await AsyncBridge<DataResponse>.run { bridge in
            let task = dataLoader.loadData(transfer) { result in bridge.resume(result.mapError { $0 }) }
            bridge.onCancel { task.cancel() }
        }
        return HTTPResponse(
            url: request.url, finalURL: response.finalURL, statusCode: response.statusCode, headers: response.headers,
            body: response.data)
    }
}
