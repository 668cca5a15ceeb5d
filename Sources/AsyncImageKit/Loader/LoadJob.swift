import Foundation

/// One transfer of a URL, and the decodes of its body, shared by every
/// request for that URL.
///
/// A job is queued, then loading (it holds one of the loader's
/// `concurrentLoads` transfer slots), then waiting for a decoder (still
/// holding its slot, so undecoded bodies cannot pile up), then decoding (the
/// slot is free for the next transfer), then finished. It is cancelled when
/// no request needs it any more.
///
/// Requests for the same URL at different display sizes share the transfer;
/// the body is then decoded once per distinct ``ImageCacheKey``, most recent
/// request first. A request may join until the last decode has been handed
/// out, even while earlier ones run.
final class LoadJob: @unchecked Sendable {
    enum Phase {
        case queued
        case loading(DataTask)
        case awaitingDecoder(Data)
        /// Decoding the body; `key` is the size being decoded now.
        case decoding(Data, key: ImageCacheKey?)
        case finished
    }

    /// The URL (every request's `request.url`).
    let url: URL
    /// The key in the loader's table of jobs: the URL's absolute string.
    let key: String
    /// Where each size's result is stored: the caches the loader had when the
    /// requests for that size were made (a later `cache` change affects later
    /// requests only, even when they join this job). Each cache once, by identity.
    private(set) var caches: [ImageCacheKey: [ImageCache]] = [:]
    /// Requests waiting for this job's body, in the order they joined.
    var requests: [LoadRequest] = []
    var phase = Phase.queued

    init(url: URL) {
        self.url = url
        self.key = url.absoluteString
    }

    /// Adds a request; its size's result will also be stored in `cache`.
    func join(_ record: LoadRequest, cache: ImageCache?) {
        requests.append(record)
        guard let cache else { return }
        let key = record.request.cacheKey
        if caches[key]?.contains(where: { $0 === cache }) != true { caches[key, default: []].append(cache) }
    }

    var isQueued: Bool {
        if case .queued = phase { return true }
        return false
    }

    /// The next decode to run: the cache key of the most recent request, and
    /// its options with the largest pixel limit of the requests that share
    /// that key (each request's own limit is checked on the result).
    func nextDecode() -> (key: ImageCacheKey, options: DecodingOptions)? {
        guard let newest = requests.last else { return nil }
        let key = newest.request.cacheKey
        var options = newest.request.options
        for record in requests where record.request.cacheKey == key {
            options.maxPixels = max(options.maxPixels, record.request.options.maxPixels)
        }
        return (key, options)
    }
}
