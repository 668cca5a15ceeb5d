@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `encodedImage(for:encoding:)` (issue 28, item 3): a thumbnail service's
/// answer (bytes, content type, where it came from), JPEG or PNG by
/// `Image.isOpaque`, and the disk cache's stored thumbnail served as it is,
/// with no decode (counted by decoders registered in the loader's registry)
/// and no encode (counted by `EncodeWatch` in debug builds). Over the fake
/// transport and an in-memory store: no sockets, no files.
final class EncodedImageTests: XCTestCase {
    private let queue = DispatchQueue(label: "encoded image delivery")
    private static let box = PixelSize(width: 100, height: 100)

    /// A decoder that counts its decodes, around a built-in one.
    private struct CountingDecoder: ImageDecoding {
        let inner: any ImageDecoding
        let count: Counter
        var format: ImageFormat { inner.format }

        func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
            count.increment()
            return try inner.decode(data, options: options)
        }
    }

    /// The built-in decoders, each counting into `count`.
    private static func counting(_ count: Counter) -> ImageDecoderRegistry {
        var registry = ImageDecoderRegistry()
        for format in ImageFormat.allCases {
            registry.register(CountingDecoder(inner: ImageDecoder().decoder(for: format), count: count))
        }
        return registry
    }

    /// The fake transport answering each path with its body from `bodies`, fresh for ten minutes.
    private static func transport(_ fake: FakeDataLoader, _ bodies: [String: Data]) -> AnsweringTransport {
        fake.isSuspended = false
        return AnsweringTransport(fake) { request, response in
            let body = bodies[request.url.path] ?? response.data
            let type = ImageFormat.sniff(body)?.mimeType ?? "application/octet-stream"
            return response.with(statusCode: 200, headers: ["cache-control": "max-age=600", "content-type": type], body: body)
        }
    }

    private func loader(
        _ transport: any DataLoading, disk: (any DataCaching)?, memory: ImageCache? = nil, decodes: Counter
    ) -> AsyncImageLoader {
        AsyncImageLoader(
            configuration: .init(
                cache: memory, deliveryQueue: queue, notificationCenter: NotificationCenter(), dataLoader: transport,
                diskCache: disk, decoders: Self.counting(decodes)))
    }

    private static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1/img/\(n).png")! }

    /// A 500x375 photo as JPEG: opaque.
    private static let opaqueJPEG = try! JPEGEncoder(quality: 92).encode(SyntheticImage.photo(width: 500, height: 375))

    /// A 500x375 photo as PNG with one pixel at alpha 128: not opaque, at display size too.
    private static let translucentPNG: Data = {
        let photo = SyntheticImage.photo(width: 500, height: 375, seed: 7)
        var pixels = photo.pixels
        pixels[222 * photo.bytesPerRow + 333 * 4 + 3] = 128
        return try! PNGEncoder().encode(Image(width: 500, height: 375, rgba: pixels, bytesPerRow: photo.bytesPerRow))
    }()

    /// The stored thumbnail of `request` in `store` (its whole entry).
    private func storedThumbnail(_ request: ImageRequest, in store: MemoryDataStore) throws -> Data {
        let key = request.cacheKey.url
        let generation = try XCTUnwrap(store.metadata(for: key)?.generation, "the headers entry")
        let processed = ImageDiskStore.processedKey(key, request.cacheKey.processing, generation: generation)
        return try XCTUnwrap(store.entry(for: processed)?.data, "the stored thumbnail")
    }

    /// An opaque source is answered as JPEG (quality 90 by default), the
    /// bytes made once for the disk and the answer; then, from a new loader
    /// over the same store, the stored bytes themselves: no transfer, no
    /// decode, no encode. Another quality decodes the stored thumbnail and encodes it.
    func testAnOpaqueSourceIsJPEGAndItsStoredThumbnailIsServedWithoutADecode() async throws {
        let fake = FakeDataLoader()
        let url = Self.url(1)
        let transport = Self.transport(fake, [url.path: Self.opaqueJPEG])
        let store = MemoryDataStore()
        let decodes = Counter()
        let request = ImageRequest(url: url, sizing: .fitInside(Self.box))
        EncodeWatch.watch(url)
        defer { EncodeWatch.stop(url) }

        let writer = loader(transport, disk: store, decodes: decodes)
        let first = try await writer.encodedImage(for: request)
        await writer.flushDiskWrites()
        XCTAssertEqual(first.contentType, "image/jpeg")
        XCTAssertEqual(first.format, .jpeg)
        XCTAssertEqual(first.quality, 90)
        XCTAssertEqual([first.width, first.height], [100, 75])
        XCTAssertEqual(first.source, .network)
        XCTAssertFalse(first.isStoredEncoding)
        XCTAssertEqual(first.fileProperties?.format, .jpeg)
        XCTAssertEqual(decodes.value, 1, "the body, once")
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "encoded once, for the disk and the answer alike")
        let answer = try ImageDecoder().decode(first.data)
        XCTAssertEqual(answer.format, .jpeg)
        XCTAssertEqual(answer.size, PixelSize(width: 100, height: 75))
        let parts = try XCTUnwrap(StoredImage.stored(try storedThumbnail(request, in: store)))
        XCTAssertEqual(parts.payload, first.data, "the disk holds the answer's very bytes")
        XCTAssertEqual(parts.metadata.quality, 90)
        XCTAssertEqual(parts.metadata.opaque, true)

        // A restart: a new loader, no memory cache, the same store.
        let reader = loader(transport, disk: store, decodes: decodes)
        let second = try await reader.encodedImage(for: request)
        XCTAssertEqual(second.source, .diskCache)
        XCTAssertTrue(second.isStoredEncoding)
        XCTAssertEqual(second.data, first.data)
        XCTAssertEqual(second.contentType, "image/jpeg")
        XCTAssertEqual([second.width, second.height], [100, 75])
        XCTAssertEqual(second.fileProperties?.format, .jpeg, "the source file's, kept with the thumbnail")
        XCTAssertEqual(decodes.value, 1, "served without a decode")
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "and without an encode")
        XCTAssertEqual(fake.startedPaths, [url.path], "nor a transfer")
        // `.automatic(quality: 90)` is the default, spelled out.
        let spelled = try await reader.encodedImage(for: request, encoding: .automatic(quality: 90))
        XCTAssertTrue(spelled.isStoredEncoding)

        // Another quality: the stored thumbnail decoded (not the body), then encoded.
        let low = try await reader.encodedImage(for: request, encoding: .automatic(quality: 30))
        XCTAssertEqual(low.source, .diskCache)
        XCTAssertFalse(low.isStoredEncoding)
        XCTAssertEqual(low.quality, 30)
        XCTAssertLessThan(low.data.count, first.data.count, "quality 30 is smaller than 90")
        XCTAssertEqual(decodes.value, 2)
        XCTAssertEqual(EncodeWatch.count(of: url), 2)
        XCTAssertEqual(fake.startedPaths.count, 1)
        // PNG asked for: PNG, whatever the opacity.
        let png = try await reader.encodedImage(for: request, encoding: .png)
        XCTAssertEqual(png.contentType, "image/png")
        XCTAssertNil(png.quality)
        XCTAssertEqual(try ImageDecoder().decode(png.data).size, PixelSize(width: 100, height: 75))
    }

    /// A source with transparency (one pixel at alpha 128) is answered as
    /// PNG whatever the JPEG quality asked, and its stored PNG served as
    /// it is for any `.automatic` quality; `.jpeg` flattens it onto white.
    func testATransparentSourceIsPNGServedAsStoredForAnyQuality() async throws {
        let fake = FakeDataLoader()
        let url = Self.url(2)
        let transport = Self.transport(fake, [url.path: Self.translucentPNG])
        let store = MemoryDataStore()
        let decodes = Counter()
        let request = ImageRequest(url: url, sizing: .fitInside(Self.box))
        EncodeWatch.watch(url)
        defer { EncodeWatch.stop(url) }

        let writer = loader(transport, disk: store, decodes: decodes)
        let first = try await writer.encodedImage(for: request, encoding: .automatic(quality: 75))
        await writer.flushDiskWrites()
        XCTAssertEqual(first.contentType, "image/png")
        XCTAssertNil(first.quality)
        XCTAssertEqual([first.width, first.height], [100, 75])
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "the disk's PNG is the answer's")
        let answer = try ImageDecoder().decode(first.data)
        XCTAssertFalse(answer.isOpaque)
        XCTAssertLessThan(answer.pixel(x: 66, y: 44).a, 255, "the translucent pixel's share")
        let parts = try XCTUnwrap(StoredImage.stored(try storedThumbnail(request, in: store)))
        XCTAssertEqual(parts.payload, first.data)
        XCTAssertEqual(parts.metadata.opaque, false)
        XCTAssertNil(parts.metadata.quality)

        let reader = loader(transport, disk: store, decodes: decodes)
        for encoding in [ImageEncoding.automatic, .automatic(quality: 20), .png] {
            let served = try await reader.encodedImage(for: request, encoding: encoding)
            XCTAssertTrue(served.isStoredEncoding, "\(encoding)")
            XCTAssertEqual(served.contentType, "image/png")
            XCTAssertEqual(served.data, first.data)
        }
        XCTAssertEqual(decodes.value, 1, "never decoded again")
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "never encoded again")

        // JPEG forced: flattened onto white, so opaque.
        let jpeg = try await reader.encodedImage(for: request, encoding: .jpeg(quality: 85))
        XCTAssertEqual(jpeg.contentType, "image/jpeg")
        XCTAssertEqual(jpeg.quality, 85)
        XCTAssertFalse(jpeg.isStoredEncoding)
        XCTAssertTrue(try ImageDecoder().decode(jpeg.data).isOpaque)
        XCTAssertEqual(fake.startedPaths.count, 1)
    }

    /// A stored thumbnail that must be revalidated first (`no-cache`) is
    /// not served as it is before the server says so: the load revalidates
    /// (a `304`), decodes the stored thumbnail (for the memory cache), and
    /// answers with its stored bytes, not encoded again.
    func testARevalidatedThumbnailIsAnsweredWithItsStoredBytes() async throws {
        let fake = FakeDataLoader()
        fake.isSuspended = false
        let url = Self.url(6)
        let transport = AnsweringTransport(fake) { request, response in
            if request.header("if-none-match") == "\"v1\"" {
                return response.with(statusCode: 304, headers: ["etag": "\"v1\"", "cache-control": "no-cache"], body: Data())
            }
            return response.with(
                statusCode: 200, headers: ["etag": "\"v1\"", "cache-control": "no-cache", "content-type": "image/jpeg"],
                body: Self.opaqueJPEG)
        }
        let store = MemoryDataStore()
        let decodes = Counter()
        let request = ImageRequest(url: url, sizing: .fitInside(Self.box))
        EncodeWatch.watch(url)
        defer { EncodeWatch.stop(url) }
        let writer = loader(transport, disk: store, decodes: decodes)
        let first = try await writer.encodedImage(for: request)
        await writer.flushDiskWrites()
        XCTAssertEqual(EncodeWatch.count(of: url), 1)

        let reader = loader(transport, disk: store, decodes: decodes)
        let revalidated = try await reader.encodedImage(for: request)
        XCTAssertEqual(fake.startedPaths.count, 2, "asked the server first")
        XCTAssertEqual(fake.startedRequests.last?.header("if-none-match"), "\"v1\"")
        XCTAssertEqual(revalidated.source, .diskCache)
        XCTAssertFalse(revalidated.isStoredEncoding, "decoded (for the memory cache) on the way")
        XCTAssertEqual(revalidated.data, first.data, "the stored bytes")
        XCTAssertEqual(decodes.value, 2, "the body once, then the stored thumbnail once")
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "not encoded again")
    }

    /// A memory hit is encoded from the cached image: no transfer, no decode.
    func testAMemoryHitIsEncoded() async throws {
        let fake = FakeDataLoader()
        let url = Self.url(3)
        let transport = Self.transport(fake, [url.path: Self.opaqueJPEG])
        let decodes = Counter()
        let memory = ImageCache()
        let store = MemoryDataStore()
        let loader = loader(transport, disk: store, memory: memory, decodes: decodes)
        let request = ImageRequest(url: url, sizing: .fillAndCrop(Self.box))
        let first = try await loader.encodedImage(for: request)
        XCTAssertEqual(first.source, .network)
        XCTAssertEqual([first.width, first.height], [100, 100])
        let hit = try await loader.encodedImage(for: request)
        XCTAssertEqual(hit.source, .memoryCache, "the memory cache before the disk's stored thumbnail")
        XCTAssertFalse(hit.isStoredEncoding)
        XCTAssertEqual(hit.contentType, "image/jpeg")
        XCTAssertEqual(hit.data, first.data, "the same image at the same quality: the same bytes")
        XCTAssertEqual(decodes.value, 1)
        XCTAssertEqual(fake.startedPaths.count, 1)
        let low = try await loader.encodedImage(for: request, encoding: .automatic(quality: 30))
        XCTAssertEqual(low.source, .memoryCache)
        XCTAssertLessThan(low.data.count, hit.data.count)
    }

    /// Quality is the JPEG's: lower makes fewer bytes; the answer says which.
    func testQualityIsRespected() async throws {
        let fake = FakeDataLoader()
        let url = Self.url(4)
        let transport = Self.transport(fake, [url.path: Self.opaqueJPEG])
        let loader = loader(transport, disk: nil, memory: ImageCache(), decodes: Counter())
        let request = ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 256, height: 256)))
        var sizes: [Int] = []
        for quality in [20, 50, 95] {
            let encoded = try await loader.encodedImage(for: request, encoding: .automatic(quality: quality))
            XCTAssertEqual(encoded.quality, quality)
            XCTAssertEqual(encoded.contentType, "image/jpeg")
            sizes.append(encoded.data.count)
        }
        XCTAssertEqual(sizes, sizes.sorted(), "\(sizes)")
        XCTAssertEqual(Set(sizes).count, 3, "\(sizes)")
    }

    /// A stored thumbnail is served only as a load may use it: a request
    /// whose pixel limit its original is over fails as a load would.
    func testAStoredThumbnailKeepsTheRequestsPixelLimit() async throws {
        let fake = FakeDataLoader()
        let url = Self.url(5)
        let transport = Self.transport(fake, [url.path: Self.opaqueJPEG])
        let store = MemoryDataStore()
        let writer = loader(transport, disk: store, decodes: Counter())
        _ = try await writer.encodedImage(for: ImageRequest(url: url, sizing: .fitInside(Self.box)))
        await writer.flushDiskWrites()
        let reader = loader(transport, disk: store, decodes: Counter())
        do {
            _ = try await reader.encodedImage(for: ImageRequest(url: url, sizing: .fitInside(Self.box), maxPixels: 1000))
            XCTFail("over the pixel limit")
        } catch let error as AsyncImageError {
            guard case .decoding(let failure, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(failure.stage, .limits)
        }
    }

    /// Entries written before the quality and opacity were recorded: a JPEG
    /// payload is quality 90 (the only one written then) and opaque; a PNG's
    /// opacity is unknown (decoded to know, never guessed).
    func testAStoredImageWithoutTheNewMetadataIsReadAsBefore() throws {
        func withoutNewFields(_ stored: Data) throws -> Data {
            let length = Int(stored[7]) | Int(stored[8]) << 8 | Int(stored[9]) << 16 | Int(stored[10]) << 24
            var json = try XCTUnwrap(JSONSerialization.jsonObject(with: stored[11..<11 + length]) as? [String: Any])
            json["quality"] = nil
            json["opaque"] = nil
            let old = try JSONSerialization.data(withJSONObject: json)
            var out = Data(stored[0..<7])
            withUnsafeBytes(of: UInt32(old.count).littleEndian) { out.append(contentsOf: $0) }
            return out + old + stored[(11 + length)...]
        }
        let photo = SyntheticImage.photo(width: 40, height: 30)
        let jpeg = try XCTUnwrap(StoredImage.stored(try withoutNewFields(try StoredImage.encode(photo, encoding: .automatic))))
        XCTAssertNil(jpeg.metadata.quality)
        XCTAssertEqual(jpeg.encoded?.kind, .jpeg(quality: 90))
        XCTAssertEqual(jpeg.isOpaque, true)
        let png = try XCTUnwrap(StoredImage.stored(try withoutNewFields(try StoredImage.encode(photo, encoding: .lossless))))
        XCTAssertEqual(png.encoded?.kind, .png)
        XCTAssertNil(png.isOpaque)
        XCTAssertNotNil(StoredImage.decode(try withoutNewFields(try StoredImage.encode(photo, encoding: .lossless)), decoders: .default))
    }
}
