@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Request headers as a loopback server receives them (the rest of the
/// request header tests, through the fake transport: RequestHeaderTests in
/// AsyncImageKitTests).
final class ServerRequestHeaderTests: XCTestCase {
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
        XCTAssertEqual(
            defaults["accept"],
            "image/avif,image/jxl,image/webp,image/heic;q=0.9,image/png;q=0.8,image/jpeg;q=0.8,image/gif;q=0.8,*/*;q=0.1")
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
