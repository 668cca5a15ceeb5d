@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Stale responses (issue: disk cache, item 8): shown at once and then the
/// fresh one if it changed, through the per-target order; served, marked
/// stale, when the server cannot be reached; never with `.neverStale`.
final class StaleResponseTests: XCTestCase {
    private var folder: URL!

    override func setUp() {
        folder = temporaryFolder("stale")
    }

    private static let red = RGBA(r: 220, g: 10, b: 10)
    private static let blue = RGBA(r: 10, g: 10, b: 220)

    /// A server whose image at `path` has an ETag and `max-age=0` (stale at
    /// once: every use revalidates, and it may be served stale), or the
    /// given `cacheControl`: `version` picks red (1) or blue (2); `failure`
    /// set: it answers that status instead.
    private final class VersionedImage: @unchecked Sendable {
        let version = Box<Int>(1)
        let failure = Box<Int>(0)
        let url: URL

        init(_ server: ImageServer, path: String = "/versioned.png", cacheControl: String = "max-age=0") {
            url = server.url(path: path)
            let bodies = [1: StaleResponseTests.red, 2: StaleResponseTests.blue].mapValues {
                try! PNGEncoder().encode(SyntheticImage.solid(width: 8, height: 8, color: $0))
            }
            let (version, failure, url) = (version, failure, url)
            server.respond(path) { connection in
                if let status = failure.value, status != 0 {
                    connection.respond(status: status, body: Data("unavailable".utf8))
                    return
                }
                let current = version.value!
                let tag = "\"v\(current)\""
                if server.headers(of: url)?["if-none-match"] == tag {
                    connection.respond(status: 304, headers: [("ETag", tag), ("Cache-Control", cacheControl)], body: Data())
                } else {
                    connection.respond(
                        status: 200, headers: [("ETag", tag), ("Cache-Control", cacheControl)], body: bodies[current]!)
                }
            }
        }
    }

