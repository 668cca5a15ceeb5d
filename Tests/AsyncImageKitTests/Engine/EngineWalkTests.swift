@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The graph in `AsyncImageLoader` holds: a request goes down through the
/// stages once and its image comes back up once, in that order (debug
/// builds note each stage a watched URL passes: `StageWalk`).
final class EngineWalkTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = temporaryFolder("enginewalk")
    }

    private func harness(disk: DataCache?) -> (FakeHarness, AsyncImageLoader) {
        let h = FakeHarness()
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, dataLoader: h.transport,
                diskCache: disk))
        return (h, loader)
    }

    private func walk(_ loader: AsyncImageLoader, _ h: FakeHarness, _ request: ImageRequest, outcomes: Int, finish: Bool)
        -> [String]
    {
        StageWalk.watch(request.url)
        let started = h.transport.startedPaths.count
        loader.loadImage(request, success: h.log.success, failure: h.log.failure)
        if finish {
            wait(for: [h.transport.starts(started + 1, self)], timeout: 10)
            h.transport.finish(request.url)
        }
        wait(for: [h.log.outcomes(outcomes, self)], timeout: 10)
        h.drainDeliveries()
        loader.flushDiskWrites()
        return StageWalk.steps(of: request.url)
    }

    /// A network miss with the disk cache on: each stage once going down,
    /// once coming up.
    func testANetworkMissGoesDownOnceAndUpOnce() throws {
        let (h, loader) = harness(disk: try DataCache(directory: folder))
        let steps = walk(loader, h, ImageRequest(url: h.url(1)), outcomes: 1, finish: true)
        XCTAssertEqual(
            steps,
            [
                "requests down", "jobs down", "transfers down", "httpCache down", "network down",
                "network up", "httpCache up", "transfers up", "decode up", "stores up", "jobs up", "delivery up",
                "requests up",
            ])
    }

    /// A disk hit: the HTTP cache answers, and the network is never reached.
    func testADiskHitTurnsBackAtTheHTTPCache() throws {
        let disk = try DataCache(directory: folder)
        let (h, loader) = harness(disk: disk)
        _ = walk(loader, h, ImageRequest(url: h.url(2)), outcomes: 1, finish: true)
        // Offline: the stored response (no freshness of its own) is all there is.
        let (h2, second) = harness(disk: disk)
        let steps = walk(second, h2, ImageRequest(url: h2.url(2), cachePolicy: [.skipNetwork]), outcomes: 1, finish: false)
        XCTAssertEqual(h2.transport.startedPaths, [], "no transfer")
        XCTAssertEqual(h2.log.deliveredPaths, ["/img/2.png"], "the stored image")
        XCTAssertEqual(
            steps,
            [
                "requests down", "jobs down", "transfers down", "httpCache down",
                "transfers up", "decode up", "stores up", "jobs up", "delivery up", "requests up",
            ])
    }

    /// A memory hit never leaves the request stage.
    func testAMemoryHitTurnsBackAtTheRequests() {
        let (h, loader) = harness(disk: nil)
        _ = walk(loader, h, ImageRequest(url: h.url(3)), outcomes: 1, finish: true)
        let steps = walk(loader, h, ImageRequest(url: h.url(3)), outcomes: 2, finish: false)
        XCTAssertEqual(steps, ["requests down", "delivery up", "requests up"])
    }
}
