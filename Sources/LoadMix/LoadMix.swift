import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP

/// A loader under load, as the load test and the soak drive it: requests
/// from several threads at once to a loopback server of small real images,
/// with random cancels by every API (by URL, by target, by target and
/// action, by URL and target, ``ImageTask/cancel()``, a Swift task's
/// cancellation, ``ImagePrefetcher/stopPrefetching()``,
/// ``ImageSequenceTask/cancel()``), target deallocations, memory-cache purges,
/// setting changes and re-ranking, all chosen by a seeded generator.
///
/// As it runs it checks what every request may rely on (see
/// ``LoadReport/failures``): exactly one end per request in the loader's
/// events, exactly one callback per completed request and none per cancelled
/// one, a notification right before each action, no callback after a cancel
/// or to a dead target, per-target order, the right image or error, and the
/// in-flight cap (the loader's count and the server's).
///
/// Its own bookkeeping stays bounded however long it runs (the soak runs it
/// for minutes).
public final class LoadMix: @unchecked Sendable {
    /// The loopback server.
    public let server: LoadImageServer
    /// The loader under load.
    public let loader: AsyncImageLoader
    /// The loader's memory cache.
    public let cache: ImageCache
    /// The cap the mix was made with (setting changes stay at or below it).
    public let concurrentLoads: Int
    /// How many threads make requests.
    public let workers: Int
    let queue = DispatchQueue(label: "LoadMix.delivery")
    let center = NotificationCenter()
    let events = EventLedger()
    let outcomes = OutcomeLedger()
    let prefetchers: [ImagePrefetcher]
    private var observers: [NSObjectProtocol] = []
    /// The mix's rounds so far (each worker gets its own generator per round).
    private let rounds = Locked(0)

    /// Starts a server and a loader with `concurrentLoads` slots; `workers`
    /// threads will make the requests; with `link`, over an emulated link
    /// (a round trip and a rate, see ``LinkEmulator``).
    public init(concurrentLoads: Int, workers: Int = 4, link: LinkEmulator.Settings? = nil) throws {
        server = try LoadImageServer(link: link)
        cache = ImageCache()
        cache.countLimit = 100
        self.concurrentLoads = concurrentLoads
        self.workers = workers
        loader = AsyncImageLoader(
            cache: cache, concurrentLoads: concurrentLoads, loadingTimeout: 60, deliveryQueue: queue,
            notificationCenter: center)
        let loader = self.loader
        prefetchers = (0..<workers).map { _ in ImagePrefetcher(loader: loader) }
        let events = self.events
        loader.eventMonitor = { events.record($0) }
        let outcomes = self.outcomes
        observers = [Notification.Name.asyncImageLoadDidFinish, .asyncImageLoadDidFail].map { name in
            center.addObserver(forName: name, object: nil, queue: nil) { outcomes.posted($0) }
        }
    }

    deinit {
        observers.forEach(center.removeObserver)
        server.stop()
    }

    /// Requests the loader has been asked for so far (its request numbers).
    public var requestsMade: Int { Int(events.snapshot.highestID) }

    /// Runs the mix from ``workers`` threads until the loader has been asked
    /// for `requests` more requests, or until `deadline`; returns when every
    /// worker has stopped (requests may still be under way: see ``settle(timeout:)``).
    /// Each worker's generator is seeded from `seed`, the worker and the round.
    public func run(requests: Int, seed: UInt64, until deadline: Date = .distantFuture) {
        let round = rounds.withLock { value -> Int in
            value += 1
            return value
        }
        let budget = requestsMade + requests
        // Threads of their own: all of them run at once, whatever the number of cores.
        let done = DispatchGroup()
        for index in 0..<workers {
            done.enter()
            let thread = Thread {
                var worker = LoadWorker(
                    mix: self, index: index, round: round,
                    seed: seed &+ UInt64(index) &* 0x9E37_79B9 &+ UInt64(round) &* 0x85EB_CA6B)
                worker.run { self.requestsMade >= budget || Date() >= deadline }
                done.leave()
            }
            thread.name = "LoadMix.worker-\(index)"
            thread.start()
        }
        done.wait()
        loader.concurrentLoads = concurrentLoads
        loader.cache = cache
    }

    /// Waits (up to `timeout` seconds) until nothing is pending: no request,
    /// transfer, decode, async call or prefetch; then lets the delivery
    /// queue run dry and accounts for every finished request. False if time ran out.
    @discardableResult
    public func settle(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        var settled = false
        while Date() < deadline {
            let activity = loader.activity
            let async = outcomes.report.counts
            let asyncOpen = async.asyncStarted - async.asyncImages - async.asyncFailures - async.asyncCancelled
            if activity.pendingRequests == 0 && activity.inFlight == 0 && activity.decoding == 0 && asyncOpen == 0
                && prefetchers.allSatisfy({ $0.count == 0 }) && events.open == 0
            {
                settled = true
                break
            }
            usleep(2000)
        }
        sweep()
        return settled
    }

    /// Accounts for the requests that ended (on the delivery queue, after what is already there).
    func sweep() { queue.sync { outcomes.sweep() } }

    /// Empties the memory cache and gives free heap back to the kernel (as memory pressure does).
    public func clearCaches() {
        cache.removeAll()
        MemoryPressureMonitor.shared.purge()
        ProcessResources.trimHeap()
    }

