import Foundation


/// Loads images for targets: the heart of AsyncImageView, rebuilt for Linux.
///
/// Requests wait in a LIFO queue; at most ``concurrentLoads`` transfers run
/// at once (libcurl), and each body is decoded completely (downsampled when
/// the request has a display size) on a background queue, one decode per
/// core. Results are delivered on ``deliveryQueue``: first a
/// `didFinish`/`didFail` notification on ``notificationCenter``, then the
/// request's action. ``eventMonitor`` sees every step.
///
/// ```swift
/// let show = ImageAction("show") { target, image, url in (target as? Cell)?.image = image }
/// AsyncImageLoader.shared.loadImage(thumbnailURL, target: cell, action: show)
/// AsyncImageLoader.shared.loadImage(fullURL, target: cell, action: show)   // shown after the thumbnail
/// AsyncImageLoader.shared.cancelLoadingImages(target: cell)                // cell reused: drop both
/// ```
///
/// What every request can rely on:
///
/// - **One outcome.** It ends in exactly one of: success (notification, then
///   success action), failure (notification, then failure action), or
///   cancelled (nothing at all).
/// - **One transfer per URL.** Requests for a URL that is queued or loading
///   join it, whatever their display size (the body is then decoded once per
///   size); each still gets its own callbacks and its own pixel limit. The
///   transfer is cancelled only when no request needs it any more.
/// - **Per-target order.** On one target and action, a URL set later
///   supersedes those set earlier: an earlier one may be shown first if it
///   arrives first, but once a later one has been delivered, earlier ones are
///   cancelled and never delivered, even when the later one was a cache hit.
/// - **Weak targets.** The loader never keeps a target alive. When a target is
///   deallocated its requests are dropped (their transfers cancelled unless
///   another request needs them) and no callback or notification mentions it.
/// - **Cache hits never wait** in the queue; failures are never cached.
///
/// Every method may be called from any thread.
public final class AsyncImageLoader: Sendable {
    /// The cache shared by ``shared`` and, by default, every other loader.
    public static let sharedCache = ImageCache()

    /// The shared loader (``sharedCache``, 2 concurrent loads, 60 s timeout,
    /// delivery on the main queue, `NotificationCenter.default`).
    public static let shared = AsyncImageLoader()

    private let state: Locked<LoaderState>
    private let decodeQueue = DispatchQueue(label: "AsyncImageKit.decode", qos: .userInitiated, attributes: .concurrent)
    /// Where finished transfers are handed over: its own thread, so a body
    /// reaches a free decoder even while the decode pool's threads are busy.
    private let transferQueue = DispatchQueue(label: "AsyncImageKit.transfers", qos: .userInitiated)
    private let timerQueue = DispatchQueue(label: "AsyncImageKit.loader-sweep")
    private let transport: TransportConfiguration

    /// Creates a loader.
    ///
    /// - Parameters:
    ///   - cache: where decoded images are kept; nil disables caching.
    ///   - concurrentLoads: the most transfers at once (see ``concurrentLoads``).
    ///   - loadingTimeout: seconds a transfer may take from its start.
    ///   - deliveryQueue: where notifications and actions run. The main queue
    ///     by default: a program that never runs it (a service, a tool without
    ///     `dispatchMain()` or an async `main`) should pass a serial queue of its own.
    ///   - notificationCenter: where `didFinish`/`didFail` are posted.
    ///   - transport: body-size and redirect limits (its timeout is replaced by `loadingTimeout`).
    public init(
        cache: ImageCache? = AsyncImageLoader.sharedCache, concurrentLoads: Int = 2, loadingTimeout: Double = 60,
        deliveryQueue: DispatchQueue = .main, notificationCenter: NotificationCenter = .default,
        transport: TransportConfiguration = TransportConfiguration()
    ) {
        self.transport = transport
        state = Locked(
            LoaderState(
                cache: cache, concurrentLoads: max(1, concurrentLoads), loadingTimeout: loadingTimeout,
                deliveryQueue: deliveryQueue, notificationCenter: notificationCenter))
    }

