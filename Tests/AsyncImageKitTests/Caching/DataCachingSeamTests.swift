import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The disk layer over a store that is not a ``DataCache``: a loader backed
/// by ``MemoryDataStore`` (a locked dictionary whose metadata goes through
/// `Codable`, as a remote store's would), over the fake transport, whose
/// transfer count says when the network was used. No sockets, no files.
final class DataCachingSeamTests: XCTestCase {
    private let queue = DispatchQueue(label: "data caching seam delivery")

    /// A loader with no memory cache (every load reaches the disk layer)
    /// over `store`; processed images stored losslessly, so pixels compare exactly.
    private func loader(
        _ store: any DataCaching, _ transport: any DataLoading, storage: DiskStorage = .both
    ) -> AsyncImageLoader {
        AsyncImageLoader(
            configuration: .init(
                cache: nil, deliveryQueue: queue, notificationCenter: NotificationCenter(), dataLoader: transport,
                diskCache: store, diskStorage: storage, processedImageEncoding: .lossless))
    }

    /// A fake transport that answers at once.
    private static func fake() -> FakeDataLoader {
        let fake = FakeDataLoader()
        fake.isSuspended = false
        return fake
    }

    /// `http://127.0.0.1/img/N.png`: the fake answers it with a 4x4 PNG of ``NumberedImage/color(_:)``.
    private static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1/img/\(n).png")! }

    /// A response is stored whole in the store (headers entry under the URL,
    /// body under its generation), then served from it by a new loader, by
    /// `hasCachedImage`, `cachedImage` and the data-level API, with no
    /// second transfer.
    func testAStoredResponseIsServedFromTheStoreWithoutATransfer() async throws {
        let fake = Self.fake()
        let store = MemoryDataStore()
        let transport = AnsweringTransport(fake, headers: ["cache-control": "max-age=60", "content-type": "image/png"])
        let url = Self.url(3)
        let key = url.absoluteString
        let writer = loader(store, transport)
        let first = try await writer.response(for: ImageRequest(url: url))
        XCTAssertEqual(first.source, .network)
        await writer.flushDiskWrites()
        XCTAssertEqual(fake.startedPaths, ["/img/3.png"])
        XCTAssertGreaterThan(store.flushCount, 0, "flushDiskWrites reaches the store through the protocol")
        let headers = try XCTUnwrap(store.metadata(for: key), "the headers entry, under the URL")
        let generation = try XCTUnwrap(headers.generation)
        XCTAssertEqual(headers.http?.status, 200, "the whole HTTP response, through the store's Codable round trip")
        XCTAssertEqual(headers.http?.headers["cache-control"], "max-age=60")
        XCTAssertEqual(store.keys, [key, ImageDiskStore.originalKey(key, generation: generation)])

        // A restart: a new loader over the same store, which answers.
        let reader = loader(store, transport)
        let second = try await reader.response(for: ImageRequest(url: url))
        XCTAssertEqual(second.source, .diskCache)
        XCTAssertEqual(second.image.pixel(x: 0, y: 0), NumberedImage.color(3))
        XCTAssertEqual(second.http?.statusCode, 200)
        XCTAssertEqual(fake.startedPaths.count, 1, "no second transfer")
        XCTAssertTrue(reader.hasCachedImage(for: ImageRequest(url: url)))
        XCTAssertEqual(reader.cachedImage(for: ImageRequest(url: url))?.pixel(x: 0, y: 0), NumberedImage.color(3))
        // The data-level API reads the same entries.
        let bytes = try await reader.data(for: url)
        XCTAssertEqual(bytes.source, .cache)
        XCTAssertEqual(bytes.body, FakeDataLoader.response(for: url).data)
        XCTAssertEqual(fake.startedPaths.count, 1, "still one transfer")
        XCTAssertEqual(store.removals, [], "nothing was replaced")
    }

