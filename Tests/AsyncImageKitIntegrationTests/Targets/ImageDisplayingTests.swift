import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// A class that adopts ImageDisplaying with a loader of the test's own.
private final class Thumbnail: ImageDisplaying, @unchecked Sendable {
    let loader: AsyncImageLoader
    var image: Image? {
        didSet { onImage?(image) }
    }
    var onImage: ((Image?) -> Void)?
    var failures: [URL] = []

    init(loader: AsyncImageLoader) { self.loader = loader }

    var imageLoader: AsyncImageLoader { loader }

    func imageLoadDidFail(_ error: AsyncImageError, url: URL) { failures.append(url) }
}

final class ImageDisplayingTests: XCTestCase {
    func testImageURLLoadsAssignsAndClears() throws {
        let h = try LoaderHarness()
        let view = Thumbnail(loader: h.loader)
        XCTAssertNil(view.imageURL)
        let loaded = expectation(description: "image set")
        view.onImage = { if $0 != nil { loaded.fulfill() } }
        view.imageURL = h.server.url(3)
        XCTAssertEqual(view.imageURL, h.server.url(3))
        wait(for: [loaded], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(view.image?.pixel(x: 0, y: 0), ImageServer.color(3))
        XCTAssertEqual(view.imageURL, h.server.url(3), "getting returns the URL most recently set")

        view.onImage = nil
        let slow = h.server.url(4)
        h.server.hold(slow)
        view.imageURL = slow
        wait(for: [h.server.arrival(of: slow, self)], timeout: 15)
        view.imageURL = nil
        h.drainDeliveries()  // off the delivery queue, the clear is made there
        XCTAssertNil(view.image)
        XCTAssertNil(view.imageURL)
        XCTAssertTrue(try XCTUnwrap(h.server.connection(slow)).waitForPeerClose(timeout: 10), "nil cancels the load")
    }

    /// `imageURL = nil` on another thread while a delivery is under way (held
    /// in a didFinish observer, on the delivery queue right before the action)
    /// clears on the delivery queue after it: the image does not come back,
    /// and every assignment happens on the delivery queue.
    func testClearingOffTheDeliveryQueueRunsAfterADeliveryUnderWay() throws {
        let h = try LoaderHarness()
        let view = Thumbnail(loader: h.loader)
        let offQueue = Counter()
        view.onImage = { _ in if !h.isOnDeliveryQueue { offQueue.increment() } }
        h.whileDeliveryIsUnderWay(for: view, start: { view.imageURL = h.server.url(6) }, meanwhile: { view.imageURL = nil })
        XCTAssertNil(view.image)
        XCTAssertNil(view.imageURL)
        XCTAssertEqual(offQueue.value, 0, "assigned only on the delivery queue")
    }

    /// On the delivery queue itself the clear is immediate.
    func testClearingOnTheDeliveryQueueIsImmediate() throws {
        let h = try LoaderHarness()
        let view = Thumbnail(loader: h.loader)
        let loaded = expectation(description: "image set")
        view.onImage = { if $0 != nil { loaded.fulfill() } }
        view.imageURL = h.server.url(3)
        wait(for: [loaded], timeout: 15)
        let cleared = h.queue.sync { () -> Bool in
            view.imageURL = nil
            return view.image == nil
        }
        XCTAssertTrue(cleared)
    }

    /// With the main queue delivering, the main thread counts as the delivery
    /// queue: the clear is immediate there.
    func testClearingOnTheMainThreadWithTheMainQueueIsImmediate() throws {
        try XCTSkipUnless(Thread.isMainThread, "tests run on the main thread here")
        let view = Thumbnail(loader: AsyncImageLoader(cache: nil, deliveryQueue: .main, notificationCenter: NotificationCenter()))
        view.image = SyntheticImage.solid(width: 2, height: 2, color: RGBA(r: 1, g: 2, b: 3))
        view.imageURL = nil
        XCTAssertNil(view.image)
    }

    /// `imageURL = nil` from a didFinish observer (on the delivery queue,
    /// right before the action) wins over the delivery under way.
    func testClearingFromADidFinishObserverWins() throws {
        let h = try LoaderHarness()
        let view = Thumbnail(loader: h.loader)
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: view, queue: nil) { _ in
            view.imageURL = nil
        }
        defer { h.center.removeObserver(observer) }
        let posted = expectation(forNotification: .asyncImageLoadDidFinish, object: view, notificationCenter: h.center)
        view.imageURL = h.server.url(6)
        wait(for: [posted], timeout: 15)
        h.drainDeliveries()
        XCTAssertNil(view.image)
        XCTAssertNil(view.imageURL)
    }

    /// Two threads setting `imageURL` at once: whichever the object records
    /// last is the one the loader treats as latest, so the image shown in the
    /// end is the image of `imageURL`.
    func testConcurrentSetsEndWithTheImageOfTheLastURL() throws {
        let h = try LoaderHarness()
        let urls = (0..<8).map { h.server.url(40 + $0) }
        for url in urls { h.load(url) }  // cached: deliveries follow at once
        wait(for: [h.log.outcomes(urls.count, self)], timeout: 15)
        for round in 0..<60 {
            let view = Thumbnail(loader: h.loader)
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                for step in 0..<50 { view.imageURL = urls[side * 4 + (round + step) % 4] }
            }
            h.drainDeliveries()
            let last = try XCTUnwrap(view.imageURL)
            let n = urls.firstIndex(of: last)! + 40
            guard view.image?.pixel(x: 0, y: 0) == ImageServer.color(n) else {
                return XCTFail("round \(round): imageURL \(last.path), image \(String(describing: view.image?.pixel(x: 0, y: 0)))")
            }
        }
    }

    func testThumbnailThenFullImage() throws {
        let h = try LoaderHarness()
        let view = Thumbnail(loader: h.loader)
        let (thumb, full) = (h.server.url(1), h.server.url(2))
        h.server.hold(full)
        let shown = Box<[RGBA]>([])
        let first = expectation(description: "thumbnail")
        let second = expectation(description: "full")
        view.onImage = { image in
            guard let image else { return }
            shown.value = (shown.value ?? []) + [image.pixel(x: 0, y: 0)]
            (shown.value?.count == 1 ? first : second).fulfill()
        }
        view.imageURL = thumb
        view.imageURL = full
        wait(for: [h.server.arrival(of: full, self), first], timeout: 15)
        h.server.release(full)
        wait(for: [second], timeout: 15)
        XCTAssertEqual(shown.value, [ImageServer.color(1), ImageServer.color(2)])
    }

    func testFailureIsReported() throws {
        let h = try LoaderHarness()
        let view = Thumbnail(loader: h.loader)
        let done = expectation(description: "didFail posted")
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFail, object: nil, queue: nil) { _ in done.fulfill() }
        view.imageURL = h.server.url(path: "/absent.png")
        wait(for: [done], timeout: 15)
        h.center.removeObserver(observer)
        h.drainDeliveries()
        XCTAssertEqual(view.failures, [h.server.url(path: "/absent.png")])
    }
}
