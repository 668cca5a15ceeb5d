import Foundation
import Logging

/// One transfer of a URL, and the decodes of its body, shared by every
/// request for that URL: the coalescing unit.
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
        case loading(TransferHandle)
        case awaitingDecoder(Data)
        /// Decoding the body; `key` is the size being decoded now.
        case decoding(Data, key: ImageCacheKey?)
        case finished
    }

    /// The URL (every request's `request.url`).
    let url: URL
    /// The request headers of every request that shares it, with the
    /// loader's `Accept` unless they name one: what its transfer sends and
    /// the disk cache's `Vary` compares.
    let headers: [String: String]
    /// The key in the loader's table of jobs: the URL's absolute string and the headers.
    let key: String
    /// Where each size's result is stored: the caches of the requests for
    /// that size (a request's cache is the loader's when it was made). Kept
    /// after the requests leave: a decode whose requests were all cancelled
    /// still caches its image. Each cache once, by identity.
    private(set) var caches: [ImageCacheKey: [any ImageCaching]] = [:]
    /// What runs on each size's decoded image (the same for every request
    /// of a key: the key names the processors).
    private(set) var processors: [ImageCacheKey: [any ImageProcessing]] = [:]
    /// Requests waiting for this job's body, by id.
    private(set) var requests = RequestSet()
    var phase = Phase.queued
    /// Loading, and still reading its stored response from the disk cache
    /// (the HTTP cache stage's lookup), not yet at the network.
    var readsDisk = false
    /// Its requests that are not prefetches: none, and a transfer it holds
    /// counts against the prefetch cap.
    private(set) var visibleCount = 0

    /// A job for `record`'s URL. `usesStoredImages`: false for the job
    /// that fetches the body for requests a job of stored images could not
    /// serve (see ``bodyJobKey``).
    init(for record: LoadRequest, usesStoredImages: Bool = true, accept: String) {
        self.url = record.request.url
        self.headers = record.request.transferHeaders(accept: accept)
        self.key = usesStoredImages ? record.jobKey : Self.bodyJobKey(record.jobKey)
        self.diskKey = record.diskKey
        self.policy = record.request.cachePolicy.intersection(Self.transferPolicy)
        self.retryPolicy = record.retryPolicy
        self.disk = DiskPart(usesStoredImages: usesStoredImages)
    }

    /// The table key of the job that loads the body for requests whose job
    /// had only stored processed images, none of their size.
    static func bodyJobKey(_ jobKey: String) -> String { jobKey + "\n#body" }

    /// The parts of a cache policy that shape a transfer (requests share a
    /// job only when these are equal).
    static let transferPolicy: ImageCachePolicy = [
        .skipDiskReads, .skipDiskWrites, .skipNetwork, .returnStaleWhileRevalidating, .neverStale,
    ]
    /// Its body's key in the disk cache (URL and headers).
    let diskKey: String
    /// Its requests' policy (its transfer part).
    let policy: ImageCachePolicy
    /// How its transfer is tried again (every request's: part of the key).
    let retryPolicy: RetryPolicy
    /// The retries made so far.
    var retries = 0
    /// Its transfer is the probe of a network the loader thinks is down
    /// (see `NetworkState`): its answer decides, and a job that ends
    /// without one lets the next request probe.
    var probe: UInt64?
    /// The `NetworkState.epoch` its transfer was last admitted to the
    /// network in: a "no route" found on routes the reachability has
    /// spoken of since says nothing.
    var networkEpoch: UInt64 = 0
    /// Fires when the wait before its next try is over (nil when none is
    /// waited for); cancelled when the job finishes, so a wait nobody
    /// needs any more holds nothing.
    var retryTimer: DispatchSourceTimer?
    /// The transfer that waits for ``retryTimer``: answered from the disk
    /// at once if the loader goes offline during the wait.
    var retryContext: TransferContext?
    /// What its transfer brought: the response's head, and when (the
    /// transfer stage's, read by the stores and delivery on the way up).
    var response = ReceivedResponse()
    /// Its part in the HTTP cache: what the disk gave it, and what of it
    /// is stored (the HTTP cache and store stages').
    var disk: DiskPart
    /// What the file says about itself, once its header was read.
    @OutOfLine var fileProperties: ImageFileProperties?
    /// Its progressive JPEG's transfer ended at the DC coefficients (the body
    /// is a prefix: decoded tolerating its end, never stored as the original).
    var earlyEnd: ImageResponse.EarlyEnd?

    /// Adds a request; its size's result will also be stored in its cache,
    /// and on disk as `storage` says.
    func join(_ record: LoadRequest, storage: DiskStorage) {
        requests.insert(record)
        record.job = self
        if !record.isPrefetch { visibleCount += 1 }
        if !record.request.processors.isEmpty { processors[record.request.cacheKey] = record.request.processors }
        let processing = record.request.cacheKey.processing
        let fullSize = ImageCacheKey.isFullSize(processing)
        if fullSize || storage.contains(.originals) { disk.storesOriginal = true }
        if !fullSize, storage.contains(.processedImages) { disk.storedProcessings.insert(processing) }
        guard let cache = record.cache else { return }
        let key = record.request.cacheKey
        if caches[key]?.contains(where: { $0 === cache }) != true { caches[key, default: []].append(cache) }
    }

    /// Removes a request (delivered or cancelled).
    func leave(_ record: LoadRequest) {
        guard requests.remove(record) else { return }
        if !record.isPrefetch { visibleCount -= 1 }
        if record.job === self { record.job = nil }
    }

    /// Lets go of everything (the loader's `deinit`): the phase holds the
    /// transfer, whose completion holds the job.
    func abandon() {
        requests = RequestSet()
        caches = [:]
        phase = .finished
        retryTimer?.cancel()
        retryTimer = nil
    }

    /// Whether it can serve `record`: it has (or may yet get) a body, or a
    /// stored image of the record's size.
    func canServe(_ record: LoadRequest) -> Bool {
        guard DCEarlyEnd.canServe(record.request, self) else { return false }
        return disk.hasBody || disk.storedImages[record.request.cacheKey.processing] != nil
    }

    /// The processings its requests ask for (not full size), each once.
    var processings: Set<String> {
        Set(requests.lazy.map(\.request.cacheKey.processing).filter { !ImageCacheKey.isFullSize($0) })
    }

    /// Whether a request asks for full size (only the body can serve it).
    var needsFullSize: Bool { requests.contains { ImageCacheKey.isFullSize($0.request.cacheKey.processing) } }

    var isQueued: Bool {
        if case .queued = phase { return true }
        return false
    }

    /// The stage its requests are in, as a deadline reports it.
    var stage: LoadStage {
        switch phase {
        case .queued: return .queued
        case .loading: return readsDisk ? .diskRead : .transfer
        case .awaitingDecoder, .decoding, .finished: return .decode
        }
    }

    /// The highest priority among its requests.
    var priority: ImagePriority {
        requests.lazy.map(\.priority).max() ?? .veryLow
    }

    /// Whether any of its requests is not a prefetch.
    var hasVisibleRequest: Bool { visibleCount > 0 }

    /// The requests for `key`, oldest first.
    func requests(for key: ImageCacheKey) -> [LoadRequest] {
        requests.filter { $0.request.cacheKey == key }.sorted { $0.id < $1.id }
    }

    /// The encodings the requests for `key` will write their image in
    /// (``AsyncImageLoader/encodedImage(for:encoding:)``): usually none.
    func encodings(for key: ImageCacheKey) -> [ImageEncoding] {
        requests.compactMap { $0.request.cacheKey == key ? $0.encoding : nil }
    }

    /// Every request, oldest first.
    var orderedRequests: [LoadRequest] { requests.sorted { $0.id < $1.id } }

    /// The next decode to run: the cache key of the most recent request, and
    /// its options with the largest pixel and frame limits of the requests
    /// that share that key (each request's own limits are checked on the result).
    func nextDecode() -> (key: ImageCacheKey, options: DecodingOptions)? {
        guard let newest = requests.max(by: { $0.id < $1.id }) else { return nil }
        let key = newest.request.cacheKey
        var options = newest.request.options
        for record in requests where record.request.cacheKey == key {
            options.maxPixels = max(options.maxPixels, record.request.options.maxPixels)
            options.maxFrames = max(options.maxFrames, record.request.options.maxFrames)
        }
        return (key, options)
    }
}

