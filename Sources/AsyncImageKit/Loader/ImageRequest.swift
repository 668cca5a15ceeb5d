import Foundation
import Logging

/// What to load: a URL, how to decode it, and how urgently.
///
/// Two requests with the same ``cacheKey`` share one transfer and one decode.
/// Requests are equal when their URL, options, processors (by identifier),
/// key, priority, headers, policies, cache class, timeout, retry policy,
/// colour management and resize quality are.
public struct ImageRequest: Sendable, Hashable {
    /// The image's URL (`http`, `https` or `file`).
    public let url: URL
    /// How to decode: pixel limit, a display size to downsample to, and the
    /// colour management (``colorManagement``, or the default until a loader
    /// fills in its own).
    public private(set) var options: DecodingOptions
    /// The memory-cache key: the URL (or the request's own key), the
    /// display size, the colour management when not the default, and the
    /// processors.
    public private(set) var cacheKey: ImageCacheKey
    /// Whether and how its image's colours are converted to sRGB: `nil`
    /// (the default) follows the loader's
    /// ``AsyncImageLoader/Configuration/colorManagement``; a value here
    /// replaces it (``ColorManagement/off``: the samples as stored). Setting
    /// it updates ``options`` and ``cacheKey``: images decoded under
    /// different colour management are cached apart. See <doc:ColourManagement>.
    public var colorManagement: ColorManagement? {
        didSet {
            options.colorManagement = colorManagement ?? .default
            rekey()
        }
    }

    /// How a display size is reached: `nil` (the default) follows the
    /// loader's ``AsyncImageLoader/Configuration/resizeQuality``; a value
    /// here replaces it (``ResizeQuality/fast``: the pixels, cost and cache
    /// key of earlier versions). Setting it updates ``options`` and
    /// ``cacheKey``. No effect at full size.
    public var resizeQuality: ResizeQuality? {
        didSet {
            options.resizeQuality = resizeQuality ?? .high
            rekey()
        }
    }

    /// Decodes an animation's first frame alone, as a still (default false;
    /// see ``DecodingOptions/firstFrameOnly``): a thumbnail service's
    /// requests, which ``AsyncImageLoader/encodedImage(for:encoding:)``
    /// answers with the first frame anyway, cost one frame of a 10,000-frame
    /// GIF. Setting it updates ``options`` and ``cacheKey``.
    public var firstFrameOnly: Bool {
        get { options.firstFrameOnly }
        set {
            options.firstFrameOnly = newValue
            rekey()
        }
    }

    /// The cache key again, after a change of ``options``.
    private mutating func rekey() {
        let processing = ImageCacheKey.processingKey(options)
        let chain = processors.keyPart
        cacheKey = ImageCacheKey(url: cacheKey.url, processing: chain.isEmpty ? processing : processing + "|" + chain)
    }

    /// The request headers its transfer sends and the disk cache's `Vary`
    /// compares: its own ``headers``, with `accept` (the loader's
    /// `Accept`) unless they name one (case-insensitively).
    func transferHeaders(accept: String) -> [String: String] {
        guard !headers.keys.contains(where: { $0.caseInsensitiveCompare("accept") == .orderedSame }) else { return headers }
        var headers = headers
        headers["Accept"] = accept
        return headers
    }