    /// What the mix saw so far.
    public var report: LoadReport {
        let (eventCounts, highestID, watermark, eventProblems) = events.snapshot
        let (counts, outcomeProblems) = outcomes.report
        var problems = eventProblems
        problems.add(outcomeProblems)
        return LoadReport(
            concurrentLoads: concurrentLoads, requests: Int(highestID), endedInOrder: Int(watermark),
            events: eventCounts, outcomes: counts, activity: loader.activity, serverPeak: server.peakActive,
            prefetching: prefetchers.reduce(0) { $0 + $1.count }, openHandles: outcomes.openCount,
            violationCount: problems.count, violations: problems.first)
    }
}

/// What a ``LoadMix`` saw: counts, and what failed (see ``failures``).
public struct LoadReport: Sendable, CustomStringConvertible {
    let concurrentLoads: Int
    /// Requests the loader was asked for (its highest request number).
    public let requests: Int
    /// Requests 1 to this number have all ended.
    let endedInOrder: Int
    let events: EventLedger.Counts
    let outcomes: OutcomeLedger.Counts
    /// The loader's own counts.
    public let activity: LoaderActivity
    /// The most requests the server answered at once.
    public let serverPeak: Int
    /// Prefetches still under way.
    let prefetching: Int
    /// Requests with a handle not yet accounted for.
    let openHandles: Int
    /// Violations found while running.
    public let violationCount: Int
    /// The first violations, in full.
    public let violations: [String]

    /// Requests delivered (success or failure), by the loader's events.
    public var delivered: Int { events.delivered }
    /// Requests cancelled, by the loader's events.
    public var cancelled: Int { events.cancelled }
    /// Requests whose cancel or target's death forbade any callback from then on.
    public var forbidden: Int { outcomes.forbidden }

    /// Everything that must hold once the mix has settled; empty when all held.
    public var failures: [String] {
        var failures = violations
        if violationCount > violations.count { failures.append("... and \(violationCount - violations.count) more violations") }
        func check(_ holds: Bool, _ text: @autoclosure () -> String) { if !holds { failures.append(text()) } }
        check(activity.pendingRequests == 0, "\(activity.pendingRequests) requests left pending")
        check(activity.inFlight == 0 && activity.queued == 0, "\(activity.inFlight) in flight, \(activity.queued) queued at the end")
        check(
            events.delivered + events.cancelled == requests && endedInOrder == requests,
            "of \(requests) requests, \(events.delivered) delivered and \(events.cancelled) cancelled (every request up to \(endedInOrder) ended)")
        check(
            activity.delivered == events.delivered && activity.cancelled == events.cancelled,
            "the loader counts \(activity.delivered) delivered and \(activity.cancelled) cancelled, its events \(events.delivered) and \(events.cancelled)")
        check(activity.peakInFlight <= concurrentLoads, "peak in flight \(activity.peakInFlight), over the cap \(concurrentLoads)")
        // The loader's own count (above) is the exact check. The server's
        // runs from a request's arrival until its handler has returned from
        // the write, so a client that read the whole response, freed its
        // slot and sent its next request can be seen beside it for that
        // moment (once in a CI run under AddressSanitizer: 3 at a cap of 2,
        // the loader's count at 2). One over is that race. With these small
        // bodies the server rarely sees more than 3 at once whatever the cap,
        // so this is a cross-check at cap 2 only.
        check(
            serverPeak <= concurrentLoads + 1,
            "the server answered \(serverPeak) requests at once, over the cap \(concurrentLoads) (and its one-request margin)")
        check(openHandles == 0, "\(openHandles) requests with a handle neither completed nor cancelled")
        check(outcomes.posts == outcomes.callbacks, "\(outcomes.posts) notifications for \(outcomes.callbacks) actions")
        check(
            outcomes.callbacks + events.asyncDelivered <= events.delivered,
            "\(outcomes.callbacks) actions and \(events.asyncDelivered) async outcomes for \(events.delivered) deliveries")
        let asyncEnded = outcomes.asyncImages + outcomes.asyncFailures + outcomes.asyncCancelled
        check(outcomes.asyncStarted == asyncEnded, "\(outcomes.asyncStarted) async calls, \(asyncEnded) ended")
        check(
            outcomes.asyncImages + outcomes.asyncFailures == events.asyncDelivered,
            "\(outcomes.asyncImages + outcomes.asyncFailures) async results for \(events.asyncDelivered) async deliveries")
        check(
            outcomes.asyncCancelled >= events.asyncCancelled,
            "\(outcomes.asyncCancelled) async CancellationErrors for \(events.asyncCancelled) cancelled async requests")
        check(outcomes.asyncPosts == events.asyncDelivered, "\(outcomes.asyncPosts) async notifications for \(events.asyncDelivered) async deliveries")
        check(prefetching == 0, "\(prefetching) prefetches never ended")
        return failures
    }

    /// One line of counts.
    public var description: String {
        "cap \(concurrentLoads): \(requests) requests (\(outcomes.issued) with actions, \(outcomes.asyncStarted) async, "
            + "\(outcomes.sequences) sequences, the rest prefetches and sequence members): \(events.delivered) delivered "
            + "(\(events.succeeded) images), \(events.cancelled) cancelled, \(outcomes.forbidden) forbidden callbacks; "
            + "async \(outcomes.asyncImages) images, \(outcomes.asyncFailures) errors, \(outcomes.asyncCancelled) cancelled; "
            + "peak in flight \(activity.peakInFlight), server peak \(serverPeak); \(violationCount) violations"
    }
}
