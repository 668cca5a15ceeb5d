@testable import AsyncImageKit
import TestSupport
import XCTest

/// The engine's indexes keep their common case inline (a target's one
/// action, a URL's one request, see `RequestSet` and `TargetLanes`) and
/// grow a table for more: these tests walk each past one and back.
final class IndexTests: XCTestCase {
    private final class Cell {}

    private func blocked() -> FakeHarness {
        let h = FakeHarness(concurrentLoads: 1)
        h.load(100)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        return h
    }

    func testATargetWithSeveralActionsKeepsEachActionsNewestURL() {
        let h = blocked()
        let cell = Cell()
        let (a, b, c) = (ImageAction("a") { _, _, _ in }, ImageAction("b") { _, _, _ in }, ImageAction("c") { _, _, _ in })
        h.loader.loadImage(h.url(1), target: cell, action: a)
        h.loader.loadImage(h.url(2), target: cell, action: b)
        h.loader.loadImage(h.url(3), target: cell, action: c)
        h.loader.loadImage(h.url(4), target: cell, action: a)
        XCTAssertEqual(h.loader.url(for: cell, action: a), h.url(4))
        XCTAssertEqual(h.loader.url(for: cell, action: b), h.url(2))
        XCTAssertEqual(h.loader.url(for: cell, action: c), h.url(3))
        XCTAssertEqual(h.loader.url(for: cell), h.url(4), "the newest of any action")

        // The first action's lane goes: another takes its place.
        h.loader.cancelLoadingImages(target: cell, action: a)
        XCTAssertNil(h.loader.url(for: cell, action: a))
        XCTAssertEqual(h.loader.url(for: cell, action: b), h.url(2))
        XCTAssertEqual(h.loader.url(for: cell, action: c), h.url(3))
        XCTAssertEqual(h.loader.url(for: cell), h.url(3))

        h.loader.cancelLoading(url: h.url(2), target: cell, action: b)
        XCTAssertNil(h.loader.url(for: cell, action: b))
        h.loader.cancelLoadingImages(target: cell, action: c)
        XCTAssertNil(h.loader.url(for: cell))
        XCTAssertEqual(h.loader.state.withLock { $0.requests.targets.targetCount }, 0, "no lanes left: the target is forgotten")
        h.loader.loadImage(h.url(3), target: cell, action: c)
        XCTAssertEqual(h.loader.url(for: cell), h.url(3))

        // An action seen before comes back as a lane of its own.
        h.loader.loadImage(h.url(5), target: cell, action: a)
        XCTAssertEqual(h.loader.url(for: cell, action: a), h.url(5))
        XCTAssertEqual(h.loader.url(for: cell, action: c), h.url(3))
        XCTAssertEqual(h.loader.url(for: cell), h.url(5))

        h.loader.cancelLoadingImages(target: cell)
        XCTAssertNil(h.loader.url(for: cell))
        XCTAssertEqual(h.loader.state.withLock { $0.requests.targets.targetCount }, 0, "the target is forgotten")
        XCTAssertEqual(h.loader.activity.pendingRequests, 1, "only the blocker is left")
        XCTAssertEqual(h.loader.activity.queued, 0)
    }

    func testAURLAskedForByManyTargetsIsCancelledByEachIndex() {
        let h = blocked()
        let cells = (0..<4).map { _ in Cell() }
        let tasks = cells.map { h.load(7, target: $0) }
        XCTAssertEqual(h.loader.activity.pendingRequests, 5)

        tasks[1].cancel()
        h.loader.cancelLoading(url: h.url(7), target: cells[0])
        h.loader.cancelLoading(url: h.url(7), target: cells[2], action: h.log.success)
        XCTAssertEqual(tasks.map(\.state), [.cancelled, .cancelled, .cancelled, .running])
        XCTAssertEqual(h.loader.url(for: cells[3]), h.url(7))

        // Down to one request, then back to several, then none.
        let more = cells.prefix(2).map { h.load(7, target: $0) }
        XCTAssertEqual(h.loader.activity.pendingRequests, 4)
        h.loader.cancelLoading(url: h.url(7))
        XCTAssertEqual((more + [tasks[3]]).map(\.state), [.cancelled, .cancelled, .cancelled])
        XCTAssertEqual(h.loader.activity.pendingRequests, 1)

        // The URL's transfer never started (the slot was held): nothing reached the transport for it.
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(1, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.transport.startedPaths, ["/img/100.png"])
    }
}