    /// This request as a loader with `defaults` makes it: each setting the
    /// request leaves nil (``colorManagement``, ``resizeQuality``) takes
    /// the loader's; itself when nothing changes, else a copy (and its key).
    func resolving(_ defaults: RequestDefaults) -> ImageRequest {
        var copy = self
        if colorManagement == nil, defaults.colorManagement != options.colorManagement {
            copy.colorManagement = defaults.colorManagement
        }
        if resizeQuality == nil, defaults.resizeQuality != options.resizeQuality {
            copy.resizeQuality = defaults.resizeQuality
        }
        return copy
    }
    /// What runs on the decoded image, in order (see ``ImageProcessing``).
    public let processors: [any ImageProcessing]
    /// Wants previews of a progressive JPEG while it downloads (see
    /// ``ImageTask/onPreview(_:)``; default false). Previews are never
    /// cached and never come after the final image.
    public var wantsPreviews = false
    /// Where the request stands in the loader's queue (default ``ImagePriority/normal``).
    /// Change a request already made through its ``ImageTask``.
    public var priority: ImagePriority
    /// Request headers sent with its transfer (over the transport's own).
    /// Requests for one URL share a transfer only when their headers are
    /// equal. Headers do not change the ``cacheKey``: images that differ per
    /// user need URLs (or keys) of their own. An `Accept` here replaces the
    /// loader's (``AsyncImageLoader/Configuration/acceptHeader``) for this
    /// request: `["Accept": "image/jpeg"]` asks a negotiating server for a
    /// JPEG; the disk cache serves it a stored response that says
    /// `Vary: Accept` only if it was fetched with the same `Accept`.
    public var headers: [String: String]
    /// Which caches it reads and writes, and whether it may use the network
    /// (default ``ImageCachePolicy/useCaches``). Requests share a transfer
    /// only when their policies are equal.
    public var cachePolicy: ImageCachePolicy
    /// What the disk cache keeps for it: nil (the default) follows the
    /// loader's ``AsyncImageLoader/Configuration/diskStorage``. Requests for
    /// one URL share a transfer whatever they choose; what any of them asks
    /// for is kept.
    public var diskStorage: DiskStorage?
    /// The memory-cache class its image is stored in (default
    /// ``ImageCacheClass/normal``): ``ImageCacheClass/original`` for
    /// full-size photos, relinquished first; ``ImageCacheClass/thumbnail``
    /// for a grid's images, kept through a memory-pressure purge. Requests
    /// that share a decode store its image in the highest class any of them
    /// asks for.
    public var cacheClass: ImageCacheClass = .normal
    /// Metadata the loader adds to what it logs about this request (see
    /// ``AsyncImageLoader/Configuration/logger``): a service passes its
    /// own request's id, say, so the loader's lines join the handler's.
    /// Lines about a transfer that requests share carry the metadata of the
    /// first of them. Not part of the request's equality: requests that
    /// differ only here share one transfer. Default empty.
    public var logMetadata: Logger.Metadata = [:]
    /// The most time the request may take, whatever it is doing: from the
    /// moment it is made (`loadImage`, `image(for:)`; a sequence's member
    /// when it starts) until its outcome is decided. nil (the default)
    /// follows the loader's ``AsyncImageLoader/Configuration/requestTimeout``
    /// (itself nil by default: no limit); a value here replaces it, longer
    /// or shorter. Zero or less has passed already: the request fails at
    /// once unless the memory cache answers it.
    ///
    /// When it passes, this request alone fails, through the usual failure
    /// path (its failure action and `didFail`, the async API's throw), with
    /// ``AsyncImageError/timedOut(_:seconds:stage:)`` naming the
    /// ``LoadStage`` it was in: ``LoadStage/queued``,
    /// ``LoadStage/diskRead``, ``LoadStage/transfer`` or
    /// ``LoadStage/decode``. Requests that share its transfer or its decode
    /// go on; if it was the last one, its queued entry is removed or its
    /// transfer cancelled, as for a cancel, and a decode already running
    /// stops at its next checkpoint (16 rows of a JPEG or PNG, a frame of
    /// an animation): nothing is cached and its decoder is free (a request
    /// that joins meanwhile gets a decode of its own). A memory-cache hit is served at once and never
    /// times out; an outcome already decided (on its way to the delivery
    /// queue) is delivered as it is. A request without a limit costs
    /// nothing more; one with a limit, one timer.
    ///
    /// **How it combines with the transfer's timeout**, the one rule:
    /// ``AsyncImageLoader/loadingTimeout`` bounds one *transfer*, from its
    /// start (time queued, on the disk or decoding does not count), and
    /// fails every request that shares it, with stage
    /// ``LoadStage/transfer`` and `seconds` the loading timeout; this
    /// bounds one *request*, from start to outcome, and fails it alone,
    /// with `seconds` this timeout. Whichever passes first ends the
    /// request; neither shortens the other. A loader's transfers use its
    /// `loadingTimeout` in place of the transport's own
    /// ``TransportConfiguration/timeout``, whichever initializer made the
    /// loader (that one bounds a ``DataLoader`` used on its own). The
    /// data-level API (``AsyncImageLoader/data(for:)-(ImageRequest)``) has
    /// no queue and no decode: only `loadingTimeout` bounds it.
    ///
    /// ```swift
    /// var request = ImageRequest(url: url, targetSize: PixelSize(width: 256, height: 256))
    /// request.timeout = .seconds(5)          // the client waits 5 s, not a second more
    /// do {
    ///     let image = try await loader.image(for: request)
    /// } catch AsyncImageError.timedOut(_, let seconds, let stage) {
    ///     logger.warning("gave up after \(seconds) s, \(stage)")   // "waiting in the queue": add capacity
    /// }
    /// ```
    public var timeout: Duration?
    /// How its transfer is tried again when it fails for a passing reason
    /// (see ``RetryPolicy`` for which failures, and the guarantees). nil
    /// (the default) follows the loader's
    /// ``AsyncImageLoader/Configuration/retryPolicy``; a value here
    /// replaces it (``RetryPolicy/disabled``: never). Requests for one URL
    /// share a transfer only when their policies (their own, or the
    /// loader's when they were made) are equal. A retry never waits past
    /// the request's ``timeout``: it fails at once with the failure instead.
    public var retryPolicy: RetryPolicy?

