import Foundation
import Logging

/// The delivery stage: where a request's outcome becomes a notification and
/// an action (on the delivery queue, in order), or resumes an async caller
/// (at once, on the loader's own thread). Delivering a request supersedes
/// the earlier requests of its target and action (``RequestTable``'s rule,
/// applied in `markDelivered`), and ends it in the request table.
extension AsyncImageLoader {
    /// Under the lock: schedules the delivery of `outcome`, made by `job`, to
    /// `record` (which has left the job), with where it came from. A stale
    /// image shown while revalidating (``Staleness/revalidationFollows``)
    /// brings a follow-up request on the same target and actions
    /// (``ImageCachePolicy/returnStaleWhileRevalidating``), delivered only if
    /// the image changed.
    func deliver(
        _ record: LoadRequest, from job: LoadJob, _ outcome: Result<Image, AsyncImageError>,
        _ state: inout LoaderState, _ effects: inout Effects
    ) {
        record.source = job.disk.bodyFromDisk ? .diskCache : .network
        record.isStale = job.disk.staleness.isStale
        record.earlyEnd = job.earlyEnd
        // Its HTTP response, as a cache returns it: from the network, or
        // stored (with `Age`, and a confirming 304's headers merged in).
        if job.response.statusCode != 0, let finalURL = job.response.finalURL, !job.url.isFileURL {
            record.http = ImageResponse.HTTPInfo(
                finalURL: finalURL, statusCode: job.response.statusCode, headers: job.response.headers,
                isRevalidated: job.response.revalidated)
        }
        if record.deliversOnlyIfChanged, job.disk.bodyFromDisk || outcome.isFailure {
            // The image shown is still the server's (a 304), or there is
            // nothing better to show: nothing more to deliver.
            cancelRecord(record, &state, &effects)
            return
        }
        if job.disk.staleness.revalidationFollows, case .success = outcome,
            record.request.cachePolicy.contains(.returnStaleWhileRevalidating), record.completion == nil,
            !record.isPrefetch
        {
            followUp(record, &state, &effects)
        }
        // Where its image is held: its cache, unless the response may be
        // stored nowhere (`no-store`: the decode stage kept it in no cache).
        scheduleDelivery(record, outcome, cache: job.response.forbidsStorage ? nil : record.cache, &state, &effects)
    }

    /// Queues the revalidation that follows `record`'s stale delivery: the
    /// same request (past the memory cache, which holds the stale image),
    /// target and actions, in the same lane, after it.
    private func followUp(_ record: LoadRequest, _ state: inout LoaderState, _ effects: inout Effects) {
        let object = record.target?.object
        guard record.target == nil || object != nil else { return }
        // Something newer was set on the target meanwhile: it wins, and no
        // fresher copy of this image may come after it.
        if state.requests.isSuperseded(record, &effects.keep) { return }
        var request = record.request
        request.cachePolicy.remove(.returnStaleWhileRevalidating)
        request.cachePolicy.insert(.skipMemoryReads)
        let next = LoadRequest(
            request: request, target: object, success: record.success, failure: record.failure, cache: record.cache)
        next.deliversOnlyIfChanged = true
        add(next, object: object, memory: .miss, &state, &effects)
    }

    /// Under the lock: `job`'s file properties are known; its requests (and
    /// those that join later) have them, and their handlers run after the lock.
    func propertiesKnown(_ job: LoadJob, _ properties: ImageFileProperties) {
        mutate { state, effects in
            guard job.fileProperties == nil else { return }
            job.fileProperties = properties
            for record in job.orderedRequests where record.fileProperties == nil {
                record.fileProperties = properties
                let handlers = record.propertyHandlers
                record.propertyHandlers = []
                effects.append { handlers.forEach { $0(properties) } }
            }
        }
    }

