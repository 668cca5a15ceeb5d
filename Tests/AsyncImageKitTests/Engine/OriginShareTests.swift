@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// ``AsyncImageLoader/Configuration/originShare``: one origin holds at most
/// its share of the transfer slots while the others' requests go ahead
/// (the one exception to the queue's order), through the fake transport,
/// which holds every transfer until the test finishes it.
final class OriginShareTests: XCTestCase {
    private func url(_ host: String, _ name: String) -> URL { URL(string: "http://\(host).example/\(name).png")! }

    private func load(_ h: FakeHarness, _ url: URL) {
        h.loader.loadImage(ImageRequest(url: url), target: nil, success: h.log.success, failure: h.log.failure)
    }

    /// At 4 slots and a share of 0.5, origin A's third and fourth requests
    /// wait while B's, made after them, starts; each of A's starts, in the
    /// order they came, when one of A's transfers ends; every request has
    /// one outcome.
    func testAnOriginHoldsAtMostItsShareAndTheOthersGoAhead() async {
        let h = FakeHarness(concurrentLoads: 4, cache: false, queueOrder: .fifo) { $0.originShare = 0.5 }
        let a = (1...4).map { url("a", "a\($0)") }
        let b = url("b", "b1")
        for target in a + [b] { load(h, target) }
        await fulfillment(of: [h.transport.starts(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, ["/a1.png", "/a2.png", "/b1.png"])
        XCTAssertEqual(h.transport.running.count, 3, "a slot free, and A's next waits for its origin")
        XCTAssertEqual(h.loader.activity.queued, 2, "A's two waiting lanes")
        XCTAssertEqual(h.loader.activity.inFlight, 3)

        h.transport.finish(a[0])
        await fulfillment(of: [h.transport.starts(4, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/a3.png")
        h.transport.finish(b)
        h.transport.finish(a[1])
        await fulfillment(of: [h.transport.starts(5, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/a4.png")
        XCTAssertLessThanOrEqual(h.transport.peakRunning, 3)
        h.transport.isSuspended = false
        await fulfillment(of: [h.log.outcomes(5, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths.count, 5, "one outcome each")
    }

    /// The default (1) caps nothing: one origin may take every slot.
    func testTheDefaultShareCapsNothing() async {
        let h = FakeHarness(concurrentLoads: 3, cache: false, queueOrder: .fifo)
        for n in 1...3 { load(h, url("a", "a\(n)")) }
        await fulfillment(of: [h.transport.starts(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.running.count, 3)
        h.transport.isSuspended = false
        await fulfillment(of: [h.log.outcomes(3, self)], timeout: 10)
    }

    /// A waiting request of a full origin that is cancelled ends (once),
    /// and a target's later request to another origin is not held behind
    /// it; a raised `concurrentLoads` lets the waiting ones compete again.
    func testCancellingAndRaisingTheCap() async {
        let h = FakeHarness(concurrentLoads: 2, cache: false, queueOrder: .fifo) { $0.originShare = 0.5 }
        load(h, url("a", "a1"))
        let waiting = h.loader.loadImage(
            ImageRequest(url: url("a", "a2")), target: nil, success: h.log.success, failure: h.log.failure)
        load(h, url("a", "a3"))
        load(h, url("b", "b1"))
        await fulfillment(of: [h.transport.starts(2, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths, ["/a1.png", "/b1.png"])
        waiting.cancel()
        h.loader.concurrentLoads = 6  // a share of 3: a3 starts at once
        await fulfillment(of: [h.transport.starts(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedPaths.last, "/a3.png")
        XCTAssertFalse(h.transport.startedPaths.contains("/a2.png"), "cancelled while it waited")
        h.transport.isSuspended = false
        await fulfillment(of: [h.log.outcomes(3, self)], timeout: 10)
    }
}
