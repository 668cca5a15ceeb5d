import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Settings, actions, notifications, errors and async/await, against the loopback server.
final class LoaderBasicsTests: XCTestCase {
    func testDefaults() {
        let shared = AsyncImageLoader.shared
        XCTAssertEqual(shared.concurrentLoads, AsyncImageLoader.defaultConcurrentLoads)
        XCTAssertEqual(shared.loadingTimeout, 60)
        XCTAssertNil(shared.requestTimeout)
        XCTAssertTrue(shared.cache === AsyncImageLoader.sharedCache)
        XCTAssertTrue(shared.notificationCenter === NotificationCenter.default)
        XCTAssertEqual(shared.deliveryQueue.label, DispatchQueue.main.label)
        XCTAssertTrue(AsyncImageLoader().cache === AsyncImageLoader.sharedCache)
        XCTAssertEqual(Notification.Name.asyncImageLoadDidFinish.rawValue, "AsyncImageLoadDidFinish")
        XCTAssertEqual(Notification.Name.asyncImageLoadDidFail.rawValue, "AsyncImageLoadDidFail")
        XCTAssertEqual([AsyncImageImageKey, AsyncImageURLKey, AsyncImageCacheKey, AsyncImageErrorKey], ["image", "URL", "cache", "error"])
    }

    func testSuccessGetsTargetImageAndURL() throws {
        let h = try LoaderHarness()
        let target = Target()
        h.load(h.server.url(7), target: target)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        XCTAssertEqual(h.log.events.last, .success("/img/7.png", target: ObjectIdentifier(target)))
        let image = try XCTUnwrap(h.log.images["/img/7.png"])
        XCTAssertEqual(image.size, PixelSize(width: 4, height: 4))
        XCTAssertEqual(image.pixel(x: 1, y: 1), ImageServer.color(7))
    }

    func testActionOnlyVariantAndPreload() throws {
        let h = try LoaderHarness()
        let done = expectation(description: "action")
        let target = Target()
        let got = Box<URL>()
        h.loader.loadImage(h.server.url(1), target: target, action: ImageAction("only") { t, _, url in
            XCTAssertTrue(t === target)
            got.value = url
            done.fulfill()
        })
        wait(for: [done], timeout: 15)
        XCTAssertEqual(got.value, h.server.url(1))

        // No target: fills the cache and posts didFinish with a nil object.
        let posted = expectation(description: "didFinish for the preload")
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { note in
            if (note.userInfo?[AsyncImageURLKey] as? URL) == h.server.url(2) {
                XCTAssertNil(note.object)
                posted.fulfill()
            }
        }
        h.loader.loadImage(h.server.url(2))
        wait(for: [posted], timeout: 15)
        h.center.removeObserver(observer)
        XCTAssertNotNil(h.cache.image(for: ImageCacheKey(url: h.server.url(2))))
    }

