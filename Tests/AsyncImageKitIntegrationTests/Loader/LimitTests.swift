@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Every limit at its edge, through the loader where the limit lives in
/// the loader and against a real server on 127.0.0.1 where it lives in the
/// transport: just under (or at) the limit passes, just over fails with its
/// typed error, and the next request is served normally.
///
/// The decoders' own pixel limits (per image, per animation, and so per
/// frame) are tested at their edges in `PixelLimitTests` and
/// `WebPDecoderTests`; here, the loader applies each request's own limit.
final class LimitTests: XCTestCase {
    private var server: LoopbackServer!
    /// A 6x5 PNG: what every route serves.
    private let png = try! PNGEncoder().encode(SyntheticImage.solid(width: 6, height: 5, color: RGBA(r: 1, g: 2, b: 3)))

    override func setUpWithError() throws {
        let png = self.png
        server = try LoopbackServer(routes: [
            "/png": { _, c in c.respond(status: 200, headers: [("Content-Type", "image/png")], body: png) },
            "/chunked": { _, c in
                c.startChunked(headers: [("Content-Type", "image/png")])
                _ = c.writeChunk(png.prefix(10))
                _ = c.writeChunk(png.dropFirst(10))
                c.endChunks()
            },
            // /chain?n: n redirects, then the PNG.
            "/chain": { request, c in
                let n = Int(request.query ?? "") ?? 0
                let location = n > 1 ? "/chain?\(n - 1)" : "/png"
                c.respond(status: 302, headers: [("Location", location)], body: Data())
            },
            // /head?n: the PNG under a header block of exactly n bytes.
            "/head": { request, c in
                _ = c.write(Self.head(bytes: Int(request.query ?? "") ?? 0, status: "200 OK", body: png.count))
                _ = c.write(png)
            },
            // /head-redirect?n: a redirect whose header block is n bytes, to /head?n.
            "/head-redirect": { request, c in
                let n = Int(request.query ?? "") ?? 0
                _ = c.write(Self.head(bytes: n, status: "302 Found", body: 0, location: "/head?\(n)"))
            },
            // A header block of 400 lines of 1 KB: past libcurl's own cap of 300 KB.
            "/huge-head": { _, c in
                var head = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                for n in 0..<400 { head += "X-Pad-\(n): " + String(repeating: "a", count: 1000) + "\r\n" }
                _ = c.write(head + "\r\n")
            },
        ])
    }

    override func tearDown() {
        server.stop()
        server = nil
    }

    /// A response head of exactly `bytes` bytes (status line, headers, the
    /// blank line), padded with an `X-Pad` header.
    static func head(bytes: Int, status: String, body: Int, location: String? = nil) -> String {
        var fixed = "HTTP/1.1 \(status)\r\nContent-Type: image/png\r\nContent-Length: \(body)\r\n"
        if let location { fixed += "Location: \(location)\r\n" }
        let padding = bytes - fixed.utf8.count - "X-Pad: \r\n\r\n".utf8.count
        precondition(padding >= 0, "a head of \(bytes) bytes is too small")
        return fixed + "X-Pad: " + String(repeating: "p", count: padding) + "\r\n\r\n"
    }

    /// A loader with no memory cache (unless given), delivering on a queue
    /// of its own, over a libcurl transport with `transport`.
    private func makeLoader(
        transport: TransportConfiguration = TransportConfiguration(), cache: ImageCache? = nil,
        _ configure: (inout AsyncImageLoader.Configuration) -> Void = { _ in }
    ) -> AsyncImageLoader {
        var configuration = AsyncImageLoader.Configuration(
            cache: cache, deliveryQueue: DispatchQueue(label: "limit tests"), notificationCenter: NotificationCenter(),
            dataLoader: AsyncImageLoader.defaultDataLoader(transport))
        configure(&configuration)
        return AsyncImageLoader(configuration: configuration)
    }

    /// The outcome of loading `request` with the async API.
    private func outcome(_ loader: AsyncImageLoader, _ request: ImageRequest) async -> Result<Image, AsyncImageError> {
        do {
            return .success(try await loader.image(for: request))
        } catch let error as AsyncImageError {
            return .failure(error)
        } catch {
            return .failure(.processing("test", reason: "unexpected \(error)"))
        }
    }

