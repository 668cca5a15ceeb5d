@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// RFC 9111 against the disk cache: what is stored, freshness, revalidation
/// with 304s (asked once however many requests wait), `Vary`, counted at a
/// real server.
final class HTTPCachingTests: XCTestCase {
    private var folder: URL!

    override func setUp() {
        folder = temporaryFolder("httpcache")
    }

    private static func png(_ n: Int) -> Data {
        try! PNGEncoder().encode(SyntheticImage.solid(width: 4, height: 4, color: ImageServer.color(n)))
    }

    /// A new loader (empty memory cache) over `disk`: each load below goes to the disk layer.
    private func load(_ request: ImageRequest, _ h: LoaderHarness, _ disk: DataCache, outcomes: Int) {
        let loader = AsyncImageLoader(
            configuration: .init(cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        loader.loadImage(request, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(outcomes, self)], timeout: 15)
        h.drainDeliveries()
        loader.flushDiskWrites()
    }

    /// An ETag and no freshness: every use revalidates; a 304 serves the
    /// stored body and refreshes it (here for a minute); a 200 replaces it.
    func testRevalidationWith304sAndAChangedImage() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let path = "/etag.png"
        let url = h.server.url(path: path)
        let version = Box<Int>(1)
        h.server.respond(path) { connection in
            let current = version.value!
            if h.server.headers(of: url)?["if-none-match"] == "\"v\(current)\"" {
                connection.respond(status: 304, headers: [("ETag", "\"v\(current)\""), ("Cache-Control", current == 1 ? "max-age=60" : "no-cache")], body: Data())
            } else {
                connection.respond(status: 200, headers: [("ETag", "\"v\(current)\""), ("Content-Type", "image/png")], body: Self.png(current))
            }
        }
        load(ImageRequest(url: url), h, disk, outcomes: 1)
        XCTAssertEqual(disk.entry(for: url.absoluteString)?.metadata.etag, "\"v1\"")
        load(ImageRequest(url: url), h, disk, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 2, "stale: revalidated")
        XCTAssertEqual(h.server.headers(of: url)?["if-none-match"], "\"v1\"")
        XCTAssertEqual(h.log.images[path]?.pixel(x: 0, y: 0), ImageServer.color(1), "the 304 served the stored body")
        load(ImageRequest(url: url), h, disk, outcomes: 3)
        XCTAssertEqual(h.server.requestCount(url), 2, "the 304's max-age made it fresh")

        version.value = 2
        load(ImageRequest(url: url, cachePolicy: .skipMemoryReads), h, disk, outcomes: 4)  // still fresh: no request
        XCTAssertEqual(h.server.requestCount(url), 2)
        try expire(disk, url)
        load(ImageRequest(url: url), h, disk, outcomes: 5)
        XCTAssertEqual(h.server.requestCount(url), 3)
        XCTAssertEqual(h.log.images[path]?.pixel(x: 0, y: 0), ImageServer.color(2), "the image changed: the new one")
        XCTAssertEqual(disk.entry(for: url.absoluteString)?.metadata.etag, "\"v2\"", "and it replaced the entry")
    }