    // MARK: Settings

    /// Where decoded images are kept (nil: no caching). A change affects later requests only.
    public var cache: ImageCache? {
        get { state.withLock { $0.cache } }
        set { replace(\.cache, with: newValue) }
    }

    /// The most transfers in flight at once (default 2): a true cap. A transfer
    /// keeps its slot until a decoder takes its body, so bodies never pile up
    /// undecoded; decodes run one per core while the next transfers proceed.
    public var concurrentLoads: Int {
        get { state.withLock { $0.concurrentLoads } }
        set { mutate { state, effects in
            state.concurrentLoads = max(1, newValue)
            self.pump(&state, &effects)
        } }
    }

    /// Seconds a transfer may take from the moment it starts (default 60);
    /// time spent waiting in the queue does not count. Affects later transfers.
    /// Zero, a negative value, NaN or `.infinity` mean no time limit.
    public var loadingTimeout: Double {
        get { state.withLock { $0.loadingTimeout } }
        set { state.withLock { $0.loadingTimeout = newValue } }
    }

    /// Where notifications are posted and actions run (default: the main queue).
    /// Use a serial queue: per-target order is kept by running deliveries one at a time.
    public var deliveryQueue: DispatchQueue {
        get { state.withLock { $0.deliveryQueue } }
        set { replace(\.deliveryQueue, with: newValue) }
    }

    /// Where `didFinish`/`didFail` are posted (default `NotificationCenter.default`).
    public var notificationCenter: NotificationCenter {
        get { state.withLock { $0.notificationCenter } }
        set { replace(\.notificationCenter, with: newValue) }
    }

    /// Called with every ``LoaderEvent`` (from the loader's own threads and
    /// the callers', never under its lock; keep it quick, and never wait on
    /// the delivery queue from it: a caller may be inside an `imageURL` set). nil (the default) costs nothing. Steps
    /// made on different threads at once can arrive in either order:
    /// ``LoaderEvent/sequence`` gives the true order.
    public var eventMonitor: (@Sendable (LoaderEvent) -> Void)? {
        get { state.withLock { $0.eventMonitor } }
        set { replace(\.eventMonitor, with: newValue) }
    }

    /// A snapshot of what the loader is doing.
    public var activity: LoaderActivity {
        state.withLock {
            LoaderActivity(
                queued: $0.queue.count, inFlight: $0.inFlight, peakInFlight: $0.peakInFlight, decoding: $0.decoding,
                pendingRequests: $0.pending.count, delivered: $0.deliveredCount, cancelled: $0.cancelledCount)
        }
    }

    // MARK: Loading

    /// Loads `request` for `target` (nil for none), then calls `success` or `failure`.
    public func loadImage(
        _ request: ImageRequest, target: AnyObject? = nil, success: ImageAction? = nil,
        failure: ImageFailureAction? = nil
    ) {
        _ = enqueue(request, target: target, success: success, failure: failure)
    }

    /// Loads `url` at full size for `target` (nil for none), then calls `success` or `failure`.
    public func loadImage(
        _ url: URL, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction? = nil
    ) {
        loadImage(ImageRequest(url: url), target: target, success: success, failure: failure)
    }

    /// Loads `url` for `target` and calls `action` on success (failures only post `didFail`).
    public func loadImage(_ url: URL, target: AnyObject?, action: ImageAction) {
        loadImage(ImageRequest(url: url), target: target, success: action, failure: nil)
    }

    /// Loads `url` with no target (preloading into the cache; notifications are still posted).
    public func loadImage(_ url: URL) {
        loadImage(ImageRequest(url: url))
    }

    // MARK: Cancelling

    /// Cancels requests for `url` on `target` with `action` (matched by name).
    public func cancelLoading(url: URL, target: AnyObject, action: ImageAction) {
        let name = url.absoluteString
        cancel { record, keep in
            record.request.cacheKey.url == name && record.actionName == action.name && record.targets(target, &keep)
        }
    }

