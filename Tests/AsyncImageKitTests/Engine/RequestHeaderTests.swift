import AsyncImageKit
import Foundation
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

    /// Through libcurl to a real server: the request's headers, the default
    /// `Accept` (the decoders' formats), an override, and no header injection.
    func testHeadersReachTheServer() throws {
        let h = try LoaderHarness()
        let (plain, custom) = (h.server.url(1), h.server.url(2))
        h.load(plain)
        h.loader.loadImage(
            ImageRequest(url: custom, headers: ["X-Token": "abc", "Accept": "image/png", "X-Evil": "a\r\nX-Injected: 1", "X-Name\r\nX-Injected2": "2"]),
            success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(2, self)], timeout: 15)
        let defaults = try XCTUnwrap(h.server.headers(of: plain))
        XCTAssertEqual(defaults["accept"], "image/gif,image/jpeg,image/png,image/webp,*/*;q=0.1")
        XCTAssertNil(defaults["x-token"])
        let sent = try XCTUnwrap(h.server.headers(of: custom))
        XCTAssertEqual(sent["x-token"], "abc")
        XCTAssertEqual(sent["accept"], "image/png", "the request's header replaces the default")
        XCTAssertNil(sent["x-injected"], "a value with a line break is not sent")
        XCTAssertNil(sent["x-evil"])
        XCTAssertNil(sent["x-injected2"], "nor a name with one")
        XCTAssertEqual(TransportConfiguration.defaultAccept, ImageDecoderRegistry.default.acceptHeader)
    }

    func testDataLoaderSendsHeadersAndAnEmptyValueRemovesOne() throws {
        let h = try LoaderHarness()
        let url = h.server.url(5)
        let done = expectation(description: "loaded")
        // Names match case-insensitively ("accept" removes the default "Accept");
        // names that are not tokens are never sent (no folding into the line before).
        DataLoader().loadData(from: url, headers: ["accept": "", "X-One": "1", " X-Fold": "2", "X Two": "3", "X-Ctl": "a\u{7F}"]) { result in
            if case .failure(let error) = result { XCTFail("\(error)") }
            done.fulfill()
        }
        wait(for: [done], timeout: 15)
        let sent = try XCTUnwrap(h.server.headers(of: url))
        XCTAssertNil(sent["accept"], "an empty value removes the header, whatever its case")
        XCTAssertEqual(sent["x-one"], "1")
        XCTAssertNil(sent["x-fold"])
        XCTAssertNil(sent["x two"])
        XCTAssertNil(sent["x-ctl"])
        XCTAssertEqual(Set(sent.keys), ["host", "accept-encoding", "x-one", "user-agent"], "nothing else was sent")
    }
}
