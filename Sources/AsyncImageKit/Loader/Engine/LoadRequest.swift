import Foundation
import Logging

/// One call of `loadImage` (or `image(for:)`): its own target, actions,
/// priority and outcome. ``ImageTask`` is its public face.
///
/// Every request ends in exactly one of: delivered (success or failure,
/// with a notification), or cancelled (silently). The loader's lock guards
/// every mutable field.
final class LoadRequest: @unchecked Sendable {
    enum State {
        case pending, delivered, cancelled
    }

    /// Increasing: a later `loadImage` call has a larger id.
    var id: UInt64 = 0
    let request: ImageRequest
    /// Starts as the request's; ``ImageTask/priority`` changes it.
    var priority: ImagePriority
    let target: WeakTarget?
    /// The callbacks below are let go when the request ends (see
    /// ``takeCallbacks()``): an ``ImageTask`` kept by its caller does not keep
    /// the actions, and what they capture, alive.
    private(set) var success: ImageAction?
    private(set) var failure: ImageFailureAction?
    /// Called (outside the loader's lock) when the request is cancelled, by
    /// whatever API; `image(for:)` turns it into `CancellationError`.
    private(set) var onCancelled: (@Sendable () -> Void)?
    /// For the async API: receives the outcome on the loader's own thread,
    /// at the moment the request is marked delivered (the notification then
    /// goes through the delivery queue), so no queue has to be serviced.
    private(set) var completion: (@Sendable (Result<ImageResponse, AsyncImageError>) -> Void)?
    /// The action name that identifies it: the success action's, else the failure action's.
    let actionName: String
    /// Made by an ``ImagePrefetcher``: its transfers are capped while visible requests wait.
    let isPrefetch: Bool
    /// Told (under the lock) when the request ends, delivered or not: how a
    /// sequence learns that its member ended.
    var onEnd: ((LoadRequest, inout LoaderState, inout Effects) -> Void)?
    /// Run once its delivery has run (on the delivery queue, after its
    /// notification and action): how a sequence starts its next member only
    /// after the one before it was delivered. Set under the lock, by `onEnd`.
    var afterDelivery: (@Sendable () -> Void)?

    var state = State.pending
    /// Fires when its time limit passes (``ImageRequest/timeout``); nil
    /// without one. Cancelled when the request ends (see ``RequestDeadline``).
    var deadline: DispatchSourceTimer?
    /// When that limit passes (nil: no limit): a retry that would start
    /// later is not waited for (see ``RetryPolicy``).
    var deadlineTime: DispatchTime?
    /// How its transfer is tried again: its own policy, else the loader's
    /// when it was made (set as it is admitted, before it joins a job).
    var retryPolicy: RetryPolicy
    /// The job loading it; nil once its outcome is scheduled for delivery.
    var job: LoadJob?
    /// Its unit in the transfer queue (its target and action's lane, or its own).
    var lane: Lane?
    /// The cache the loader had when the request was made: its image goes
    /// there (nil too with ``ImageCachePolicy/skipMemoryWrites``).
    let cache: (any ImageCaching)?
    /// The cache its memory hit came from, if it was one.
    let heldIn: (any ImageCaching)?
    /// Where its image came from, and whether it is stale (set before its delivery).
    var source = ImageResponse.Source.network
    var isStale = false
    var http: ImageResponse.HTTPInfo?
    var earlyEnd: ImageResponse.EarlyEnd?
    /// The encoding its caller will write the image in
    /// (``AsyncImageLoader/encodedImage(for:encoding:)``); and the bytes
    /// made for it by the store stage (a stored thumbnail's own, or made
    /// once for the disk and it), set before its delivery.
    let encoding: ImageEncoding?
    var encoded: EncodedPayload?
    /// The file's properties once probed (see ``ImageTask/fileProperties``),
    /// and who waits for them.
    @OutOfLine var fileProperties: ImageFileProperties?
    var propertyHandlers: [@Sendable (ImageFileProperties) -> Void] = []
    /// Who waits for progressive previews (see ``ImageTask/onPreview(_:)``).
    var previewHandlers: [@Sendable (Image) -> Void] = []
    /// The newest preview made while no handler was there yet (a preview can
    /// be ready before the caller that made the request adds its handler):
    /// the first handler added gets it at once.
    var unclaimedPreview: Image?

    /// Its response, once its image is known.
    func response(_ image: Image) -> ImageResponse {
        var response = ImageResponse(
            image: image, url: request.url, source: source, isStale: isStale, http: http, earlyEnd: earlyEnd)
        response.encoded = encoded
        return response
    }
    /// Made by the loader after a stale delivery
    /// (``ImageCachePolicy/returnStaleWhileRevalidating``): delivered only
    /// when the revalidation brought a new image; otherwise it ends silently.
    var deliversOnlyIfChanged = false