    /// Cancels requests for `url` on `target`, whatever their action.
    public func cancelLoading(url: URL, target: AnyObject) {
        let name = url.absoluteString
        cancel { record, keep in record.request.cacheKey.url == name && record.targets(target, &keep) }
    }

    /// Cancels every request for `url`, with or without a target.
    public func cancelLoading(url: URL) {
        let name = url.absoluteString
        cancel { record, _ in record.request.cacheKey.url == name }
    }

    /// Cancels every request on `target` with `action` (matched by name).
    public func cancelLoadingImages(target: AnyObject, action: ImageAction) {
        cancel { record, keep in record.actionName == action.name && record.targets(target, &keep) }
    }

    /// Cancels every request on `target`.
    public func cancelLoadingImages(target: AnyObject) {
        cancel { record, keep in record.targets(target, &keep) }
    }

    /// The most recent URL set for `target` and `action` that has not yet been delivered or cancelled.
    public func url(for target: AnyObject, action: ImageAction) -> URL? {
        mutate { state, effects in
            state.perTarget[TargetKey(target: ObjectIdentifier(target), action: action.name)]?
                .last { $0.state == .pending && $0.targets(target, &effects.keep) }?.request.url
        }
    }

    /// The most recent URL set for `target` (any action) not yet delivered or cancelled.
    public func url(for target: AnyObject) -> URL? {
        mutate { state, effects in
            state.pending.values.filter { $0.targets(target, &effects.keep) }.max { $0.id < $1.id }?.request.url
        }
    }

    // MARK: Internals

    /// Sets a setting; the old value's last release (a cache, a closure and
    /// what it captured) happens after the lock, where a `deinit` may call back in.
    private func replace<Value>(_ setting: WritableKeyPath<LoaderState, Value>, with newValue: Value) {
        var old = newValue
        state.withLock { swap(&$0[keyPath: setting], &old) }
        withExtendedLifetime(old) {}
    }

    /// Reports `kind` for `records` to the event monitor, after the lock is released.
    func report(_ kind: LoaderEvent.Kind, _ records: [LoadRequest], _ state: inout LoaderState, _ effects: inout Effects) {
        guard let monitor = state.eventMonitor, !records.isEmpty else { return }
        let time = ProcessInfo.processInfo.systemUptime
        let events = records.map {
            state.eventSequence += 1
            return LoaderEvent(
                requestID: $0.id, url: $0.request.url, target: $0.target?.id, kind: kind, time: time,
                sequence: state.eventSequence)
        }
        effects.append { events.forEach(monitor) }
    }

    /// Runs `body` under the lock, then the effects it collected (outside the lock).
    @discardableResult
    func mutate<T>(_ body: (inout LoaderState, inout Effects) -> T) -> T {
        var effects = Effects()
        let result = state.withLock { state in body(&state, &effects) }
        effects.run()
        return result
    }

    func enqueue(
        _ request: ImageRequest, target: AnyObject?, success: ImageAction?, failure: ImageFailureAction?,
        onCancelled: (@Sendable () -> Void)? = nil
    ) -> LoadRequest {
        let record = LoadRequest(
            id: 0, request: request, target: target, success: success, failure: failure, onCancelled: onCancelled)
        mutate { state, effects in
            state.nextID += 1
            record.id = state.nextID
            state.pending[record.id] = record
            if let key = record.targetKey { state.perTarget[key, default: []].append(record) }
            if let cache = state.cache, let image = cache.image(for: request.cacheKey) {
                self.report(.cacheHit, [record], &state, &effects)
                self.scheduleDelivery(record, Self.checked(image, for: record), fromCache: cache, &state, &effects)
                return
            }
            let job: LoadJob
            if let existing = state.jobs[request.url.absoluteString] {
                job = existing
            } else {
                job = LoadJob(url: request.url)
                state.jobs[job.key] = job
            }
            job.join(record, cache: state.cache)
            record.job = job
            self.report(.queued, [record], &state, &effects)
            // A request that joins late sees the steps it missed.
            switch job.phase {
            case .queued: state.queue.push(job)
            case .loading: self.report(.loading, [record], &state, &effects)
            case .awaitingDecoder(let data):
                self.report(.loading, [record], &state, &effects)
                self.report(.transferred(bytes: data.count), [record], &state, &effects)
            case .decoding(let data, let key):
                self.report(.loading, [record], &state, &effects)
                self.report(.transferred(bytes: data.count), [record], &state, &effects)
                // Its size is decoding now; otherwise `.decoding` comes when its size is next.
                if key == request.cacheKey { self.report(.decoding, [record], &state, &effects) }
            case .finished: break  // not reachable: a finished job has left `jobs`
            }
            self.pump(&state, &effects)
        }
        return record
    }