    func testNotificationsArePostedRightBeforeTheActionWithTheirUserInfo() throws {
        let h = try LoaderHarness()
        let target = Target()
        struct Note: Sendable {
            let finished: Bool
            let object: ObjectIdentifier?
            let url: URL?
            let imageSize: PixelSize?
            let cache: ObjectIdentifier?
            let error: AsyncImageError?
        }
        let infos = Box<[Note]>([])
        let observers = [Notification.Name.asyncImageLoadDidFinish, .asyncImageLoadDidFail].map { name in
            h.center.addObserver(forName: name, object: nil, queue: nil) { note in
                let info = note.userInfo
                let record = Note(
                    finished: note.name == .asyncImageLoadDidFinish,
                    object: (note.object as AnyObject?).map(ObjectIdentifier.init),
                    url: info?[AsyncImageURLKey] as? URL,
                    imageSize: (info?[AsyncImageImageKey] as? Image)?.size,
                    cache: (info?[AsyncImageCacheKey] as AnyObject?).map(ObjectIdentifier.init),
                    error: info?[AsyncImageErrorKey] as? AsyncImageError)
                infos.value = (infos.value ?? []) + [record]
            }
        }
        defer { observers.forEach(h.center.removeObserver) }

        let other = Target("other")  // same target and action would let the 404 supersede the image
        h.load(h.server.url(3), target: target)
        h.load(h.server.url(path: "/nothing-here.png"), target: other)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.load(h.server.url(3), target: target)  // now a cache hit
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        h.drainDeliveries()

        // Each outcome comes right after its own notification.
        let events = h.log.events
        for (index, event) in events.enumerated() {
            guard index > 0 else {
                XCTAssertTrue(event.description.hasPrefix("did"), "the first event is a notification")
                continue
            }
            switch event {
            case .success(let path, _):
                XCTAssertEqual(events[index - 1], .notified(path, finished: true))
            case .failure(let path, _):
                XCTAssertEqual(events[index - 1], .notified(path, finished: false))
            case .notified: break
            }
        }
        let notes = try XCTUnwrap(infos.value)
        XCTAssertEqual(notes.count, 3, "one notification per request")
        let finished = notes.filter(\.finished)
        XCTAssertEqual(finished.count, 2)
        for note in finished {
            XCTAssertEqual(note.object, ObjectIdentifier(target))
            XCTAssertEqual(note.url, h.server.url(3))
            XCTAssertEqual(note.imageSize, PixelSize(width: 4, height: 4))
        }
        XCTAssertEqual(finished[0].cache, ObjectIdentifier(h.cache), "a loaded image names the cache it was stored in")
        XCTAssertEqual(finished[1].cache, ObjectIdentifier(h.cache), "a cache hit names its cache")
        let failed = try XCTUnwrap(notes.first { !$0.finished })
        XCTAssertEqual(withoutHeaders(failed.error), .httpStatus(h.server.url(path: "/nothing-here.png"), code: 404))
        XCTAssertEqual(failed.url, h.server.url(path: "/nothing-here.png"))
        XCTAssertEqual(failed.object, ObjectIdentifier(other))
    }

