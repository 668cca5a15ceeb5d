import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// What the loader asks of its memory cache, seen through
/// ``RecordingImageCache`` over the fake transport: when it looks up, when
/// it stores, with which key and class, and when it does neither.
final class ImageCachingSeamTests: XCTestCase {
    private let queue = DispatchQueue(label: "image caching seam delivery")

    private func loader(
        _ cache: RecordingImageCache, _ transport: any DataLoading, disk: (any DataCaching)? = nil
    ) -> AsyncImageLoader {
        AsyncImageLoader(
            configuration: .init(
                cache: cache, concurrentLoads: 1, deliveryQueue: queue, notificationCenter: NotificationCenter(),
                dataLoader: transport, diskCache: disk))
    }

    /// A fake transport that answers at once.
    private static func fake() -> FakeDataLoader {
        let fake = FakeDataLoader()
        fake.isSuspended = false
        return fake
    }

    private static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1/img/\(n).png")! }

    /// Three requests for one URL (one transfer, two sizes): each looked up
    /// once, when it is made; each decoded size stored once, in the highest
    /// class its requests ask for; nothing removed.
    func testAMissIsLookedUpOncePerRequestAndStoredOncePerDecodedSize() {
        let fake = FakeDataLoader()  // suspended: the three requests meet in one transfer
        let cache = RecordingImageCache()
        let log = DeliveryLog()
        let loader = loader(cache, fake)
        let url = Self.url(11)
        var full = ImageRequest(url: url)
        full.cacheClass = .original
        var thumb = ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2))
        thumb.cacheClass = .thumbnail
        let thumbAgain = ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2))  // .normal
        for request in [full, thumb, thumbAgain] {
            loader.loadImage(request, success: log.success, failure: log.failure)
        }
        wait(for: [fake.starts(1, self)], timeout: 15)
        XCTAssertEqual(cache.stores.count, 0, "nothing stored before the decode")
        fake.finish(url)
        wait(for: [log.outcomes(3, self)], timeout: 15)
        XCTAssertEqual(fake.startedPaths, ["/img/11.png"], "one transfer")
        XCTAssertEqual(cache.lookUps, [full.cacheKey, thumb.cacheKey, thumb.cacheKey], "one lookup a request")
        let stores = cache.stores
        XCTAssertEqual(stores.count, 2, "one store a decoded size: \(cache.calls)")
        XCTAssertEqual(
            Dictionary(stores.map { ($0.key, $0.cacheClass) }, uniquingKeysWith: { first, _ in first }),
            [full.cacheKey: .original, thumb.cacheKey: .thumbnail],
            "each with its requests' class (the highest of those that share it)")
        XCTAssertEqual(cache.storedImage(for: full.cacheKey)?.size, PixelSize(width: 4, height: 4))
        XCTAssertEqual(cache.storedImage(for: thumb.cacheKey)?.size, PixelSize(width: 2, height: 2))
        XCTAssertEqual(cache.removals, [])
    }

    /// `skipMemoryReads`: never `image(for:)`, even with an image there to
    /// find (the request, `hasCachedImage` and `cachedImage`); it still stores.
    func testSkipMemoryReadsNeverLooksUp() async throws {
        let fake = Self.fake()
        let cache = RecordingImageCache()
        let loader = loader(cache, fake)
        let url = Self.url(12)
        let skipping = ImageRequest(url: url, cachePolicy: .skipMemoryReads)
        cache.answer(SyntheticImage.solid(width: 3, height: 3, color: NumberedImage.color(99)), for: skipping.cacheKey)

        let response = try await loader.response(for: skipping)
        XCTAssertEqual(response.source, .network)
        XCTAssertEqual(response.image.pixel(x: 0, y: 0), NumberedImage.color(12))
        XCTAssertFalse(loader.hasCachedImage(for: skipping))
        XCTAssertNil(loader.cachedImage(for: skipping))
        XCTAssertEqual(cache.lookUps, [])
        XCTAssertEqual(fake.startedPaths.count, 1)
        XCTAssertEqual(cache.stores.map(\.key), [skipping.cacheKey], "writes still happen")

        // The same request reading memory finds the double's image.
        let hit = try await loader.response(for: ImageRequest(url: url))
        XCTAssertEqual(hit.source, .memoryCache)
        XCTAssertEqual(cache.lookUps, [skipping.cacheKey])
    }

    /// `skipMemoryWrites`: never `setImage`, from the network or decoded
    /// from disk by `cachedImage(for:)`; without it, one store with the
    /// request's class.
    func testSkipMemoryWritesNeverStores() async throws {
        let fake = Self.fake()
        let cache = RecordingImageCache()
        let transport = AnsweringTransport(fake, headers: ["cache-control": "max-age=60"])
        let loader = loader(cache, transport, disk: MemoryDataStore())
        let url = Self.url(13)
        let skipping = ImageRequest(url: url, cachePolicy: .skipMemoryWrites)

        let response = try await loader.response(for: skipping)
        await loader.flushDiskWrites()
        XCTAssertEqual(response.source, .network)
        let fromDisk = try await loader.response(for: skipping)
        XCTAssertEqual(fromDisk.source, .diskCache)
        XCTAssertNotNil(loader.cachedImage(for: skipping))
        XCTAssertEqual(cache.lookUps.count, 3, "reads still happen")
        XCTAssertEqual(cache.stores.count, 0)

        var storing = ImageRequest(url: url)
        storing.cacheClass = .thumbnail
        XCTAssertNotNil(loader.cachedImage(for: storing))
        XCTAssertEqual(cache.stores.map(\.key), [storing.cacheKey])
        XCTAssertEqual(cache.stores.map(\.cacheClass), [.thumbnail])
        XCTAssertEqual(fake.startedPaths.count, 1)
    }

    /// A response marked `no-store` is stored in no cache, whatever its
    /// size; another response is (the control).
    func testANoStoreResponseIsNeverStored() async throws {
        let fake = Self.fake()
        let cache = RecordingImageCache()
        let transport = AnsweringTransport(fake) { request, response in
            let directive = request.url.lastPathComponent == "14.png" ? "no-store" : "max-age=60"
            return response.with(statusCode: 200, headers: ["cache-control": directive])
        }
        let disk = MemoryDataStore()
        let loader = loader(cache, transport, disk: disk)
        let (noStore, kept) = (Self.url(14), Self.url(15))

        _ = try await loader.response(for: ImageRequest(url: noStore))
        _ = try await loader.response(for: ImageRequest(url: noStore, targetSize: PixelSize(width: 2, height: 2)))
        _ = try await loader.response(for: ImageRequest(url: kept))
        await loader.flushDiskWrites()
        XCTAssertEqual(cache.lookUps.count, 3)
        XCTAssertEqual(cache.stores.map(\.key), [ImageRequest(url: kept).cacheKey], "only the storable response")
        XCTAssertFalse(disk.keys.contains { $0.hasPrefix(noStore.absoluteString) }, "nor on disk")
        XCTAssertEqual(fake.startedPaths.count, 3)
    }

    /// The double's image for the key: delivered (async and to actions)
    /// from memory, no transfer, not stored again.
    func testAHitFromTheDoubleIsDeliveredWithoutATransfer() async throws {
        let fake = Self.fake()
        let cache = RecordingImageCache()
        let loader = loader(cache, fake)
        let request = ImageRequest(url: Self.url(16))
        let image = SyntheticImage.solid(width: 3, height: 5, color: NumberedImage.color(42))
        cache.answer(image, for: request.cacheKey)

        let response = try await loader.response(for: request)
        XCTAssertEqual(response.source, .memoryCache)
        XCTAssertEqual(response.image.size, PixelSize(width: 3, height: 5))
        XCTAssertEqual(response.image.pixel(x: 0, y: 0), NumberedImage.color(42))

        let log = DeliveryLog()
        loader.loadImage(request, success: log.success, failure: log.failure)
        await fulfillment(of: [log.outcomes(1, self)], timeout: 15)
        XCTAssertEqual(log.images["/img/16.png"]?.size, PixelSize(width: 3, height: 5))
        XCTAssertTrue(loader.hasCachedImage(for: request))
        XCTAssertEqual(loader.cachedImage(for: request)?.size, PixelSize(width: 3, height: 5))

        XCTAssertEqual(fake.startedPaths, [], "no transfer")
        XCTAssertEqual(cache.lookUps, Array(repeating: request.cacheKey, count: 4))
        XCTAssertEqual(cache.stores.count, 0, "a hit is not stored again")
    }
}
