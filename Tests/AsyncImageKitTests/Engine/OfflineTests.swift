@testable import AsyncImageKit
import Foundation
import ImageFixtures
import Logging
import TestSupport
import XCTest

/// Offline (issue 29, item 5; ``AsyncImageLoader/networkStatus``): through
/// the fake transport, a fake reachability the tests flip, a disk cache in
/// memory and a clock of their own. Offline, stored responses are served at
/// once (stale, marked stale), `must-revalidate` and `no-cache` ones and
/// misses fail with `.offline`, and no transfer starts; the reachability's
/// word and the transport's "no route" change the status, a probe tries
/// the network again after its wait, and each change is seen (the status,
/// its stream, a notice line). Nothing here sleeps: a transfer that should
/// not start would show in the fake's record.
final class OfflineTests: XCTestCase {
    /// A loader over the fake transport, answering `/img/N.png` with the
    /// headers of ``headers(_:)`` (a `304` to a matching `If-None-Match`),
    /// with a disk cache in memory (or none), no memory cache, and a clock.
    private final class Rig: @unchecked Sendable {
        let fake = FakeDataLoader()
        let reachability = FakeReachability()
        let store = MemoryDataStore()
        let logs = LogRecorder(level: .info)
        let clock = Box<Double>(1000)
        let loader: AsyncImageLoader

        init(disk: Bool = true, concurrentLoads: Int = 4, configure: (inout AsyncImageLoader.Configuration) -> Void = { _ in }) {
            let transport = AnsweringTransport(fake) { request, response in
                let headers = Rig.headers(Int(request.url.deletingPathExtension().lastPathComponent) ?? 0)
                if let tag = headers["etag"], request.header("If-None-Match") == tag {
                    return response.with(statusCode: 304, headers: headers, body: Data())
                }
                return response.with(statusCode: 200, headers: headers)
            }
            var configuration = AsyncImageLoader.Configuration(
                cache: nil, concurrentLoads: concurrentLoads, deliveryQueue: DispatchQueue(label: "offline delivery"),
                notificationCenter: nil, dataLoader: transport, diskCache: disk ? store : nil, logger: logs.logger)
            configuration.reachability = reachability
            configuration.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(1), jitter: .none)
            configure(&configuration)
            loader = AsyncImageLoader(configuration: configuration)
            let clock = self.clock
            loader.state.withLock { $0.networkClock = { clock.value! } }
            fake.isSuspended = false
        }

        /// `http://images.example/img/N.png`: beyond this machine (never
        /// fetched: the transport is fake).
        static func url(_ n: Int) -> URL { URL(string: "http://images.example/img/\(n).png")! }

        /// 1: stale at once, with an ETag; 2: the same and `must-revalidate`;
        /// 3: `no-cache`; 4: fresh for an hour; 5: stale, no validator;
        /// others as 1.
        static func headers(_ n: Int) -> [String: String] {
            let tag = ["etag": "\"v\(n)\"", "content-type": "image/png"]
            switch n {
            case 2: return tag.merging(["cache-control": "max-age=0, must-revalidate"]) { $1 }
            case 3: return tag.merging(["cache-control": "no-cache"]) { $1 }
            case 4: return ["cache-control": "max-age=3600", "content-type": "image/png"]
            case 5: return ["cache-control": "max-age=0", "content-type": "image/png"]
            default: return tag.merging(["cache-control": "max-age=0"]) { $1 }
            }
        }

        /// Loads `numbers` online, and waits until they are on disk.
        func store(_ numbers: [Int]) async throws {
            for n in numbers { _ = try await loader.image(for: Rig.url(n)) }
            await loader.flushDiskWrites()
        }

