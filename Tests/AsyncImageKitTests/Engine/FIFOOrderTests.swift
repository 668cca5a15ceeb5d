import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// `QueueOrder.fifo` (for services), exactly, through a transport the test
/// finishes by hand: first come, first served across targets, per-target
/// order kept; the loader's default stays LIFO. (Priorities under FIFO:
/// SchedulingTests.testHigherPrioritiesFirstThenFirstInFirstOut.)
final class FIFOOrderTests: XCTestCase {
    /// Starts the blocker that holds the only slot while the test queues.
    private func block(_ h: FakeHarness) {
        h.load(100)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
    }

    private func paths(_ ns: [Int]) -> [String] { ns.map { "/img/\($0).png" } }

    func testTheDefaultIsLIFOAndFIFOIsKept() {
        XCTAssertEqual(FakeHarness().loader.queueOrder, .lifo)
        XCTAssertEqual(FakeHarness(queueOrder: .fifo).loader.queueOrder, .fifo)
    }

    /// With one slot, requests start in the order they were made, whatever
    /// their targets (LIFO would start 4, 3, 2, 1).
    func testFirstComeFirstServedWithOneSlot() {
        let h = FakeHarness(concurrentLoads: 1, queueOrder: .fifo)
        block(h)
        let (a, b) = (Target("a"), Target("b"))
        h.load(1)
        h.load(2, target: a)
        h.load(3)
        h.load(4, target: b)
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(5, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([100, 1, 2, 3, 4]))
        withExtendedLifetime((a, b)) {}
    }

    /// A target touched again does not jump the queue: its next request
    /// waits for those made before it on other targets.
    func testATargetTouchedAgainKeepsItsPlaceInFIFOOrder() {
        let h = FakeHarness(concurrentLoads: 1, queueOrder: .fifo)
        block(h)
        let (a, b) = (Target("a"), Target("b"))
        h.load(1, target: a)
        h.load(2, target: b)
        h.load(3, target: a)  // LIFO would start a's lane (1, 3) first
        h.load(4)
        h.transport.isSuspended = false
        wait(for: [h.transport.starts(5, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([100, 1, 2, 3, 4]))
        withExtendedLifetime((a, b)) {}
    }

    /// A request re-ranked while it waits moves within FIFO order by its
    /// arrival, not by the moment it was re-ranked.
    func testARaisedRequestIsServedByItsArrivalAmongItsNewEquals() {
        let h = FakeHarness(concurrentLoads: 1, queueOrder: .fifo)
        block(h)
        h.load(1, priority: .high)
        let second = h.load(2)
        h.load(3, priority: .high)
        second.priority = .high
        h.transport.isSuspended = false
        wait(for: [h.transport.starts(4, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, paths([100, 1, 2, 3]))
    }
}
