import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The loader's layers: memory, then disk, then network, and the requests'
/// cache policies, counted at a real server.
final class DiskLayerTests: XCTestCase {
    private var folder: URL!

    override func setUp() {
        folder = temporaryFolder("disklayer")
    }

    /// A loader with its own memory cache over the shared disk cache (a
    /// restart is a new one). The server's images are fresh for a minute.
    private func loader(_ h: LoaderHarness, disk: DataCache) -> (AsyncImageLoader, ImageCache) {
        if h.server.extraHeaders.isEmpty { h.server.extraHeaders = [("Cache-Control", "max-age=60")] }
        let memory = ImageCache()
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: memory, deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        return (loader, memory)
    }

    private func load(_ loader: AsyncImageLoader, _ request: ImageRequest, _ h: LoaderHarness, outcomes: Int) {
        loader.loadImage(request, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(outcomes, self)], timeout: 15)
        loader.flushDiskWrites()
    }

    func testBodiesComeBackFromDiskAfterARestart() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = h.server.url(7)
        let (first, _) = loader(h, disk: disk)
        load(first, ImageRequest(url: url), h, outcomes: 1)
        XCTAssertEqual(h.server.requestCount(url), 1)
        XCTAssertTrue(disk.contains(url.absoluteString), "stored once it decoded")
        // A restart: a new loader and an empty memory cache; the disk answers.
        let (second, memory) = loader(h, disk: try DataCache(directory: folder))
        load(second, ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2)), h, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 1, "no second transfer")
        h.drainDeliveries()
        XCTAssertEqual(h.log.images["/img/7.png"]?.pixel(x: 0, y: 0), ImageServer.color(7))
        XCTAssertNotNil(memory.image(for: ImageCacheKey(url: url, options: .init(targetSize: PixelSize(width: 2, height: 2)))))
        // Reload ignoring the caches: the network again, and the result cached.
        load(second, ImageRequest(url: url, cachePolicy: .reloadIgnoringCaches), h, outcomes: 3)
        XCTAssertEqual(h.server.requestCount(url), 2)
    }

    func testOfflineRequestsUseOnlyTheCaches() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let (cached, missing) = (h.server.url(1), h.server.url(2))
        let (warm, _) = loader(h, disk: disk)
        load(warm, ImageRequest(url: cached), h, outcomes: 1)
        let (offline, _) = loader(h, disk: disk)
        load(offline, ImageRequest(url: cached, cachePolicy: .cachedOnly), h, outcomes: 2)
        load(offline, ImageRequest(url: missing, cachePolicy: .cachedOnly), h, outcomes: 3)
        h.drainDeliveries()
        XCTAssertEqual(h.server.requestCount(cached), 1)
        XCTAssertEqual(h.server.requestCount(missing), 0, "never the network")
        XCTAssertEqual(h.log.errors["/img/2.png"], .notCached(missing))
        XCTAssertNotNil(h.log.images["/img/1.png"])
    }

    func testWhatIsNeverStoredOnDisk() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        h.server.serve("/junk.png", Data("not an image".utf8))
        let (junk, private_) = (h.server.url(path: "/junk.png"), h.server.url(3))
        let (loader, _) = loader(h, disk: disk)
        load(loader, ImageRequest(url: junk), h, outcomes: 1)
        load(loader, ImageRequest(url: h.server.url(path: "/missing")), h, outcomes: 2)
        load(loader, ImageRequest(url: private_, cachePolicy: .skipDiskWrites), h, outcomes: 3)
        disk.flush()
        XCTAssertFalse(disk.contains(junk.absoluteString), "a body that failed to decode")
        XCTAssertFalse(disk.contains(h.server.url(path: "/missing").absoluteString), "an HTTP error")
        XCTAssertFalse(disk.contains(private_.absoluteString), "skipDiskWrites")
        XCTAssertEqual(disk.count, 0)
    }

    /// Memory policy: a request that skips memory reads goes to the layers below.
    func testSkippingMemoryReadsGoesToDisk() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = h.server.url(4)
        let (loader, _) = loader(h, disk: disk)
        load(loader, ImageRequest(url: url), h, outcomes: 1)
        load(loader, ImageRequest(url: url, cachePolicy: .skipMemoryReads), h, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 1, "the disk answered")
        load(loader, ImageRequest(url: url, cachePolicy: [.skipMemoryReads, .skipDiskReads]), h, outcomes: 3)
        XCTAssertEqual(h.server.requestCount(url), 2)
    }

    func testCachedImageNowOrNot() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = h.server.url(9)
        let (first, _) = loader(h, disk: disk)
        XCTAssertFalse(first.hasCachedImage(for: ImageRequest(url: url)))
        XCTAssertNil(first.cachedImage(for: ImageRequest(url: url)))
        load(first, ImageRequest(url: url), h, outcomes: 1)
        XCTAssertTrue(first.hasCachedImage(for: ImageRequest(url: url)))
        let (second, memory) = loader(h, disk: disk)
        let small = ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2))
        XCTAssertTrue(second.hasCachedImage(for: small), "on disk")
        XCTAssertFalse(second.hasCachedImage(for: ImageRequest(url: url, cachePolicy: .skipDiskReads)))
        let image = try XCTUnwrap(second.cachedImage(for: small), "decoded from disk, now")
        XCTAssertEqual(image.size, PixelSize(width: 2, height: 2))
        XCTAssertNotNil(memory.image(for: small.cacheKey), "kept in memory")
        XCTAssertNil(second.cachedImage(for: ImageRequest(url: url, maxPixels: 4)), "over its pixel limit")
        XCTAssertEqual(h.server.requestCount(url), 1)
    }
}