    /// Stale, with requests waiting for it at once: one conditional request.
    func testRevalidationIsAskedOncePerURL() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = h.server.url(path: "/shared.png")
        h.server.respond("/shared.png") { connection in
            if h.server.headers(of: url)?["if-modified-since"] != nil {
                connection.respond(status: 304, headers: [], body: Data())
            } else {
                connection.respond(
                    status: 200, headers: [("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT"), ("Cache-Control", "no-cache")],
                    body: Self.png(3))
            }
        }
        load(ImageRequest(url: url), h, disk, outcomes: 1)
        h.server.hold(url)
        let loader = AsyncImageLoader(
            configuration: .init(cache: nil, deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        for size in [nil, PixelSize(width: 2, height: 2), PixelSize(width: 3, height: 3)] {
            loader.loadImage(ImageRequest(url: url, targetSize: size), success: h.log.success, failure: h.log.failure)
        }
        wait(for: [h.server.arrival(of: url, self)], timeout: 15)
        h.server.release(url)
        wait(for: [h.log.outcomes(4, self)], timeout: 15)
        loader.flushDiskWrites()
        XCTAssertEqual(h.server.requestCount(url), 2, "one conditional request for three")
        XCTAssertEqual(h.server.headers(of: url)?["if-modified-since"], "Mon, 02 Jan 2006 15:04:05 GMT")
    }

    func testWhatHTTPForbidsIsNotStoredAndVaryKeysEntries() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        for (path, headers) in [
            ("/nostore.png", [("Cache-Control", "no-store, max-age=60")]),
            ("/varystar.png", [("Cache-Control", "max-age=60"), ("Vary", "*")]),
            ("/vary.png", [("Cache-Control", "max-age=60"), ("Vary", "X-Tenant")]),
        ] {
            h.server.respond(path) { connection in connection.respond(status: 200, headers: headers, body: Self.png(4)) }
        }
        let (noStore, varyStar, vary) = (
            h.server.url(path: "/nostore.png"), h.server.url(path: "/varystar.png"), h.server.url(path: "/vary.png")
        )
        load(ImageRequest(url: noStore), h, disk, outcomes: 1)
        load(ImageRequest(url: varyStar), h, disk, outcomes: 2)
        XCTAssertFalse(disk.contains(noStore.absoluteString), "no-store")
        XCTAssertFalse(disk.contains(varyStar.absoluteString), "Vary: *")
        load(ImageRequest(url: vary, headers: ["X-Tenant": "a"]), h, disk, outcomes: 3)
        load(ImageRequest(url: vary, headers: ["X-Tenant": "a"]), h, disk, outcomes: 4)
        XCTAssertEqual(h.server.requestCount(vary), 1, "same tenant: the stored one")
        load(ImageRequest(url: vary, headers: ["X-Tenant": "b"]), h, disk, outcomes: 5)
        XCTAssertEqual(h.server.requestCount(vary), 2, "another tenant: not the stored one")
        XCTAssertEqual(disk.entry(for: vary.absoluteString)?.metadata.http?.varyRequestHeaders, ["x-tenant": "b"])
        XCTAssertEqual(
            LoadRequest.diskKey(for: ImageRequest(url: vary, headers: ["X-Tenant": "b"])), vary.absoluteString,
            "keyed by the URL: request headers count through Vary alone")
    }

    /// RFC 9111 §5.2.2.5: a `no-store` response is kept in no cache, the
    /// memory cache included; one without it stays in memory.
    func testNoStoreIsKeptInNoCacheAtAll() async throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        h.server.respond("/kept.png") { connection in
            connection.respond(status: 200, headers: [("Cache-Control", "max-age=60")], body: Self.png(7))
        }
        h.server.respond("/nostore-memory.png") { connection in
            connection.respond(status: 200, headers: [("Cache-Control", "no-store")], body: Self.png(8))
        }
        let loader = AsyncImageLoader(
            configuration: .init(cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk))
        let (kept, noStore) = (h.server.url(path: "/kept.png"), h.server.url(path: "/nostore-memory.png"))
        for _ in 0..<2 {
            _ = try await loader.response(for: ImageRequest(url: kept))
            _ = try await loader.response(for: ImageRequest(url: noStore))
        }
        let again = try await loader.response(for: ImageRequest(url: kept))
        XCTAssertEqual(again.source, .memoryCache)
        XCTAssertEqual(h.server.requestCount(kept), 1)
        XCTAssertEqual(h.server.requestCount(noStore), 2, "no-store: asked again, not kept in memory")
        await loader.flushDiskWrites()
        XCTAssertFalse(disk.contains(noStore.absoluteString), "nor on disk")
    }

    /// Offline, a stale entry is better than nothing.
    func testOfflineServesStaleEntries() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = h.server.url(6)  // no cache headers: stale at once
        load(ImageRequest(url: url), h, disk, outcomes: 1)
        load(ImageRequest(url: url, cachePolicy: .cachedOnly), h, disk, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 1)
        XCTAssertNotNil(h.log.images["/img/6.png"])
        XCTAssertNil(h.log.errors["/img/6.png"])
    }

    /// Makes `url`'s entry stale: stored a day earlier than it was.
    private func expire(_ disk: DataCache, _ url: URL) throws {
        let entry = try XCTUnwrap(disk.entry(for: url.absoluteString))
        var metadata = entry.metadata
        metadata.http?.requestTime -= 86_400
        metadata.http?.responseTime -= 86_400
        metadata.http?.headers["date"] = nil
        try disk.store(entry.data, for: url.absoluteString, metadata: metadata)
    }
}
