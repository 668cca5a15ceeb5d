@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `encodedImage(for:encoding:)` with WebP, AVIF and a negotiated encoding
/// (issue 32, item 4): the format each `Accept` field gets, `variesByAccept`,
/// and the disk's stored thumbnail served as it is only when it is the
/// kind negotiated (otherwise decoded and encoded); WebP and AVIF as the
/// disk's own encoding. Over the fake transport and an in-memory store, as
/// `EncodedImageTests`.
final class NegotiatedEncodingTests: XCTestCase {
    private let queue = DispatchQueue(label: "negotiated encoding delivery")
    private static let box = PixelSize(width: 100, height: 100)

    private static let chrome = "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
    private static let webpOnly = "image/webp,*/*"

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

    private func loader(
        _ fake: FakeDataLoader, _ body: Data, disk: (any DataCaching)?, memory: ImageCache? = nil, decodes: Counter,
        processedImageEncoding: ImageEncoding = .automatic
    ) -> AsyncImageLoader {
        fake.isSuspended = false
        let transport = AnsweringTransport(fake) { _, response in
            let type = ImageFormat.sniff(body)?.mimeType ?? "application/octet-stream"
            return response.with(statusCode: 200, headers: ["cache-control": "max-age=600", "content-type": type], body: body)
        }
        var registry = ImageDecoderRegistry()
        for format in ImageFormat.allCases {
            registry.register(CountingDecoder(inner: ImageDecoder().decoder(for: format), count: decodes))
        }
        return AsyncImageLoader(
            configuration: .init(
                cache: memory, deliveryQueue: queue, notificationCenter: NotificationCenter(), dataLoader: transport,
                diskCache: disk, processedImageEncoding: processedImageEncoding, decoders: registry))
    }

    private static let opaqueJPEG = try! JPEGEncoder(quality: 92).encode(SyntheticImage.photo(width: 500, height: 375))

    private static let translucentPNG: Data = {
        let photo = SyntheticImage.photo(width: 500, height: 375, seed: 7)
        var pixels = photo.pixels
        for y in 0..<375 {  // transparent on the left (50 of 500 columns)
            for x in 0..<50 { pixels[y * photo.bytesPerRow + x * 4 + 3] = 0 }
        }
        return try! PNGEncoder().encode(Image(width: 500, height: 375, rgba: pixels, bytesPerRow: photo.bytesPerRow))
    }()

    /// Each field gets its format, read back by our decoders at the
    /// thumbnail's size; every negotiated answer varies by the field, an
    /// explicit encoding's does not.
    func testEachAcceptFieldGetsItsFormat() async throws {
        let fake = FakeDataLoader()
        let loader = loader(fake, Self.opaqueJPEG, disk: nil, memory: ImageCache(), decodes: Counter())
        let request = ImageRequest(url: URL(string: "http://127.0.0.1/img/1.jpg")!, sizing: .fitInside(Self.box))
        let cases: [(String?, ImageFormat, Int?)] = [
            (Self.chrome, .avif, 70), (Self.webpOnly, .webp, 70), ("*/*", .jpeg, 70), (nil, .jpeg, 70),
            ("image/avif;q=0, image/webp", .webp, 70),
        ]
        for (accept, format, quality) in cases {
            let answer = try await loader.encodedImage(for: request, encoding: .negotiated(accept: accept, quality: 70))
            XCTAssertEqual(answer.format, format, "\(accept ?? "no field")")
            XCTAssertEqual(answer.contentType, format.mimeType)
            XCTAssertEqual(answer.quality, quality)
            XCTAssertTrue(answer.variesByAccept, "\(accept ?? "no field")")
            XCTAssertEqual([answer.width, answer.height], [100, 75])
            let decoded = try ImageDecoder().decode(answer.data)
            XCTAssertEqual(decoded.format, format)
            XCTAssertEqual(decoded.size, PixelSize(width: 100, height: 75))
            XCTAssertTrue(decoded.isOpaque)
        }
        XCTAssertEqual(fake.startedPaths.count, 1, "one load; the memory cache answered the others")
        for encoding in [ImageEncoding.webp(quality: 70), .webpLossless, .avif(quality: 70, speed: 9), .automatic] {
            let answer = try await loader.encodedImage(for: request, encoding: encoding)
            XCTAssertFalse(answer.variesByAccept, "\(encoding)")
        }
        let lossless = try await loader.encodedImage(for: request, encoding: .webpLossless)
        XCTAssertEqual(lossless.format, .webp)
        XCTAssertNil(lossless.quality)
    }

