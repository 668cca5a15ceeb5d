import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Request headers: per request, a modifier just before each transfer, the
/// default `Accept`, and which requests share a transfer.
final class RequestHeaderTests: XCTestCase {
    func testRequestsShareATransferOnlyWithEqualHeaders() {
        let h = FakeHarness(concurrentLoads: 4)
        let url = h.url(1)
        h.loader.loadImage(ImageRequest(url: url, headers: ["Authorization": "Bearer a"]), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: url, headers: ["Authorization": "Bearer a"]), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: url, headers: ["Authorization": "Bearer b"]), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: url), success: h.log.success)
        wait(for: [h.transport.starts(3, self)], timeout: 10)
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(4, self)], timeout: 10)
        let sent = h.transport.startedRequests.map { $0.headers["Authorization"] ?? "none" }
        XCTAssertEqual(sent.sorted(), ["Bearer a", "Bearer b", "none"], "three transfers for four requests")
        XCTAssertEqual(h.transport.startedRequests.map(\.timeout), [60, 60, 60])
    }

    /// The modifier runs when the transfer starts, not when it is queued: a
    /// token that expires is made fresh for each transfer.
    func testTheRequestModifierSignsEachTransferWhenItStarts() {
        let h = FakeHarness(concurrentLoads: 1)
        let signed = Counter()
        h.loader.requestModifier = { request in
            request.headers["Authorization"] = "token-\(signed.increment())"
            request.headers["X-Path"] = request.url.path
        }
        h.load(1)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        h.load(2)
        h.load(3)
        XCTAssertEqual(signed.value, 1, "queued requests are not signed yet")
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(3, self)], timeout: 10)
        XCTAssertEqual(h.transport.startedRequests.map { $0.headers["Authorization"] }, ["token-1", "token-2", "token-3"])
        XCTAssertEqual(h.transport.startedRequests.map { $0.headers["X-Path"] }, ["/img/1.png", "/img/3.png", "/img/2.png"])
    }

    /// Every transfer sends the loader's `Accept` (its decoders', most
    /// wanted first) unless its request names one, in any case; requests
    /// with another `Accept` share no transfer, and names compare
    /// case-insensitively (HTTP's are).
    func testTransfersSendTheLoaderAcceptUnlessTheRequestNamesOne() {
        let h = FakeHarness(concurrentLoads: 4)
        let url = h.url(1)
        h.loader.loadImage(ImageRequest(url: url), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: url, headers: ["accept": "image/jpeg"]), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: url, headers: ["Accept": "image/jpeg"]), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: url, headers: ["Accept": "image/png"]), success: h.log.success)
        wait(for: [h.transport.starts(3, self)], timeout: 10)
        h.transport.isSuspended = false
        wait(for: [h.log.outcomes(4, self)], timeout: 10)
        let accepts = h.transport.startedRequests.map { request in
            request.headers.filter { $0.key.lowercased() == "accept" }.map { "\($0.key): \($0.value)" }
        }
        XCTAssertEqual(
            accepts.map { $0.joined() }.sorted(),
            ["Accept: " + ImageDecoderRegistry.default.acceptHeader, "Accept: image/png", "accept: image/jpeg"],
            "one Accept each: the request's replaces the loader's")
        XCTAssertEqual(h.loader.acceptHeader, ImageDecoderRegistry.default.acceptHeader)
    }

    /// The default registry's `Accept`: modern formats first, the rest
    /// with lower q-values, anything else last; a registry's weights
    /// reorder it, 0 leaves a format out, and the loader's own replaces it.
    func testTheAcceptHeaderFollowsTheRegistryWeights() {
        XCTAssertEqual(
            ImageDecoderRegistry.default.acceptHeader,
            "image/avif,image/jxl,image/webp,image/heic;q=0.9,image/png;q=0.8,image/jpeg;q=0.8,image/gif;q=0.8,*/*;q=0.1")
        var registry = ImageDecoderRegistry()
        registry.register(PNGDecoder(), acceptWeight: 0.25)
        registry.register(JPEGDecoder())
        registry.register(AVIFDecoder(), acceptWeight: 0)
        registry.register(WebPDecoder(), acceptWeight: 0.0004)
        XCTAssertEqual(registry.acceptHeader, "image/jpeg;q=0.8,image/png;q=0.25,image/webp;q=0.001,*/*;q=0.1")
        XCTAssertEqual(registry.formats, [.png, .jpeg, .avif, .webp], "weight 0: not asked for, still decoded")
        XCTAssertEqual(ImageDecoderRegistry().acceptHeader, "*/*;q=0.1")

        let custom = AsyncImageLoader(configuration: .init(notificationCenter: nil, decoders: registry))
        XCTAssertEqual(custom.acceptHeader, registry.acceptHeader)
        var configuration = AsyncImageLoader.Configuration(notificationCenter: nil, decoders: registry)
        configuration.acceptHeader = "image/png"
        XCTAssertEqual(AsyncImageLoader(configuration: configuration).acceptHeader, "image/png")
    }
}