    /// A loader with an empty memory cache over `disk`, and a monitor of its events.
    private func makeLoader(
        _ h: LoaderHarness, _ disk: DataCache, events: Box<[LoaderEvent]>? = nil, onCancel: XCTestExpectation? = nil
    ) -> AsyncImageLoader {
        let loader = AsyncImageLoader(
            configuration: .init(cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        if let events {
            loader.eventMonitor = { event in
                events.update { $0 = ($0 ?? []) + [event] }
                if event.kind == .cancelled { onCancel?.fulfill() }
            }
        }
        return loader
    }

    /// Notifications' stale marks, in order.
    private func observeStaleMarks(_ h: LoaderHarness) -> (Box<[Bool]>, NSObjectProtocol) {
        let marks = Box<[Bool]>([])
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { note in
            let stale = note.userInfo?[AsyncImageStaleKey] as? Bool ?? false
            marks.update { $0 = ($0 ?? []) + [stale] }
        }
        return (marks, observer)
    }

    private func warm(_ h: LoaderHarness, _ disk: DataCache, _ image: VersionedImage) {
        let loader = makeLoader(h, disk)
        loader.loadImage(ImageRequest(url: image.url), success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(1, self)], timeout: 15)
        loader.flushDiskWrites()
        h.drainDeliveries()
    }

    func testStaleThenFreshOnOneTarget() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let image = VersionedImage(h.server)
        warm(h, disk, image)
        image.version.value = 2
        let (marks, observer) = observeStaleMarks(h)
        defer { h.center.removeObserver(observer) }
        let target = Target()
        let loader = makeLoader(h, disk)
        let colours = Box<[RGBA]>([])
        let done = expectation(description: "two deliveries")
        done.expectedFulfillmentCount = 2
        let show = ImageAction("show") { _, image, _ in
            colours.update { $0 = ($0 ?? []) + [image.pixel(x: 0, y: 0)] }
            done.fulfill()
        }
        loader.loadImage(
            ImageRequest(url: image.url, cachePolicy: .returnStaleWhileRevalidating), target: target, success: show,
            failure: h.log.failure)
        wait(for: [done], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(colours.value, [Self.red, Self.blue], "the stale image at once, then the new one, in order")
        XCTAssertEqual(marks.value, [true, false], "the first was marked stale")
        XCTAssertEqual(h.server.requestCount(image.url), 2, "one revalidation")
        XCTAssertEqual(h.server.headers(of: image.url)?["if-none-match"], "\"v1\"")
        withExtendedLifetime(target) {}
    }

    func testStaleThenNothingMoreWhenUnchanged() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let image = VersionedImage(h.server)
        warm(h, disk, image)
        let events = Box<[LoaderEvent]>([])
        // The follow-up ends (cancelled: nothing changed) once the 304 is in.
        let ended = expectation(description: "the follow-up ended")
        let loader = makeLoader(h, disk, events: events, onCancel: ended)
        let target = Target()
        loader.loadImage(
            ImageRequest(url: image.url, cachePolicy: .returnStaleWhileRevalidating), target: target,
            success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        wait(for: [ended], timeout: 15)
        h.drainDeliveries()
        XCTAssertEqual(h.server.requestCount(image.url), 2, "revalidated once: 304")
        XCTAssertEqual(h.log.deliveredPaths, ["/versioned.png", "/versioned.png"], "the warm load, then the stale one; no third")
        let delivered = events.value!.filter { $0.kind == .delivered(success: true) }.map(\.requestID)
        let cancelled = events.value!.filter { $0.kind == .cancelled }.map(\.requestID)
        XCTAssertEqual(delivered.count, 1)
        XCTAssertEqual(cancelled.count, 1)
        XCTAssertGreaterThan(cancelled[0], delivered[0], "the follow-up came after the stale delivery")
        withExtendedLifetime(target) {}
    }

    /// The server fails while a stale entry is revalidated: the stale image,
    /// marked stale; a 404 is no reason for it; `.neverStale` refuses it.
    func testStaleIfTheServerCannotBeReached() async throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let image = VersionedImage(h.server)
        let loader = makeLoader(h, disk)
        let first = try await loader.response(for: ImageRequest(url: image.url))
        XCTAssertEqual(first.source, .network)
        XCTAssertFalse(first.isStale)
        let again = try await loader.response(for: ImageRequest(url: image.url))
        XCTAssertEqual(again.source, .memoryCache)
        await loader.flushDiskWrites()

        image.failure.value = 503
        let stale = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url))
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.source, .diskCache)
        XCTAssertEqual(stale.image.pixel(x: 0, y: 0), Self.red)
        do {
            _ = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url, cachePolicy: .neverStale))
            XCTFail("neverStale: the failure")
        } catch let error as AsyncImageError {
            XCTAssertEqual(withoutHeaders(error), .httpStatus(image.url, code: 503))
        }
        image.failure.value = 404
        do {
            _ = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url))
            XCTFail("a 404 is an answer, not an unreachable server")
        } catch let error as AsyncImageError {
            XCTAssertEqual(withoutHeaders(error), .httpStatus(image.url, code: 404))
        }
        // A server that is gone altogether: a transport error, so the stale image.
        image.failure.value = 0
        let port = image.url.port!
        h.server.stop()
        let gone = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url))
        XCTAssertTrue(gone.isStale, "nothing listens on \(port) any more")
        XCTAssertEqual(gone.source, .diskCache)
    }

    /// RFC 9111 §4.2.4: a response that says `must-revalidate` or
    /// `no-cache` is never served stale, whatever the loader's or the
    /// request's stale policy: not when the server cannot be reached, not
    /// offline, not while revalidating (the regression: such an entry with
    /// an ETag was served stale after a failed revalidation).
    func testMustRevalidateAndNoCacheAreNeverServedStale() async throws {
        for (index, directive) in ["no-cache", "max-age=0, must-revalidate", "must-revalidate"].enumerated() {
            let h = try LoaderHarness()
            let disk = try DataCache(directory: folder.appendingPathComponent("\(index)"))
            let image = VersionedImage(h.server, cacheControl: directive)
            _ = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url))
            let warm = makeLoader(h, disk)
            await warm.flushDiskWrites()
            image.failure.value = 503
            do {
                let response = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url))
                XCTFail("\(directive): served \(response.isStale ? "stale" : "fresh") instead of the failure")
            } catch let error as AsyncImageError {
                XCTAssertEqual(withoutHeaders(error), .httpStatus(image.url, code: 503), directive)
            }
            var whileRevalidating = ImageRequest(url: image.url)
            whileRevalidating.cachePolicy = .returnStaleWhileRevalidating
            do {
                let response = try await makeLoader(h, disk).response(for: whileRevalidating)
                XCTFail("\(directive): shown stale while revalidating (\(response.source))")
            } catch let error as AsyncImageError {
                XCTAssertEqual(withoutHeaders(error), .httpStatus(image.url, code: 503), directive)
            }
            do {
                _ = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url, cachePolicy: .cachedOnly))
                XCTFail("\(directive): served stale offline")
            } catch let error as AsyncImageError {
                XCTAssertEqual(error, .notCached(image.url), directive)
            }
            XCTAssertNil(makeLoader(h, disk).cachedImage(for: ImageRequest(url: image.url)), directive)
            // Fresh, it is served as any other.
            image.failure.value = 0
            let fresh = try await makeLoader(h, disk).response(for: ImageRequest(url: image.url))
            XCTAssertFalse(fresh.isStale, directive)
        }
    }

    /// A newer URL set on the target before the stale image is delivered
    /// wins: no follow-up comes after it, and it is not superseded.
    func testNoFollowUpAfterANewerRequestOnTheTarget() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let image = VersionedImage(h.server)
        warm(h, disk, image)
        image.version.value = 2
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), concurrentLoads: 1, deliveryQueue: h.queue, notificationCenter: h.center,
                diskCache: disk))
        // The only slot is held by another transfer: both requests below wait, U before V.
        let blocker = h.server.url(90)
        h.server.hold(blocker)
        loader.loadImage(ImageRequest(url: blocker), success: h.log.success, failure: h.log.failure)
        wait(for: [h.server.arrival(of: blocker, self)], timeout: 15)
        let target = Target()
        let shown = Box<[String]>([])
        let show = ImageAction("show") { _, _, url in shown.update { $0 = ($0 ?? []) + [url.path] } }
        let newer = h.server.url(5)
        loader.loadImage(
            ImageRequest(url: image.url, cachePolicy: .returnStaleWhileRevalidating), target: target, success: show)
        loader.loadImage(ImageRequest(url: newer), target: target, success: show)
        let done = expectation(description: "the newer image")
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: target, queue: nil) { note in
            if (note.userInfo?[AsyncImageURLKey] as? URL) == newer { done.fulfill() }
        }
        defer { h.center.removeObserver(observer) }
        h.server.release(blocker)
        wait(for: [done], timeout: 15)
        loader.flushDiskWrites()
        h.drainDeliveries()
        XCTAssertEqual(shown.value?.last, newer.path, "the newer request is shown last: \(shown.value ?? [])")
        XCTAssertEqual(h.server.requestCount(image.url), 1, "no revalidation follow-up behind the newer request")
        withExtendedLifetime(target) {}
    }
}