    /// A source with transparency: AVIF and WebP keep the alpha; without
    /// either, PNG.
    func testTransparencyIsKept() async throws {
        let fake = FakeDataLoader()
        let loader = loader(fake, Self.translucentPNG, disk: nil, memory: ImageCache(), decodes: Counter())
        let request = ImageRequest(url: URL(string: "http://127.0.0.1/img/2.png")!, sizing: .fitInside(Self.box))
        for (accept, format) in [(Self.chrome, ImageFormat.avif), (Self.webpOnly, .webp), ("*/*", .png)] {
            let answer = try await loader.encodedImage(for: request, encoding: .negotiated(accept: accept, quality: 80))
            XCTAssertEqual(answer.format, format)
            let decoded = try ImageDecoder().decode(answer.data)
            XCTAssertFalse(decoded.isOpaque, "\(format)")
            XCTAssertLessThan(decoded.pixel(x: 2, y: 40).a, 8, "\(format): the transparent columns")
            XCTAssertEqual(decoded.pixel(x: 50, y: 40).a, 255, "\(format)")
        }
    }

    /// The disk stores JPEG q80 (its encoding: `.automatic(quality: 80)`):
    /// a client whose field chooses JPEG at that quality gets the stored
    /// bytes (no decode, no encode); one that chooses WebP or AVIF gets
    /// the stored thumbnail decoded and encoded, never the stored JPEG.
    func testAStoredThumbnailIsServedOnlyWhenItIsTheKindNegotiated() async throws {
        let fake = FakeDataLoader()
        let store = MemoryDataStore()
        let decodes = Counter()
        let url = URL(string: "http://127.0.0.1/img/3.jpg")!
        let request = ImageRequest(url: url, sizing: .fitInside(Self.box))
        EncodeWatch.watch(url)
        defer { EncodeWatch.stop(url) }
        let writer = loader(fake, Self.opaqueJPEG, disk: store, decodes: decodes, processedImageEncoding: .automatic(quality: 80))
        let first = try await writer.encodedImage(for: request, encoding: .negotiated(accept: "*/*", quality: 80))
        await writer.flushDiskWrites()
        XCTAssertEqual(first.format, .jpeg)
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "once, for the disk and the answer")

        let reader = loader(fake, Self.opaqueJPEG, disk: store, decodes: decodes, processedImageEncoding: .automatic(quality: 80))
        let stored = try await reader.encodedImage(for: request, encoding: .negotiated(accept: "image/jpeg", quality: 80))
        XCTAssertTrue(stored.isStoredEncoding)
        XCTAssertTrue(stored.variesByAccept)
        XCTAssertEqual(stored.data, first.data)
        XCTAssertEqual(decodes.value, 1, "no decode")