        var transfers: [String] { fake.startedPaths }
        var notices: [String] { logs.messages.filter { $0.level == .notice }.map(\.text) }
    }

    private func url(_ n: Int) -> URL { Rig.url(n) }

    private func assertOffline(_ expression: @autoclosure () async throws -> some Any, _ n: Int, file: StaticString = #filePath, line: UInt = #line) async {
        await XCTAssertThrowsErrorAsync(try await expression()) { error in
            XCTAssertEqual(error as? AsyncImageError, .offline(Rig.url(n)), file: file, line: line)
        }
    }

    // MARK: Offline by the reachability

    /// Stored responses are served at once, stale and marked stale (fresh
    /// ones not), whether they can be revalidated or not; no transfer starts.
    func testOfflineServesStoredResponsesAtOnceMarkedStale() async throws {
        let rig = Rig()
        try await rig.store([1, 4, 5])
        XCTAssertEqual(rig.transfers.count, 3)
        rig.reachability.isReachable = false
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability))
        let stale = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.source, .diskCache)
        XCTAssertEqual(stale.http?.statusCode, 200)
        XCTAssertEqual(stale.http?.isRevalidated, false)
        let fresh = try await rig.loader.response(for: ImageRequest(url: url(4)))
        XCTAssertFalse(fresh.isStale, "fresh is fresh, offline or not")
        let noValidator = try await rig.loader.response(for: ImageRequest(url: url(5)))
        XCTAssertTrue(noValidator.isStale)
        XCTAssertEqual(rig.transfers.count, 3, "no transfer while offline")
        // Returning stale offline is not a revalidation to follow (that is
        // `.returnStaleWhileRevalidating`'s): one delivery each.
        XCTAssertEqual(rig.loader.activity.pendingRequests, 0)
    }

    /// `must-revalidate` and `no-cache` are never served stale: the request
    /// fails with `.offline` at once, as a miss does (with or without a
    /// disk cache), as does a stale response for a `.neverStale` request.
    func testMustRevalidateNoCacheAndMissesFailOfflineAtOnce() async throws {
        let rig = Rig()
        try await rig.store([1, 2, 3])
        rig.reachability.isReachable = false
        let began = ProcessInfo.processInfo.systemUptime
        await assertOffline(try await rig.loader.image(for: url(2)), 2)
        await assertOffline(try await rig.loader.image(for: url(3)), 3)
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        await assertOffline(try await rig.loader.image(for: ImageRequest(url: url(1), cachePolicy: .neverStale)), 1)
        XCTAssertLessThan(ProcessInfo.processInfo.systemUptime - began, 5, "no timeout was waited for")
        XCTAssertEqual(rig.transfers.count, 3, "no transfer, no retry")

        // `.cachedOnly` keeps its own failure; with `.neverStale` it no
        // longer serves stale either.
        await XCTAssertThrowsErrorAsync(try await rig.loader.image(for: ImageRequest(url: url(9), cachePolicy: .cachedOnly))) {
            XCTAssertEqual($0 as? AsyncImageError, .notCached(self.url(9)))
        }
        await XCTAssertThrowsErrorAsync(
            try await rig.loader.image(for: ImageRequest(url: url(1), cachePolicy: [.skipNetwork, .neverStale]))
        ) { XCTAssertEqual($0 as? AsyncImageError, .notCached(self.url(1))) }

        let diskless = Rig(disk: false)
        diskless.reachability.isReachable = false
        await assertOffline(try await diskless.loader.image(for: url(1)), 1)
        XCTAssertEqual(diskless.transfers, [])
    }

    /// `file` URLs and hosts on this machine are never offline.
    func testLocalURLsAreNeverOffline() async throws {
        let rig = Rig()
        rig.reachability.isReachable = false
        for text in ["http://127.0.0.1/img/1.png", "http://localhost:8080/img/2.png", "http://[::1]/img/3.png"] {
            _ = try await rig.loader.image(for: URL(string: text)!)
        }
        XCTAssertEqual(rig.transfers, ["/img/1.png", "/img/2.png", "/img/3.png"])
        for (text, local) in [
            ("http://127.8.9.10/a", true), ("http://LOCALHOST./a", true), ("http://a.localhost/a", true),
            ("file:///tmp/a.png", true), ("http://[::ffff:127.0.0.1]/a", true), ("http://10.0.0.1/a", false),
            ("http://images.example/a", false), ("http://localhost.example/a", false),
        ] {
            XCTAssertEqual(NetworkState.isLocal(URL(string: text)!), local, text)
        }
    }

    /// The reachability's change notification puts the loader back
    /// online: the next request revalidates what was served stale (a
    /// `304`), and a miss loads.
    func testGoingOnlineResumesTheNetwork() async throws {
        let rig = Rig()
        try await rig.store([1])
        rig.reachability.isReachable = false
        let served1 = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served1.isStale)
        rig.reachability.isReachable = true
        XCTAssertEqual(rig.loader.networkStatus, .online)
        let revalidated = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertFalse(revalidated.isStale)
        XCTAssertEqual(revalidated.http?.isRevalidated, true)
        XCTAssertEqual(rig.fake.startedRequests.last?.header("If-None-Match"), "\"v1\"")
        _ = try await rig.loader.image(for: url(9))
        XCTAssertEqual(rig.transfers, ["/img/1.png", "/img/1.png", "/img/9.png"])
    }

    /// The status, its stream and the notice lines follow every change;
    /// the same word twice is no change.
    func testEachChangeIsSeenOnceInTheStatusTheStreamAndTheLog() async throws {
        let rig = Rig()
        var updates = rig.loader.networkStatusUpdates().makeAsyncIterator()
        let first = await updates.next()
        XCTAssertEqual(first, .online)
        rig.reachability.isReachable = false
        rig.reachability.isReachable = false
        rig.reachability.isReachable = true
        let second = await updates.next()
        let third = await updates.next()
        XCTAssertEqual([second, third], [.offline(.reachability), .online])
        rig.loader.networkStatusQueue.sync {}  // the lines are told there
        XCTAssertEqual(
            rig.notices,
            [
                "offline: the network is unreachable; requests are answered from the disk cache until it returns, "
                    + "and one tries the network in 1 s",
                "online: the network is reachable",
            ])
        XCTAssertEqual(NetworkStatus.offline(.transfer).description, "offline (transfer)")
        XCTAssertFalse(NetworkStatus.offline(.reachability).isOnline)
    }

    /// A loader made while the reachability says "unreachable" starts offline.
    func testALoaderMadeOfflineStartsOffline() async throws {
        let reachability = FakeReachability(reachable: false)
        let loader = AsyncImageLoader(
            configuration: .init(cache: nil, deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil, dataLoader: FakeDataLoader()))
        XCTAssertEqual(loader.networkStatus, .online, "the system's word here")
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil, dataLoader: FakeDataLoader())
        configuration.reachability = reachability
        weak var weakLoader: AsyncImageLoader?
        do {
            let offline = AsyncImageLoader(configuration: configuration)
            weakLoader = offline
            XCTAssertEqual(offline.networkStatus, .offline(.reachability))
            XCTAssertEqual(reachability.observerCount, 1)
            await assertOffline(try await offline.image(for: url(1)), 1)
        }
        XCTAssertNil(weakLoader)
        XCTAssertEqual(reachability.observerCount, 0, "a released loader stops listening")
        withExtendedLifetime(loader) {}
        // An observation is cancelled once, by `cancel()` or its release.
        let cancels = Counter()
        let observation = ReachabilityObservation { _ = cancels.increment() }
        observation.cancel()
        observation.cancel()
        do { _ = ReachabilityObservation { _ = cancels.increment() } }
        XCTAssertEqual(cancels.value, 2)
    }

    /// The events of a request served offline, and of one that fails.
    func testEventsOfOfflineRequests() async throws {
        let rig = Rig()
        try await rig.store([1])
        rig.reachability.isReachable = false
        let events = EventLog(rig.loader)
        _ = try await rig.loader.image(for: url(1))
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        let (served, failed) = (events.ids[0], events.ids[1])
        XCTAssertEqual(
            events.kinds(of: served),
            [.queued, .loading, .diskRead(hit: true), .transferred(bytes: events.bytes), .decoding, .delivered(success: true)])
        XCTAssertEqual(events.all.last { $0.requestID == served }?.source, .diskCache)
        XCTAssertEqual(
            events.kinds(of: failed), [.queued, .loading, .diskRead(hit: false), .transferFailed, .delivered(success: false)])
        XCTAssertEqual(events.all.last?.error, .offline(url(9)))
    }

    // MARK: Transfers under way

    /// A transfer in flight when the network goes down is not cancelled,
    /// and does not hold up the queue: a request for another URL is
    /// served from disk although the only slot is taken, one for the same
    /// URL gets a job of its own (and fails at once: nothing stored), and
    /// the first request still gets its image when its transfer completes.
    func testQueuedRequestsDoNotWaitBehindTransfersInFlight() async throws {
        let rig = Rig(concurrentLoads: 1)
        try await rig.store([1])
        rig.fake.isSuspended = true
        async let early = rig.loader.image(for: Rig.url(7))
        await fulfillment(of: [rig.fake.starts(2, self)], timeout: 10)
        rig.reachability.isReachable = false
        let served2 = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served2.isStale)
        await assertOffline(try await rig.loader.image(for: url(7)), 7)
        XCTAssertEqual(rig.fake.cancelled, [], "not cancelled")
        XCTAssertEqual(rig.fake.running, ["/img/7.png"])
        rig.fake.isSuspended = false
        _ = try await early
        XCTAssertEqual(rig.transfers, ["/img/1.png", "/img/7.png"])
        XCTAssertEqual(rig.loader.activity.inFlight, 0)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability), "the reachability's word stands")
    }

    /// A transfer in flight that fails after the loader went offline is
    /// not retried: its requests are answered as offline ones (here the
    /// stale response it was revalidating).
    func testAFailureWhileOfflineIsAnsweredFromTheDiskWithoutARetry() async throws {
        let rig = Rig()
        try await rig.store([1])
        rig.fake.isSuspended = true
        async let revalidation = rig.loader.response(for: ImageRequest(url: Rig.url(1)))
        await fulfillment(of: [rig.fake.starts(2, self)], timeout: 10)
        rig.reachability.isReachable = false
        rig.fake.fail(url(1), with: .transport(url(1), code: 7, message: "Couldn't connect to server"))
        rig.fake.isSuspended = false
        let response = try await revalidation
        XCTAssertTrue(response.isStale)
        XCTAssertEqual(rig.transfers.count, 2, "no retry")
    }

    // MARK: Offline by a transfer's word, and the probe

    /// A transfer that finds no route takes the loader offline at once: its
    /// request (nothing stored) fails `.offline`, with no retry; a stored
    /// response is then served stale without a transfer; a revalidation
    /// that finds no route serves its stale response (marked stale), a
    /// `must-revalidate` one fails `.offline`.
    func testATransfersNoRouteTakesTheLoaderOffline() async throws {
        let rig = Rig()
        try await rig.store([1, 2])
        rig.fake.script(url(9), [.failure(.offline(url(9)))])
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.transfer))
        XCTAssertEqual(rig.transfers, ["/img/1.png", "/img/2.png", "/img/9.png"], "no retry")
        let served3 = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served3.isStale)
        await assertOffline(try await rig.loader.image(for: url(2)), 2)
        XCTAssertEqual(rig.transfers.count, 3)
        XCTAssertEqual(
            rig.notices,
            [
                "offline: a transfer found no route to the network; requests are answered from the disk cache, and one tries the network again in 1 s"
            ])

        // The same, when the failing transfer was a revalidation.
        let other = Rig()
        try await other.store([1, 2])
        other.fake.script(url(1), [.failure(.offline(url(1)))])
        let stale = try await other.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(other.loader.networkStatus, .offline(.transfer))
        other.reachability.isReachable = true  // a change: online again
        other.fake.script(url(2), [.failure(.offline(url(2)))])
        await assertOffline(try await other.loader.image(for: url(2)), 2)
        XCTAssertEqual(other.transfers, ["/img/1.png", "/img/2.png", "/img/1.png", "/img/2.png"])
    }

    /// Offline by a transfer's word, one request tries the network after
    /// 1 s (the clock is the test's); finding no route again doubles the
    /// wait; one at a time; any answer puts the loader online.
    func testAProbeTriesTheNetworkAgainWithBackoff() async throws {
        let rig = Rig()
        try await rig.store([1])
        rig.fake.script(url(9), [.failure(.offline(url(9)))])
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        XCTAssertEqual(rig.transfers.count, 2)

        rig.clock.value = 1000.9
        let served4 = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served4.isStale, "too early: from disk")
        XCTAssertEqual(rig.transfers.count, 2)

        // The probe: no route again. Its request is answered offline.
        rig.clock.value = 1001
        rig.fake.script(url(1), [.failure(.offline(url(1)))])
        let served5 = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served5.isStale)
        XCTAssertEqual(rig.transfers.count, 3)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.transfer))

        rig.clock.value = 1002.9
        await assertOffline(try await rig.loader.image(for: url(8)), 8)
        XCTAssertEqual(rig.transfers.count, 3, "the wait doubled: 2 s")

        // One probe at a time: while it runs, others are answered offline.
        rig.clock.value = 1003
        rig.fake.isSuspended = true
        async let probe = rig.loader.image(for: Rig.url(6))
        await fulfillment(of: [rig.fake.starts(4, self)], timeout: 10)
        let served6 = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served6.isStale)
        XCTAssertEqual(rig.transfers, ["/img/1.png", "/img/9.png", "/img/1.png", "/img/6.png"])
        rig.fake.isSuspended = false
        _ = try await probe
        XCTAssertEqual(rig.loader.networkStatus, .online)
        XCTAssertEqual(rig.notices.last, "online: a transfer reached the network")
        let lines = rig.logs.messages.map(\.text)
        XCTAssertEqual(lines.filter { $0 == "offline: trying the network again" }.count, 2)
        XCTAssertTrue(lines.contains("offline: the network is still unreachable; the next try in 2 s"), "\(lines)")
        _ = try await rig.loader.image(for: url(9))
        XCTAssertEqual(rig.transfers.last, "/img/9.png", "online: the network again")
    }

    /// A probe whose request is cancelled lets the next request probe.
    func testACancelledProbeLetsTheNextRequestProbe() async throws {
        let rig = Rig()
        rig.fake.script(url(9), [.failure(.offline(url(9)))])
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        rig.clock.value = 1001
        rig.fake.isSuspended = true
        let task = rig.loader.loadImage(ImageRequest(url: url(6)))
        await fulfillment(of: [rig.fake.starts(2, self)], timeout: 10)
        XCTAssertNotNil(rig.loader.state.withLock { $0.network.probe })
        task.cancel()
        // The probe is let go as the cancel reaches its job (after the transport's cancel returns).
        XCTAssertTrue(waitUntil { rig.loader.state.withLock { $0.network.probe } == nil })
        rig.fake.isSuspended = false
        _ = try await rig.loader.image(for: url(5))
        XCTAssertEqual(rig.transfers, ["/img/9.png", "/img/6.png", "/img/5.png"])
        XCTAssertEqual(rig.loader.networkStatus, .online)
    }

    /// A host name that cannot be resolved takes the loader offline only
    /// when the reachability (asked then) says there is no route; else it
    /// is the resolver's failure, and the loader stays online.
    func testADNSFailureIsTheNetworksOnlyWithoutARoute() async throws {
        let rig = Rig()
        let dns = AsyncImageError.transport(url(9), code: 6, message: "Could not resolve host: images.example")
        rig.fake.script(url(9), [.failure(dns), .failure(dns)])
        await XCTAssertThrowsErrorAsync(try await rig.loader.image(for: url(9))) {
            XCTAssertEqual($0 as? AsyncImageError, dns)
        }
        XCTAssertEqual(rig.loader.networkStatus, .online)
        rig.reachability.setSilently(false)  // its notification has not come yet
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.transfer))
        XCTAssertEqual(rig.reachability.readCount, 3, "made, and each DNS failure")
    }

    /// Without a reachability the loader is never offline: a transfer
    /// without a route fails `.offline`, and the next one still goes.
    func testALoaderWithoutReachabilityIsNeverOffline() async throws {
        let rig = Rig { $0.reachability = nil }
        rig.fake.script(url(9), [.failure(.offline(url(9)))])
        await assertOffline(try await rig.loader.image(for: url(9)), 9)
        XCTAssertEqual(rig.loader.networkStatus, .online)
        _ = try await rig.loader.image(for: url(9))
        XCTAssertEqual(rig.transfers, ["/img/9.png", "/img/9.png"])
    }

    // MARK: The cap on transfers, offline and back

    /// `http://127.0.0.1/img/N.png`: a local URL, never offline.
    private func local(_ n: Int) -> URL { URL(string: "http://127.0.0.1/img/\(n).png")! }

    /// Two transfers (7, 8) held in the only two slots of the online set,
    /// then the network gone (by the reachability).
    private func rigWithAFullOnlineSet() async throws -> (Rig, [Task<Image, any Error>]) {
        let rig = Rig(concurrentLoads: 2)
        rig.fake.isSuspended = true
        let held = [7, 8].map { n in Task { try await rig.loader.image(for: Rig.url(n)) } }
        await fulfillment(of: [rig.fake.starts(2, self)], timeout: 10)
        rig.reachability.isReachable = false
        return (rig, held)
    }

    private func waitingForNetwork(_ rig: Rig) -> Int { rig.loader.state.withLock { $0.slots.waitingForNetworkCount } }

    /// Offline, jobs of local URLs take slots of the offline set but go
    /// to the network: there they wait for a slot of the online set, which
    /// transfers from before the drop fill; `concurrentLoads` (2) is never
    /// exceeded at the transport.
    func testLocalURLsOfflineWaitForASlotOfTheNetwork() async throws {
        let (rig, held) = try await rigWithAFullOnlineSet()
        let locals = [1, 2].map { n in
            let url = local(n)
            return Task { try await rig.loader.image(for: url) }
        }
        // At the network's door: at the transport (past the cap), or waiting for a slot.
        XCTAssertTrue(waitUntil { rig.fake.startedPaths.count > 2 || self.waitingForNetwork(rig) == 2 })
        XCTAssertEqual(Set(rig.fake.running), ["/img/7.png", "/img/8.png"])
        rig.fake.finish(url(7))
        await fulfillment(of: [rig.fake.starts(3, self)], timeout: 10)
        XCTAssertEqual(rig.fake.running.count, 2, "7's slot went to one of them")
        rig.fake.isSuspended = false
        for task in held + locals { _ = try await task.value }
        XCTAssertEqual(rig.fake.peakRunning, 2)
        XCTAssertEqual(rig.fake.startedPaths.count, 4)
        XCTAssertEqual(rig.loader.activity.inFlight, 0)
    }

    /// The probe, due while the online set is full of transfers from before
    /// the drop, does not go past the cap: its request is answered from the
    /// disk (a miss: `.offline`), and the next request may probe.
    func testTheProbeDoesNotExceedTheCap() async throws {
        let (rig, held) = try await rigWithAFullOnlineSet()
        rig.clock.value = 1001  // the probe is due
        // Answered offline while the held transfers still fill the cap (the
        // outcome awaited before they are let go: waiting for the pending
        // count to be 2 again was met before the probe's request was even
        // made, once in CI under load, and the probe then found room).
        await assertOffline(try await rig.loader.image(for: Rig.url(10)), 10)
        XCTAssertEqual(Set(rig.fake.running), ["/img/7.png", "/img/8.png"], "no third transfer")
        XCTAssertEqual(rig.fake.startedPaths.count, 2)
        rig.fake.isSuspended = false
        XCTAssertNil(rig.loader.state.withLock { $0.network.probe }, "the probe is still to be made")
        for task in held { _ = try await task.value }
        XCTAssertEqual(rig.fake.peakRunning, 2)
        // The next request probes, now that there is room.
        _ = try await rig.loader.image(for: url(11))
        XCTAssertEqual(rig.fake.startedPaths.last, "/img/11.png")
        XCTAssertEqual(rig.loader.networkStatus, .online)
    }

    /// Jobs that start in the offline set (the probe due, so both plan on
    /// the network) and reach the network just after the loader is back
    /// online wait for slots of the online set rather than join the
    /// transfers already there.
    func testJobsStartedOfflineDoNotExceedTheCapOnceOnline() async throws {
        let (rig, held) = try await rigWithAFullOnlineSet()
        rig.clock.value = 1001
        rig.loader.diskQueue.suspend()  // their lookups wait
        let started = [10, 11].map { n in Task { try await rig.loader.image(for: Rig.url(n)) } }
        XCTAssertTrue(waitUntil { rig.loader.activity.inFlight == 4 }, "two slots of each set")
        rig.reachability.isReachable = true
        rig.loader.networkStatusQueue.sync {}
        rig.loader.diskQueue.resume()
        XCTAssertTrue(waitUntil { rig.fake.startedPaths.count > 2 || self.waitingForNetwork(rig) == 2 })
        XCTAssertEqual(Set(rig.fake.running), ["/img/7.png", "/img/8.png"])
        rig.fake.finish(url(8))
        await fulfillment(of: [rig.fake.starts(3, self)], timeout: 10)
        XCTAssertEqual(rig.fake.running.count, 2)
        rig.fake.isSuspended = false
        for task in held + started { _ = try await task.value }
        XCTAssertEqual(rig.fake.peakRunning, 2)
        XCTAssertEqual(rig.loader.networkStatus, .online)
    }

    /// Going offline ends the waits for a slot of the network: such a job
    /// (not local) is answered from the disk at once.
    func testGoingOfflineAnswersJobsWaitingForTheNetwork() async throws {
        let (rig, held) = try await rigWithAFullOnlineSet()
        rig.clock.value = 1001
        rig.loader.diskQueue.suspend()
        let waiting = Task { try await rig.loader.image(for: Rig.url(10)) }
        XCTAssertTrue(waitUntil { rig.loader.activity.inFlight == 3 })
        rig.reachability.isReachable = true
        rig.loader.diskQueue.resume()
        XCTAssertTrue(waitUntil { rig.fake.startedPaths.count > 2 || self.waitingForNetwork(rig) == 1 })
        rig.reachability.isReachable = false
        rig.fake.isSuspended = false  // (a transfer of it, past the cap, would not hang the test)
        await assertOffline(try await waiting.value, 10)
        for task in held { _ = try await task.value }
        XCTAssertEqual(rig.fake.startedPaths.count, 2)
    }

    // MARK: Words from before

    /// A transfer admitted before the reachability's last word that then
    /// finds no route ran on routes that are gone: the loader, online
    /// again, stays online (its own request fails as it failed).
    func testANoRouteFromBeforeTheNetworkCameBackIsIgnored() async throws {
        let rig = Rig()
        rig.fake.isSuspended = true
        rig.fake.script(url(9), [.failure(.offline(url(9)))])
        let old = Task { try await rig.loader.image(for: Rig.url(9)) }
        await fulfillment(of: [rig.fake.starts(1, self)], timeout: 10)
        rig.reachability.isReachable = false
        rig.reachability.isReachable = true
        rig.fake.finish(url(9))
        await assertOffline(try await old.value, 9)
        XCTAssertEqual(rig.loader.networkStatus, .online)

        // The same for the probe of a loader a transfer took offline.
        let other = Rig()
        other.fake.script(url(9), [.failure(.offline(url(9)))])
        await assertOffline(try await other.loader.image(for: url(9)), 9)
        XCTAssertEqual(other.loader.networkStatus, .offline(.transfer))
        other.clock.value = 1001
        other.fake.isSuspended = true
        other.fake.script(url(6), [.failure(.offline(url(6)))])
        let probe = Task { try await other.loader.image(for: Rig.url(6)) }
        await fulfillment(of: [other.fake.starts(2, self)], timeout: 10)
        other.reachability.isReachable = true  // another network: online
        XCTAssertEqual(other.loader.networkStatus, .online)
        other.fake.finish(url(6))
        await assertOffline(try await probe.value, 6)
        XCTAssertEqual(other.loader.networkStatus, .online, "the old probe's answer does not count")
        // A transfer admitted now that finds no route still does.
        other.fake.isSuspended = false
        other.fake.script(url(5), [.failure(.offline(url(5)))])
        await assertOffline(try await other.loader.image(for: url(5)), 5)
        XCTAssertEqual(other.loader.networkStatus, .offline(.transfer))
    }

    // MARK: A wrong word from the system

    /// Offline by the reachability's word, a probe still goes 1 s later
    /// (then 2 s, doubling while it finds no route): a server's answer
    /// shows the word wrong (routes in policy routing tables, a sandbox)
    /// and puts the loader online, until the reachability says something new.
    func testAProbeCorrectsAWrongUnreachableFromTheSystem() async throws {
        let rig = Rig()
        try await rig.store([1])
        rig.reachability.isReachable = false
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability))
        rig.clock.value = 1000.9
        let early = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(early.isStale, "too early: from disk")
        XCTAssertEqual(rig.transfers.count, 1)

        // The probe: no route. Answered from the disk; the wait doubles.
        rig.clock.value = 1001
        rig.fake.script(url(1), [.failure(.offline(url(1)))])
        let served = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertTrue(served.isStale)
        XCTAssertEqual(rig.transfers.count, 2)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability))
        rig.clock.value = 1002.9
        await assertOffline(try await rig.loader.image(for: url(8)), 8)
        XCTAssertEqual(rig.transfers.count, 2, "2 s now")

        // A refused connection is no server's answer: the wait doubles again.
        rig.clock.value = 1003
        rig.fake.script(url(8), [.failure(.transport(url(8), code: 7, message: "Couldn't connect to server"))])
        await XCTAssertThrowsErrorAsync(try await rig.loader.image(for: url(8)))
        XCTAssertEqual(rig.transfers.count, 3)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability))

        // The server answers: online.
        rig.clock.value = 1007
        let revalidated = try await rig.loader.response(for: ImageRequest(url: url(1)))
        XCTAssertFalse(revalidated.isStale)
        XCTAssertEqual(revalidated.http?.isRevalidated, true)
        XCTAssertEqual(rig.loader.networkStatus, .online)
        XCTAssertEqual(rig.notices.last, "online: a transfer reached the network")
        _ = try await rig.loader.image(for: url(9))
        XCTAssertEqual(rig.transfers.last, "/img/9.png")
        // The same word again changes nothing; a new one counts.
        rig.reachability.isReachable = false
        XCTAssertEqual(rig.loader.networkStatus, .online)
        rig.reachability.isReachable = true
        rig.reachability.isReachable = false
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability))
    }

    // MARK: Retries

    /// Going offline during the wait for a retry ends it: the request is
    /// answered at once, as an offline one (nothing stored: `.offline`).
    func testGoingOfflineEndsTheWaitForARetry() async throws {
        let rig = Rig {
            $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(3600), maxDelay: .seconds(3600), jitter: .none)
        }
        let refused = AsyncImageError.transport(url(9), code: 7, message: "Couldn't connect to server")
        rig.fake.script(url(9), [.failure(refused)])
        let events = EventLog(rig.loader)
        let answered = expectation(description: "answered")
        let outcome = Box<AsyncImageError>(nil)
        let task = Task {
            do { _ = try await rig.loader.image(for: Rig.url(9)) } catch { outcome.value = error as? AsyncImageError }
            answered.fulfill()
        }
        XCTAssertTrue(waitUntil { events.all.contains { if case .retrying = $0.kind { true } else { false } } })
        rig.reachability.isReachable = false
        await fulfillment(of: [answered], timeout: 10)  // not an hour
        task.cancel()
        XCTAssertEqual(outcome.value, .offline(url(9)))
        XCTAssertEqual(rig.transfers, ["/img/9.png"], "no retry")
        XCTAssertEqual(rig.loader.activity.inFlight, 0)
    }

    // MARK: The reachability's thread

    /// The reachability's handler changes the status at once, and leaves
    /// what follows (the log line, the next transfers) to the loader's own
    /// queue: a logger that hangs holds up neither the reachability's
    /// thread nor another loader.
    func testTheReachabilitysThreadRunsNoUserCode() async throws {
        let gate = DispatchSemaphore(value: 0)
        let blocking = LogRecorder(level: .info)
        blocking.onLog = { message in if message.text.hasPrefix("offline:") { gate.wait() } }
        let rig = Rig { $0.logger = blocking.logger }
        let other = AsyncImageLoader(
            configuration: {
                var configuration = AsyncImageLoader.Configuration(
                    cache: nil, deliveryQueue: DispatchQueue(label: "other"), notificationCenter: nil,
                    dataLoader: FakeDataLoader())
                configuration.reachability = rig.reachability
                return configuration
            }())
        let returned = expectation(description: "the reachability's setter returned")
        Thread {
            rig.reachability.isReachable = false
            returned.fulfill()
        }.start()
        await fulfillment(of: [returned], timeout: 10)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.reachability))
        XCTAssertEqual(other.networkStatus, .offline(.reachability))
        gate.signal()
        rig.loader.networkStatusQueue.sync {}
        XCTAssertEqual(blocking.messages.filter { $0.level == .notice }.count, 1)
    }

    /// A word the handler brings while `init` reads the reachability is
    /// newer than that read, which is then not used.
    func testAWordFromTheHandlerDuringInitIsNotOverwritten() {
        let reachability = HandlerDuringRead()
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil, dataLoader: FakeDataLoader())
        configuration.reachability = reachability
        let loader = AsyncImageLoader(configuration: configuration)
        XCTAssertEqual(reachability.reads, 1)
        XCTAssertEqual(loader.networkStatus, .online, "the handler's `true`, not the read's older `false`")
    }

    /// A reachability whose first read answers `false`, the value it had,
    /// while its handler is told the newer `true` (a change during the read).
    private final class HandlerDuringRead: NetworkReachability, @unchecked Sendable {
        private let lock = NSLock()
        private var handler: (@Sendable (Bool) -> Void)?
        private(set) var reads = 0

        var isReachable: Bool {
            let handler = lock.withLock { () -> (@Sendable (Bool) -> Void)? in
                reads += 1
                return self.handler
            }
            handler?(true)
            return false
        }

        func observe(_ handler: @escaping @Sendable (Bool) -> Void) -> ReachabilityObservation {
            lock.withLock { self.handler = handler }
            return ReachabilityObservation { [weak self] in self?.lock.withLock { self?.handler = nil } }
        }
    }

    // MARK: The data-level API

    /// `data(for:)` offline: the stored response (stale, marked so), never
    /// a `must-revalidate` one, `.offline` for a miss; no transfer. A
    /// transfer of it that finds no route takes the loader offline.
    func testTheDataAPIOffline() async throws {
        let rig = Rig()
        for n in [1, 2] { _ = try await rig.loader.data(for: url(n)) }
        await rig.loader.flushDiskWrites()
        rig.reachability.isReachable = false
        let stale = try await rig.loader.data(for: url(1))
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.source, .cache)
        await assertOffline(try await rig.loader.data(for: url(2)), 2)
        await assertOffline(try await rig.loader.data(for: url(9)), 9)
        XCTAssertEqual(rig.transfers.count, 2)

        rig.reachability.isReachable = true
        rig.fake.script(url(9), [.failure(.offline(url(9)))])
        await assertOffline(try await rig.loader.data(for: url(9)), 9)
        XCTAssertEqual(rig.loader.networkStatus, .offline(.transfer))
        let served7 = try await rig.loader.data(for: url(1))
        XCTAssertTrue(served7.isStale)
        XCTAssertEqual(rig.transfers.count, 3)
    }

    // MARK: The stale rules

    /// The lookup's offline rule, with and without `.neverStale`.
    func testStaleRulesOffline() {
        let down = StaleRules(.useCaches, isFileURL: false, networkDown: true)
        XCTAssertTrue(down.offline && down.networkDown && down.servesStaleOffline)
        XCTAssertEqual(down.missError(url(1)), .offline(url(1)))
        let file = StaleRules(.useCaches, isFileURL: true, networkDown: true)
        XCTAssertFalse(file.offline || file.networkDown)
        let cachedOnly = StaleRules(.cachedOnly, isFileURL: false, networkDown: true)
        XCTAssertTrue(cachedOnly.offline)
        XCTAssertFalse(cachedOnly.networkDown, "the request's own choice")
        XCTAssertEqual(cachedOnly.missError(url(1)), .notCached(url(1)))
        XCTAssertFalse(StaleRules(.neverStale, isFileURL: false, networkDown: true).servesStaleOffline)
        let online = StaleRules(.useCaches, isFileURL: false).networkIsDown
        XCTAssertTrue(online.offline && online.networkDown)
        XCTAssertTrue(AsyncImageError.offline(url(1)).isNetworkFailure)
        XCTAssertFalse(AsyncImageError.httpStatus(url(1), code: 503).isNetworkFailure)
        XCTAssertNil(TransientFailure(.offline(url(1)), bodyArrived: false, now: 0), "never retried")
        XCTAssertEqual(AsyncImageError.offline(url(1)).suggestedHTTPStatus, 503)
        XCTAssertEqual(
            AsyncImageError.offline(url(1)).description,
            "http://images.example/img/1.png cannot be loaded: the network is unreachable (offline), and no stored response may be served for it")
    }
}
