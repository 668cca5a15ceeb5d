@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// Edge cases found in review of the engine: each test fails without its fix.
final class EngineEdgeCaseTests: XCTestCase {
    /// A loader let go while a transfer runs releases the job, its requests
    /// and their cache (a transfer's completion holds its job).
    func testALoaderLetGoMidTransferReleasesItsCache() {
        let transport = FakeDataLoader()
        weak var released: ImageCache?
        do {
            let cache = ImageCache()
            released = cache
            var loader: AsyncImageLoader? = AsyncImageLoader(
                configuration: .init(
                    cache: cache, deliveryQueue: DispatchQueue(label: "unused"), notificationCenter: NotificationCenter(),
                    dataLoader: transport))
            loader?.loadImage(URL(string: "http://127.0.0.1/img/1.png")!)
            wait(for: [transport.starts(1, self)], timeout: 10)
            loader = nil
        }
        XCTAssertNil(released, "nothing keeps the cache alive once its loader is gone")
        XCTAssertEqual(transport.cancelled, ["/img/1.png"])
    }

    /// A cache hit made from a didFinish observer (on the delivery queue) is
    /// delivered after the delivery under way, never before its action: the
    /// target ends with the image it asked for last.
    func testACacheHitMadeInsideADeliveryComesAfterIt() {
        let h = FakeHarness()
        h.transport.isSuspended = false
        h.load(2)
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        let cell = Target()
        let asked = Counter()
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: cell, queue: nil) { note in
            guard (note.userInfo?[AsyncImageURLKey] as? URL) == h.url(1), asked.increment() == 1 else { return }
            h.load(2, target: cell)  // cached: without the rule, its action would run before 1's
        }
        defer { h.center.removeObserver(observer) }
        h.load(1, target: cell)
        wait(for: [h.log.outcomes(3, self)], timeout: 10)
        h.drainDeliveries()
        let forCell = h.log.events.compactMap { event -> String? in
            guard case .success(let path, ObjectIdentifier(cell)) = event else { return nil }
            return path
        }
        XCTAssertEqual(forCell, ["/img/1.png", "/img/2.png"])
    }

    /// `imageURL = nil` then at once another URL, off the delivery queue:
    /// the old image is cleared anyway (the reuse idiom), before the new one comes.
    func testClearThenNewURLOffTheDeliveryQueueStillClears() {
        final class Cell: ImageDisplaying, @unchecked Sendable {
            var image: Image?
            let loader: AsyncImageLoader
            init(_ loader: AsyncImageLoader) { self.loader = loader }
            var imageLoader: AsyncImageLoader { loader }
        }
        let h = FakeHarness()
        let cell = Cell(h.loader)
        h.transport.isSuspended = false
        cell.imageURL = h.url(1)
        h.drainDeliveries()
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.drainDeliveries()
        let shown = expectation(description: "the first image is shown")
        DispatchQueue.global().async {
            while h.queue.sync(execute: { cell.image == nil }) { h.drainDeliveries() }
            shown.fulfill()
        }
        wait(for: [shown], timeout: 10)
        h.transport.isSuspended = true
        DispatchQueue.global().sync {
            cell.imageURL = nil
            cell.imageURL = h.url(2)  // held by the transport
        }
        h.drainDeliveries()
        XCTAssertNil(h.queue.sync { cell.image }, "cleared though a new URL was set right after")
        h.transport.isSuspended = false
        wait(for: [h.transport.starts(2, self)], timeout: 10)
    }

    /// A log handler is user code: it may call the loader (here `activity`)
    /// without deadlocking, so the loader never logs under its lock.
    func testTheLoggerIsNeverCalledUnderTheLoadersLock() {
        let h = FakeHarness()
        let called = expectation(description: "the handler read the loader's activity")
        called.assertForOverFulfill = false
        let recorder = LogRecorder(level: .debug)
        let loader = h.loader
        recorder.onLog = { _ in
            _ = loader.activity
            called.fulfill()
        }
        h.loader.logger = recorder.logger
        h.transport.fail(h.url(1), with: .httpStatus(h.url(1), code: 500))
        h.load(1)
        h.transport.finish(h.url(1))
        wait(for: [called, h.log.outcomes(1, self)], timeout: 10)
    }

    /// A visible request that joined a prefetch transfer and left makes it a
    /// prefetch transfer again: it counts against the share.
    func testAPrefetchTransferCountsAgainAfterItsVisibleRequestLeaves() {
        let h = FakeHarness(concurrentLoads: 2)
        let prefetcher = ImagePrefetcher(loader: h.loader, priority: .high)
        prefetcher.startPrefetching(with: [h.url(1)])
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.load(1).cancel()  // joined, then left
        h.load(9)
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.load(10)  // visible, waits
        prefetcher.startPrefetching(with: [h.url(2)])  // high, waits
        h.transport.finish(h.url(9))
        wait(for: [h.transport.starts(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/img/10.png", "1 still holds the prefetch share")
    }

    /// A lane filed again at a rank it had before leaves one live entry, so
    /// toggling a priority does not grow the queue.
    func testTogglingAPriorityDoesNotGrowTheQueue() {
        let h = FakeHarness()
        h.load(100)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        let task = h.load(1)
        h.load(2)
        for round in 0..<5000 { task.priority = round.isMultiple(of: 2) ? .high : .normal }
        XCTAssertLessThan(h.loader.state.withLock { $0.slots.queue.entryCount }, 200)
        task.priority = .high
        h.transport.isSuspended = false
        wait(for: [h.transport.starts(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, ["/img/100.png", "/img/1.png", "/img/2.png"])
    }

    /// Two threads prefetching one URL at once make one request, and stopping cancels it.
    func testConcurrentPrefetchesOfOneURLMakeOneRequest() {
        let h = FakeHarness()
        h.load(100)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        let prefetcher = ImagePrefetcher(loader: h.loader)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in prefetcher.startPrefetching(with: [h.url(1)]) }
        XCTAssertEqual(prefetcher.count, 1)
        XCTAssertEqual(h.loader.activity.pendingRequests, 2)
        prefetcher.stopPrefetching()
        XCTAssertEqual(h.loader.activity.pendingRequests, 1)
    }
}

extension EngineEdgeCaseTests {
    /// A handle kept by its caller does not keep the request's actions (and
    /// what they capture) alive once the request ended, delivered or cancelled.
    func testAKeptHandleLetsGoOfTheActions() {
        let h = FakeHarness()
        let delivered = expectation(description: "1 delivered")
        h.loader.eventMonitor = { event in
            if case .delivered = event.kind, event.url.path == "/img/1.png" { delivered.fulfill() }
        }
        h.transport.isSuspended = false
        final class Owner: Sendable {}
        weak var deliveredOwner: Owner?
        weak var cancelledOwner: Owner?
        var tasks: [ImageTask] = []
        do {
            let owner = Owner()
            deliveredOwner = owner
            tasks.append(h.loader.loadImage(ImageRequest(url: h.url(1)), success: ImageAction("keep") { _, _, _ in
                withExtendedLifetime(owner) {}
            }))
        }
        h.transport.isSuspended = true
        do {
            let owner = Owner()
            cancelledOwner = owner
            tasks.append(h.loader.loadImage(ImageRequest(url: h.url(2)), success: ImageAction("keep") { _, _, _ in
                withExtendedLifetime(owner) {}
            }))
        }
        tasks[1].cancel()
        wait(for: [delivered], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(tasks.map(\.state), [.completed, .cancelled])
        XCTAssertNil(deliveredOwner, "released after its delivery")
        XCTAssertNil(cancelledOwner, "released after its cancel")
    }
}

extension EngineEdgeCaseTests {
    /// Prefetchers, sequences, handles and visible loads from four threads at
    /// once (run under ThreadSanitizer in CI): everything settles, nothing is
    /// left pending, the cap holds.
    func testPrefetchersAndSequencesFromManyThreads() {
        let h = FakeHarness(concurrentLoads: 3)
        h.transport.isSuspended = false
        let prefetcher = ImagePrefetcher(loader: h.loader)
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var random = SplitMix64(seed: 77 + UInt64(worker))
            var sequences: [ImageSequenceTask] = []
            let cells = (0..<8).map { Target("w\(worker)-\($0)") }
            for _ in 0..<300 {
                let n = Int(random.next() % 60)
                let cell = cells[Int(random.next() % 8)]
                switch random.next() % 8 {
                case 0: prefetcher.startPrefetching(with: [h.url(n), h.url(n + 1)])
                case 1: prefetcher.stopPrefetching(with: [h.url(n)])
                case 2: prefetcher.priority = random.next() % 2 == 0 ? .low : .veryLow
                case 3:
                    sequences.append(
                        h.loader.loadImages([h.url(n), h.url(n + 60)].map { ImageRequest(url: $0) }, target: cell))
                case 4 where !sequences.isEmpty: sequences.removeLast().cancel()
                case 5: h.loader.cancelLoadingImages(target: cell)
                default:
                    let task = h.loader.loadImage(ImageRequest(url: h.url(n)), target: cell)
                    if random.next() % 3 == 0 { task.priority = .high }
                    if random.next() % 5 == 0 { task.cancel() }
                }
            }
            withExtendedLifetime(cells) {}
        }
        prefetcher.stopPrefetching()
        let settled = expectation(description: "the loader settled")
        let loader = h.loader
        DispatchQueue.global().async {
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                let activity = loader.activity
                if activity.pendingRequests == 0, activity.inFlight == 0, activity.decoding == 0 { break }
                usleep(2000)
            }
            settled.fulfill()
        }
        wait(for: [settled], timeout: 40)
        h.drainDeliveries()
        let activity = h.loader.activity
        XCTAssertEqual(activity.pendingRequests, 0)
        XCTAssertEqual(activity.queued, 0)
        XCTAssertLessThanOrEqual(activity.peakInFlight, 3)
        XCTAssertEqual(prefetcher.count, 0)
    }
}