    /// `no-cache` with an `ETag`: every use asks the server; its `304`
    /// serves the stored body and rewrites the headers entry alone (same
    /// generation, the `304`'s `max-age`), through the store's atomic
    /// replacement; then the entry is fresh.
    func testAStaleStoredResponseIsRevalidatedWithA304() async throws {
        let fake = Self.fake()
        let store = MemoryDataStore()
        let transport = AnsweringTransport(fake) { request, response in
            if request.header("if-none-match") == "\"v1\"" {
                return response.with(statusCode: 304, headers: ["etag": "\"v1\"", "cache-control": "max-age=60"], body: Data())
            }
            return response.with(statusCode: 200, headers: ["etag": "\"v1\"", "cache-control": "no-cache"])
        }
        let url = Self.url(4)
        let key = url.absoluteString
        let loader = loader(store, transport)
        _ = try await loader.response(for: ImageRequest(url: url))
        await loader.flushDiskWrites()
        let generation = try XCTUnwrap(store.metadata(for: key)?.generation)
        XCTAssertNil(fake.startedRequests.first?.header("if-none-match"), "nothing stored yet: unconditional")
        store.resetRecords()

        let revalidated = try await loader.response(for: ImageRequest(url: url))
        await loader.flushDiskWrites()
        XCTAssertEqual(fake.startedPaths.count, 2, "no-cache: asked again")
        XCTAssertEqual(fake.startedRequests.last?.header("if-none-match"), "\"v1\"", "with the stored ETag")
        XCTAssertEqual(revalidated.source, .diskCache)
        XCTAssertEqual(revalidated.http?.isRevalidated, true)
        XCTAssertEqual(revalidated.http?.statusCode, 200, "the stored status, not the 304's")
        XCTAssertEqual(revalidated.image.pixel(x: 0, y: 0), NumberedImage.color(4), "the stored body: the 304 had none")
        let refreshed = try XCTUnwrap(store.metadata(for: key))
        XCTAssertEqual(refreshed.generation, generation, "the 304 kept the generation, and so the body")
        XCTAssertEqual(refreshed.http?.headers["cache-control"], "max-age=60", "and rewrote the headers")
        XCTAssertEqual(store.writes, [key], "the headers entry alone was written")
        XCTAssertEqual(store.removals, [])
        XCTAssertTrue(store.keys.contains(ImageDiskStore.originalKey(key, generation: generation)))

        // Fresh now, by the 304's max-age: no transfer.
        let fresh = try await loader.response(for: ImageRequest(url: url))
        XCTAssertEqual(fresh.source, .diskCache)
        XCTAssertEqual(fake.startedPaths.count, 2)
    }

    /// A `200` to the conditional request: a new generation replaces the
    /// stored response, and the old body goes in the same replacement
    /// (``DataCacheReplacement/removing``), not left behind.
    func testANewResponseReplacesTheStoredOneAndItsBody() async throws {
        let fake = Self.fake()
        let store = MemoryDataStore()
        let version = Box<Int>(1)
        let transport = AnsweringTransport(fake) { _, response in
            let current = version.value ?? 0
            let body = FakeDataLoader.response(for: Self.url(10 + current)).data
            return response.with(
                statusCode: 200, headers: ["etag": "\"v\(current)\"", "cache-control": "no-cache"], body: body)
        }
        let url = Self.url(5)
        let key = url.absoluteString
        let loader = loader(store, transport)
        _ = try await loader.response(for: ImageRequest(url: url))
        await loader.flushDiskWrites()
        let old = try XCTUnwrap(store.metadata(for: key)?.generation)
        store.resetRecords()

        version.value = 2
        let changed = try await loader.response(for: ImageRequest(url: url))
        await loader.flushDiskWrites()
        XCTAssertEqual(changed.source, .network)
        XCTAssertEqual(changed.image.pixel(x: 0, y: 0), NumberedImage.color(12), "the new image")
        let stored = try XCTUnwrap(store.metadata(for: key))
        let new = try XCTUnwrap(stored.generation)
        XCTAssertNotEqual(new, old)
        XCTAssertEqual(stored.etag, "\"v2\"")
        XCTAssertEqual(store.removals, [ImageDiskStore.originalKey(key, generation: old)], "the old body, with the commit")
        XCTAssertEqual(store.keys, [key, ImageDiskStore.originalKey(key, generation: new)])
        XCTAssertEqual(store.writes.last, key, "the headers entry last, after its body")
    }