    /// `cache`: the loader's memory cache when the request is made;
    /// `isHit`: whether its image was found there.
    init(
        request: ImageRequest, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction?,
        cache: (any ImageCaching)?, isHit: Bool = false, isPrefetch: Bool = false, onCancelled: (@Sendable () -> Void)? = nil,
        encoding: ImageEncoding? = nil, completion: (@Sendable (Result<ImageResponse, AsyncImageError>) -> Void)? = nil
    ) {
        self.encoding = encoding
        self.request = request
        self.priority = request.priority
        self.retryPolicy = request.retryPolicy ?? .standard
        self.target = target.map(WeakTarget.init)
        self.success = success
        self.failure = failure
        self.actionName = success?.name ?? failure?.name ?? ""
        self.cache = request.cachePolicy.contains(.skipMemoryWrites) ? nil : cache
        self.heldIn = isHit ? cache : nil
        self.isPrefetch = isPrefetch
        self.onCancelled = onCancelled
        self.completion = completion
    }

    /// The URL's key in the loader's tables.
    var urlKey: String { request.url.absoluteString }

    /// The image's identity: its URL, or the request's own key.
    var identityKey: String { request.cacheKey.url }

    /// The key of the transfer it may share: its URL, its headers, its
    /// cache policy's transfer part, and its retry policy (one transfer
    /// retries for all its requests, so they must agree on how).
    var jobKey: String {
        let policy = request.cachePolicy.intersection(LoadJob.transferPolicy)
        let retries = retryPolicy == .standard ? "" : "\n#retry " + retryPolicy.keyPart
        guard !policy.isEmpty || !request.headers.isEmpty || !retries.isEmpty else { return identityKey }
        return identityKey + "\n" + String(policy.rawValue) + LoadRequest.encode(request.headers) + retries
    }

    /// The key of its response in the disk cache (see ``diskKey(for:)``).
    var diskKey: String { Self.diskKey(for: request) }

    /// The disk cache's key for `request`'s response: its URL (the image's
    /// identity), and its `Authorization` header if it has one. Other request
    /// headers matter only through the response's `Vary` (RFC 9111 §4.1);
    /// `Authorization` stays in the key so that a response fetched with one
    /// user's credentials is never even looked at for another's (a
    /// deviation from RFC 9111, which keys on the URL alone, documented in
    /// <doc:DiskCache>).
    static func diskKey(for request: ImageRequest) -> String {
        let authorization = request.headers.filter { $0.key.lowercased() == "authorization" }
        return request.cacheKey.url + encode(authorization)
    }

    /// Headers in one unambiguous string: each name and value length-prefixed,
    /// names lowercased, in order.
    static func encode(_ headers: [String: String]) -> String {
        headers.map { ($0.key.lowercased(), $0.value) }.sorted { $0.0 < $1.0 }
            .map { "\n\($0.0.utf8.count):\($0.0)\($0.1.utf8.count):\($0.1)" }.joined()
    }

    /// Waiting in the queue: pending, and its job not started.
    var isQueued: Bool { state == .pending && job?.isQueued == true }

    /// The per-target queue it joins, if it has a target.
    var targetKey: TargetKey? {
        target.map { TargetKey(target: $0.id, action: actionName) }
    }

    /// The request's callbacks, taken (under the lock) when it ends; the
    /// caller runs what it needs and releases them after the lock.
    struct Callbacks {
        let success: ImageAction?
        let failure: ImageFailureAction?
        let onCancelled: (@Sendable () -> Void)?
        let completion: (@Sendable (Result<ImageResponse, AsyncImageError>) -> Void)?
        let propertyHandlers: [@Sendable (ImageFileProperties) -> Void]
        let previewHandlers: [@Sendable (Image) -> Void]
        let afterDelivery: (@Sendable () -> Void)?
    }

    func takeCallbacks() -> Callbacks {
        defer {
            (success, failure, onCancelled, completion, afterDelivery) = (nil, nil, nil, nil, nil)
            propertyHandlers = []
            previewHandlers = []
        }
        return Callbacks(
            success: success, failure: failure, onCancelled: onCancelled, completion: completion,
            propertyHandlers: propertyHandlers, previewHandlers: previewHandlers, afterDelivery: afterDelivery)
    }

    /// Whether it was made with a target that has since been deallocated (a
    /// live target is parked in `keep`).
    func targetIsDead(_ keep: inout KeepAlive) -> Bool {
        guard let target else { return false }
        return !target.isAlive(&keep)
    }

    /// Whether its target is `object` (the target read is parked in `keep`).
    func targets(_ object: AnyObject, _ keep: inout KeepAlive) -> Bool {
        target?.refers(to: object, &keep) == true
    }
}

extension LoadRequest {
    /// What the loader's lines about this request carry: its URL, and the
    /// caller's ``ImageRequest/logMetadata`` (which wins on a clash).
    var logMetadata: Logger.Metadata {
        ["url": "\(request.url.absoluteString)"].merging(request.logMetadata) { $1 }
    }
}
