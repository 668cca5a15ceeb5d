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
}