/// What a job's transfer brought: the response's head, and when.
struct ReceivedResponse {
    /// The response's status and headers: whether, and for how long, the
    /// body may be stored (RFC 9111). 0 until a response came.
    var statusCode = 0
    var headers: [String: String] = [:]
    /// The body's `Content-Type`, kept with it on disk.
    var contentType: String?
    /// Where the body came from, after redirects.
    var finalURL: URL?
    /// Whether it said `no-store`: kept in no cache at all (read once, when it arrives).
    var forbidsStorage = false
    /// When its transfer was asked for and its answer came (seconds since
    /// 1970): a stored response's age is counted from these (RFC 9111 §4.2.3).
    var requestTime: Double = 0
    var responseTime: Double = 0
    /// A stored response was confirmed by a `304` just now.
    var revalidated = false

    /// Takes `response`'s head.
    mutating func received(_ response: DataResponse) {
        statusCode = response.statusCode
        headers = response.headers
        contentType = response.contentType
        finalURL = response.finalURL
        forbidsStorage = HTTPCachePolicy.forbidsStorage(response.headers)
    }
}

/// A job's part in the HTTP cache.
struct DiskPart {
    /// Where its response and processed images are stored (nil: nowhere), chosen when it starts.
    var cache: HTTPCache?
    /// Whether it looks for stored processed images (see ``ImageDiskStore``).
    let usesStoredImages: Bool
    /// Whether its body is kept on disk: a request asked for originals, or for full size.
    var storesOriginal = false
    /// The processings whose images are kept on disk.
    var storedProcessings: Set<String> = []
    /// Its response came from the disk cache (so it is not stored again).
    var bodyFromDisk = false
    /// False when the disk gave only processed images: a request for a size
    /// without one needs another job (``LoadJob/bodyJobKey(_:)``).
    var hasBody = true
    /// Processed images read from disk, by processing: decoded instead of the body.
    var storedImages: [String: Data] = [:]
    /// The generation of the stored response its body belongs to (nil until
    /// a body from the network is stored; empty when it may not be).
    var generation: String?
    /// The processings whose images are on disk now (read, or stored by it).
    var processingsOnDisk: Set<String> = []
    /// Whether what it delivers is a stale stored response, and why (see
    /// ``StaleRules``): shown while it is revalidated by follow-up requests,
    /// offline, or because the network failed.
    var staleness = Staleness.fresh

    init(usesStoredImages: Bool) { self.usesStoredImages = usesStoredImages }

    /// Its response came from the disk: `stored`, served `staleness`.
    mutating func served(_ stored: StoredResponse, _ staleness: Staleness) {
        bodyFromDisk = true
        hasBody = stored.body != nil
        storedImages = stored.images
        processingsOnDisk = Set(stored.images.keys)
        generation = stored.entry.generation
        self.staleness = staleness
    }
}

extension LoadJob {
    /// What the loader's lines about this job's transfer carry: its URL, the
    /// number of requests sharing it, and the first request's
    /// ``ImageRequest/logMetadata``.
    var logMetadata: Logger.Metadata {
        var metadata = orderedRequests.first?.logMetadata ?? [:]
        metadata["url"] = "\(url.absoluteString)"
        metadata["requests"] = "\(requests.count)"
        return metadata
    }
}