    func cancel(where matches: (LoadRequest, inout KeepAlive) -> Bool) {
        mutate { state, effects in
            for record in state.pending.values where matches(record, &effects.keep) {
                self.cancelRecord(record, &state, &effects)
            }
            self.pump(&state, &effects)
        }
    }

    /// Starts queued jobs while slots are free, most recent first.
    func pump(_ state: inout LoaderState, _ effects: inout Effects) {
        while state.inFlight < state.concurrentLoads, let job = state.queue.pop() {
            for record in job.requests where record.targetIsDead(&effects.keep) {
                cancelRecord(record, &state, &effects)
            }
            guard !job.requests.isEmpty, job.isQueued else { continue }
            start(job, &state)
            report(.loading, job.requests, &state, &effects)
        }
        updateSweepTimer(&state)
    }

    private func start(_ job: LoadJob, _ state: inout LoaderState) {
        state.inFlight += 1
        state.peakInFlight = max(state.peakInFlight, state.inFlight)
        var configuration = transport
        configuration.timeout = state.loadingTimeout
        let loader = DataLoader(configuration: configuration, completionQueue: transferQueue)
        let task = loader.loadData(from: job.url) { [weak self] result in
            self?.transferFinished(job, result)
        }
        job.phase = .loading(task)
    }

    /// On the transport's completion queue: a failure is delivered at once; a
    /// body waits for a decoder, keeping its transfer slot until one is free.
    private func transferFinished(_ job: LoadJob, _ result: Result<DataResponse, AsyncImageError>) {
        mutate { state, effects in
            guard !job.requests.isEmpty else {
                self.finish(job, &state)
                self.pump(&state, &effects)
                return
            }
            switch result {
            case .success(let response):
                self.report(.transferred(bytes: response.data.count), job.requests, &state, &effects)
                job.phase = .awaitingDecoder(response.data)
                state.awaitingDecoder.append(job)
                self.startDecodes(&state, &effects)
            case .failure(let error):
                self.finish(job, &state)
                self.deliverAll(job, .failure(error), &state, &effects)
            }
            self.pump(&state, &effects)
        }
    }

    /// Starts decodes while decoders are free, most recent body first; each
    /// start frees that job's transfer slot.
    private func startDecodes(_ state: inout LoaderState, _ effects: inout Effects) {
        while state.decoding < state.decoders, let job = state.awaitingDecoder.popLast() {
            guard case .awaitingDecoder(let data) = job.phase else { continue }
            state.inFlight -= 1
            state.decoding += 1
            guard let next = job.nextDecode() else {
                job.phase = .decoding(data, key: nil)
                state.decoding -= 1
                finish(job, &state)
                continue
            }
            job.phase = .decoding(data, key: next.key)
            report(.decoding, job.requests.filter { $0.request.cacheKey == next.key }, &state, &effects)
            effects.append { self.decodeQueue.async { self.decode(job, data, next.key, next.options) } }
        }
    }

