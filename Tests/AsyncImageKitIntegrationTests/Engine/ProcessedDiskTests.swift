@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Processed images on disk (issue: disk cache, items 4 and 7): a display-size
/// request's thumbnail is read back instead of decoding the original again;
/// originals, thumbnails or both, per loader and per request; a 304 keeps
/// the thumbnails, a 200 drops them. Counted at a real server.
final class ProcessedDiskTests: XCTestCase {
    private var folder: URL!
    private let thumb = PixelSize(width: 64, height: 48)
    private let small = PixelSize(width: 16, height: 12)

    override func setUp() {
        folder = temporaryFolder("processed")
    }

    /// A 640x480 photo-like JPEG (opaque) served at `path`, fresh for a minute.
    private func servePhoto(_ h: LoaderHarness, _ path: String = "/photo.jpg", seed: UInt64 = 1) -> URL {
        let jpeg = try! JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 640, height: 480, seed: seed))
        h.server.respond(path) { connection in
            connection.respond(status: 200, headers: [("Cache-Control", "max-age=60"), ("Content-Type", "image/jpeg")], body: jpeg)
        }
        return h.server.url(path: path)
    }

    /// A new loader (an empty memory cache) over `disk`; runs `asked` once
    /// every request is asked for, then waits for `outcomes` in all.
    @discardableResult
    private func load(
        _ requests: [ImageRequest], _ h: LoaderHarness, _ disk: DataCache, outcomes: Int,
        storage: DiskStorage = .both, encoding: ImageEncoding = .automatic, asked: () -> Void = {}
    ) -> AsyncImageLoader {
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), deliveryQueue: h.queue, notificationCenter: h.center, diskCache: disk,
                diskStorage: storage, processedImageEncoding: encoding))
        for request in requests { loader.loadImage(request, success: h.log.success, failure: h.log.failure) }
        asked()
        wait(for: [h.log.outcomes(outcomes, self)], timeout: 15)
        h.drainDeliveries()
        loader.flushDiskWrites()
        return loader
    }

    /// The keys of `url`'s entries at `size`, for the generation stored now
    /// (read from its headers entry; "none" without one).
    private func keys(_ url: URL, _ size: PixelSize, _ disk: DataCache) -> (headers: String, original: String, processed: String) {
        let request = ImageRequest(url: url, targetSize: size)
        let key = LoadRequest.diskKey(for: request)
        let generation = disk.entry(for: key)?.metadata.generation ?? "none"
        return (
            key, ImageDiskStore.originalKey(key, generation: generation),
            ImageDiskStore.processedKey(key, request.cacheKey.processing, generation: generation)
        )
    }

    func testAThumbnailComesBackFromDiskWithoutTheOriginal() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = servePhoto(h)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 1)
        let made = try XCTUnwrap(h.log.images["/photo.jpg"])
        let keys = keys(url, thumb, disk)
        XCTAssertTrue(disk.contains(keys.headers) && disk.contains(keys.original) && disk.contains(keys.processed))
        let processedSize = try XCTUnwrap(disk.data(for: keys.processed)).count
        let originalSize = try XCTUnwrap(disk.data(for: keys.original)).count
        XCTAssertLessThan(processedSize * 5, originalSize, "the thumbnail is a small file")

        // The original is gone: the thumbnail alone answers, and the network is not asked.
        disk.removeData(for: keys.original)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 1)
        let restored = try XCTUnwrap(h.log.images["/photo.jpg"])
        XCTAssertEqual(restored.size, made.size)
        XCTAssertEqual(restored.originalSize, PixelSize(width: 640, height: 480), "what the caller was told is kept")
        XCTAssertEqual(restored.format, .jpeg)
        XCTAssertEqual(restored.decodeInfo, made.decodeInfo)
        XCTAssertLessThan(Self.maxDifference(restored, made), 24, "JPEG at quality 90: close to what was made")
        // And synchronously, for a caller that wants it now or not at all.
        let loader = AsyncImageLoader(configuration: .init(cache: nil, deliveryQueue: h.queue, diskCache: disk))
        XCTAssertTrue(loader.hasCachedImage(for: ImageRequest(url: url, targetSize: thumb)))
        XCTAssertEqual(loader.cachedImage(for: ImageRequest(url: url, targetSize: thumb))?.size, made.size)
        XCTAssertNil(loader.cachedImage(for: ImageRequest(url: url)), "full size needs the original")
    }

    func testLosslessStorageGivesBackThePixelsThatWereMade() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = servePhoto(h)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 1, encoding: .lossless)
        let made = try XCTUnwrap(h.log.images["/photo.jpg"])
        disk.removeData(for: keys(url, thumb, disk).original)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 2)
        XCTAssertEqual(Self.maxDifference(try XCTUnwrap(h.log.images["/photo.jpg"]), made), 0)
        XCTAssertEqual(h.server.requestCount(url), 1)
    }

    /// Originals only, thumbnails only, per loader and per request.
    func testWhatIsStoredIsChosenPerLoaderAndPerRequest() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let (a, b, c) = (servePhoto(h, "/a.jpg"), servePhoto(h, "/b.jpg"), servePhoto(h, "/c.jpg"))
        load([ImageRequest(url: a, targetSize: thumb)], h, disk, outcomes: 1, storage: .originals)
        load([ImageRequest(url: b, targetSize: thumb)], h, disk, outcomes: 2, storage: .processedImages)
        load([ImageRequest(url: c, targetSize: thumb, diskStorage: .processedImages)], h, disk, outcomes: 3, storage: .originals)
        for (url, original, processed) in [(a, true, false), (b, false, true), (c, false, true)] {
            let keys = keys(url, thumb, disk)
            XCTAssertTrue(disk.contains(keys.headers), "\(url.path): the headers entry")
            XCTAssertEqual(disk.contains(keys.original), original, "\(url.path): original")
            XCTAssertEqual(disk.contains(keys.processed), processed, "\(url.path): processed")
        }
        // A full-size request stores its original under either choice.
        let d = servePhoto(h, "/d.jpg")
        load([ImageRequest(url: d)], h, disk, outcomes: 4, storage: .processedImages)
        XCTAssertTrue(disk.contains(keys(d, thumb, disk).original))
    }

    /// A full-size request without colour management (`colour-off` in its
    /// key) is still a full-size request: its original is stored, never a
    /// re-encoded copy as a processed image, and the next loader decodes
    /// the original again.
    func testAFullSizeRequestWithoutColourManagementStoresTheOriginalOnly() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = servePhoto(h)
        var request = ImageRequest(url: url)
        request.colorManagement = .off
        XCTAssertEqual(request.cacheKey.processing, "colour-off")
        load([request], h, disk, outcomes: 1)
        let key = LoadRequest.diskKey(for: request)
        let generation = try XCTUnwrap(disk.entry(for: key)?.metadata.generation)
        XCTAssertTrue(disk.contains(ImageDiskStore.originalKey(key, generation: generation)), "the original")
        XCTAssertFalse(
            disk.contains(ImageDiskStore.processedKey(key, "colour-off", generation: generation)), "no re-encoded copy")
        load([request], h, disk, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 1, "the original on disk")
        XCTAssertEqual(h.log.images["/photo.jpg"]?.size, PixelSize(width: 640, height: 480))
        XCTAssertEqual(h.log.errors.count, 0)
    }

    /// Thumbnails only on disk, then one request for a stored size and one
    /// for another (sharing the URL): the first from disk, the second from
    /// the network (the job that had only thumbnails hands it on).
    func testASizeWithNoStoredImageGoesToTheNetwork() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = servePhoto(h)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 1, storage: .processedImages)
        XCTAssertEqual(h.server.requestCount(url), 1)
        load(
            [ImageRequest(url: url, targetSize: thumb), ImageRequest(url: url, targetSize: small)], h, disk, outcomes: 3,
            storage: .processedImages)
        XCTAssertEqual(h.server.requestCount(url), 2, "one transfer, for the size not on disk")
        XCTAssertEqual(h.log.errors.count, 0)
        XCTAssertTrue(disk.contains(keys(url, small, disk).processed), "and its thumbnail is stored now")
        // Offline, the stored size comes; the other is "not cached".
        let other = PixelSize(width: 8, height: 6)
        load(
            [ImageRequest(url: url, targetSize: thumb, cachePolicy: .cachedOnly),
             ImageRequest(url: url, targetSize: other, cachePolicy: .cachedOnly)], h, disk, outcomes: 5,
            storage: .processedImages)
        XCTAssertEqual(h.log.errors["/photo.jpg"], .notCached(url))
        XCTAssertEqual(h.server.requestCount(url), 2)
    }

    /// A damaged stored thumbnail is a miss: the original is decoded instead
    /// (and the thumbnail written again); with no original, the network.
    func testADamagedThumbnailFallsBackToTheOriginalThenTheNetwork() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let url = servePhoto(h)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 1)
        let keys = keys(url, thumb, disk)
        let generation = try XCTUnwrap(disk.entry(for: keys.headers)?.metadata.generation)
        func damage() throws {
            var metadata = DataCacheMetadata()
            metadata.generation = generation
            try disk.store(Data("AIKI garbage".utf8), for: keys.processed, metadata: metadata)
        }
        try damage()
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 2)
        XCTAssertEqual(h.server.requestCount(url), 1, "the original on disk")
        XCTAssertEqual(h.log.images["/photo.jpg"]?.size, thumb)
        XCTAssertNotNil(StoredImage.decode(try XCTUnwrap(disk.data(for: keys.processed)), decoders: .default), "rewritten")
        try damage()
        disk.removeData(for: keys.original)
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 3)
        XCTAssertEqual(h.server.requestCount(url), 2, "nothing usable on disk: the network")
        XCTAssertEqual(h.log.errors.count, 0)
        XCTAssertEqual(h.log.images["/photo.jpg"]?.size, thumb)
    }

    /// A 304 keeps every stored thumbnail (only the headers entry is
    /// rewritten); a 200 replaces the response and its thumbnails of every
    /// size are no longer used.
    func testA304KeepsThumbnailsAndA200DropsThem() throws {
        let h = try LoaderHarness()
        let disk = try DataCache(directory: folder)
        let path = "/versioned.jpg"
        let url = h.server.url(path: path)
        let version = Box<Int>(1)
        let bodies = [1: SyntheticImage.solid(width: 320, height: 240, color: RGBA(r: 200, g: 20, b: 20)),
                      2: SyntheticImage.solid(width: 320, height: 240, color: RGBA(r: 20, g: 20, b: 200))]
            .mapValues { try! JPEGEncoder(quality: 95).encode($0) }
        // The first answer is held until both sizes are asked for, so that
        // they share one transfer (one stored response, one generation).
        let firstAnswer = Gate()
        h.server.respond(path) { connection in
            firstAnswer.wait()
            let current = version.value!
            let tag = "\"v\(current)\""
            if h.server.headers(of: url)?["if-none-match"] == tag {
                connection.respond(status: 304, headers: [("ETag", tag), ("Cache-Control", "no-cache")], body: Data())
            } else {
                connection.respond(status: 200, headers: [("ETag", tag), ("Cache-Control", "no-cache")], body: bodies[current]!)
            }
        }
        load(
            [ImageRequest(url: url, targetSize: thumb), ImageRequest(url: url, targetSize: small)], h, disk, outcomes: 2,
            asked: firstAnswer.open)
        XCTAssertEqual(h.server.requestCount(url), 1)
        let (thumbKeys, smallKeys) = (keys(url, thumb, disk), keys(url, small, disk))
        let thumbFile = try XCTUnwrap(disk.entry(for: thumbKeys.processed))
        let originalFile = try XCTUnwrap(disk.entry(for: thumbKeys.original))

        // 304: served from disk; the thumbnail and the original are the same files.
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 3)
        XCTAssertEqual(h.server.requestCount(url), 2)
        XCTAssertEqual(h.server.headers(of: url)?["if-none-match"], "\"v1\"")
        XCTAssertEqual(h.log.images[path]?.pixel(x: 10, y: 10).r ?? 0, 200, accuracy: 6)
        XCTAssertEqual(disk.entry(for: thumbKeys.processed)?.metadata.storedAt, thumbFile.metadata.storedAt, "not rewritten")
        XCTAssertEqual(disk.entry(for: thumbKeys.original)?.metadata.storedAt, originalFile.metadata.storedAt)

        // 200: the new image, a new generation; the other size's old
        // thumbnail is not used (it is dropped, and made again from the new original).
        version.value = 2
        load([ImageRequest(url: url, targetSize: thumb)], h, disk, outcomes: 4)
        XCTAssertEqual(h.server.requestCount(url), 3)
        XCTAssertEqual(h.log.images[path]?.pixel(x: 10, y: 10).b ?? 0, 200, accuracy: 6, "the new image")
        let generation = try XCTUnwrap(disk.entry(for: thumbKeys.headers)?.metadata.generation)
        XCTAssertNotEqual(generation, thumbFile.metadata.generation)
        XCTAssertNotEqual(disk.entry(for: smallKeys.processed)?.metadata.generation, generation, "the old small one, stale")
        load([ImageRequest(url: url, targetSize: small)], h, disk, outcomes: 5)
        XCTAssertEqual(h.server.requestCount(url), 4, "revalidated (304)")
        XCTAssertEqual(h.log.images[path]?.pixel(x: 2, y: 2).b ?? 0, 200, accuracy: 6, "never the old small thumbnail")
        XCTAssertEqual(
            disk.entry(for: keys(url, small, disk).processed)?.metadata.generation, generation,
            "made again from the new original")
    }

    /// Persistence across processes: another process (this test binary, run
    /// as a worker) loads through a loader with the disk cache and exits;
    /// this one then has the thumbnail and the original offline, and the
    /// server saw one request in all.
    func testWhatAnotherProcessStoredIsHereAfterItExits() throws {
        let h = try LoaderHarness()
        let url = servePhoto(h)
        let process = try startWorker(
            "ProcessedDiskTests/testLoaderWorker", "LOADER_WORKER", "\(folder.path)|\(url.absoluteString)")
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "the worker loaded and stored")
        XCTAssertEqual(h.server.requestCount(url), 1)
        let disk = try DataCache(directory: folder)
        load(
            [ImageRequest(url: url, targetSize: thumb, cachePolicy: .cachedOnly), ImageRequest(url: url, cachePolicy: .cachedOnly)],
            h, disk, outcomes: 2)
        XCTAssertEqual(h.log.errors.count, 0)
        XCTAssertEqual(h.log.images["/photo.jpg"]?.originalSize, PixelSize(width: 640, height: 480))
        XCTAssertEqual(h.server.requestCount(url), 1, "offline: the disk only")
    }

    /// The worker of the test above (does nothing in a normal run).
    func testLoaderWorker() throws {
        guard let spec = ProcessInfo.processInfo.environment["LOADER_WORKER"] else { return }
        let parts = spec.split(separator: "|").map(String.init)
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: nil, deliveryQueue: DispatchQueue(label: "worker"),
                diskCache: try DataCache(directory: URL(fileURLWithPath: parts[0]))))
        let done = expectation(description: "loaded")
        let failed = Box<Bool>(false)
        loader.loadImage(
            ImageRequest(url: URL(string: parts[1])!, targetSize: thumb),
            success: ImageAction("ok") { _, _, _ in done.fulfill() },
            failure: ImageFailureAction("failed") { _, _, _ in
                failed.value = true
                done.fulfill()
            })
        wait(for: [done], timeout: 15)
        loader.flushDiskWrites()
        if failed.value == true { exit(3) }
    }

    /// Stored images keep what the decode told: an alpha image comes back
    /// exactly (PNG), an animation frame by frame with its timing (raw).
    func testStoredImagesRoundTrip() throws {
        let alpha = SyntheticImage.alphaRamp(width: 37, height: 23)
        let back = try XCTUnwrap(StoredImage.decode(try StoredImage.encode(alpha, encoding: .automatic), decoders: .default))
        XCTAssertEqual(Self.maxDifference(back, alpha), 0, "transparency: lossless")
        let frames = (0..<3).map { index in
            SyntheticImage.solid(width: 5, height: 4, color: RGBA(r: UInt8(index * 80), g: 1, b: 2, a: 255)).frames[0].pixels
        }
        let animation = Image(
            width: 5, height: 4, bytesPerRow: 20,
            frames: frames.enumerated().map { ImageFrame(pixels: $1, duration: Double($0 + 1) / 10) },
            format: .gif, originalSize: PixelSize(width: 50, height: 40), loopCount: 3)
        let restored = try XCTUnwrap(StoredImage.decode(try StoredImage.encode(animation, encoding: .automatic), decoders: .default))
        XCTAssertEqual(restored.frames.map(\.duration), [0.1, 0.2, 0.3])
        XCTAssertEqual(restored.frames.map(\.pixels), animation.frames.map(\.pixels))
        XCTAssertEqual(restored.loopCount, 3)
        XCTAssertEqual(restored.format, .gif)
        XCTAssertEqual(restored.originalSize, PixelSize(width: 50, height: 40))
        for junk in [Data(), Data("AIKI".utf8), Data("AIKI\u{1}\u{0}\u{1}\u{ff}\u{ff}\u{ff}\u{ff}".utf8)] {
            XCTAssertNil(StoredImage.decode(junk, decoders: .default))
        }
        // Lying metadata (an original size whose pixel count overflows) is a miss, not a trap.
        let stored = try StoredImage.encode(alpha, encoding: .lossless)
        let text = String(decoding: stored, as: UTF8.self)
        let lying = Data(text.replacingOccurrences(of: "\"originalWidth\":37", with: "\"originalWidth\":4611686018427387904").utf8)
        XCTAssertNotEqual(lying, stored)
        XCTAssertNil(StoredImage.decode(lying, decoders: .default))
    }

    /// The largest difference of any channel of any pixel.
    static func maxDifference(_ a: Image, _ b: Image) -> Int {
        guard a.size == b.size else { return .max }
        var worst = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let (p, q) = (a.pixel(x: x, y: y), b.pixel(x: x, y: y))
                worst = max(worst, abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)), abs(Int(p.a) - Int(q.a)))
            }
        }
        return worst
    }
}