    /// Schedules the delivery of `outcome` to `record` (whose job, if any,
    /// it has left). `cache`: where its image is held, for the notification.
    /// `inline`: deliver right after the lock, on the calling thread (a cache
    /// hit made on the delivery queue).
    func scheduleDelivery(
        _ record: LoadRequest, _ outcome: Result<Image, AsyncImageError>, cache: (any ImageCaching)?,
        inline: Bool = false, _ state: inout LoaderState, _ effects: inout Effects
    ) {
        StageWalk.note(.delivery, .up, record.request.url)
        let heldIn: (any ImageCaching)? = if case .success = outcome { cache } else { nil }
        if let completion = record.completion, record.state == .pending {
            // The async API: decided now, under the lock, so a task cancelled
            // from here on still gets this outcome and the notification is
            // posted; a task cancelled before this point posts nothing.
            let response = outcome.map { record.response($0) }
            // Prefetches post nothing; the prefetcher hears of its request
            // before the `.delivered` event does (an observer of events then
            // finds the prefetcher done with it).
            if record.isPrefetch { effects.append { completion(response) } }
            markDelivered(record, outcome, &state, &effects)
            let callbacks = record.takeCallbacks()
            defer {
                // Once the caller has its outcome (and after the effects below).
                effects.append {
                    callbacks.afterDelivery?()
                    withExtendedLifetime(callbacks) {}
                }
            }
            guard !record.isPrefetch else { return }
            // Nothing is posted without a center: the delivery queue is then
            // never asked (a service need not run one).
            guard state.notificationCenter != nil else {
                effects.append { completion(response) }
                return
            }
            let post = notification(for: record, outcome, heldIn, target: nil, &state)
            let queue = state.deliveryQueue
            let watched = watch(queue, &state, &effects)
            effects.append {
                // Handed to the queue before the caller resumes: once it has
                // its image, the notification is on its way.
                queue.async {
                    self.unwatch(watched)
                    post()
                }
                completion(response)
            }
            return
        }
        if inline {
            effects.append { self.runDelivery(record, outcome, heldIn, watched: false) }
            return
        }
        let queue = state.deliveryQueue
        let watched = watch(queue, &state, &effects)
        effects.append {
            queue.async { self.runDelivery(record, outcome, heldIn, watched: watched) }
        }
    }

    /// On the delivery queue: the notification, then the action, unless
    /// cancelled meanwhile or the target is gone; then what was to follow
    /// the delivery (``LoadRequest/afterDelivery``).
    private func runDelivery(
        _ record: LoadRequest, _ outcome: Result<Image, AsyncImageError>, _ cache: (any ImageCaching)?, watched: Bool
    ) {
        unwatch(watched)
        let ready = mutate { state, effects -> (target: AnyObject?, post: NotificationPost, callbacks: LoadRequest.Callbacks)? in
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
            self.markDelivered(record, outcome, &state, &effects)
            return (target, self.notification(for: record, outcome, cache, target: target, &state), record.takeCallbacks())
        }
        guard let ready else { return }
        DeliveryDepth.inside {
            ready.post()
            let url = record.request.url
            switch outcome {
            case .success(let image): ready.callbacks.success?.run(ready.target, record.response(image))
            case .failure(let error): ready.callbacks.failure?.handler(ready.target, error, url)
            }
        }
        // Only now, with the notification posted and the action run: a
        // sequence's next member starts here.
        ready.callbacks.afterDelivery?()
        withExtendedLifetime(ready) {}
    }

    /// Ends `record` delivered: the lane's earlier requests are superseded,
    /// a sequence is told (it goes on after the delivery has run), freed
    /// slots are refilled.
    private func markDelivered(
        _ record: LoadRequest, _ outcome: Result<Image, AsyncImageError>, _ state: inout LoaderState,
        _ effects: inout Effects
    ) {
        guard record.state == .pending else { return }
        // A delivered request supersedes every earlier one on its target and action.
        for earlier in state.requests.superseded(by: record) { cancelRecord(earlier, &state, &effects) }
        end(record, as: .delivered, &state, &effects)
        switch outcome {
        case .success: report(.delivered(success: true), [record], &state, &effects, source: record.source)
        case .failure(let error): report(.delivered(success: false), [record], &state, &effects, error: error)
        }
        if let onEnd = record.onEnd {
            record.onEnd = nil
            onEnd(record, &state, &effects)
        }
        pump(&state, &effects)
    }