        let avif = try await reader.encodedImage(for: request, encoding: .negotiated(accept: Self.chrome, quality: 80))
        XCTAssertEqual(avif.format, .avif)
        XCTAssertFalse(avif.isStoredEncoding)
        XCTAssertEqual(avif.source, .diskCache, "the stored thumbnail, decoded")
        XCTAssertTrue(avif.variesByAccept)
        let webp = try await reader.encodedImage(for: request, encoding: .negotiated(accept: Self.webpOnly, quality: 80))
        XCTAssertEqual(webp.format, .webp)
        XCTAssertFalse(webp.isStoredEncoding)
        // Another quality is another kind too.
        let other = try await reader.encodedImage(for: request, encoding: .negotiated(accept: "*/*", quality: 60))
        XCTAssertEqual(other.format, .jpeg)
        XCTAssertFalse(other.isStoredEncoding)
        XCTAssertEqual(EncodeWatch.count(of: url), 4)
        XCTAssertEqual(fake.startedPaths.count, 1, "never loaded again")
    }

    /// WebP as the disk's encoding: the thumbnail is stored as lossy WebP
    /// (smaller than the JPEG at the same quality), made once for the disk
    /// and a WebP answer; read back by a new loader, served as stored to
    /// WebP clients (negotiated or asked), decoded and encoded for the
    /// others; and decoded from the store for a plain load.
    func testWebPAsTheDisksEncoding() async throws {
        let fake = FakeDataLoader()
        let store = MemoryDataStore()
        let decodes = Counter()
        let url = URL(string: "http://127.0.0.1/img/4.jpg")!
        let request = ImageRequest(url: url, sizing: .fitInside(Self.box))
        EncodeWatch.watch(url)
        defer { EncodeWatch.stop(url) }
        let disk = ImageEncoding.webp(quality: 80)
        let writer = loader(fake, Self.opaqueJPEG, disk: store, decodes: decodes, processedImageEncoding: disk)
        let first = try await writer.encodedImage(for: request, encoding: .negotiated(accept: Self.webpOnly, quality: 80))
        await writer.flushDiskWrites()
        XCTAssertEqual(first.format, .webp)
        XCTAssertEqual(EncodeWatch.count(of: url), 1, "the disk's WebP is the answer's")
        let key = request.cacheKey
        let generation = try XCTUnwrap(store.metadata(for: key.url)?.generation)
        let entry = try XCTUnwrap(
            store.entry(for: ImageDiskStore.processedKey(key.url, key.processing, generation: generation))?.data)
        let parts = try XCTUnwrap(StoredImage.stored(entry))
        XCTAssertEqual(parts.kind, .webp)
        XCTAssertEqual(parts.payload, first.data)
        XCTAssertEqual(parts.encoded?.kind, .webp(quality: 80, lossless: false))
        XCTAssertEqual(parts.isOpaque, true)

        let reader = loader(fake, Self.opaqueJPEG, disk: store, decodes: decodes, processedImageEncoding: disk)
        for encoding in [ImageEncoding.webp(quality: 80), .negotiated(accept: Self.webpOnly, quality: 80)] {
            let served = try await reader.encodedImage(for: request, encoding: encoding)
            XCTAssertTrue(served.isStoredEncoding, "\(encoding)")
            XCTAssertEqual(served.data, first.data)
        }
        XCTAssertEqual(decodes.value, 1)
        let jpeg = try await reader.encodedImage(for: request, encoding: .negotiated(accept: "*/*", quality: 80))
        XCTAssertEqual(jpeg.format, .jpeg)
        XCTAssertFalse(jpeg.isStoredEncoding)
        XCTAssertEqual(jpeg.source, .diskCache)
        XCTAssertEqual(decodes.value, 2, "the stored WebP decoded")
        XCTAssertLessThan(first.data.count, jpeg.data.count, "WebP q80 is smaller than JPEG q80")

        // A plain load from a third loader: the stored WebP decoded, not the body fetched.
        let third = loader(fake, Self.opaqueJPEG, disk: store, decodes: decodes, processedImageEncoding: disk)
        let response = try await third.response(for: request)
        XCTAssertEqual(response.source, .diskCache)
        XCTAssertEqual(response.image.size, PixelSize(width: 100, height: 75))
        XCTAssertEqual(fake.startedPaths.count, 1)
    }

    /// AVIF and lossless WebP as the disk's encoding: stored with their
    /// settings, read back (a stored image decodes to the thumbnail's size,
    /// alpha kept), served as stored for the same settings only.
    func testAVIFAndLosslessWebPStoredImages() throws {
        let photo = SyntheticImage.photo(width: 60, height: 40, seed: 4)
        var pixels = photo.pixels
        pixels[3] = 0
        let translucent = Image(width: 60, height: 40, rgba: pixels, bytesPerRow: photo.bytesPerRow)
        for (encoding, kind) in [
            (ImageEncoding.avif(quality: 70, speed: 9), EncodedKind.avif(quality: 70, speed: 9)),
            (.webpLossless, .webp(quality: 75, lossless: true)),
        ] {
            for image in [photo, translucent] {
                let data = try StoredImage.encode(image, encoding: encoding)
                let parts = try XCTUnwrap(StoredImage.stored(data), "\(encoding)")
                XCTAssertEqual(parts.encoded?.kind, kind)
                XCTAssertEqual(parts.isOpaque, image.isOpaque)
                let decoded = try XCTUnwrap(StoredImage.decode(data, decoders: .default), "\(encoding)")
                XCTAssertEqual(decoded.size, image.size)
                XCTAssertEqual(decoded.isOpaque, image.isOpaque, "\(encoding)")
                if case .webp = kind { XCTAssertTrue(ImageComparison.isEqual(decoded, image), "lossless") }
            }
        }
        // A registry without an AVIF decoder reads a stored AVIF as a miss.
        var registry = ImageDecoderRegistry()
        registry.register(PNGDecoder())
        XCTAssertNil(StoredImage.decode(try StoredImage.encode(photo, encoding: .avif(quality: 70, speed: 9)), decoders: registry))
    }
}
