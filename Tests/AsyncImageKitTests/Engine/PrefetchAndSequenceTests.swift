import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// ImagePrefetcher's cap on slots, and request sequences.
final class PrefetchAndSequenceTests: XCTestCase {
    private func paths(_ ns: [Int]) -> [String] { ns.map { "/img/\($0).png" } }

    /// Prefetching may use every slot while nothing visible waits; once
    /// visible requests wait, prefetch transfers hold at most the share
    /// (one of two slots), even at a higher priority than the visible ones.
    func testPrefetchNeverHoldsMoreThanItsShareWhileVisibleRequestsWait() {
        let h = FakeHarness(concurrentLoads: 2)
        let prefetched = expectation(description: "the three prefetches delivered")
        prefetched.expectedFulfillmentCount = 3
        h.loader.eventMonitor = { event in
            if case .delivered = event.kind, event.requestID <= 3 { prefetched.fulfill() }
        }
        let prefetcher = ImagePrefetcher(loader: h.loader, priority: .high)
        prefetcher.startPrefetching(with: [h.url(1), h.url(2), h.url(3)])
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([1, 2]), "nothing visible waits: both slots")
        h.load(10)
        h.load(11)
        h.transport.finish(h.url(1))
        wait(for: [h.transport.starts(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/img/11.png", "the prefetch share (1 of 2) is taken: visible first")
        h.transport.finish(h.url(2))
        wait(for: [h.transport.starts(4, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/img/3.png", "under the share: the high prefetch goes")
        h.transport.finish(h.url(11))
        wait(for: [h.transport.starts(5, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/img/10.png")
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(2, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(Set(h.log.deliveredPaths), Set(paths([10, 11])), "prefetches run no actions")
        XCTAssertFalse(h.log.events.contains(.notified("/img/3.png", finished: true)), "and post nothing")
        wait(for: [prefetched], timeout: 10)
        XCTAssertEqual(prefetcher.count, 0)
        for n in 1...3 { XCTAssertNotNil(h.cache.image(for: ImageCacheKey(url: h.url(n))), "\(n) cached") }
    }

    func testStopPrefetchingCancelsAndAVisibleRequestJoinsAPrefetch() {
        let h = FakeHarness(concurrentLoads: 2)
        let prefetcher = ImagePrefetcher(loader: h.loader)
        prefetcher.startPrefetching(with: [h.url(1), h.url(2), h.url(3)])
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        XCTAssertEqual(prefetcher.count, 3)
        h.load(2)  // a visible request joins the running prefetch of 2
        prefetcher.stopPrefetching(with: [h.url(1), h.url(2), h.url(3)])
        XCTAssertEqual(prefetcher.count, 0)
        XCTAssertEqual(h.transport.cancelled, paths([1]), "2 is still needed, 3 never started")
        h.transport.finish(h.url(2))
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        prefetcher.startPrefetching(with: [h.url(4)])
        wait(for: [h.transport.starts(3, self)], timeout: 10)
        prefetcher.stopPrefetching()
        XCTAssertEqual(h.transport.cancelled, paths([1, 4]))
        XCTAssertEqual(h.transport.startedPaths, paths([1, 2, 4]))
    }

    /// A sequence starts each member after the one before was delivered.
    func testSequenceRunsOneAfterAnother() {
        let h = FakeHarness(concurrentLoads: 2)
        let cell = Target()
        let sequence = h.loader.loadImages(
            [ImageRequest(url: h.url(1)), ImageRequest(url: h.url(2))], target: cell, success: h.log.success)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([1]), "the big one waits, though a slot is free")
        XCTAssertEqual(sequence.currentIndex, 0)
        h.transport.finish(h.url(1))
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.transport.finish(h.url(2))
        wait(for: [h.log.outcomes(2, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, paths([1, 2]))
        XCTAssertTrue(sequence.isFinished)
    }

    /// The next member starts only once the one before it was delivered:
    /// its notification posted and its action (success or failure) run on
    /// the delivery queue. Each action looks at what the loader has done
    /// about the later members: nothing yet, no event and no transfer (the
    /// loader made the next member before the action ran, in 2 runs of 3).
    func testSequenceStartsTheNextMemberOnlyAfterTheActionRan() {
        let h = FakeHarness(concurrentLoads: 3)
        h.transport.isSuspended = false
        h.transport.fail(h.url(2), with: .httpStatus(h.url(2), code: 500))
        let events = Box<[LoaderEvent]>([])
        h.loader.eventMonitor = { event in events.update { $0?.append(event) } }
        let urls = [1, 2, 3].map { h.url($0) }
        // At each delivery: the member, what was notified for it, and the
        // later members' events and transfers at that moment.
        let seen = Box<[String]>([])
        let notified = Box<[String]>([])
        let observer = h.center.addObserver(forName: nil, object: nil, queue: nil) { note in
            guard let url = note.userInfo?[AsyncImageURLKey] as? URL else { return }
            notified.update { $0?.append(url.path) }
        }
        defer { h.center.removeObserver(observer) }
        let delivered = expectation(description: "three members delivered")
        delivered.expectedFulfillmentCount = 3
        let transport = h.transport
        @Sendable func look(_ url: URL, _ outcome: String) {
            let later = Set(urls.drop(while: { $0 != url }).dropFirst().map(\.path))
            let laterEvents = (events.value ?? []).filter { later.contains($0.url.path) }.count
            let laterTransfers = transport.startedPaths.filter { later.contains($0) }.count
            let wasNotified = notified.value?.last == url.path
            seen.update {
                $0?.append(
                    "\(url.lastPathComponent) \(outcome): notified \(wasNotified), later events \(laterEvents), "
                        + "later transfers \(laterTransfers)")
            }
            delivered.fulfill()
        }
        let cell = Target()
        let sequence = h.loader.loadImages(
            urls.map { ImageRequest(url: $0) }, target: cell,
            success: ImageAction("show") { _, _, url in look(url, "shown") },
            failure: ImageFailureAction("show") { _, _, url in look(url, "failed") })
        wait(for: [delivered], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(
            seen.value,
            [
                "1.png shown: notified true, later events 0, later transfers 0",
                "2.png failed: notified true, later events 0, later transfers 0",
                "3.png shown: notified true, later events 0, later transfers 0",
            ])
        XCTAssertEqual(h.transport.startedPaths, paths([1, 2, 3]))
        XCTAssertTrue(sequence.isFinished)
        withExtendedLifetime(cell) {}
    }

    /// Earlier members are skipped when a later one is cached; a failed
    /// member is delivered and the sequence goes on.
    func testSequenceSkipsToTheLastCachedMemberAndGoesOnAfterAFailure() {
        let h = FakeHarness(concurrentLoads: 2)
        h.transport.isSuspended = false
        h.load(2)
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        h.transport.fail(h.url(3), with: .httpStatus(h.url(3), code: 500))
        let cell = Target()
        let sequence = h.loader.loadImages(
            [1, 2, 3, 4].map { ImageRequest(url: h.url($0)) }, target: cell, success: h.log.success,
            failure: h.log.failure)
        wait(for: [h.log.outcomes(4, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, paths([2, 2, 3, 4]))
        XCTAssertEqual(h.transport.startedPaths, paths([2, 3, 4]), "1 skipped: 2 was cached")
        XCTAssertNotNil(h.log.errors["/img/3.png"])
        withExtendedLifetime((sequence, cell)) {}
    }

    func testCancellingASequenceCancelsWhatIsLeft() {
        let h = FakeHarness(concurrentLoads: 2)
        let sequence = h.loader.loadImages([1, 2, 3].map { ImageRequest(url: h.url($0)) }, success: h.log.success)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        sequence.cancel()
        XCTAssertTrue(sequence.isFinished)
        XCTAssertEqual(h.transport.cancelled, paths([1]))
        h.transport.isSuspended = false
        h.load(9)
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.transport.startedPaths, paths([1, 9]))
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }
}