    /// The post of `record`'s notification, to run after the lock.
    private func notification(
        for record: LoadRequest, _ outcome: Result<Image, AsyncImageError>, _ cache: (any ImageCaching)?,
        target: AnyObject?, _ state: inout LoaderState
    ) -> NotificationPost {
        NotificationPost(
            center: state.notificationCenter, url: record.request.url, outcome: outcome.map { record.response($0) },
            cache: cache, target: target)
    }
}

/// A `didFinish`/`didFail` notification, made under the loader's lock and
/// posted after it. (`@unchecked`: the target and the center only cross to
/// the delivery queue, which posts.)
struct NotificationPost: @unchecked Sendable {
    /// nil: notifications are off.
    let center: NotificationCenter?
    let url: URL
    let outcome: Result<ImageResponse, AsyncImageError>
    let cache: (any ImageCaching)?
    let target: AnyObject?

    func callAsFunction() {
        guard let center else { return }
        switch outcome {
        case .success(let response):
            // Sized for all five keys up front: a literal of three grows
            // (rehashing every key) when the fourth is added, on the
            // delivery queue, which is a GTK program's main loop.
            var info = [AnyHashable: Any](minimumCapacity: 5)
            info[AsyncImageImageKey] = response.image
            info[AsyncImageURLKey] = url
            info[AsyncImageResponseKey] = response
            if let cache { info[AsyncImageCacheKey] = cache }
            if response.isStale { info[AsyncImageStaleKey] = true }
            center.post(name: .asyncImageLoadDidFinish, object: target, userInfo: info)
        case .failure(let error):
            center.post(
                name: .asyncImageLoadDidFail, object: target,
                userInfo: [AsyncImageErrorKey: error, AsyncImageURLKey: url])
        }
    }
}

extension AsyncImageLoader {

    // MARK: The main queue's watch

    /// Counts a delivery handed to `queue` if it is the main queue; the first
    /// one after the queue was idle arms a check. Returns whether it counted.
    private func watch(_ queue: DispatchQueue, _ state: inout LoaderState, _ effects: inout Effects) -> Bool {
        guard queue.label == DispatchQueue.main.label else { return false }
        state.mainQueueWatch.waiting += 1
        guard state.mainQueueWatch.waiting == 1, !state.mainQueueWatch.warned else { return true }
        let generation = state.mainQueueWatch.generation
        let delay = state.mainQueueWatch.threshold
        effects.append {
            self.timerQueue.asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.checkMainQueue(generation: generation, waited: delay)
            }
        }
        return true
    }

    private func unwatch(_ watched: Bool) {
        guard watched else { return }
        state.withLock { state in
            state.mainQueueWatch.waiting -= 1
            if state.mainQueueWatch.waiting == 0 { state.mainQueueWatch.generation &+= 1 }
        }
    }

    /// Warns once when deliveries to the main queue have waited `waited` seconds.
    private func checkMainQueue(generation: UInt64, waited: Double) {
        let (logger, waiting) = state.withLock { state -> (Logger?, Int) in
            let watch = state.mainQueueWatch
            guard watch.generation == generation, watch.waiting > 0, !watch.warned else { return (nil, 0) }
            state.mainQueueWatch.warned = true
            return (state.logger, watch.waiting)
        }
        logger?.warning(
            """
            \(waiting) image deliveries have waited \(waited) s for the main queue, which is not being serviced \
            (a service, or a tool without dispatchMain() or an async main). Pass a serial queue of your own: \
            AsyncImageLoader(deliveryQueue: DispatchQueue(label: "images")), or use the async API \
            (try await loader.image(for:)), which never waits for a queue.
            """)
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}