    /// On the decode queue: decode one size of the job's body, cache it, and
    /// schedule the deliveries of the requests for that size; then the next
    /// size, while requests for other sizes remain (they may join meanwhile).
    private func decode(_ job: LoadJob, _ data: Data, _ key: ImageCacheKey, _ options: DecodingOptions) {
        var key = key
        var options = options
        while true {
            let url = job.url
            let outcome = Result { () throws(AsyncImageError) -> Image in
                try ImageDecoder().decode(data, options: options)
            }.mapError { $0.with(url: url) }
            // Stored before the deliveries are scheduled, and outside the
            // loader's lock (an eviction may release a large image).
            var stored = state.withLock { _ in job.caches[key] ?? [] }
            if case .success(let image) = outcome { stored.forEach { $0.setImage(image, for: key) } }
            let next = mutate { state, effects -> (key: ImageCacheKey, options: DecodingOptions)? in
                if case .success(let image) = outcome {
                    // A request that joined during the store brought another cache.
                    for cache in job.caches[key] ?? [] where !stored.contains(where: { $0 === cache }) {
                        stored.append(cache)
                        cache.setImage(image, for: key)
                    }
                }
                // A request that joined with a higher pixel limit than this
                // decode had is decoded again rather than failed by a lower one.
                func decodeAgain(_ record: LoadRequest) -> Bool {
                    guard case .failure(.decoding(let failure, _)) = outcome, failure.isPixelLimit else { return false }
                    return record.request.options.maxPixels > options.maxPixels
                }
                var delivered: Set<UInt64> = []
                for record in job.requests
                where record.request.cacheKey == key && record.state == .pending && !decodeAgain(record) {
                    record.job = nil
                    delivered.insert(record.id)
                    let result = outcome.flatMap { Self.checked($0, for: record) }
                    self.scheduleDelivery(record, result, fromCache: nil, &state, &effects)
                }
                job.requests.removeAll { delivered.contains($0.id) || $0.state != .pending }
                if let next = job.nextDecode() {
                    job.phase = .decoding(data, key: next.key)
                    self.report(.decoding, job.requests.filter { $0.request.cacheKey == next.key }, &state, &effects)
                    return next
                }
                state.decoding -= 1
                self.finish(job, &state)
                self.startDecodes(&state, &effects)
                self.pump(&state, &effects)
                return nil
            }
            guard let next else { return }
            (key, options) = next
        }
    }

    /// `image` for `record`, or a limits failure when the image is over the
    /// record's own pixel limit (it was decoded, or cached, for another request).
    static func checked(_ image: Image, for record: LoadRequest) -> Result<Image, AsyncImageError> {
        guard let failure = record.request.options.limitFailure(for: image) else { return .success(image) }
        return .failure(.decoding(failure, url: record.request.url))
    }

    private func deliverAll(
        _ job: LoadJob, _ outcome: Result<Image, AsyncImageError>, _ state: inout LoaderState, _ effects: inout Effects
    ) {
        for record in job.requests where record.state == .pending {
            record.job = nil
            scheduleDelivery(record, outcome, fromCache: nil, &state, &effects)
        }
        job.requests = []
    }

    /// Releases a job's slot (if it held one) and forgets it.
    private func finish(_ job: LoadJob, _ state: inout LoaderState) {
        switch job.phase {
        case .loading, .awaitingDecoder: state.inFlight -= 1
        case .queued, .decoding, .finished: break
        }
        job.phase = .finished
        if state.jobs[job.key] === job { state.jobs[job.key] = nil }
    }

    private func scheduleDelivery(
        _ record: LoadRequest, _ outcome: Result<Image, AsyncImageError>, fromCache cache: ImageCache?,
        _ state: inout LoaderState, _ effects: inout Effects
    ) {
        let queue = state.deliveryQueue
        effects.append {
            queue.async { self.deliver(record, outcome, fromCache: cache) }
        }
    }