    private func outcome(_ loader: AsyncImageLoader, _ url: URL) async -> Result<Image, AsyncImageError> {
        await outcome(loader, ImageRequest(url: url))
    }

    private func assertLoads(
        _ loader: AsyncImageLoader, _ url: URL, file: StaticString = #filePath, line: UInt = #line
    ) async {
        switch await outcome(loader, url) {
        case .success(let image): XCTAssertEqual(image.size, PixelSize(width: 6, height: 5), file: file, line: line)
        case .failure(let error): XCTFail("\(url.path): \(error)", file: file, line: line)
        }
    }

    // MARK: Body size

    /// `TransportConfiguration.maxBodySize`: a body of exactly the limit
    /// loads, with or without `Content-Length`, and from a `file` URL; one
    /// byte more fails with `bodyTooLarge`.
    func testBodySizeLimitAtItsEdge() async throws {
        XCTAssertEqual(TransportConfiguration().maxBodySize, 50_000_000)
        let file = temporaryFolder("limits").appendingPathExtension("png")
        try png.write(to: file)
        addTeardownBlock { try? FileManager.default.removeItem(at: file) }
        let atLimit = makeLoader(transport: TransportConfiguration(maxBodySize: png.count))
        let underLimit = makeLoader(transport: TransportConfiguration(maxBodySize: png.count - 1))
        for url in [server.url("/png"), server.url("/chunked"), file] {
            await assertLoads(atLimit, url)
            guard case .failure(let error) = await outcome(underLimit, url) else { return XCTFail("\(url): loaded") }
            XCTAssertEqual(error, .bodyTooLarge(url, limit: png.count - 1), url.absoluteString)
        }
        await assertLoads(atLimit, server.url("/png"))
    }

    // MARK: Redirects

    /// `TransportConfiguration.maxRedirects`: a chain of exactly the limit
    /// is followed; one more fails with `tooManyRedirects`; zero follows none.
    func testRedirectLimitAtItsEdge() async {
        XCTAssertEqual(TransportConfiguration().maxRedirects, 10)
        let loader = makeLoader(transport: TransportConfiguration(maxRedirects: 3))
        await assertLoads(loader, server.url("/chain?3"))
        let over = server.url("/chain?4")
        guard case .failure(let error) = await outcome(loader, over) else { return XCTFail("4 redirects were followed") }
        XCTAssertEqual(error, .tooManyRedirects(over, limit: 3))
        let none = makeLoader(transport: TransportConfiguration(maxRedirects: 0))
        guard case .failure(let zero) = await outcome(none, server.url("/chain?1")) else { return XCTFail("followed") }
        XCTAssertEqual(zero, .tooManyRedirects(server.url("/chain?1"), limit: 0))
        await assertLoads(loader, server.url("/png"))
    }

    // MARK: Header size

    /// `TransportConfiguration.maxHeaderSize`: a header block of exactly
    /// the limit loads, one byte more fails with `headersTooLarge`; each
    /// response of a redirect chain has the whole limit. Past libcurl's own
    /// cap (300 KB a block), a larger setting does not help: `headersTooLarge` with libcurl's figure.
    func testHeaderSizeLimitAtItsEdge() async {
        XCTAssertEqual(TransportConfiguration().maxHeaderSize, 65_536)
        let limit = 4096
        let loader = makeLoader(transport: TransportConfiguration(maxHeaderSize: limit))
        await assertLoads(loader, server.url("/head?\(limit)"))
        let over = server.url("/head?\(limit + 1)")
        guard case .failure(let error) = await outcome(loader, over) else { return XCTFail("loaded") }
        XCTAssertEqual(error, .headersTooLarge(over, limit: limit))
        XCTAssertEqual(error.description, "response headers of \(over.absoluteString) are larger than the limit of 4096 bytes")
        // Two responses of the limit each (8 KB in all): per response.
        await assertLoads(loader, server.url("/head-redirect?\(limit)"))
        let overAfterRedirect = server.url("/head-redirect?\(limit + 1)")
        guard case .failure(let redirected) = await outcome(loader, overAfterRedirect) else { return XCTFail("loaded") }
        XCTAssertEqual(redirected, .headersTooLarge(overAfterRedirect, limit: limit))
        // The default limit, and libcurl's cap above a larger setting.
        let huge = server.url("/huge-head")
        guard case .failure(let byDefault) = await outcome(makeLoader(), huge) else { return XCTFail("loaded") }
        XCTAssertEqual(byDefault, .headersTooLarge(huge, limit: 65_536))
        let unlimited = makeLoader(transport: TransportConfiguration(maxHeaderSize: 1 << 20))
        guard case .failure(let capped) = await outcome(unlimited, huge) else { return XCTFail("loaded") }
        // libcurl's own cap on a block (its error 56, "Too large response headers").
        XCTAssertEqual(capped, .headersTooLarge(huge, limit: 307_200))
        await assertLoads(loader, server.url("/png"))
    }

