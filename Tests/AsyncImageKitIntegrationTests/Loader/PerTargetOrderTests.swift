import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Thumbnail then full image on one target: the later URL supersedes the earlier
/// once delivered (the original's issues #13, #50, #54).
final class PerTargetOrderTests: XCTestCase {
    /// AsyncImageView's promise under a busy queue: set the thumbnail, then
    /// at once the full image, on a cell while the only slot is held by
    /// another target. The server receives the thumbnail first, and the
    /// cell's action sees the thumbnail, then the full image.
    func testThumbnailStartsAndShowsFirstWhenTheQueueIsBusy() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        let (blocker, thumb, full) = (h.server.url(9), h.server.url(1), h.server.url(2))
        h.server.hold(blocker)
        h.server.hold(full)
        let other = Target("other")
        h.load(blocker, target: other)
        wait(for: [h.server.arrival(of: blocker, self)], timeout: 15)
        let cell = Target("cell")
        h.load(thumb, target: cell)
        h.load(full, target: cell)
        h.server.release(blocker)
        wait(for: [h.log.outcomes(2, self), h.server.arrival(of: full, self)], timeout: 15)
        h.server.release(full)
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.server.arrivalOrder, ["/img/9.png", "/img/1.png", "/img/2.png"])
        let cellDeliveries = h.log.events.compactMap { event -> String? in
            guard case .success(let path, ObjectIdentifier(cell)) = event else { return nil }
            return path
        }
        XCTAssertEqual(cellDeliveries, ["/img/1.png", "/img/2.png"])
        XCTAssertEqual(h.server.peakActive, 1)
    }

    func testThumbnailFirstWhenItArrivesFirst() throws {
        let h = try LoaderHarness()
        let (thumb, full) = (h.server.url(1), h.server.url(2))
        h.server.hold(thumb)
        h.server.hold(full)
        let cell = Target()
        h.load(thumb, target: cell)
        h.load(full, target: cell)
        wait(for: [h.server.arrival(of: thumb, self), h.server.arrival(of: full, self)], timeout: 15)
        XCTAssertEqual(h.loader.url(for: cell), full)
        h.server.release(thumb)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.loader.url(for: cell), full, "the thumbnail was delivered; the full image is still to come")
        XCTAssertEqual(h.loader.url(for: cell, action: h.log.success), full)
        h.server.release(full)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, ["/img/1.png", "/img/2.png"])
        XCTAssertNil(h.loader.url(for: cell), "both delivered")
    }

    func testLateThumbnailIsNeverShownOverTheFullImage() throws {
        let h = try LoaderHarness()
        let (thumb, full) = (h.server.url(1), h.server.url(2))
        h.server.hold(thumb)
        h.server.hold(full)
        let cell = Target()
        h.load(thumb, target: cell)
        h.load(full, target: cell)
        wait(for: [h.server.arrival(of: thumb, self), h.server.arrival(of: full, self)], timeout: 15)
        h.server.release(full)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        // Delivering the full image cancelled the thumbnail's transfer.
        XCTAssertTrue(try XCTUnwrap(h.server.connection(thumb)).waitForPeerClose(timeout: 10))
        h.server.release(thumb)
        h.load(h.server.url(3))  // a later load through the same queues
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, ["/img/2.png", "/img/3.png"])
        XCTAssertNil(h.loader.url(for: cell))
    }

    /// The full image is a cache hit while the thumbnail is still loading.
    func testCachedFullImageCancelsTheThumbnailInFlight() throws {
        let h = try LoaderHarness()
        let (thumb, full) = (h.server.url(1), h.server.url(2))
        h.load(full)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.server.hold(thumb)
        let cell = Target()
        h.load(thumb, target: cell)
        wait(for: [h.server.arrival(of: thumb, self)], timeout: 15)
        h.load(full, target: cell)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        XCTAssertTrue(try XCTUnwrap(h.server.connection(thumb)).waitForPeerClose(timeout: 10))
        h.server.release(thumb)
        h.load(h.server.url(3))
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, ["/img/2.png", "/img/2.png", "/img/3.png"])
    }

    /// The thumbnail is still queued when the cached full image is set: it never loads.
    func testCachedFullImageDropsTheQueuedThumbnail() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        let (thumb, full, blocker) = (h.server.url(1), h.server.url(2), h.server.url(4))
        h.load(full)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.server.hold(blocker)
        h.load(blocker)
        wait(for: [h.server.arrival(of: blocker, self)], timeout: 15)
        let cell = Target()
        h.load(thumb, target: cell)
        h.load(full, target: cell)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.server.release(blocker)
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.server.requestCount(thumb), 0)
        XCTAssertEqual(h.log.deliveredPaths, ["/img/2.png", "/img/2.png", "/img/4.png"])
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }

    /// Order is per target and action: another action on the same target is independent.
    func testOrderIsPerAction() throws {
        let h = try LoaderHarness()
        let (a, b) = (h.server.url(1), h.server.url(2))
        h.server.hold(a)
        h.server.hold(b)
        let cell = Target()
        let other = ImageAction("other") { target, image, url in h.log.success.handler(target, image, url) }
        h.loader.loadImage(ImageRequest(url: a), target: cell, success: other)
        h.load(b, target: cell)
        wait(for: [h.server.arrival(of: a, self), h.server.arrival(of: b, self)], timeout: 15)
        XCTAssertEqual(h.loader.url(for: cell, action: other), a)
        XCTAssertEqual(h.loader.url(for: cell, action: h.log.success), b)
        h.server.release(b)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.server.release(a)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        XCTAssertEqual(h.log.deliveredPaths, ["/img/2.png", "/img/1.png"])
    }
}
