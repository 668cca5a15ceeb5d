import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The LIFO queue, the concurrency cap, coalescing, and cache hits that skip the queue.
final class LoaderQueueTests: XCTestCase {
    func testLastInFirstOut() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        let first = h.server.url(1)
        h.server.hold(first)
        h.load(first)
        wait(for: [h.server.arrival(of: first, self)], timeout: 15)
        for n in 2...5 { h.load(h.server.url(n)) }
        XCTAssertEqual(h.loader.activity.queued, 4)
        XCTAssertEqual(h.loader.activity.inFlight, 1)
        h.server.release(first)
        wait(for: [h.log.outcomes(5, self)], timeout: 15)
        XCTAssertEqual(h.server.arrivalOrder, ["/img/1.png", "/img/5.png", "/img/4.png", "/img/3.png", "/img/2.png"])
        XCTAssertEqual(Set(h.log.deliveredPaths), Set(h.server.arrivalOrder), "decodes run in parallel, so deliveries may reorder")
        XCTAssertEqual(h.loader.activity.peakInFlight, 1)
        XCTAssertEqual(h.server.peakActive, 1)
    }

    /// Asking again for a queued image moves it to the top.
    func testAskingAgainMovesToTheTop() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        let first = h.server.url(1)
        h.server.hold(first)
        h.load(first)
        wait(for: [h.server.arrival(of: first, self)], timeout: 15)
        h.load(h.server.url(2))
        h.load(h.server.url(3))
        h.load(h.server.url(2))
        h.server.release(first)
        wait(for: [h.log.outcomes(4, self)], timeout: 15)
        XCTAssertEqual(h.server.arrivalOrder, ["/img/1.png", "/img/2.png", "/img/3.png"])
    }

    /// concurrentLoads is a true cap on what is in flight, not a per-pass count.
    func testConcurrencyCap() throws {
        let h = try LoaderHarness(concurrentLoads: 2)
        let urls = (1...6).map { h.server.url($0) }
        urls.forEach(h.server.hold)
        urls.forEach { h.load($0) }
        // The first two start at once (free slots); the other four wait.
        wait(for: [h.server.arrival(of: urls[0], self), h.server.arrival(of: urls[1], self)], timeout: 15)
        XCTAssertEqual(h.loader.activity.inFlight, 2)
        XCTAssertEqual(h.loader.activity.queued, 4)
        h.loader.concurrentLoads = 3
        XCTAssertEqual(h.loader.activity.inFlight, 3, "raising the cap starts more at once")
        wait(for: [h.server.arrival(of: urls[5], self)], timeout: 15)
        urls.forEach(h.server.release)
        wait(for: [h.log.outcomes(6, self)], timeout: 15)
        XCTAssertEqual(h.loader.activity.peakInFlight, 3)
        XCTAssertLessThanOrEqual(h.server.peakActive, 3)
        XCTAssertEqual(h.loader.activity.inFlight, 0)
    }

    /// Lowering the cap stops nothing already running, but nothing new
    /// starts until the transfers in flight are below the new cap.
    func testLoweringTheCapHoldsBackNewTransfers() throws {
        let h = try LoaderHarness(concurrentLoads: 3)
        let urls = (1...4).map { h.server.url($0) }
        urls.forEach(h.server.hold)
        urls.forEach { h.load($0) }
        wait(for: urls.prefix(3).map { h.server.arrival(of: $0, self) }, timeout: 15)
        h.loader.concurrentLoads = 1
        for (index, url) in urls.prefix(2).enumerated() {
            h.server.release(url)
            wait(for: [h.log.outcomes(index + 1, self)], timeout: 15)
            XCTAssertEqual(h.loader.activity.queued, 1, "\(2 - index) still in flight: the last stays queued")
            XCTAssertEqual(h.server.requestCount(urls[3]), 0)
        }
        h.server.release(urls[2])
        wait(for: [h.server.arrival(of: urls[3], self)], timeout: 15)  // none in flight now: it starts
        h.server.release(urls[3])
        wait(for: [h.log.outcomes(4, self)], timeout: 15)
        XCTAssertEqual(h.loader.activity.peakInFlight, 3)
    }

    func testRequestsForOneURLShareOneTransfer() throws {
        let h = try LoaderHarness()
        let url = h.server.url(8)
        h.server.hold(url)
        let (a, b) = (Target("a"), Target("b"))
        h.load(url, target: a)
        h.load(url, target: b)
        h.load(url)
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        XCTAssertEqual(h.loader.activity.inFlight, 1)
        h.server.release(url)
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(url), 1)
        let targets = h.log.events.compactMap { event -> ObjectIdentifier?? in
            if case .success(_, let target) = event { return target }
            return nil
        }
        XCTAssertEqual(Set(targets), [ObjectIdentifier(a), ObjectIdentifier(b), nil], "each request got its own callback")
    }

    /// Display sizes of one URL share its transfer; the body is decoded once per size.
    func testDisplaySizesOfOneURLShareOneTransfer() throws {
        let h = try LoaderHarness()
        let big = try JPEGEncoder().encode(SyntheticImage.quadrants(width: 800, height: 600))
        h.server.serve("/photo.jpg", big)
        let url = h.server.url(path: "/photo.jpg")
        h.server.hold(url)
        let thumb = ImageRequest(url: url, targetSize: PixelSize(width: 100, height: 100))
        let fit = ImageRequest(url: url, targetSize: PixelSize(width: 100, height: 100), contentMode: .aspectFit)
        let sizes = Box<[PixelSize]>([])
        let lock = NSLock()
        let log = h.log.success
        let record = ImageAction("record") { target, image, url in
            lock.withLock { sizes.value = (sizes.value ?? []) + [image.size] }
            log.handler(target, image, url)
        }
        for request in [ImageRequest(url: url), thumb, fit, thumb] {
            h.loader.loadImage(request, target: nil, success: record, failure: h.log.failure)
        }
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        XCTAssertEqual(h.loader.activity.inFlight, 1)
        XCTAssertEqual(h.loader.activity.queued, 0)
        h.server.release(url)
        wait(for: [h.log.outcomes(4, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(url), 1, "one transfer for every size")
        XCTAssertEqual(
            lock.withLock { sizes.value ?? [] }.sorted { $0.pixelCount < $1.pixelCount },
            [PixelSize(width: 100, height: 100), PixelSize(width: 100, height: 100), PixelSize(width: 100, height: 100),
             PixelSize(width: 800, height: 600)], "the display size exactly, fill and fit")
        for request in [ImageRequest(url: url), thumb, fit] {
            XCTAssertNotNil(h.cache.image(for: request.cacheKey), request.cacheKey.description)
        }
        XCTAssertTrue(h.log.events.filter { if case .failure = $0 { return true } else { return false } }.isEmpty)
    }

    /// Requests that share a transfer, a decode or a cached image each keep
    /// their own pixel limit, whichever came first.
    func testEachRequestKeepsItsOwnPixelLimit() throws {
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 300, height: 300, color: RGBA(r: 1, g: 2, b: 3)))
        // Two 1x1 frames: 2 pixels of image, but the GIF decoder counts each
        // frame as at least 256, so 300 is too little on its own.
        let gif = try GIFWriter.encode(
            width: 1, height: 1, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)],
            frames: [GIFFrameSpec.filled(1, width: 1, height: 1), GIFFrameSpec.filled(0, width: 1, height: 1)])
        XCTAssertThrowsError(try ImageDecoder().decode(gif, options: DecodingOptions(maxPixels: 300)))
        for (body, limit) in [(png, 1_000), (gif, 300)] {
        for strictFirst in [true, false] {
            let h = try LoaderHarness()
            h.server.serve("/p.png", body)
            let url = h.server.url(path: "/p.png")
            h.server.hold(url)
            let strict = ImageRequest(url: url, maxPixels: limit)
            let lenient = ImageRequest(url: url)
            let strictTarget = Target("strict")
            let lenientTarget = Target("lenient")
            let order = strictFirst ? [(strict, strictTarget), (lenient, lenientTarget)] : [(lenient, lenientTarget), (strict, strictTarget)]
            for (request, target) in order {
                h.loader.loadImage(request, target: target, success: h.log.success, failure: h.log.failure)
            }
            wait(for: [h.server.arrival(of: url, self)], timeout: 15)
            h.server.release(url)
            wait(for: [h.log.outcomes(2, self)], timeout: 15)
            XCTAssertEqual(h.server.requestCount(url), 1)
            let events = h.log.events
            XCTAssertTrue(events.contains(.success("/p.png", target: ObjectIdentifier(lenientTarget))), "\(events)")
            XCTAssertTrue(events.contains(.failure("/p.png", target: ObjectIdentifier(strictTarget))), "\(events)")
            guard case .decoding(let failure, _)? = h.log.errors["/p.png"] else { return XCTFail("expected a limits failure") }
            XCTAssertEqual(failure.stage, .limits)

            // A cache hit is checked against the new request's limit too.
            h.loader.loadImage(strict, target: strictTarget, success: h.log.success, failure: h.log.failure)
            wait(for: [h.log.outcomes(3, self)], timeout: 15)
            XCTAssertEqual(h.log.events.filter { $0 == .failure("/p.png", target: ObjectIdentifier(strictTarget)) }.count, 2)
            XCTAssertEqual(h.server.requestCount(url), 1, "from the cache")
        }
        }
    }

    /// A request that joins while a decode under a lower pixel limit runs is
    /// not failed by that limit: the body is decoded again under its own.
    /// (It joins from the monitor at the first request's `.decoding` event,
    /// after that decode's options are fixed and before it is dispatched.)
    func testJoiningWithAHigherPixelLimitDecodesAgain() throws {
        let h = try LoaderHarness()
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 300, height: 300, color: RGBA(r: 1, g: 2, b: 3)))
        h.server.serve("/p.png", png)
        let url = h.server.url(path: "/p.png")
        let strictTarget = Target("strict")
        let lenientTarget = Target("lenient")
        let loader = h.loader
        let log = h.log
        let monitor = JoinAtFirstDecode(loader) {
            loader.loadImage(ImageRequest(url: url), target: lenientTarget, success: log.success, failure: log.failure)
        }
        h.loader.loadImage(
            ImageRequest(url: url, maxPixels: 1_000), target: strictTarget, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.server.requestCount(url), 1)
        let events = h.log.events
        XCTAssertTrue(events.contains(.failure("/p.png", target: ObjectIdentifier(strictTarget))), "\(events)")
        XCTAssertTrue(events.contains(.success("/p.png", target: ObjectIdentifier(lenientTarget))), "\(events)")
        // The lenient request sees the strict decode (it joined during it), then its own.
        let lenient = monitor.events.filter { $0.target == ObjectIdentifier(lenientTarget) }.map(\.kind)
        XCTAssertEqual(lenient.filter { $0 == .decoding }.count, 2, "\(lenient)")
        XCTAssertEqual(lenient.last, .delivered(success: true))
        XCTAssertEqual(h.log.images["/p.png"]?.size, PixelSize(width: 300, height: 300))
    }

    /// The shared transfer is cancelled only when no request needs it.
    func testSharedTransferSurvivesPartialCancel() throws {
        let h = try LoaderHarness()
        let url = h.server.url(9)
        h.server.hold(url)
        let (a, b) = (Target("a"), Target("b"))
        h.load(url, target: a)
        h.load(url, target: b)
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        h.loader.cancelLoadingImages(target: a)
        XCTAssertEqual(h.loader.activity.inFlight, 1)
        h.server.release(url)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.log.events.last, .success("/img/9.png", target: ObjectIdentifier(b)))
        XCTAssertEqual(h.log.deliveredPaths.count, 1)

        let other = h.server.url(10)
        h.server.hold(other)
        h.load(other, target: a)
        h.load(other, target: b)
        wait(for: [h.server.arrival(of: other, self)], timeout: 15)
        h.loader.cancelLoadingImages(target: a)
        h.loader.cancelLoadingImages(target: b)
        XCTAssertTrue(try XCTUnwrap(h.server.connection(other)).waitForPeerClose(timeout: 10))
        XCTAssertEqual(h.loader.activity.inFlight, 0)
    }

    func testCacheHitsNeverWaitInTheQueue() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        h.load(h.server.url(1))
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        let blocker = h.server.url(2)
        h.server.hold(blocker)
        h.load(blocker)
        wait(for: [h.server.arrival(of: blocker, self)], timeout: 15)
        h.load(h.server.url(1))  // cached: delivered while the only slot is busy
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        XCTAssertEqual(h.log.deliveredPaths, ["/img/1.png", "/img/1.png"])
        XCTAssertEqual(h.server.requestCount(h.server.url(1)), 1)
        h.server.release(blocker)
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
    }
}
