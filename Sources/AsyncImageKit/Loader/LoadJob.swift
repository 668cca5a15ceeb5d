import Foundation

/// One transfer and one decode, shared by every request with the same cache key.
///
/// A job is queued, then loading (it holds one of the loader's
/// `concurrentLoads` transfer slots), then waiting for a decoder (still
/// holding its slot, so undecoded bodies cannot pile up), then decoding (the
/// slot is free for the next transfer), then finished. It is cancelled when
/// no request needs it any more.
final class LoadJob: @unchecked Sendable {
    enum Phase {
        case queued
        case loading(DataTask)
        case awaitingDecoder(Data)
        case decoding
        case finished
    }

    let request: ImageRequest
    /// The cache the result goes to: the loader's cache when the job was made.
    let cache: ImageCache?
    var requests: [LoadRequest] = []
    var phase = Phase.queued

    init(request: ImageRequest, cache: ImageCache?) {
        self.request = request
        self.cache = cache
    }

    var key: ImageCacheKey { request.cacheKey }

    var isQueued: Bool {
        if case .queued = phase { return true }
        return false
    }
}