    func testErrorsReachTheFailureActionTyped() throws {
        let h = try LoaderHarness(timeout: 0.5)
        h.server.serve("/junk.png", Data("<html>not an image</html>".utf8))
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 64, height: 64))
        h.server.serve("/truncated.png", png.prefix(png.count / 2))
        let slow = h.server.url(path: "/slow.png")
        h.server.hold(slow)
        let missing = h.server.url(path: "/missing.png")
        let ftp = try XCTUnwrap(URL(string: "ftp://127.0.0.1/a.png"))
        for url in [missing, h.server.url(path: "/junk.png"), h.server.url(path: "/truncated.png"), slow, ftp] {
            h.load(url)
        }
        wait(for: [h.log.outcomes(5, self)], timeout: 15)
        let errors = h.log.errors
        XCTAssertEqual(withoutHeaders(errors["/missing.png"]), .httpStatus(missing, code: 404))
        guard case .decoding(let junk, let junkURL)? = errors["/junk.png"] else { return XCTFail("junk") }
        XCTAssertEqual(junk.stage, .sniffing)
        XCTAssertEqual(junkURL, h.server.url(path: "/junk.png"))
        guard case .decoding(let cut, _)? = errors["/truncated.png"] else { return XCTFail("truncated") }
        XCTAssertEqual(cut.format, .png)
        XCTAssertEqual(errors["/slow.png"], .timedOut(slow, seconds: 0.5, stage: .transfer))
        XCTAssertEqual(errors["/a.png"], .unsupportedScheme(ftp))

        // Failures are not cached: asking again goes back to the server.
        h.load(missing)
        wait(for: [h.log.outcomes(6, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(missing), 2)
    }

    /// Transport failures (a refused connection, a connection cut mid-body
    /// after a header that promised more) end in the failure action, right
    /// after one didFail whose userInfo carries the same typed error.
    func testTransportFailuresReachTheFailureActionAndDidFail() throws {
        let h = try LoaderHarness()
        let posted = Box<[String: AsyncImageError]>([:])
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFail, object: nil, queue: nil) { note in
            guard let url = note.userInfo?[AsyncImageURLKey] as? URL else { return }
            posted.value?[url.path] = note.userInfo?[AsyncImageErrorKey] as? AsyncImageError
        }
        defer { h.center.removeObserver(observer) }
        h.server.respond("/cut.png") { connection in
            connection.write("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 10000\r\n\r\n")
            connection.write(Data(repeating: 0x89, count: 100))
            connection.close()
        }
        let closed = try LoopbackServer { _, connection in connection.close() }
        let refused = closed.url("/refused.png")
        closed.stop()
        let cut = h.server.url(path: "/cut.png")
        let targets = [Target(), Target("other")]  // two targets: one failure must not supersede the other
        h.load(cut, target: targets[0])
        h.load(refused, target: targets[1])
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()

        guard case .transport(let cutURL, let cutCode, _)? = h.log.errors["/cut.png"] else {
            return XCTFail("cut: \(String(describing: h.log.errors["/cut.png"]))")
        }
        XCTAssertEqual(cutURL, cut)
        XCTAssertEqual(cutCode, 18)  // CURLE_PARTIAL_FILE
        guard case .transport(let refusedURL, let refusedCode, _)? = h.log.errors["/refused.png"] else {
            return XCTFail("refused: \(String(describing: h.log.errors["/refused.png"]))")
        }
        XCTAssertEqual(refusedURL, refused)
        XCTAssertEqual(refusedCode, 7)  // CURLE_COULDNT_CONNECT
        XCTAssertEqual(posted.value?["/cut.png"], h.log.errors["/cut.png"])
        XCTAssertEqual(posted.value?["/refused.png"], h.log.errors["/refused.png"])
        let events = h.log.events
        XCTAssertEqual(events.count, 4, "one post and one action each: \(events)")
        for path in ["/cut.png", "/refused.png"] {
            let index = try XCTUnwrap(events.firstIndex(of: .notified(path, finished: false)))
            XCTAssertEqual(events[index + 1].description, "failure(\(path))")
        }
        XCTAssertEqual(h.cache.count, 0, "failures are not cached")
        withExtendedLifetime(targets) {}
    }

    /// The timeout starts with the transfer: a request that waited in the queue
    /// longer than the timeout still succeeds.
    func testTimeoutDoesNotCountTimeInTheQueue() throws {
        let h = try LoaderHarness(concurrentLoads: 1, timeout: 0.5)
        let blocker = h.server.url(path: "/blocker.png")
        h.server.hold(blocker)
        h.load(blocker)
        h.load(h.server.url(5))  // waits in the queue while the blocker times out
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        XCTAssertEqual(h.log.errors["/blocker.png"], .timedOut(blocker, seconds: 0.5, stage: .transfer))
        XCTAssertNotNil(h.log.images["/img/5.png"])
    }

    /// Decoding happens before delivery and off the delivery queue: with that queue
    /// blocked, the decoded image still reaches the cache.
    func testDecodingDoesNotRunOnTheDeliveryQueue() throws {
        let h = try LoaderHarness()
        let unblock = DispatchSemaphore(value: 0)
        h.queue.async { unblock.wait() }
        h.load(h.server.url(9))
        let key = ImageCacheKey(url: h.server.url(9))
        let deadline = Date().addingTimeInterval(15)
        while h.cache.image(for: key) == nil && Date() < deadline { usleep(1000) }
        XCTAssertNotNil(h.cache.image(for: key), "the image was not decoded while the delivery queue was blocked")
        XCTAssertTrue(h.log.events.isEmpty)
        unblock.signal()
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
    }

    func testDisplaySizeRequestsAreDecodedSmallAndCachedApart() throws {
        let h = try LoaderHarness()
        let big = try JPEGEncoder().encode(SyntheticImage.quadrants(width: 1600, height: 1200))
        h.server.serve("/big.jpg", big)
        let url = h.server.url(path: "/big.jpg")
        let small = ImageRequest(url: url, targetSize: PixelSize(width: 100, height: 100))
        h.loader.loadImage(small, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        let image = try XCTUnwrap(h.log.images["/big.jpg"])
        XCTAssertEqual(image.size, PixelSize(width: 100, height: 100), "133x100, the excess cropped")
        XCTAssertEqual(image.decodeInfo.scaleDenominator, 4, "twice 133x100 needs 1/4 (400x300), not 1/8 (200x150)")
        XCTAssertNotNil(h.cache.image(for: small.cacheKey))
        XCTAssertNil(h.cache.image(for: ImageCacheKey(url: url)), "the full-size key is another entry")
    }

    func testCacheCanBeDisabledAndSwapped() throws {
        let h = try LoaderHarness(cache: false)
        h.load(h.server.url(4))
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.load(h.server.url(4))
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(h.server.url(4)), 2, "no cache: loaded twice")
        XCTAssertEqual(h.cache.count, 0)
        h.loader.cache = h.cache
        h.load(h.server.url(4))
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        XCTAssertNotNil(h.cache.image(for: ImageCacheKey(url: h.server.url(4))))
    }

    /// A cache change affects later requests only, even when a later request
    /// joins a load that began before the change: each request's result goes
    /// to the cache its loader had when it was made.
    func testRequestsJoiningALoadUseTheCacheOfTheirOwnTime() throws {
        let h = try LoaderHarness(cache: false)
        let other = ImageCache()
        let url = h.server.url(6)
        let key = ImageCacheKey(url: url)
        h.server.hold(url)
        h.load(url)  // made with no cache
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        h.loader.cache = h.cache
        h.load(url)  // joins the held load; made with h.cache
        h.loader.cache = other
        h.load(url)  // joins too; made with other
        h.loader.cache = nil
        h.load(url)  // joins; made with no cache again
        XCTAssertEqual(h.loader.activity.inFlight, 1)
        h.server.release(url)
        wait(for: [h.log.outcomes(4, self)], timeout: 15)
        XCTAssertEqual(h.server.requestCount(url), 1, "one transfer")
        XCTAssertNotNil(h.cache.image(for: key), "the cache of the second request")
        XCTAssertNotNil(other.image(for: key), "the cache of the third request")

        // And the other way round: a load begun with a cache, joined after the
        // cache was removed, still stores for the request made with it.
        let h2 = try LoaderHarness()
        let url2 = h2.server.url(7)
        h2.server.hold(url2)
        h2.load(url2)
        wait(for: [h2.server.arrival(of: url2, self)], timeout: 15)
        h2.loader.cache = nil
        h2.load(url2)
        h2.server.release(url2)
        wait(for: [h2.log.outcomes(2, self)], timeout: 15)
        XCTAssertEqual(h2.cache.count, 1)
    }

    func testEventMonitorSeesEveryStep() throws {
        let h = try LoaderHarness()
        let events = Box<[LoaderEvent]>([])
        let lock = NSLock()
        h.loader.eventMonitor = { event in lock.withLock { events.value = (events.value ?? []) + [event] } }
        let target = Target()
        h.load(h.server.url(21), target: target)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        h.load(h.server.url(21), target: target)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        h.drainDeliveries()
        // Steps made on two threads at once may reach the monitor in either order.
        let all = lock.withLock { events.value ?? [] }.sorted { $0.sequence < $1.sequence }
        XCTAssertEqual(Set(all.map(\.sequence)).count, all.count, "unique")
        let first = all.filter { $0.requestID == all.first?.requestID }.map(\.kind)
        XCTAssertEqual(first.count, 5)
        XCTAssertEqual(first[0], .queued)
        XCTAssertEqual(first[1], .loading)
        guard case .transferred(let bytes) = first[2] else { return XCTFail("\(first)") }
        XCTAssertGreaterThan(bytes, 0)
        XCTAssertEqual(Array(first[3...]), [.decoding, .delivered(success: true)])
        XCTAssertEqual(all.filter { $0.requestID != all.first?.requestID }.map(\.kind), [.cacheHit, .delivered(success: true)])
        XCTAssertTrue(all.allSatisfy { $0.target == ObjectIdentifier(target) })
    }

    /// A request that joins a job late still sees every step: here it joins
    /// from the monitor when the first request's body starts decoding (the
    /// decode is handed to a decoder right after the monitor returns), once
    /// for the size being decoded and once for another size.
    func testRequestsJoiningLateSeeEveryStep() throws {
        let h = try LoaderHarness()
        let url = h.server.url(22)
        let thumb = ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2))
        let loader = h.loader
        let log = h.log
        let monitor = JoinAtFirstDecode(loader) {
            loader.loadImage(url, target: nil, success: log.success, failure: log.failure)
            loader.loadImage(thumb, target: nil, success: log.success, failure: log.failure)
        }
        h.load(url)
        wait(for: [h.log.outcomes(3, self)], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.server.requestCount(url), 1, "both joined the transfer")
        let all = monitor.events
        let ids = Set(all.map(\.requestID)).sorted()
        XCTAssertEqual(ids.count, 3)
        for id in ids {
            let kinds = all.filter { $0.requestID == id }.map(\.kind)
            XCTAssertEqual(kinds.count, 5, "request \(id): \(kinds)")
            guard kinds.count == 5, case .transferred(let bytes) = kinds[2] else { continue }
            XCTAssertEqual(
                [kinds[0], kinds[1], kinds[3], kinds[4]], [.queued, .loading, .decoding, .delivered(success: true)],
                "request \(id)")
            XCTAssertGreaterThan(bytes, 0)
        }
    }

    func testAsyncAwait() async throws {
        let h = try LoaderHarness()
        let image = try await h.loader.image(for: h.server.url(11))
        XCTAssertEqual(image.pixel(x: 0, y: 0), ImageServer.color(11))
        do {
            _ = try await h.loader.image(for: h.server.url(path: "/none.png"))
            XCTFail("expected an error")
        } catch let error as AsyncImageError {
            XCTAssertEqual(withoutHeaders(error), .httpStatus(h.server.url(path: "/none.png"), code: 404))
        }
    }

    func testCancellingTheSwiftTaskCancelsTheRequest() async throws {
        let h = try LoaderHarness()
        let url = h.server.url(12)
        let task = try await heldAsyncLoad(url, h)
        task.cancel()
        await assertCancelled(task)
        XCTAssertTrue(try XCTUnwrap(h.server.connection(url)).waitForPeerClose(timeout: 10))
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
    }

    /// A request made by `image(for:)` and cancelled by any other API (here
    /// `cancelLoading(url:)`) ends the `await` with `CancellationError`.
    func testAsyncImageEndsWhenItsRequestIsCancelledByURL() async throws {
        let h = try LoaderHarness()
        let url = h.server.url(13)
        let task = try await heldAsyncLoad(url, h)
        h.loader.cancelLoading(url: url)
        h.server.release(url)
        await assertCancelled(task)
        XCTAssertEqual(h.loader.activity.pendingRequests, 0)
        XCTAssertEqual(h.loader.activity.cancelled, 1)
    }

    /// Zero, negative, NaN and infinite timeouts mean "no limit": the load
    /// waits for a held response and succeeds (it used to trap on the
    /// transport thread for infinity and NaN, and fail at once for 0).
    func testUnboundedTimeoutsMeanNoLimit() throws {
        for timeout in [0, -1, Double.nan, .infinity, 1e300] {
            let h = try LoaderHarness(timeout: timeout)
            let url = h.server.url(14)
            h.server.hold(url)
            h.load(url)
            wait(for: [h.server.arrival(of: url, self)], timeout: 15)
            h.server.release(url)
            wait(for: [h.log.outcomes(1, self)], timeout: 15)
            XCTAssertEqual(
                h.log.events, [.notified(url.path, finished: true), .success(url.path, target: nil)], "timeout \(timeout)")
        }
    }

    /// `image(for: url)` in a task, once its request has reached the server (which holds it).
    private func heldAsyncLoad(_ url: URL, _ h: LoaderHarness) async throws -> Task<Image, Error> {
        h.server.hold(url)
        let arrived = h.server.arrival(of: url, self)
        let loader = h.loader
        let task = Task { try await loader.image(for: url) }
        await fulfillment(of: [arrived], timeout: 15)
        return task
    }

    private func assertCancelled(_ task: Task<Image, Error>, line: UInt = #line) async {
        do {
            _ = try await task.value
            XCTFail("expected cancellation", line: line)
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)", line: line)
        }
    }
}