    /// On the delivery queue: the notification, then the action, unless cancelled meanwhile.
    private func deliver(_ record: LoadRequest, _ outcome: Result<Image, AsyncImageError>, fromCache cache: ImageCache?) {
        let ready = mutate { state, effects -> Delivery? in
            guard record.state == .pending else { return nil }
            var target: AnyObject?
            if let weak = record.target {
                guard let live = weak.object else {
                    self.cancelRecord(record, &state, &effects)
                    self.pump(&state, &effects)
                    return nil
                }
                target = live
            }
            record.state = .delivered
            state.deliveredCount += 1
            state.pending[record.id] = nil
            if let key = record.targetKey, let queue = state.perTarget[key] {
                // A delivered request supersedes every earlier one on this target and action.
                for earlier in queue where earlier.id < record.id && earlier.state == .pending {
                    self.cancelRecord(earlier, &state, &effects)
                }
                state.removeFromTarget(record, key)
            }
            if case .success = outcome {
                self.report(.delivered(success: true), [record], &state, &effects)
            } else {
                self.report(.delivered(success: false), [record], &state, &effects)
            }
            self.pump(&state, &effects)
            return Delivery(target: target, center: state.notificationCenter)
        }
        guard let ready else { return }
        let url = record.request.url
        switch outcome {
        case .success(let image):
            var info: [AnyHashable: Any] = [AsyncImageImageKey: image, AsyncImageURLKey: url]
            if let cache { info[AsyncImageCacheKey] = cache }
            ready.center.post(name: .asyncImageLoadDidFinish, object: ready.target, userInfo: info)
            record.success?.handler(ready.target, image, url)
        case .failure(let error):
            ready.center.post(
                name: .asyncImageLoadDidFail, object: ready.target,
                userInfo: [AsyncImageErrorKey: error, AsyncImageURLKey: url])
            record.failure?.handler(ready.target, error, url)
        }
        withExtendedLifetime(ready) {}
    }

    /// Marks a request cancelled and lets go of its job if nothing else needs it.
    func cancelRecord(_ record: LoadRequest, _ state: inout LoaderState, _ effects: inout Effects) {
        guard record.state == .pending else { return }
        record.state = .cancelled
        state.cancelledCount += 1
        state.pending[record.id] = nil
        report(.cancelled, [record], &state, &effects)
        effects.keep.park(record)  // its last release (and its closures') after the lock
        if let onCancelled = record.onCancelled { effects.append(onCancelled) }
        if let key = record.targetKey { state.removeFromTarget(record, key) }
        guard let job = record.job else { return }
        record.job = nil
        job.requests.removeAll { $0 === record }
        guard job.requests.isEmpty else { return }
        switch job.phase {
        case .queued:
            state.queue.remove(job)
            finish(job, &state)
        case .loading(let task):
            // If the transfer's handler was already claimed, transferFinished frees the slot.
            if task.cancelReportingSuccess() { finish(job, &state) }
        case .awaitingDecoder:
            state.awaitingDecoder.removeAll { $0 === job }
            finish(job, &state)
        case .decoding, .finished:
            break  // the decode finishes and its image is cached; nobody is told
        }
    }

    /// Drops requests whose targets have been deallocated (and their transfers).
    func sweepDeadTargets() {
        mutate { state, effects in
            for record in state.pending.values where record.job != nil && record.targetIsDead(&effects.keep) {
                self.cancelRecord(record, &state, &effects)
            }
            self.pump(&state, &effects)
        }
    }

    /// Keeps a timer sweeping for dead targets while there are jobs.
    private func updateSweepTimer(_ state: inout LoaderState) {
        let busy = state.inFlight > 0 || !state.queue.isEmpty || state.decoding > 0
        if busy, state.sweepTimer == nil {
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
            timer.setEventHandler { [weak self] in self?.sweepDeadTargets() }
            timer.resume()
            state.sweepTimer = timer
        } else if !busy, let timer = state.sweepTimer {
            timer.cancel()
            state.sweepTimer = nil
        }
    }

