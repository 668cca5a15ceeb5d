import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// A request's deadline (``ImageRequest/timeout``,
/// ``AsyncImageLoader/Configuration/requestTimeout``), stage by stage,
/// through a transport, a disk store and a decoder the test holds and
/// releases: the request whose time is up fails alone, once, naming the
/// stage it was in; requests sharing its job go on; a job it leaves empty
/// gives back its slot (a later request runs). A deadline that must fire is
/// 50 ms, reached while the stage is held; one that must not is long.
final class DeadlineTests: XCTestCase {
    private static let short = Duration.milliseconds(50)

    // MARK: Queued

    func testADeadlineWhileQueuedFailsThatRequestAloneAtStageQueued() {
        let h = FakeHarness(concurrentLoads: 1)
        let outcomes = Outcomes()
        h.load(100)  // holds the only slot
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        outcomes.load("shared", h, 1)
        let timed = outcomes.load("timed", h, 1, timeout: Self.short)
        outcomes.load("alone", h, 2, timeout: Self.short)
        wait(for: [outcomes.first("timed", self), outcomes.first("alone", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("timed"), .timedOut(h.url(1), seconds: 0.05, stage: .queued))
        XCTAssertEqual(outcomes.error("alone"), .timedOut(h.url(2), seconds: 0.05, stage: .queued))
        XCTAssertEqual(timed.state, .completed)
        // The slot frees: the transfer the timed-out request shared runs for
        // the one left; the one that was alone is no longer queued.
        h.transport.finish(h.url(100))
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.transport.finish(h.url(1))
        wait(for: [outcomes.first("shared", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("shared"))
        outcomes.runsLater(h, 3, self)
        XCTAssertEqual(h.transport.startedPaths, ["/img/100.png", "/img/1.png", "/img/3.png"])
        outcomes.assertOneOutcomeEach()
        // Each failure posted its one didFail.
        XCTAssertEqual(h.log.events.filter { $0 == .notified("/img/2.png", finished: false) }.count, 1)
        XCTAssertEqual(h.log.events.filter { $0 == .notified("/img/1.png", finished: false) }.count, 1)
        settle(h)
    }

    /// The loader's ``AsyncImageLoader/Configuration/requestTimeout`` applies
    /// to requests without a timeout of their own; a request's own replaces it.
    func testTheLoadersRequestTimeoutAppliesUnlessARequestSetsItsOwn() {
        let h = FakeHarness(concurrentLoads: 1) { $0.requestTimeout = Self.short }
        XCTAssertEqual(h.loader.requestTimeout, Self.short)
        let outcomes = Outcomes()
        outcomes.load("blocker", h, 100, timeout: .seconds(600))
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        outcomes.load("default", h, 1)
        outcomes.load("own", h, 2, timeout: .seconds(600))
        wait(for: [outcomes.first("default", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("default"), .timedOut(h.url(1), seconds: 0.05, stage: .queued))
        h.transport.finish(h.url(100))
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.transport.finish(h.url(2))
        wait(for: [outcomes.first("blocker", self), outcomes.first("own", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("own"))
        XCTAssertEqual(h.transport.startedPaths, ["/img/100.png", "/img/2.png"])
        outcomes.assertOneOutcomeEach()
        h.loader.requestTimeout = nil
        XCTAssertNil(h.loader.requestTimeout)
        settle(h)
    }

    /// The async API throws the same error (and nothing after it).
    func testTheAsyncAPIThrowsTimedOut() async throws {
        let h = FakeHarness(concurrentLoads: 1)
        h.load(100)
        await fulfillment(of: [h.transport.starts(1, self)], timeout: 10)
        var request = ImageRequest(url: h.url(1))
        request.timeout = Self.short
        do {
            _ = try await h.loader.image(for: request)
            XCTFail("expected a timeout")
        } catch let error as AsyncImageError {
            XCTAssertEqual(error, .timedOut(h.url(1), seconds: 0.05, stage: .queued))
        }
        XCTAssertEqual(h.loader.activity.pendingRequests, 1, "the blocker alone")
        h.transport.isSuspended = false
    }

    // MARK: Transfer

    func testADeadlineWhileTransferringFailsThatRequestAloneAtStageTransfer() {
        let h = FakeHarness(concurrentLoads: 1)
        let outcomes = Outcomes()
        // Shared: the transfer goes on for the request left.
        outcomes.load("shared", h, 1)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        outcomes.load("timed", h, 1, timeout: Self.short)  // joins the running transfer
        wait(for: [outcomes.first("timed", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("timed"), .timedOut(h.url(1), seconds: 0.05, stage: .transfer))
        XCTAssertEqual(h.transport.running, ["/img/1.png"])
        XCTAssertEqual(h.transport.cancelled, [])
        h.transport.finish(h.url(1))
        wait(for: [outcomes.first("shared", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("shared"))
        // Alone (the request that started it cancelled): the transfer is
        // cancelled and its slot given back.
        let holder = outcomes.load("holder", h, 2)
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        outcomes.load("alone", h, 2, timeout: Self.short)
        holder.cancel()
        wait(for: [outcomes.first("alone", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("alone"), .timedOut(h.url(2), seconds: 0.05, stage: .transfer))
        XCTAssertEqual(h.transport.cancelled, ["/img/2.png"])
        outcomes.runsLater(h, 3, self)
        h.drainDeliveries()
        XCTAssertEqual(outcomes.count("holder"), 0, "cancelled: no outcome")
        outcomes.assertOneOutcomeEach(except: ["holder"])
        settle(h)
    }

    /// The transport's own timeout names the transfer stage too, and fails
    /// every request that shares it.
    func testTheTransportsTimeoutIsStageTransferForEveryRequest() {
        // Without retries (a timeout before the body is retried: RetryTests).
        let h = FakeHarness(concurrentLoads: 1) { $0.retryPolicy = .disabled }
        let outcomes = Outcomes()
        h.transport.fail(h.url(1), with: .timedOut(h.url(1), seconds: 60, stage: .transfer))
        outcomes.load("a", h, 1)
        outcomes.load("b", h, 1, timeout: .seconds(600))
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.transport.finish(h.url(1))
        wait(for: [outcomes.first("a", self), outcomes.first("b", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("a"), .timedOut(h.url(1), seconds: 60, stage: .transfer))
        XCTAssertEqual(outcomes.error("b"), .timedOut(h.url(1), seconds: 60, stage: .transfer))
        XCTAssertEqual(h.transport.startedRequests.first?.timeout, 60, "the loader's loadingTimeout, not shortened")
        outcomes.assertOneOutcomeEach()
        settle(h)
    }

    // MARK: Disk read

    func testADeadlineWhileReadingTheDiskFailsThatRequestAloneAtStageDiskRead() {
        let store = HeldDataStore()
        let h = FakeHarness(concurrentLoads: 1) { $0.diskCache = store }
        let outcomes = Outcomes()
        // Shared: the read, then the transfer, go on for the request left.
        let read1 = store.hold(h.url(1), self)
        outcomes.load("shared", h, 1)
        wait(for: [read1.entered], timeout: 10)
        outcomes.load("timed", h, 1, timeout: Self.short)
        wait(for: [outcomes.first("timed", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("timed"), .timedOut(h.url(1), seconds: 0.05, stage: .diskRead))
        read1.release.signal()
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.transport.finish(h.url(1))
        wait(for: [outcomes.first("shared", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("shared"))
        // Alone: the slot is given back while the read still runs; what it
        // finds is dropped (no transfer starts).
        let read2 = store.hold(h.url(2), self)
        let holder = outcomes.load("holder", h, 2)
        wait(for: [read2.entered], timeout: 10)
        outcomes.load("alone", h, 2, timeout: Self.short)
        holder.cancel()
        wait(for: [outcomes.first("alone", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("alone"), .timedOut(h.url(2), seconds: 0.05, stage: .diskRead))
        outcomes.runsLater(h, 3, self)
        read2.release.signal()
        h.drainDeliveries()
        settle(h)
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png", "/img/3.png"])
        XCTAssertEqual(outcomes.count("holder"), 0, "cancelled: no outcome")
        outcomes.assertOneOutcomeEach(except: ["holder"])
    }

    // MARK: Decode

    func testADeadlineWhileDecodingFailsThatRequestAloneAtStageDecode() {
        let gate = DecoderGate()
        let h = FakeHarness(concurrentLoads: 1) {
            var decoders = ImageDecoderRegistry.default
            decoders.register(HeldPNGDecoder(gate: gate))
            $0.decoders = decoders
        }
        let outcomes = Outcomes()
        // Shared: the decode goes on for the request left.
        var entered = gate.hold(self)
        outcomes.load("shared", h, 1)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.transport.finish(h.url(1))
        wait(for: [entered], timeout: 10)
        outcomes.load("timed", h, 1, timeout: Self.short)  // joins the running decode
        wait(for: [outcomes.first("timed", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("timed"), .timedOut(h.url(1), seconds: 0.05, stage: .decode))
        gate.release()
        wait(for: [outcomes.first("shared", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("shared"))
        // Alone: the decode nobody waits for any more stops at its next
        // checkpoint (its stop is signalled while the gate holds it);
        // nothing is cached, nobody is told, and its decoder is free.
        entered = gate.hold(self)
        let holder = outcomes.load("holder", h, 2)
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.transport.finish(h.url(2))
        wait(for: [entered], timeout: 10)
        outcomes.load("alone", h, 2, timeout: Self.short)
        holder.cancel()
        wait(for: [outcomes.first("alone", self)], timeout: 10)
        XCTAssertEqual(outcomes.error("alone"), .timedOut(h.url(2), seconds: 0.05, stage: .decode))
        XCTAssertEqual(h.loader.activity.decoding, 1, "held in the gate until released")
        gate.release()
        settle(h)
        XCTAssertNil(h.cache.image(for: ImageRequest(url: h.url(2)).cacheKey), "stopped: nothing cached")
        XCTAssertEqual(gate.stopped, 1, "the decoder saw its stop")
        outcomes.runsLater(h, 3, self)
        h.drainDeliveries()
        XCTAssertEqual(outcomes.count("holder"), 0, "cancelled: no outcome")
        outcomes.assertOneOutcomeEach(except: ["holder"])
        settle(h)
    }

    /// A request that joins a decode after its stop was signalled (its only
    /// request was cancelled) is not failed by the stop: the size is decoded
    /// again for it, and it gets its image, once.
    func testARequestJoiningAStoppedDecodeGetsADecodeOfItsOwn() {
        let gate = DecoderGate()
        let h = FakeHarness(concurrentLoads: 1) {
            var decoders = ImageDecoderRegistry.default
            decoders.register(HeldPNGDecoder(gate: gate))
            $0.decoders = decoders
        }
        let outcomes = Outcomes()
        let entered = gate.hold(self)
        let first = outcomes.load("first", h, 1)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.transport.finish(h.url(1))
        wait(for: [entered], timeout: 10)
        first.cancel()  // the decode's only request: its stop is signalled
        outcomes.load("joiner", h, 1)  // joins the job, still decoding
        gate.release()
        wait(for: [outcomes.first("joiner", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("joiner"), "\(String(describing: outcomes.error("joiner")))")
        XCTAssertEqual(gate.stopped, 1, "the first decode stopped")
        h.drainDeliveries()
        XCTAssertEqual(outcomes.count("first"), 0, "cancelled: no outcome")
        outcomes.assertOneOutcomeEach(except: ["first"])
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png"], "one transfer: the body is decoded again")
        settle(h)
    }

    /// The root cause of a request answered long past its deadline while
    /// decodes held every core (two PNG bombs, in the thumbnail service):
    /// decodes ran on a concurrent queue, whose threads libdispatch takes
    /// from a pool as wide as the cores, shared with the disk queue; a
    /// disk read (a stored thumbnail's, outside any deadline) waited for a
    /// decode to end. Decodes that spin on every core (CPU-bound, not
    /// blocked: libdispatch adds threads for blocked ones) must leave a
    /// disk lookup free to run: here another URL's lookup, which its
    /// transfer follows.
    func testDecodesOnEveryCoreLeaveTheDiskReadsFree() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let spin = SpinGate()
        let h = FakeHarness(concurrentLoads: cores + 1) {
            var decoders = ImageDecoderRegistry.default
            decoders.register(SpinningPNGDecoder(gate: spin))
            $0.decoders = decoders
            $0.diskCache = MemoryDataStore()
        }
        defer { spin.release() }
        let outcomes = Outcomes()
        let spinning = spin.spinning(cores, self)
        for n in 1...cores { outcomes.load("spinning \(n)", h, n) }
        wait(for: [h.transport.starts(cores, self)], timeout: 10)
        for n in 1...cores { h.transport.finish(h.url(n)) }
        wait(for: [spinning], timeout: 10)
        XCTAssertEqual(h.loader.activity.decoding, cores, "every decoder spins")
        // Another URL: its disk lookup (disk queue), then its transfer,
        // while the decoders still spin. (Before, the lookup waited for a
        // thread until libdispatch's monitor added one, a second or more,
        // or until a decode ended; now it takes milliseconds. The bound is
        // wide of both.)
        let asked = Date()
        outcomes.load("other", h, 100)
        wait(for: [h.transport.starts(cores + 1, self)], timeout: 10)
        let waited = Date().timeIntervalSince(asked)
        print("disk lookup and transfer start while \(cores) decodes spin: \(waited) s")
        XCTAssertLessThan(waited, 0.5, "the disk lookup waited for a decode to end")
        spin.release()
        h.transport.finish(h.url(100))
        wait(for: [outcomes.first("other", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("other"))
        settle(h)
    }

    /// A stored thumbnail's read (``AsyncImageLoader/encodedImage(for:encoding:)``
    /// answers from it without a load) is covered by the request's time
    /// limit too: a read held past it fails at stage `diskRead`.
    func testAStoredAnswersReadIsCoveredByTheDeadline() async throws {
        let store = HeldDataStore()
        let h = FakeHarness(concurrentLoads: 1) { $0.diskCache = store }
        let held = store.hold(h.url(1), self)
        var request = ImageRequest(url: h.url(1), sizing: .fitInside(PixelSize(width: 8, height: 8)))
        request.timeout = Self.short
        do {
            _ = try await h.loader.encodedImage(for: request)
            XCTFail("answered while its disk read was held")
        } catch let error as AsyncImageError {
            XCTAssertEqual(error, .timedOut(h.url(1), seconds: 0.05, stage: .diskRead))
        }
        await fulfillment(of: [held.entered], timeout: 10)
        held.release.signal()
    }

    // MARK: Memory hits, limits passed already, races

    /// A memory-cache hit is served at once: no deadline applies, even one
    /// that has passed. A miss with a limit passed already fails at once,
    /// before any queue or transfer.
    func testAMemoryHitIsServedWhateverTheDeadline() {
        let h = FakeHarness(concurrentLoads: 1)
        let outcomes = Outcomes()
        let image = SyntheticImage.solid(width: 4, height: 4, color: NumberedImage.color(1))
        h.cache.setImage(image, for: ImageRequest(url: h.url(1)).cacheKey)
        outcomes.load("hit", h, 1, timeout: .zero)
        outcomes.load("miss", h, 2, timeout: .zero)
        outcomes.load("negative", h, 3, timeout: .seconds(-1))
        wait(for: [outcomes.first("hit", self), outcomes.first("miss", self), outcomes.first("negative", self)], timeout: 10)
        XCTAssertNotNil(outcomes.image("hit"))
        XCTAssertEqual(outcomes.error("miss"), .timedOut(h.url(2), seconds: 0, stage: .queued))
        XCTAssertEqual(outcomes.error("negative"), .timedOut(h.url(3), seconds: -1, stage: .queued))
        XCTAssertEqual(h.transport.startedPaths, [])
        outcomes.assertOneOutcomeEach()
        settle(h)
    }

    /// Deadlines that fall while transfers complete and decode: every
    /// request ends exactly once, succeeded or timed out, and nothing is
    /// left pending or holding a slot.
    func testADeadlineRacingItsOutcomeEndsTheRequestOnce() {
        let h = FakeHarness(concurrentLoads: 4, cache: false)
        h.transport.isSuspended = false
        let outcomes = Outcomes()
        let count = 200
        for i in 0..<count {
            outcomes.load("\(i)", h, i % 7, timeout: .microseconds((i % 10) * 300))
        }
        wait(for: (0..<count).map { outcomes.first("\($0)", self) }, timeout: 30)
        h.drainDeliveries()
        outcomes.assertOneOutcomeEach()
        var timedOut = 0
        for i in 0..<count {
            guard let error = outcomes.error("\(i)") else { continue }
            guard case .timedOut(h.url(i % 7), _, _) = error else { return XCTFail("\(i): \(error)") }
            timedOut += 1
        }
        XCTAssertGreaterThanOrEqual(timedOut, count / 10, "at least those whose limit had passed when made")
        settle(h)
    }

    func testTheStageIsNamedInTheDescriptionAndTheClientMessage() {
        let url = URL(string: "http://127.0.0.1/img/1.png")!
        XCTAssertTrue(
            AsyncImageError.timedOut(url, seconds: 5, stage: .queued).description.contains("waiting in the queue"))
        XCTAssertEqual(LoadStage.allCases, [.queued, .diskRead, .transfer, .decode])
        XCTAssertEqual(
            AsyncImageError.timedOut(url, seconds: 5, stage: .transfer).clientMessage,
            "The image source did not answer in time.")
        XCTAssertEqual(
            AsyncImageError.timedOut(url, seconds: 5, stage: .decode).clientMessage, "The image could not be made in time.")
        for stage in LoadStage.allCases {
            XCTAssertEqual(AsyncImageError.timedOut(url, seconds: 5, stage: stage).suggestedHTTPStatus, 504)
        }
        var a = ImageRequest(url: url)
        let b = a
        a.timeout = .seconds(1)
        XCTAssertNotEqual(a, b, "the timeout is part of a request's equality")
    }

    // MARK: Helpers

    /// Waits (at most 10 s) until the loader has nothing pending, in flight or decoding.
    private func settle(_ h: FakeHarness) {
        let settled = expectation(description: "the loader settled")
        let loader = h.loader
        DispatchQueue.global().async {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let activity = loader.activity
                if activity.pendingRequests == 0, activity.inFlight == 0, activity.decoding == 0 { break }
                usleep(2000)
            }
            settled.fulfill()
        }
        wait(for: [settled], timeout: 15)
        let activity = h.loader.activity
        XCTAssertEqual(activity.pendingRequests, 0)
        XCTAssertEqual(activity.inFlight, 0, "every slot given back")
        XCTAssertEqual(activity.decoding, 0, "every decoder given back")
        XCTAssertEqual(activity.queued, 0)
    }
}

/// Each request's outcomes, by a label, recorded by its own actions (on the
/// delivery queue).
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [String: [Result<Image, AsyncImageError>]] = [:]
    private var waiters: [String: XCTestExpectation] = [:]

    /// Makes a request for `h.url(n)` labelled `label`, with `timeout`.
    @discardableResult
    func load(_ label: String, _ h: FakeHarness, _ n: Int, timeout: Duration? = nil) -> ImageTask {
        var request = ImageRequest(url: h.url(n))
        request.timeout = timeout
        return h.loader.loadImage(
            request, success: ImageAction(label) { _, image, _ in self.record(label, .success(image)) },
            failure: ImageFailureAction(label) { _, error, _ in self.record(label, .failure(error)) })
    }

    /// A later request for `h.url(n)` runs (its transfer starts and it is
    /// delivered): the slot, and a decoder, were given back.
    func runsLater(_ h: FakeHarness, _ n: Int, _ test: XCTestCase) {
        let started = h.transport.startedPaths.count
        load("later \(n)", h, n)
        test.wait(for: [h.transport.starts(started + 1, test)], timeout: 10)
        h.transport.finish(h.url(n))
        test.wait(for: [first("later \(n)", test)], timeout: 10)
        XCTAssertNotNil(image("later \(n)"))
    }

    private func record(_ label: String, _ result: Result<Image, AsyncImageError>) {
        let waiter = lock.withLock { () -> XCTestExpectation? in
            results[label, default: []].append(result)
            return results[label]?.count == 1 ? waiters.removeValue(forKey: label) : nil
        }
        waiter?.fulfill()
    }

    /// Fulfilled at `label`'s first outcome.
    func first(_ label: String, _ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "\(label) ended")
        let done = lock.withLock { () -> Bool in
            if results[label]?.isEmpty == false { return true }
            waiters[label] = expectation
            return false
        }
        if done { expectation.fulfill() }
        return expectation
    }

    func count(_ label: String) -> Int { lock.withLock { results[label]?.count ?? 0 } }

    func error(_ label: String) -> AsyncImageError? {
        guard case .failure(let error)? = lock.withLock({ results[label]?.first }) else { return nil }
        return error
    }

    func image(_ label: String) -> Image? {
        guard case .success(let image)? = lock.withLock({ results[label]?.first }) else { return nil }
        return image
    }

    /// Every label has exactly one outcome (but those in `except`).
    func assertOneOutcomeEach(except: Set<String> = [], file: StaticString = #filePath, line: UInt = #line) {
        for (label, outcomes) in lock.withLock({ results }) where !except.contains(label) {
            XCTAssertEqual(outcomes.count, 1, "\(label): \(outcomes)", file: file, line: line)
        }
    }
}

/// A ``DataCaching`` store in memory whose reads of a URL's entry the test
/// holds: the first read of its key waits until released.
private final class HeldDataStore: DataCaching, @unchecked Sendable {
    private let inner = MemoryDataStore()
    private let lock = NSLock()
    private var gates: [String: (entered: XCTestExpectation, release: DispatchSemaphore)] = [:]

    /// Holds the next read of `url`'s entry; `entered` is fulfilled when it
    /// starts, and it goes on once `release` is signalled.
    func hold(_ url: URL, _ test: XCTestCase) -> (entered: XCTestExpectation, release: DispatchSemaphore) {
        let gate = (test.expectation(description: "reading \(url.path)"), DispatchSemaphore(value: 0))
        lock.withLock { gates[url.absoluteString] = gate }
        return gate
    }

    func entry(for key: String) -> (data: Data, metadata: DataCacheMetadata)? {
        if let gate = lock.withLock({ gates.removeValue(forKey: key) }) {
            gate.entered.fulfill()
            gate.release.wait()
        }
        return inner.entry(for: key)
    }

    func store(
        _ data: Data, for key: String, metadata: DataCacheMetadata,
        replacing decide: (_ replaced: DataCacheMetadata?) -> DataCacheReplacement
    ) throws(AsyncImageError) -> Bool {
        try inner.store(data, for: key, metadata: metadata, replacing: decide)
    }

    func removeData(for key: String) { inner.removeData(for: key) }
    func removeAll() { inner.removeAll() }
}

/// Holds the next PNG decode until released.
private final class DecoderGate: @unchecked Sendable {
    private let lock = NSLock()
    private var entered: XCTestExpectation?
    private let semaphore = DispatchSemaphore(value: 0)
    private var stops = 0

    /// Decodes that ended stopped (``DecodeStop``).
    var stopped: Int { lock.withLock { stops } }

    func noteStopped() { lock.withLock { stops += 1 } }

    /// Holds the next decode; the expectation is fulfilled when it starts.
    func hold(_ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "decoding")
        lock.withLock { entered = expectation }
        return expectation
    }

    func release() { semaphore.signal() }

    func pass() {
        guard let held = lock.withLock({ () -> XCTestExpectation? in defer { entered = nil }; return entered }) else {
            return
        }
        held.fulfill()
        semaphore.wait()
    }
}

private struct HeldPNGDecoder: ImageDecoding {
    let gate: DecoderGate
    var format: ImageFormat { .png }

    func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        gate.pass()
        do {
            return try PNGDecoder().decode(data, options: options)
        } catch {
            if case .decoding(let failure, _) = error, failure.reason.hasPrefix("stopped") { gate.noteStopped() }
            throw error
        }
    }
}

/// Makes the next decodes spin on a core (CPU-bound) until released.
private final class SpinGate: @unchecked Sendable {
    private let lock = NSLock()
    private var released = false

    private var waiter: XCTestExpectation?

    var isReleased: Bool { lock.withLock { released } }
    func release() { lock.withLock { released = true } }
    func entered() { lock.withLock { waiter }?.fulfill() }

    /// Fulfilled when `count` decodes spin.
    func spinning(_ count: Int, _ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "\(count) decodes spinning")
        expectation.expectedFulfillmentCount = count
        lock.withLock { waiter = expectation }
        return expectation
    }
}

private struct SpinningPNGDecoder: ImageDecoding {
    let gate: SpinGate
    var format: ImageFormat { .png }

    func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        gate.entered()
        while !gate.isReleased {}  // busy: a core, as a bomb's inflate takes one
        return try PNGDecoder().decode(data, options: options)
    }
}