    /// A display-size request stores its processed image under its
    /// generation; a new loader reads it back without reading the
    /// original. Another size is made from the original, read then.
    func testProcessedThumbnailsAreStoredAndReadBack() async throws {
        let fake = Self.fake()
        let store = MemoryDataStore()
        let transport = AnsweringTransport(fake, headers: ["cache-control": "max-age=60"])
        let url = Self.url(6)
        let key = url.absoluteString
        let thumb = ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2))
        let writer = loader(store, transport)
        _ = try await writer.response(for: thumb)
        await writer.flushDiskWrites()
        let generation = try XCTUnwrap(store.metadata(for: key)?.generation)
        let original = ImageDiskStore.originalKey(key, generation: generation)
        let processed = ImageDiskStore.processedKey(key, thumb.cacheKey.processing, generation: generation)
        XCTAssertEqual(store.keys, [key, original, processed])
        store.resetRecords()

        let reader = loader(store, transport)
        let hit = try await reader.response(for: thumb)
        XCTAssertEqual(hit.source, .diskCache)
        XCTAssertEqual(hit.image.size, PixelSize(width: 2, height: 2))
        XCTAssertEqual(hit.image.pixel(x: 1, y: 1), NumberedImage.color(6))
        XCTAssertEqual(fake.startedPaths.count, 1, "no transfer")
        XCTAssertTrue(store.reads.contains(processed), "the thumbnail was read back")
        XCTAssertFalse(store.reads.contains(original), "and the original not read at all")

        let other = ImageRequest(url: url, targetSize: PixelSize(width: 3, height: 3))
        let made = try await reader.response(for: other)
        await reader.flushDiskWrites()
        XCTAssertEqual(made.source, .diskCache)
        XCTAssertEqual(made.image.size, PixelSize(width: 3, height: 3))
        XCTAssertTrue(store.reads.contains(original), "another size: made from the stored original")
        XCTAssertTrue(
            store.keys.contains(ImageDiskStore.processedKey(key, other.cacheKey.processing, generation: generation)),
            "and its thumbnail stored under the same generation")
        XCTAssertEqual(fake.startedPaths.count, 1)

        // Thumbnails only: no original in the store.
        let thumbsOnly = loader(store, transport, storage: .processedImages)
        let url7 = Self.url(7)
        _ = try await thumbsOnly.response(for: ImageRequest(url: url7, targetSize: PixelSize(width: 2, height: 2)))
        await thumbsOnly.flushDiskWrites()
        let generation7 = try XCTUnwrap(store.metadata(for: url7.absoluteString)?.generation)
        XCTAssertFalse(store.keys.contains(ImageDiskStore.originalKey(url7.absoluteString, generation: generation7)))
        XCTAssertEqual(store.keys.filter { $0.hasPrefix(url7.absoluteString) }.count, 2, "headers and thumbnail")
    }

    /// The protocol's contract, through `any DataCaching`, held by both
    /// conformers: whole values and metadata back; `decide` shown the
    /// replaced entry's metadata; `.keep` changes nothing; a replacement
    /// removes the keys it names (never its own); and the look and the
    /// replacement are one step: threads that each add one to a counter by
    /// compare-and-set lose no update.
    func testDataCacheAndTheMemoryStoreKeepTheContract() throws {
        let stores: [(String, any DataCaching)] = [
            ("DataCache", try DataCache(directory: temporaryFolder("seam-contract"))), ("MemoryDataStore", MemoryDataStore()),
        ]
        for (name, store) in stores {
            XCTAssertNil(store.entry(for: "a"), name)
            XCTAssertFalse(store.contains("a"), name)
            var metadata = DataCacheMetadata(etag: "\"1\"", contentType: "image/png")
            metadata.generation = "g1"
            try store.store(Data("one".utf8), for: "a", metadata: metadata)
            XCTAssertEqual(store.data(for: "a"), Data("one".utf8), name)
            XCTAssertEqual(store.entry(for: "a")?.metadata.generation, "g1", name)
            XCTAssertEqual(store.entry(for: "a")?.metadata.etag, "\"1\"", name)
            XCTAssertTrue(store.contains("a"), name)
            try store.store(Data("other".utf8), for: "b\n#original\ng1", metadata: DataCacheMetadata())

            var shown: [DataCacheMetadata?] = []
            var next = DataCacheMetadata(etag: "\"2\"")
            next.generation = "g2"
            let kept = try store.store(Data("two".utf8), for: "a", metadata: next) { replaced in
                shown.append(replaced)
                return .keep
            }
            XCTAssertFalse(kept, name)
            XCTAssertEqual(shown.map { $0?.generation }, ["g1"], "\(name): shown the entry it would replace")
            XCTAssertEqual(store.data(for: "a"), Data("one".utf8), "\(name): .keep changed nothing")

            let replaced = try store.store(Data("two".utf8), for: "a", metadata: next) { _ in
                .replace(removing: ["b\n#original\ng1", "a"])
            }
            XCTAssertTrue(replaced, name)
            XCTAssertEqual(store.data(for: "a"), Data("two".utf8), name)
            XCTAssertEqual(store.entry(for: "a")?.metadata.generation, "g2", name)
            XCTAssertNil(store.entry(for: "b\n#original\ng1"), "\(name): removed with the replacement")

            var none: [DataCacheMetadata?] = [DataCacheMetadata()]
            try store.store(Data(), for: "fresh", metadata: DataCacheMetadata()) { replaced in
                none = [replaced]
                return .replace()
            }
            XCTAssertEqual(none, [nil], "\(name): nothing to replace")

            // Compare-and-set from 4 threads, 10 increments each.
            try store.store(Data(), for: "counter", metadata: DataCacheMetadata(etag: "0"))
            let failures = Counter()
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                for _ in 0..<10 {
                    var done = false
                    for _ in 0..<10_000 where !done {
                        let seen = store.entry(for: "counter")?.metadata.etag ?? "?"
                        let value = Int(seen) ?? -1_000
                        done =
                            (try? store.store(Data(), for: "counter", metadata: DataCacheMetadata(etag: "\(value + 1)")) {
                                $0?.etag == seen ? .replace() : .keep
                            }) ?? false
                    }
                    if !done { failures.increment() }
                }
            }
            XCTAssertEqual(failures.value, 0, name)
            XCTAssertEqual(store.entry(for: "counter")?.metadata.etag, "40", "\(name): no update lost")

            store.removeData(for: "a")
            XCTAssertNil(store.entry(for: "a"), name)
            store.removeAll()
            XCTAssertNil(store.entry(for: "counter"), name)
            XCTAssertFalse(store.contains("fresh"), name)
        }
    }

    /// Reads that fail (an unreachable store) are misses: the network
    /// answers, never a crash, and offline says "not cached". A body gone
    /// from under its headers entry (evicted) is a miss, stored again whole.
    /// Writes that fail leave the image delivered and nothing stored.
    func testAFailingStoreIsAMissNeverACrash() async throws {
        let fake = Self.fake()
        let store = MemoryDataStore()
        let transport = AnsweringTransport(fake, headers: ["cache-control": "max-age=60"])
        let url = Self.url(8)
        let key = url.absoluteString
        let request = ImageRequest(url: url)
        let loader = loader(store, transport)
        _ = try await loader.response(for: request)
        await loader.flushDiskWrites()
        XCTAssertEqual(store.keys.count, 2)

        store.failsReads = true
        let unread = try await loader.response(for: request)
        XCTAssertEqual(unread.source, .network, "a failed read is a miss")
        XCTAssertEqual(unread.image.pixel(x: 0, y: 0), NumberedImage.color(8))
        XCTAssertEqual(fake.startedPaths.count, 2)
        XCTAssertFalse(loader.hasCachedImage(for: request))
        XCTAssertNil(loader.cachedImage(for: request))
        do {
            _ = try await loader.response(for: ImageRequest(url: url, cachePolicy: .cachedOnly))
            XCTFail("offline, with nothing readable: not cached")
        } catch let error as AsyncImageError {
            XCTAssertEqual(error, .notCached(url))
        }
        let bytes = try await loader.data(for: url)
        XCTAssertEqual(bytes.source, .network)
        XCTAssertEqual(fake.startedPaths.count, 3)
        await loader.flushDiskWrites()

        // Readable again: what is stored is served.
        store.failsReads = false
        let readable = try await loader.response(for: request)
        XCTAssertEqual(readable.source, .diskCache)
        XCTAssertEqual(fake.startedPaths.count, 3)

        // The body evicted, its headers entry left: a miss, and stored again whole.
        let generation = try XCTUnwrap(store.metadata(for: key)?.generation)
        store.evict(ImageDiskStore.originalKey(key, generation: generation))
        let reloaded = try await loader.response(for: request)
        await loader.flushDiskWrites()
        XCTAssertEqual(reloaded.source, .network)
        XCTAssertEqual(fake.startedPaths.count, 4)
        let regenerated = try XCTUnwrap(store.metadata(for: key)?.generation)
        XCTAssertNotEqual(regenerated, generation)
        XCTAssertEqual(store.keys, [key, ImageDiskStore.originalKey(key, generation: regenerated)])

        // Writes that throw: delivered all the same, nothing stored.
        store.failsWrites = true
        let other = Self.url(9)
        let unstored = try await loader.response(for: ImageRequest(url: other))
        await loader.flushDiskWrites()
        XCTAssertEqual(unstored.source, .network)
        XCTAssertEqual(unstored.image.pixel(x: 0, y: 0), NumberedImage.color(9))
        XCTAssertFalse(store.keys.contains { $0.hasPrefix(other.absoluteString) })
        XCTAssertFalse(loader.hasCachedImage(for: ImageRequest(url: other)))
    }
}