    /// A loader let go with requests still pending (only queued or
    /// transferring ones can be: decodes and deliveries keep it alive) ends
    /// them cancelled, silently, and stops their transfers, which would
    /// otherwise run on with nobody to finish them.
    deinit {
        let (timer, tasks, records) = state.withLock { state -> (DispatchSourceTimer?, [DataTask], [LoadRequest]) in
            let tasks = state.jobs.values.compactMap { job -> DataTask? in
                if case .loading(let task) = job.phase { return task }
                return nil
            }
            let records = Array(state.pending.values)
            for record in records {
                record.state = .cancelled
                record.job = nil
            }
            state.pending = [:]
            state.jobs = [:]
            state.perTarget = [:]
            state.awaitingDecoder = []
            return (state.sweepTimer, tasks, records)
        }
        timer?.cancel()
        tasks.forEach { $0.cancel() }
        records.forEach { $0.onCancelled?() }
    }
}

/// What an ``AsyncImageLoader`` is doing.
public struct LoaderActivity: Sendable, Hashable {
    /// Loads waiting for a slot.
    public let queued: Int
    /// Loads holding a transfer slot (transferring, or holding a body for a decoder).
    public let inFlight: Int
    /// The most loads ever in flight at once.
    public let peakInFlight: Int
    /// Decodes running now.
    public let decoding: Int
    /// Requests not yet delivered or cancelled.
    public let pendingRequests: Int
    /// Requests delivered so far (success or failure).
    public let delivered: Int
    /// Requests cancelled so far (explicitly, superseded, or their target gone).
    public let cancelled: Int
}

/// The loader's mutable state; guarded by its lock.
struct LoaderState {
    var cache: ImageCache?
    var concurrentLoads: Int
    var loadingTimeout: Double
    var deliveryQueue: DispatchQueue
    var notificationCenter: NotificationCenter
    var nextID: UInt64 = 0
    var pending: [UInt64: LoadRequest] = [:]
    /// Jobs by URL (absolute string).
    var jobs: [String: LoadJob] = [:]
    var queue = LIFOQueue()
    var inFlight = 0
    var peakInFlight = 0
    /// Jobs whose body waits for a decoder (each still holds a transfer slot).
    var awaitingDecoder: [LoadJob] = []
    /// Decodes running, at most `decoders`.
    var decoding = 0
    /// One decoder per core: decoding is CPU-bound.
    let decoders = max(1, ProcessInfo.processInfo.activeProcessorCount)
    var deliveredCount = 0
    var cancelledCount = 0
    var perTarget: [TargetKey: [LoadRequest]] = [:]
    var sweepTimer: DispatchSourceTimer?
    var eventMonitor: (@Sendable (LoaderEvent) -> Void)?
    /// The ``LoaderEvent/sequence`` of the last event made.
    var eventSequence: UInt64 = 0

    init(
        cache: ImageCache?, concurrentLoads: Int, loadingTimeout: Double, deliveryQueue: DispatchQueue,
        notificationCenter: NotificationCenter
    ) {
        self.cache = cache
        self.concurrentLoads = concurrentLoads
        self.loadingTimeout = loadingTimeout
        self.deliveryQueue = deliveryQueue
        self.notificationCenter = notificationCenter
    }

    mutating func removeFromTarget(_ record: LoadRequest, _ key: TargetKey) {
        guard var list = perTarget[key] else { return }
        list.removeAll { $0 === record || $0.state != .pending }
        perTarget[key] = list.isEmpty ? nil : list
    }
}

/// Work collected under the lock and run after it is released.
struct Effects {
    private var actions: [() -> Void] = []
    /// Objects released only after the lock (see ``KeepAlive``).
    var keep = KeepAlive()

    mutating func append(_ action: @escaping () -> Void) { actions.append(action) }

    func run() { actions.forEach { $0() } }
}

/// What a delivery needs once the lock is released.
private struct Delivery {
    let target: AnyObject?
    let center: NotificationCenter
}