    /// A request for `url`, decoded at full size or downsampled for display.
    ///
    /// - Parameters:
    ///   - url: the image's URL (`http`, `https` or `file`).
    ///   - targetSize: the size the image is shown at; `nil` decodes at full size.
    ///   - contentMode: how the image meets `targetSize`.
    ///   - scaling: how the result is framed (default: exactly `targetSize`,
    ///     Nimbus' default; see ``ScalingOptions``).
    ///   - maxPixels: the decompression-bomb limit (see ``DecodingOptions/maxPixels``).
    ///   - maxFrames: the most frames of an animation (see ``DecodingOptions/maxFrames``).
    ///   - priority: where it stands in the queue.
    ///   - headers: request headers for its transfer.
    ///   - cachePolicy: the caches it uses, and the network or not.
    ///   - diskStorage: what the disk cache keeps for it (nil: the loader's choice).
    ///   - processors: what runs on the decoded image, in order.
    ///   - key: the image's identity in the caches, memory and disk, in place
    ///     of the URL (OGImage's `key:`): for URLs that differ only by a
    ///     signature or a token, name the image yourself. Requests with one
    ///     key share one transfer (of the first one's URL).
    public init(
        url: URL, targetSize: PixelSize? = nil, contentMode: ContentMode = .aspectFill, scaling: ScalingOptions = [],
        maxPixels: Int = DecodingOptions.defaultMaxPixels, maxFrames: Int = DecodingOptions.defaultMaxFrames,
        priority: ImagePriority = .normal,
        headers: [String: String] = [:], cachePolicy: ImageCachePolicy = .useCaches,
        diskStorage: DiskStorage? = nil, processors: [any ImageProcessing] = [], key: String? = nil
    ) {
        self.diskStorage = diskStorage
        self.processors = processors
        self.headers = headers
        self.cachePolicy = cachePolicy
        self.url = url
        self.options = DecodingOptions(
            maxPixels: maxPixels, targetSize: targetSize, contentMode: contentMode, scaling: scaling,
            maxFrames: maxFrames)
        let processing = ImageCacheKey.processingKey(options)
        let chain = processors.keyPart
        self.cacheKey = ImageCacheKey(
            url: key ?? url.absoluteString,
            processing: chain.isEmpty ? processing : processing + "|" + chain)
        self.priority = priority
    }
}

extension ImageRequest {
    /// A request for `url` at a display size, said by what the result is
    /// (``ImageSizing/fitInside(_:)``, ``ImageSizing/fillAndCrop(_:)``,
    /// ``ImageSizing/exact(_:contentMode:)``):
    ///
    /// ```swift
    /// ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 256, height: 256)))
    /// ```
    ///
    /// The same request as ``init(url:targetSize:contentMode:scaling:maxPixels:maxFrames:priority:headers:cachePolicy:diskStorage:processors:key:)``
    /// with the display size's target size, content mode and scaling (and
    /// the same cache key). The other parameters are that initializer's.
    public init(
        url: URL, sizing: ImageSizing,
        maxPixels: Int = DecodingOptions.defaultMaxPixels, maxFrames: Int = DecodingOptions.defaultMaxFrames,
        priority: ImagePriority = .normal,
        headers: [String: String] = [:], cachePolicy: ImageCachePolicy = .useCaches,
        diskStorage: DiskStorage? = nil, processors: [any ImageProcessing] = [], key: String? = nil
    ) {
        self.init(
            url: url, targetSize: sizing.size, contentMode: sizing.contentMode, scaling: sizing.scaling,
            maxPixels: maxPixels, maxFrames: maxFrames, priority: priority, headers: headers, cachePolicy: cachePolicy,
            diskStorage: diskStorage, processors: processors, key: key)
    }

    /// Equal when every field is, processors compared by identifier.
    public static func == (lhs: ImageRequest, rhs: ImageRequest) -> Bool {
        lhs.url == rhs.url && lhs.options == rhs.options && lhs.cacheKey == rhs.cacheKey
            && lhs.priority == rhs.priority && lhs.headers == rhs.headers && lhs.cachePolicy == rhs.cachePolicy
            && lhs.diskStorage == rhs.diskStorage && lhs.processors.keyPart == rhs.processors.keyPart
            && lhs.wantsPreviews == rhs.wantsPreviews && lhs.cacheClass == rhs.cacheClass && lhs.timeout == rhs.timeout
            && lhs.retryPolicy == rhs.retryPolicy && lhs.colorManagement == rhs.colorManagement
            && lhs.resizeQuality == rhs.resizeQuality
    }

    /// Hashes the URL and the cache key (which names the processors).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(url)
        hasher.combine(cacheKey)
    }
}

/// What a loader fills in for the settings its requests leave nil
/// (``ImageRequest/colorManagement``, ``ImageRequest/resizeQuality``): its
/// configuration's, applied once as a request comes in.
struct RequestDefaults: Sendable, Hashable {
    var colorManagement: ColorManagement
    var resizeQuality: ResizeQuality
}