    // MARK: Pixels and frames

    /// `ImageRequest`'s `maxPixels` (`DecodingOptions.maxPixels`) through the
    /// loader: exactly the image's pixels loads, one fewer fails at stage
    /// `limits`; a cached image decoded for another request is checked
    /// against each request's own limit.
    func testPixelLimitPerRequestAtItsEdge() async {
        XCTAssertEqual(DecodingOptions().maxPixels, 100_000_000)
        let loader = makeLoader(cache: ImageCache())
        let url = server.url("/png")
        guard case .success = await outcome(loader, ImageRequest(url: url, maxPixels: 30)) else { return XCTFail("30 px") }
        for cached in [true, false] {
            if !cached { loader.cache = nil }
            guard case .failure(.decoding(let failure, let failedURL)) = await outcome(loader, ImageRequest(url: url, maxPixels: 29))
            else { return XCTFail("29 px passed (cached: \(cached))") }
            XCTAssertEqual(failure.stage, .limits)
            XCTAssertEqual(failedURL, url)
        }
        await assertLoads(loader, url)
    }

    /// `ImageRequest`'s `maxFrames` (`DecodingOptions.maxFrames`) through
    /// the loader: requests for one animated GIF with the limit at its
    /// frame count, and one under it, share the transfer; each gets its own outcome.
    func testFrameLimitPerRequestAtItsEdge() async throws {
        let frames = (0..<3).map { n in GIFFrameSpec.filled(UInt8(n % 2), width: 2, height: 2) }
        let gif = try GIFWriter.encode(
            width: 2, height: 2, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)], frames: frames)
        let images = try ImageServer()
        defer { images.stop() }
        images.serve("/anim.gif", gif)
        let url = images.url(path: "/anim.gif")
        let loader = makeLoader(cache: ImageCache())
        let load: @Sendable (Int) async -> Result<Image, AsyncImageError> = { limit in
            do {
                return .success(try await loader.image(for: ImageRequest(url: url, maxFrames: limit)))
            } catch {
                return .failure(error as? AsyncImageError ?? .invalidURL("\(error)"))
            }
        }
        async let under = load(2)
        async let at = load(3)
        let (over, exact) = await (under, at)
        guard case .success(let image) = exact else { return XCTFail("3 frames under a limit of 3: \(exact)") }
        XCTAssertEqual(image.frames.count, 3)
        guard case .failure(.decoding(let failure, _)) = over else { return XCTFail("3 frames under a limit of 2 loaded") }
        XCTAssertEqual(failure.stage, .limits)
        XCTAssertLessThanOrEqual(images.requestCount(url), 2)
    }

    // MARK: Pending requests

    /// `Configuration.maxPendingRequests`: the request that makes the
    /// limit is admitted; the next fails at once with `queueFull`, through
    /// the failure action and `didFail` (and the async API's throw),
    /// without reaching the server; a memory-cache hit is still served;
    /// once requests end, new ones are admitted again.
    func testPendingRequestLimitAtItsEdge() async throws {
        XCTAssertEqual(AsyncImageLoader.Configuration().maxPendingRequests, 10_000)
        let images = try ImageServer()
        defer { images.stop() }
        let queue = DispatchQueue(label: "pending limit")
        let center = NotificationCenter()
        let log = DeliveryLog()
        _ = log.observe(center)
        let loader = AsyncImageLoader(
            configuration: AsyncImageLoader.Configuration(
                cache: ImageCache(), concurrentLoads: 1, deliveryQueue: queue, notificationCenter: center,
                maxPendingRequests: 3))
        // Image 9 in the memory cache.
        _ = try await loader.image(for: images.url(9))
        let held = (1...3).map { images.url($0) }
        held.forEach(images.hold)
        for url in held {
            loader.loadImage(ImageRequest(url: url), target: nil, success: log.success, failure: log.failure)
        }
        XCTAssertEqual(loader.activity.pendingRequests, 3, "the third is admitted: at the limit, not over it")
        let refused = images.url(4)
        loader.loadImage(ImageRequest(url: refused), target: nil, success: log.success, failure: log.failure)
        await fulfillment(of: [log.outcomes(1, self)], timeout: 15)
        queue.sync {}
        XCTAssertEqual(log.errors[refused.path], .queueFull(refused, limit: 3))
        XCTAssertEqual(log.deliveredPaths, [refused.path])
        XCTAssertTrue(log.events.contains(.notified(refused.path, finished: false)), "\(log.events)")
        XCTAssertEqual(
            AsyncImageError.queueFull(refused, limit: 3).description,
            "\(refused.absoluteString) refused: the loader already has 3 pending requests (its limit)")
        guard case .failure(let thrown) = await outcome(loader, images.url(5)) else { return XCTFail("admitted") }
        XCTAssertEqual(thrown, .queueFull(images.url(5), limit: 3))
        guard case .success = await outcome(loader, images.url(9)) else { return XCTFail("a cache hit is always served") }
        XCTAssertEqual(images.requestCount(refused), 0)
        XCTAssertEqual(images.requestCount(images.url(5)), 0)
        XCTAssertEqual(loader.activity.pendingRequests, 3)

        held.forEach(images.release)
        await fulfillment(of: [log.outcomes(4, self)], timeout: 15)
        XCTAssertEqual(Set(log.deliveredPaths.dropFirst()), Set(held.map(\.path)))
        XCTAssertEqual(loader.activity.pendingRequests, 0)
        guard case .success = await outcome(loader, refused) else { return XCTFail("refused after the queue drained") }
        // The limit can be changed while the loader runs: zero refuses every request the cache cannot answer.
        loader.maxPendingRequests = 0
        guard case .failure(.queueFull(_, 0)) = await outcome(loader, images.url(6)) else { return XCTFail("admitted") }
    }

    // MARK: Disk cache size

    /// `DataCache.Limits.sizeLimit` and `countLimit`: a folder holding
    /// exactly the limit keeps every entry; one byte (or one entry) more
    /// trims the least recently used down to 85%. (Enforced after each
    /// write, and when a cache opens its folder.)
    func testDiskCacheLimitsAtTheirEdge() throws {
        XCTAssertEqual(DataCache.Limits().sizeLimit, 150 << 20)
        XCTAssertEqual(DataCache.Limits().countLimit, 10_000)
        let folder = temporaryFolder("limits-disk")
        let body = Data(repeating: 7, count: 2000)
        do {
            let cache = try DataCache(directory: folder)
            for n in 0..<4 { try cache.store(body, for: "k\(n)") }
            cache.flush()
        }
        let size = try DataCache(directory: folder).totalSizeAfterFlush
        // Exactly the size: nothing goes.
        let atLimit = try DataCache(directory: folder, limits: .init(sizeLimit: size))
        atLimit.flush()
        XCTAssertEqual(atLimit.count, 4)
        XCTAssertEqual(atLimit.totalSize, size)
        // One byte under the folder's size: trimmed to 85% of the limit.
        let overLimit = try DataCache(directory: folder, limits: .init(sizeLimit: size - 1))
        overLimit.flush()
        XCTAssertLessThanOrEqual(overLimit.totalSize, Int(Double(size - 1) * 0.85))
        XCTAssertEqual(overLimit.count, 3)

        // Counts, as entries are written: the limit's count stays, one more trims.
        let counted = try DataCache(directory: temporaryFolder("limits-count"), limits: .init(countLimit: 4))
        for n in 0..<4 { try counted.store(body, for: "c\(n)") }
        counted.flush()
        XCTAssertEqual(counted.count, 4)
        try counted.store(body, for: "c4")
        counted.flush()
        XCTAssertEqual(counted.count, 3, "85% of 4, rounded down")
        XCTAssertNotNil(counted.data(for: "c4"), "the newest stays")
    }
}

extension DataCache {
    /// The total once the start-up rebuild has run.
    fileprivate var totalSizeAfterFlush: Int {
        flush()
        return totalSize
    }
}
