import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Cancelling by URL, target and action; weak targets.
final class CancellationTests: XCTestCase {
    private struct Load {
        let url: Int
        let target: Int?
        let action: String
    }

    /// Runs `loads` held, cancels with `cancel`, releases everything, and
    /// returns which loads were delivered. Twice: with every transfer in
    /// flight at the cancel (8 slots), and with only the first URL in flight
    /// and the others queued (1 slot); both must give the same survivors, and
    /// a queued URL none of whose requests survive must never be fetched.
    private func survivors(
        of loads: [Load], _ cancel: (AsyncImageLoader, [Target], [URL], [String: ImageAction]) -> Void,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> Set<String> {
        let inFlight = try survivors(of: loads, concurrentLoads: 8, cancel, file: file, line: line)
        let queued = try survivors(of: loads, concurrentLoads: 1, cancel, file: file, line: line)
        XCTAssertEqual(inFlight, queued, "cancelled in flight vs queued", file: file, line: line)
        return inFlight
    }

    private func survivors(
        of loads: [Load], concurrentLoads: Int, _ cancel: (AsyncImageLoader, [Target], [URL], [String: ImageAction]) -> Void,
        file: StaticString, line: UInt
    ) throws -> Set<String> {
        let h = try LoaderHarness(concurrentLoads: concurrentLoads)
        let targets = (0..<3).map { Target("t\($0)") }
        let urls = (0..<3).map { h.server.url($0) }
        urls.forEach(h.server.hold)
        let delivered = Box<Set<String>>([])
        var actions: [String: ImageAction] = [:]
        for name in ["x", "y"] {
            actions[name] = ImageAction(name) { target, _, url in
                let who = targets.firstIndex { $0 === target }.map { "t\($0)" } ?? "none"
                delivered.value = (delivered.value ?? []).union(["\(url.lastPathComponent)/\(who)/\(name)"])
                h.log.record(.success(url.path, target: nil))
            }
        }
        for load in loads {
            h.loader.loadImage(
                ImageRequest(url: urls[load.url]), target: load.target.map { targets[$0] }, success: actions[load.action])
        }
        let started = concurrentLoads == 1 ? [loads[0].url] : Array(Set(loads.map(\.url)))
        wait(for: started.map { h.server.arrival(of: urls[$0], self) }, timeout: 15)
        XCTAssertEqual(h.loader.activity.queued, Set(loads.map(\.url)).count - started.count, file: file, line: line)
        cancel(h.loader, targets, urls, actions)
        let pending = h.loader.activity.pendingRequests
        urls.forEach(h.server.release)
        wait(for: [h.log.outcomes(pending, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.loader.activity.pendingRequests, 0, file: file, line: line)
        let result = delivered.value ?? []
        for (index, url) in urls.enumerated() where !started.contains(index) {
            let survives = result.contains { $0.hasPrefix(url.lastPathComponent + "/") }
            XCTAssertEqual(
                h.server.requestCount(url), survives ? 1 : 0, "\(url.lastPathComponent), queued at the cancel",
                file: file, line: line)
        }
        return result
    }


    private let loads = [
        Load(url: 0, target: 0, action: "x"), Load(url: 0, target: 0, action: "y"), Load(url: 0, target: 1, action: "x"),
        Load(url: 1, target: 0, action: "x"), Load(url: 2, target: nil, action: "x"),
    ]

    func testCancelByURLTargetAndAction() throws {
        let result = try survivors(of: loads) { loader, t, u, a in loader.cancelLoading(url: u[0], target: t[0], action: a["x"]!) }
        XCTAssertEqual(result, ["0.png/t0/y", "0.png/t1/x", "1.png/t0/x", "2.png/none/x"])
    }

    func testCancelByURLAndTarget() throws {
        let result = try survivors(of: loads) { loader, t, u, _ in loader.cancelLoading(url: u[0], target: t[0]) }
        XCTAssertEqual(result, ["0.png/t1/x", "1.png/t0/x", "2.png/none/x"])
    }

    func testCancelByURL() throws {
        let result = try survivors(of: loads) { loader, _, u, _ in
            // The queued one first: cancelling 0 first frees its slot for 2 (LIFO).
            loader.cancelLoading(url: u[2])
            loader.cancelLoading(url: u[0])
        }
        XCTAssertEqual(result, ["1.png/t0/x"])
    }

    func testCancelByTargetAndAction() throws {
        let result = try survivors(of: loads) { loader, t, _, a in loader.cancelLoadingImages(target: t[0], action: a["x"]!) }
        XCTAssertEqual(result, ["0.png/t0/y", "0.png/t1/x", "2.png/none/x"])
    }

    func testCancelByTarget() throws {
        let result = try survivors(of: loads) { loader, t, _, _ in loader.cancelLoadingImages(target: t[0]) }
        XCTAssertEqual(result, ["0.png/t1/x", "2.png/none/x"])
    }

    func testCancelledTransferIsStoppedAndNothingIsPosted() throws {
        let h = try LoaderHarness()
        let url = h.server.url(5)
        h.server.hold(url)
        let cell = Target()
        h.load(url, target: cell)
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        XCTAssertEqual(h.loader.url(for: cell), url)
        h.loader.cancelLoading(url: url, target: cell)
        XCTAssertNil(h.loader.url(for: cell))
        XCTAssertTrue(try XCTUnwrap(h.server.connection(url)).waitForPeerClose(timeout: 10))
        h.server.release(url)
        h.load(h.server.url(6))
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.events.map(\.description), ["didFinish(/img/6.png)", "success(/img/6.png)"])
        XCTAssertEqual(h.loader.activity.cancelled, 1)
    }

    func testDeallocatedTargetCancelsItsTransfer() throws {
        let h = try LoaderHarness()
        let url = h.server.url(7)
        h.server.hold(url)
        do {
            let doomed = Target()
            h.load(url, target: doomed)
            wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        }
        // Nothing holds the target now: the loader notices and stops the transfer.
        XCTAssertTrue(try XCTUnwrap(h.server.connection(url)).waitForPeerClose(timeout: 10))
        h.server.release(url)
        h.load(h.server.url(8))
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, ["/img/8.png"])
        XCTAssertFalse(h.log.events.contains(.notified("/img/7.png", finished: true)))
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }

    func testDeallocatedTargetsQueuedRequestsAreDropped() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        let blocker = h.server.url(1)
        h.server.hold(blocker)
        h.load(blocker)
        wait(for: [h.server.arrival(of: blocker, self)], timeout: 15)
        do {
            let doomed = Target()
            h.load(h.server.url(2), target: doomed)
        }
        h.server.release(blocker)
        h.load(h.server.url(3))
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.server.requestCount(h.server.url(2)), 0)
        XCTAssertEqual(h.log.deliveredPaths, ["/img/1.png", "/img/3.png"])
    }

    func testLiveTargetKeepsASharedTransfer() throws {
        let h = try LoaderHarness()
        let url = h.server.url(4)
        h.server.hold(url)
        let survivor = Target()
        do {
            let doomed = Target()
            h.load(url, target: doomed)
            h.load(url, target: survivor)
            wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        }
        h.server.release(url)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.events.last, .success("/img/4.png", target: ObjectIdentifier(survivor)))
        XCTAssertEqual(h.log.deliveredPaths.count, 1)
    }

    /// A loader let go while its requests are pending stops their transfers
    /// (no transfer runs on with nobody to finish it) and ends them silently:
    /// no callback, and a queued URL is never fetched.
    func testReleasingALoaderStopsItsTransfers() throws {
        let server = try ImageServer()
        let (held, queued) = (server.url(3), server.url(4))
        server.hold(held)
        let queue = DispatchQueue(label: "released loader's deliveries")
        let calls = Counter()
        let success = ImageAction("count") { _, _, _ in calls.increment() }
        let failure = ImageFailureAction("count") { _, _, _ in calls.increment() }
        var loader: AsyncImageLoader? = AsyncImageLoader(
            cache: nil, concurrentLoads: 1, deliveryQueue: queue, notificationCenter: NotificationCenter())
        let target = Target()
        loader?.loadImage(held, target: target, success: success, failure: failure)
        loader?.loadImage(queued, target: target, success: success, failure: failure)
        wait(for: [server.arrival(of: held, self)], timeout: 15)
        weak let released = loader
        loader = nil
        XCTAssertNil(released, "nothing else keeps a loader alive")
        XCTAssertTrue(try XCTUnwrap(server.connection(held)).waitForPeerClose(timeout: 10), "the transfer is stopped")
        server.release(held)
        queue.sync {}
        XCTAssertEqual(calls.value, 0)
        XCTAssertEqual(server.requestCount(queued), 0)
    }

    /// An object released by the loader (here: held only by a cancelled
    /// request's action) whose `deinit` calls the loader again, as the
    /// original AsyncImageView's `dealloc` did. Its last release must come
    /// after the loader's lock is let go, or the call deadlocks.
    func testDeinitThatCallsTheLoaderDoesNotDeadlock() throws {
        let h = try LoaderHarness()
        let url = h.server.url(21)
        h.server.hold(url)
        let gone = expectation(description: "the owner's deinit ran and returned")
        do {
            let owner = ReentrantOwner(h.loader, gone)
            let action = ImageAction("owned") { _, _, _ in withExtendedLifetime(owner) {} }
            h.loader.loadImage(ImageRequest(url: url), target: nil, success: action)
        }
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        let loader = h.loader
        DispatchQueue.global().async { loader.cancelLoading(url: url) }
        guard XCTWaiter().wait(for: [gone], timeout: 15) == .completed else {
            return XCTFail("deadlock: the owner's deinit never returned")  // and the loader's lock is lost
        }
        h.server.release(url)
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }

    /// Replacing a setting releases the old value (here an event monitor
    /// closure holding an object whose `deinit` calls the loader) after the
    /// loader's lock, not under it.
    func testReplacingASettingDoesNotReleaseUnderTheLock() throws {
        let h = try LoaderHarness()
        let gone = expectation(description: "the monitor's probe was released and its deinit returned")
        do {
            let probe = ReentrantOwner(h.loader, gone)
            h.loader.eventMonitor = { _ in withExtendedLifetime(probe) {} }
        }
        let loader = h.loader
        DispatchQueue.global().async { loader.eventMonitor = nil }
        guard XCTWaiter().wait(for: [gone], timeout: 15) == .completed else {
            return XCTFail("deadlock: the probe's deinit never returned")
        }
        XCTAssertNil(h.loader.eventMonitor)
    }
}

/// An object whose `deinit` calls the loader again (as the original
/// AsyncImageView's `dealloc` did), then fulfils `gone`: released under the
/// loader's lock, it would deadlock.
private final class ReentrantOwner: @unchecked Sendable {
    let loader: AsyncImageLoader
    let gone: XCTestExpectation

    init(_ loader: AsyncImageLoader, _ gone: XCTestExpectation) {
        self.loader = loader
        self.gone = gone
    }

    deinit {
        loader.cancelLoadingImages(target: self)
        _ = loader.activity
        gone.fulfill()
    }
}
