import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The transfer queue's rules, exactly, through a transport the test
/// finishes by hand: per-target order (FIFO within a target, LIFO across),
/// priorities, re-ranking, handles and dead targets.
final class SchedulingTests: XCTestCase {
    /// Starts the blocker that holds the only slot while the test queues.
    private func block(_ h: FakeHarness) {
        h.load(100)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
    }

    /// Finishes `n`'s transfer and waits until `expected` transfers have started.
    private func finish(_ n: Int, _ h: FakeHarness, thenStarted expected: Int) {
        h.transport.finish(h.url(n))
        wait(for: [h.transport.starts(expected, self)], timeout: 10)
    }

    private func paths(_ ns: [Int]) -> [String] { ns.map { "/img/\($0).png" } }

    func testTheLastTargetTouchedStartsFirstAndItsURLsInTheOrderSet() {
        let h = FakeHarness(concurrentLoads: 1)
        block(h)
        let (a, b) = (Target("a"), Target("b"))
        h.load(1, target: a)  // a's thumbnail
        h.load(2, target: a)  // a's full image
        h.load(3, target: b)
        h.load(4, target: b)
        // Each body is delivered before the next is finished: a full image
        // that arrived first would rightly supersede its thumbnail.
        for (n, count) in [(100, 1), (3, 2), (4, 3), (1, 4)] {
            h.transport.finish(h.url(n))
            wait(for: [h.log.outcomes(count, self), h.transport.starts(count + 1, self)], timeout: 10)
        }
        h.transport.finish(h.url(2))
        wait(for: [h.log.outcomes(5, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.transport.startedPaths, paths([100, 3, 4, 1, 2]))
        XCTAssertEqual(h.log.deliveredPaths, paths([100, 3, 4, 1, 2]), "each target's thumbnail before its full image")
    }

    /// Each transfer carries its urgency down to the transport (the order of
    /// transfers waiting for a connection of their host): priority first;
    /// then a target's first request in flight (its thumbnail) before any
    /// target's later ones; then the target touched last (LIFO).
    func testTransfersCarryTheirUrgencyDownToTheTransport() {
        let h = FakeHarness(concurrentLoads: 8)
        let (a, b) = (Target("a"), Target("b"))
        h.load(1, target: a)  // a's thumbnail
        h.load(2, target: a)  // a's full image
        h.load(3, target: b)  // b's thumbnail
        h.load(4, target: b)  // b's full image
        h.load(5, priority: .high)
        wait(for: [h.transport.starts(5, self)], timeout: 10)
        let urgency = Dictionary(uniqueKeysWithValues: h.transport.startedRequests.map { ($0.url.path, $0.urgency) })
        let byUrgency = urgency.keys.sorted { urgency[$0]! > urgency[$1]! }
        XCTAssertEqual(byUrgency, paths([5, 3, 1, 4, 2]), "\(urgency)")
        XCTAssertEqual(Set(urgency.filter(\.value.isFirstForTarget).keys), Set(paths([5, 3, 1])), "\(urgency)")
        h.loader.cancelAll()
    }

    func testTouchingATargetAgainMovesItToTheTop() {
        let h = FakeHarness(concurrentLoads: 1)
        block(h)
        let (a, b) = (Target("a"), Target("b"))
        h.load(1, target: a)
        h.load(2, target: a)
        h.load(3, target: b)
        h.load(5, target: a)  // a touched last: its queue goes first, still in order
        h.transport.isSuspended = false
        wait(for: [h.transport.starts(5, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([100, 1, 2, 5, 3]))
    }

    /// The start order of six requests of mixed priorities behind the blocker.
    func priorityOrder(_ order: QueueOrder) -> [String] {
        let h = FakeHarness(concurrentLoads: 1, queueOrder: order)
        block(h)
        for (n, priority) in [(1, ImagePriority.low), (2, .normal), (3, .high), (4, .normal), (5, .veryHigh), (6, .veryLow)] {
            h.load(n, priority: priority)
        }
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(7, self)], timeout: 10)
        return h.transport.startedPaths
    }

    func testHigherPrioritiesFirstThenLastInFirstOut() {
        XCTAssertEqual(priorityOrder(.lifo), paths([100, 5, 3, 4, 2, 1, 6]))
    }

    /// FIFO orders equals the other way; priorities still come first.
    func testHigherPrioritiesFirstThenFirstInFirstOut() {
        XCTAssertEqual(priorityOrder(.fifo), paths([100, 5, 3, 2, 4, 1, 6]))
    }

    /// A target's queue is ranked by its most urgent request, and still starts in order.
    func testATargetsQueueRunsAtItsHighestPriorityInOrder() {
        let h = FakeHarness(concurrentLoads: 1)
        block(h)
        let cell = Target()
        h.load(1, target: cell)
        h.load(2, target: cell, priority: .high)
        h.load(3, priority: .normal)  // touched later, but below the cell's high
        h.transport.isSuspended = false
        wait(for: [h.transport.starts(4, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([100, 1, 2, 3]))
    }

    func testPriorityChangedWhileQueued() {
        let h = FakeHarness(concurrentLoads: 1)
        block(h)
        let first = h.load(1)
        let second = h.load(2)
        h.load(3)
        XCTAssertEqual(first.priority, .normal)
        first.priority = .high
        second.priority = .veryLow
        XCTAssertEqual(first.priority, .high)
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(4, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([100, 1, 3, 2]))
    }

    /// A transfer shared by a low and a high request runs at high, and is
    /// re-ranked when the high one leaves.
    func testASharedTransferIsReRankedWhenARequestLeaves() {
        for cancelHigh in [false, true] {
            let h = FakeHarness(concurrentLoads: 1)
            block(h)
            h.load(1, priority: .low)
            let high = h.load(1, priority: .high)
            h.load(2)
            if cancelHigh { high.cancel() }
            h.transport.isSuspended = false
            wait(for: [h.log.outcomes(cancelHigh ? 3 : 4, self)], timeout: 10)
            XCTAssertEqual(h.transport.startedPaths, paths(cancelHigh ? [100, 2, 1] : [100, 1, 2]))
        }
    }

    func testTaskHandles() {
        let h = FakeHarness(concurrentLoads: 1)
        let running = h.load(1)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        let queued = h.load(2)
        let done = h.load(3)
        XCTAssertEqual(queued.request.url, h.url(2))
        XCTAssertEqual([running.state, queued.state], [.running, .running])
        queued.cancel()
        XCTAssertEqual(queued.state, .cancelled)
        running.cancel()
        XCTAssertEqual(h.transport.cancelled, ["/img/1.png"], "a running transfer nobody needs is stopped")
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        h.transport.finish(h.url(3))
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(done.state, .completed)
        done.cancel()
        XCTAssertEqual(done.state, .completed, "no effect once delivered")
        XCTAssertEqual(h.transport.startedPaths, paths([1, 3]), "the cancelled queued request never started")
        XCTAssertEqual(h.log.deliveredPaths, paths([3]))
        XCTAssertNotEqual(running, queued)
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }

    /// Requests of a target that died while queued are dropped when they
    /// reach the front: never started, never delivered.
    func testDeadTargetsQueuedRequestsNeverStart() {
        let h = FakeHarness(concurrentLoads: 1)
        block(h)
        do {
            let cell = Target()
            h.load(1, target: cell)
            h.load(2, target: cell)
        }
        h.load(3)
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(2, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.transport.startedPaths, paths([100, 3]))
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
        XCTAssertEqual(h.loader.activity.cancelled, 2)
    }

    /// Transfers start only when a slot is free, and concurrentLoads is a true
    /// cap. With two slots freed at once on two threads, the transport may
    /// see their starts in either order: the queue's order is the order of
    /// the `.loading` events (made under the loader's lock).
    func testSlotsAreATrueCap() {
        let h = FakeHarness(concurrentLoads: 2)
        let starts = Box<[UInt64]>([])
        let lock = NSLock()
        h.loader.eventMonitor = { event in
            guard event.kind == .loading else { return }
            lock.withLock { starts.value = (starts.value ?? []) + [event.sequence, UInt64(event.url.deletingPathExtension().lastPathComponent)!] }
        }
        for n in 1...6 { h.load(n) }
        wait(for: [h.transport.starts(2, self)], timeout: 10)
        XCTAssertEqual(h.transport.running.count, 2)
        XCTAssertEqual(h.loader.activity.queued, 4)
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(6, self)], timeout: 10)
        XCTAssertEqual(h.loader.activity.peakInFlight, 2)
        let pairs = stride(from: 0, to: starts.value!.count, by: 2).map { (starts.value![$0], starts.value![$0 + 1]) }
        XCTAssertEqual(pairs.sorted { $0.0 < $1.0 }.map(\.1), [1, 2, 6, 5, 4, 3])
        XCTAssertEqual(Set(h.transport.startedPaths), Set(paths([1, 2, 3, 4, 5, 6])))
    }
}
