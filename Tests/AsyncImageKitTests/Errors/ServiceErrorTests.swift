import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// What a service answers its client for every error: the suggested HTTP
/// status, and a message that names nothing internal.
final class ServiceErrorTests: XCTestCase {
    /// A URL full of what must never reach a client.
    private let url = URL(string: "http://secret-host.internal:8443/private/path?token=s3cr3t")!

    private func decoding(_ stage: DecodingFailure.Stage) -> AsyncImageError {
        .decoding(DecodingFailure(format: .jpeg, stage: stage, reason: "libjpeg: Premature end of JPEG file at 10.1.2.3"), url: url)
    }

    /// Every case of `AsyncImageError`, with its status.
    private var cases: [(AsyncImageError, Int)] {
        [
            (.invalidURL("http://[10.1.2.3"), 400),
            (.unsupportedScheme(URL(string: "gopher://secret-host.internal/x")!), 400),
            (.refused(url, reason: "address 10.1.2.3 is private"), 403),
            (.disallowedRedirect(url, message: "file:///etc/passwd"), 403),
            (.fileNotFound(URL(fileURLWithPath: "/private/path/a.png")), 404),
            (.httpStatus(url, code: 404), 404),
            (.httpStatus(url, code: 410), 404),
            (.httpStatus(url, code: 403), 502),
            (.httpStatus(url, code: 500), 502),
            (.httpStatus(url, code: 503, headers: ["server": "secret-host.internal"]), 502),
            (.bodyTooLarge(url, limit: 25 << 20), 413),
            (decoding(.limits), 413),
            (decoding(.sniffing), 415),
            (decoding(.header), 422),
            (decoding(.pixels), 422),
            (decoding(.trailer), 422),
            (decoding(.memory), 503),
            (.encoding(.png, reason: "libpng: out of memory at /private/path"), 500),
            (.processing("com.secret.crop", reason: "crop at /private/path"), 500),
            (.diskCache(path: "/private/path/cache", message: "EACCES"), 500),
            (.transport(url, code: 7, message: "Failed to connect to 10.1.2.3 port 8443"), 502),
            (.tls(url, code: 60, message: "certificate for secret-host.internal"), 502),
            (.tooManyRedirects(url, limit: 5), 502),
            (.headersTooLarge(url, limit: 65_536), 502),
            (.queueFull(url, limit: 10_000), 503),
            (.offline(url), 503),
            (.timedOut(url, seconds: 10, stage: .transfer), 504),
            (.timedOut(url, seconds: 10, stage: .queued), 504),
            (.timedOut(url, seconds: 10, stage: .decode), 504),
            (.notCached(url), 504),
        ]
    }

    func testEveryErrorHasItsSuggestedStatus() {
        for (error, status) in cases {
            XCTAssertEqual(error.suggestedHTTPStatus, status, "\(error)")
        }
    }

    /// The description names the URL (for logs); the client's message never does.
    func testTheClientMessageNamesNothingInternal() {
        for (error, _) in cases {
            let message = error.clientMessage
            XCTAssertFalse(message.isEmpty, "\(error)")
            for secret in ["secret", "internal", "8443", "private", "token", "10.1.2.3", "libjpeg", "libpng", "curl", "/"] {
                XCTAssertFalse(message.contains(secret), "\(error): \(message)")
            }
        }
        XCTAssertTrue(AsyncImageError.timedOut(url, seconds: 10, stage: .transfer).description.contains("secret-host.internal"))
    }

    /// Real decodes: a pixel bomb (a 50,000 x 50,000 PNG header) is a 413,
    /// bytes that are no image a 415, a truncated PNG a 422.
    func testRealDecodeFailuresGetTheirStatuses() throws {
        let bomb = CraftedFiles.pngHeader(width: 50_000, height: 50_000)
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 64, height: 64))
        for (data, status) in [(bomb, 413), (Data("<html>not an image</html>".utf8), 415), (png.prefix(png.count - 30), 422)] {
            do {
                _ = try ImageDecoder().decode(data)
                XCTFail("decoded \(status)")
            } catch {
                XCTAssertEqual(error.suggestedHTTPStatus, status, "\(error)")
                XCTAssertFalse(error.clientMessage.contains("/"), error.clientMessage)
            }
        }
    }
}
