import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The faults a broken or hostile server produces (``FaultServer`` on
/// 127.0.0.1, and `openssl s_server` for TLS), each through the real loader.
///
/// Every case asserts that the request
/// - ends in exactly one outcome (one action, one notification), the
///   expected typed ``AsyncImageError``;
/// - ends within its time: a case about time within its `loadingTimeout`
///   plus a generous margin (and not before the timeout), any other case
///   well before its (long) timeout, so it did not end by timing out;
/// - leaves the loader working: with one transfer slot, the next request
///   (a good image from the same server) loads, and nothing stays in flight.
///
/// The time each case took is printed (`fault <name>: ...`) for RELIABILITY.md.
final class FaultInjectionTests: XCTestCase {
    private var server: FaultServer!
    /// The good image, served at `/image`.
    private let image = SyntheticImage.quadrants(width: 64, height: 64)
    private var png = Data()
    private var jpeg = Data()
    private let queue = DispatchQueue(label: "FaultInjectionTests.delivery")

    /// Margin on top of a timeout: generous, for a loaded machine and ThreadSanitizer.
    private let margin = 15.0
    /// The timeout of cases that are not about time: long, so that a case
    /// ending by timing out shows as a failure.
    private let longTimeout = 60.0
    /// Within how long a case that is not about time must end.
    private let quickLimit = 20.0

    override func setUpWithError() throws {
        png = try PNGEncoder().encode(image)
        jpeg = try JPEGEncoder().encode(SyntheticImage.photo(width: 256, height: 256))
        server = try FaultServer(image: png)
    }

    override func tearDown() {
        server?.stop()
        server = nil
    }

    // MARK: Time

    func testResponseThatNeverStartsTimesOut() throws {
        let url = server.url(for: .neverStarts)
        let error = try assertFault("never starts", url, timeout: 1)
        XCTAssertEqual(error, .timedOut(url, seconds: 1, stage: .transfer))
    }

    func testStallMidBodyTimesOut() throws {
        let url = server.url(for: .stallMidBody(png))
        let error = try assertFault("stall mid-body", url, timeout: 1)
        XCTAssertEqual(error, .timedOut(url, seconds: 1, stage: .transfer))
    }

    /// Previews of a progressive JPEG come while it downloads; a stall
    /// after them ends in one `.timedOut` failure and no preview after it: a
    /// preview is never passed off as the image.
    func testStallMidBodyOfAProgressiveJPEGAfterPreviews() throws {
        let photo = SyntheticImage.photo(width: 480, height: 360, seed: 9)
        let progressive = try JPEGEncoder(quality: 90, progressive: true).encode(photo)
        let url = server.url(for: .stallMidBody(progressive))
        let loader = makeLoader(timeout: 2)
        var request = ImageRequest(url: url)
        request.wantsPreviews = true
        let events = Box<[String]>([])
        let failure = Box<AsyncImageError>()
        let done = expectation(description: "outcome")
        let start = Date()
        let elapsed = Box<Double>()
        let task = loader.loadImage(
            request, target: nil,
            success: ImageAction("record") { _, _, _ in
                events.update { $0?.append("success") }
                done.fulfill()
            },
            failure: ImageFailureAction("record") { _, error, _ in
                elapsed.value = Date().timeIntervalSince(start)
                failure.value = error
                events.update { $0?.append("failure") }
                done.fulfill()
            })
        task.onPreview { _ in events.update { $0?.append("preview") } }
        wait(for: [done], timeout: 2 + margin)
        queue.sync {}
        let seen = events.value ?? []
        XCTAssertEqual(seen.filter { $0 != "preview" }, ["failure"], "\(seen)")
        XCTAssertEqual(seen.last, "failure", "no preview after the outcome: \(seen)")
        XCTAssertGreaterThan(seen.filter { $0 == "preview" }.count, 0, "previews came before the stall")
        XCTAssertEqual(failure.value, .timedOut(url, seconds: 2, stage: .transfer))
        let seconds = try XCTUnwrap(elapsed.value)
        XCTAssertGreaterThanOrEqual(seconds, 1.8)
        XCTAssertLessThanOrEqual(seconds, 2 + margin)
        print(String(format: "fault stall mid-body after previews: %.3f s: %d previews, then %@", seconds,
                     seen.filter { $0 == "preview" }.count, failure.value.map { "\($0)" } ?? "nothing"))
        try assertLoaderStillWorks(loader, after: url)
    }

    func testSlowDripOverTheTimeoutTimesOut() throws {
        // 40 pieces 0.1 s apart: about 4 s, over a 1 s limit.
        let url = server.url(for: .drip(png, pieces: 40, interval: 0.1))
        let error = try assertFault("slow drip over the timeout", url, timeout: 1)
        XCTAssertEqual(error, .timedOut(url, seconds: 1, stage: .transfer))
    }

    func testSlowDripUnderTheTimeoutSucceeds() throws {
        // 10 pieces 0.1 s apart: about 1 s, well under a 10 s limit.
        let url = server.url(for: .drip(png, pieces: 10, interval: 0.1))
        let loader = makeLoader(timeout: 10)
        let outcome = try XCTUnwrap(load(url, with: loader, within: 10 + margin))
        let loaded = try outcome.result.get()
        XCTAssertEqual(loaded.width, 64)
        XCTAssertEqual(loaded.pixel(x: 48, y: 48), image.pixel(x: 48, y: 48), "the whole image arrived")
        XCTAssertGreaterThanOrEqual(outcome.seconds, 0.9, "the body did drip in")
        report("slow drip under the timeout", outcome)
        try assertLoaderStillWorks(loader, after: url)
    }

    /// A response that never starts holds its own slot only: with two
    /// slots, another image loads meanwhile (libcurl's one event thread is
    /// not held up), and the held one ends once the server gives up.
    func testResponseThatNeverStartsDoesNotHoldUpOtherTransfers() throws {
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: 2, loadingTimeout: longTimeout, deliveryQueue: queue,
            notificationCenter: NotificationCenter())
        let held = server.url(for: .neverStarts)
        let heldOutcomes = Box<[Result<Image, AsyncImageError>]>([])
        let heldDone = expectation(description: "outcome of the held request")
        loader.loadImage(
            ImageRequest(url: held), target: nil,
            success: ImageAction("record") { _, image, _ in
                heldOutcomes.update { $0?.append(.success(image)) }
                heldDone.fulfill()
            },
            failure: ImageFailureAction("record") { _, error, _ in
                heldOutcomes.update { $0?.append(.failure(error)) }
                heldDone.fulfill()
            })
        let other = try XCTUnwrap(load(server.imageURL("other"), with: loader, within: quickLimit))
        XCTAssertEqual(try other.result.get().width, 64)
        XCTAssertEqual(heldOutcomes.value?.count, 0, "the held request ended early")
        XCTAssertEqual(loader.activity.inFlight, 1)
        server.releaseHeld()  // the server closes the connection without a reply
        wait(for: [heldDone], timeout: quickLimit)
        queue.sync {}
        let outcomes = heldOutcomes.value ?? []
        XCTAssertEqual(outcomes.count, 1)
        guard case .failure(.transport(let url, let code, _))? = outcomes.first else {
            return XCTFail("expected .transport, got \(outcomes)")
        }
        XCTAssertEqual(url, held)
        XCTAssertEqual(code, 52)  // CURLE_GOT_NOTHING
        XCTAssertEqual(loader.activity.inFlight, 0)
    }

    // MARK: Connection

    func testConnectionResetMidBody() throws {
        let url = server.url(for: .resetMidBody(png))
        let error = try assertFault("connection reset mid-body", url)
        guard case .transport(let failed, let code, let message) = error else { return XCTFail("expected .transport, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertTrue([18, 56].contains(code), "\(code): \(message)")  // partial file, or recv failure (reset)
    }

    func testServerThatAcceptsThenCloses() throws {
        let url = server.url(for: .closeWithoutReply)
        let error = try assertFault("accepts then closes", url)
        guard case .transport(let failed, let code, let message) = error else { return XCTFail("expected .transport, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(code, 52, message)  // CURLE_GOT_NOTHING: "Empty reply from server"
    }

    // MARK: Body length

    func testContentLengthLongerThanTheBody() throws {
        let url = server.url(for: .contentLengthLonger(png, missing: 1000))
        let error = try assertFault("Content-Length longer than the body", url)
        guard case .transport(let failed, let code, let message) = error else { return XCTFail("expected .transport, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(code, 18, message)  // CURLE_PARTIAL_FILE
    }

    /// The body is cut at the length the server announced: the image is
    /// incomplete, so it fails to decode (never half an image); the bytes
    /// past the length do not spoil the next response on that server.
    func testContentLengthShorterThanTheBody() throws {
        for (name, body, format) in [("PNG", png, ImageFormat.png), ("JPEG", jpeg, .jpeg)] {
            let url = server.url(for: .contentLengthShorter(body, length: body.count / 2))
            let error = try assertFault("Content-Length shorter than the body (\(name))", url)
            guard case .decoding(let failure, let failed) = error else { XCTFail("expected .decoding, got \(error)"); continue }
            XCTAssertEqual(failed, url)
            XCTAssertEqual(failure.format, format)
            XCTAssertEqual(failure.stage, .pixels, "\(failure)")
        }
    }

    func testEndlessChunkedBodyHitsTheBodyLimit() throws {
        let url = server.url(for: .endlessChunked)
        let error = try assertFault("endless chunked body", url, transport: TransportConfiguration(maxBodySize: 1_000_000))
        XCTAssertEqual(error, .bodyTooLarge(url, limit: 1_000_000))
    }

    /// Without a body limit in reach, the timeout ends it.
    func testEndlessChunkedBodyTimesOut() throws {
        let url = server.url(for: .endlessChunked)
        let error = try assertFault(
            "endless chunked body (no body limit in reach)", url, timeout: 1,
            transport: TransportConfiguration(maxBodySize: Int.max))
        XCTAssertEqual(error, .timedOut(url, seconds: 1, stage: .transfer))
    }

    func testGzipBodyThatExpandsPastTheBodyLimit() throws {
        // 20 MB of zeros compress to about 20 KB: the limit counts decoded bytes.
        let url = server.url(for: .gzip(Data(count: 20_000_000)))
        let error = try assertFault("gzip bomb", url, transport: TransportConfiguration(maxBodySize: 1_000_000))
        XCTAssertEqual(error, .bodyTooLarge(url, limit: 1_000_000))
    }

    // MARK: Malformed responses

    func testMalformedStatusLine() throws {
        for line in ["HTTP/1.1 2OO OK", "HTTP/1.1 999999 Weird", "HTTP/1.1", "HTTP/7.0 200 OK"] {
            let url = server.url(for: .statusLine(line, body: png))
            let error = try assertFault("malformed status line '\(line)'", url)
            guard case .transport(let failed, _, let message) = error else { XCTFail("\(line): expected .transport, got \(error)"); continue }
            XCTAssertEqual(failed, url)
            XCTAssertFalse(message.isEmpty)
        }
    }

    func testMalformedHeaders() throws {
        let cases: [(String, [String])] = [
            ("no colon", ["this is no header"]),
            ("folded first line", ["  folded"]),
            ("NUL byte", ["X-Bad: a\u{0}b"]),
            ("Content-Length not a number", ["Content-Length: abc"]),
            ("negative Content-Length", ["Content-Length: -5"]),
        ]
        for (name, lines) in cases {
            let url = server.url(for: .headerLines(lines, body: png))
            let error = try assertFault("malformed headers (\(name))", url)
            guard case .transport(let failed, let code, let message) = error else { XCTFail("\(name): expected .transport, got \(error)"); continue }
            XCTAssertEqual(failed, url)
            XCTAssertEqual(code, 8, "\(name): \(message)")  // CURLE_WEIRD_SERVER_REPLY
        }
    }

    /// 1 MB of headers: a block of 1,000 lines of 1 KB, and one line of 1 MB.
    /// Either is refused by a header limit of at most libcurl's own (300 KiB
    /// for a block, 100 KiB for a line), with a typed error naming it.
    func testMegabyteHeaderBlock() throws {
        let cases: [(String, Fault, Int)] = [
            ("1 MB header block (1,000 lines)", .headerBlock(count: 1000, lineLength: 1000, body: png), 300 * 1024),
            ("1 MB header line", .headerBlock(count: 1, lineLength: 1_000_000, body: png), 100 * 1024),
        ]
        for (name, fault, cap) in cases {
            let url = server.url(for: fault)
            let error = try assertFault(name, url)
            guard case .headersTooLarge(let failed, let limit) = error else {
                XCTFail("\(name): expected .headersTooLarge, got \(error)")
                continue
            }
            XCTAssertEqual(failed, url)
            XCTAssertTrue((1...cap).contains(limit), "\(name): limit \(limit)")
            XCTAssertTrue(error.description.contains("headers"), error.description)
        }
    }

    /// 50,000 tiny lines of one name, just under libcurl's 300 KiB: lawful
    /// with a header limit raised to libcurl's own (the default, 64 KiB,
    /// refuses it at once), so the image loads, and the values are joined in
    /// order. (Their
    /// parsing runs on the transport thread every transfer shares: it used
    /// to copy the joined value for each line, 0.9 s of that thread's time
    /// for this response in a debug build; 0.4 s now, linear in the lines.)
    func testHeaderFloodOfTinyLines() async throws {
        let lines = Array(repeating: "X: a", count: 50_000)
        let url = server.url(for: .headerLines(lines, body: png))
        let raised = TransportConfiguration(maxHeaderSize: 300 * 1024)
        let loader = makeLoader(timeout: longTimeout, transport: raised)
        let outcome = try XCTUnwrap(load(url, with: loader, within: quickLimit))
        report("50,000 header lines of one name", outcome)
        XCTAssertEqual(try outcome.result.get().width, 64)
        try assertLoaderStillWorks(loader, after: url)
        let response = try await DataLoader(configuration: raised).data(from: url)
        XCTAssertEqual(response.headers["x"], Array(repeating: "a", count: 50_000).joined(separator: ", "))
        XCTAssertEqual(response.data, png)
    }

    // MARK: Redirects

    func testRedirectToFileIsRefused() throws {
        let url = server.url(for: .redirect(to: "file:///etc/passwd"))
        let error = try assertFault("redirect to file://", url)
        guard case .disallowedRedirect(let failed, let message) = error else { return XCTFail("expected .disallowedRedirect, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertFalse(message.isEmpty)
    }

    func testRedirectToAnUnsupportedSchemeIsRefused() throws {
        for target in ["ftp://127.0.0.1/a.png", "gopher://127.0.0.1/a.png", "nope://127.0.0.1/a.png", "data:image/png;base64,AAAA"] {
            let url = server.url(for: .redirect(to: target))
            let error = try assertFault("redirect to \(target.prefix(while: { $0 != ":" })):", url)
            guard case .disallowedRedirect(let failed, let message) = error else {
                XCTFail("\(target): expected .disallowedRedirect, got \(error)")
                continue
            }
            XCTAssertEqual(failed, url)
            XCTAssertFalse(message.isEmpty)
        }
    }

    func testRedirectLoop() throws {
        let path = "/fault/loop"
        let url = server.url(for: .redirect(to: path), path: path)
        let error = try assertFault("redirect loop", url, transport: TransportConfiguration(maxRedirects: 5))
        XCTAssertEqual(error, .tooManyRedirects(url, limit: 5))
        XCTAssertEqual(server.requestCount, 6 + 1, "the first request, 5 redirects, and the next image")
    }

    // MARK: Bodies that are no image

    func testHTMLInsteadOfAnImage() throws {
        let html = Data("<!doctype html><html><body><h1>Sign in</h1></body></html>".utf8)
        let url = server.url(for: .body(html, contentType: "text/html"))
        let error = try assertFault("200 with HTML", url)
        guard case .decoding(let failure, let failed) = error else { return XCTFail("expected .decoding, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertNil(failure.format)
        XCTAssertEqual(failure.stage, .sniffing)
    }

    func testSmallImageClaimingHugeDimensions() throws {
        let bomb = CraftedFiles.pngHeader(width: 100_000, height: 100_000)
        XCTAssertLessThan(bomb.count, 100)
        let url = server.url(for: .body(bomb, contentType: "image/png"))
        let error = try assertFault("100000x100000 header", url)
        guard case .decoding(let failure, let failed) = error else { return XCTFail("expected .decoding, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(failure.format, .png)
        XCTAssertEqual(failure.stage, .limits)
        XCTAssertTrue(failure.reason.contains("100000x100000"), failure.reason)
    }

    // MARK: Revalidation

    /// A stored image that must be revalidated is served stale when the
    /// server answers with a fault rather than a response (RFC 9111, 4.2.4),
    /// as when it cannot be reached: oversized headers count as such a fault.
    func testFaultOnRevalidationServesTheStoredImageStale() async throws {
        let disk = try DataCache(directory: temporaryFolder("fault-stale"))
        let path = "/fault/revalidated"
        let validated = ["ETag: \"v1\"", "Cache-Control: max-age=0", "Content-Type: image/png"]
        let url = server.url(for: .headerLines(validated, body: png), path: path)
        let warm = makeLoader(disk: disk)
        let first = try await warm.response(for: ImageRequest(url: url))
        XCTAssertEqual(first.source, .network)
        await warm.flushDiskWrites()
        let faults: [(String, Fault)] = [
            ("1 MB header block", .headerBlock(count: 1000, lineLength: 1000, body: png)),
            ("1 MB header line", .headerBlock(count: 1, lineLength: 1_000_000, body: png)),
            ("malformed headers", .headerLines(["this is no header"], body: png)),
            ("accepts then closes", .closeWithoutReply),
        ]
        for (name, fault) in faults {
            _ = server.url(for: fault, path: path)
            let response = try await makeLoader(disk: disk).response(for: ImageRequest(url: url))
            XCTAssertTrue(response.isStale, name)
            XCTAssertEqual(response.source, .diskCache, name)
            XCTAssertEqual(response.image.pixel(x: 10, y: 50), image.pixel(x: 10, y: 50), name)
        }
    }

    private func makeLoader(disk: DataCache) -> AsyncImageLoader {
        AsyncImageLoader(
            configuration: .init(cache: nil, deliveryQueue: queue, notificationCenter: NotificationCenter(), diskCache: disk))
    }

    // MARK: TLS

    /// A certificate from an authority nobody trusts (a self-made one).
    func testTLSCertificateFromAnUntrustedAuthority() throws {
        let folder = temporaryFolder("fault-tls")
        let certificates = try TestCertificates.make(in: folder)
        let tls = try startTLSServer(folder, certificates)
        let url = tls.url("/a.png")
        let error = try assertFault("TLS: untrusted authority", url)
        guard case .tls(let failed, let code, let message) = error else { return XCTFail("expected .tls, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(code, 60, message)  // CURLE_PEER_FAILED_VERIFICATION
    }

    /// A certificate from a trusted authority, for another host.
    func testTLSCertificateForAnotherHost() throws {
        let folder = temporaryFolder("fault-tls")
        let certificates = try TestCertificates.make(in: folder, subjectAltName: "DNS:images.example.invalid")
        let tls = try startTLSServer(folder, certificates)
        let url = tls.url("/a.png")
        let error = try assertFault(
            "TLS: certificate for another host", url,
            transport: TransportConfiguration(certificateAuthorities: certificates.authority))
        guard case .tls(let failed, let code, let message) = error else { return XCTFail("expected .tls, got \(error)") }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(code, 60, message)
        XCTAssertTrue(message.contains("127.0.0.1"), message)
    }

    /// `openssl s_server` serving the good image over TLS with `certificates`.
    private func startTLSServer(_ folder: URL, _ certificates: TestCertificates) throws -> ServerProcess {
        let docroot = folder.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        try httpResponse(png, contentType: "image/png").write(to: docroot.appendingPathComponent("a.png"))
        return try startHTTP1Server(docroot: docroot, certificates: certificates)
    }

    // MARK: Harness

    /// A loader with one transfer slot (a slot never freed would stall the
    /// next request), no cache, and deliveries on the test's queue.
    /// Retries off: each case measures what one transfer makes of its
    /// fault (the transient ones are tried again by default: RetryScheduleTests).
    private func makeLoader(timeout: Double, transport: TransportConfiguration = TransportConfiguration()) -> AsyncImageLoader {
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: 1, loadingTimeout: timeout, deliveryQueue: queue,
            notificationCenter: NotificationCenter(), transport: transport)
        loader.retryPolicy = .disabled
        return loader
    }

    /// What one load ended in, and how long after it was asked for.
    private struct Outcome {
        let result: Result<Image, AsyncImageError>
        let seconds: Double
    }

    /// Loads `url` and waits up to `limit` seconds for its outcome, checking
    /// that exactly one action and one notification arrive for it (later
    /// ones are caught by ``assertLoaderStillWorks(_:after:)``).
    private func load(
        _ url: URL, with loader: AsyncImageLoader, within limit: Double, file: StaticString = #filePath, line: UInt = #line
    ) -> Outcome? {
        let outcomes = Box<[Outcome]>([])
        let done = expectation(description: "outcome of \(url.path)")
        done.assertForOverFulfill = false
        let start = Date()
        loader.loadImage(
            ImageRequest(url: url), target: nil,
            success: ImageAction("record") { _, image, _ in
                outcomes.update { $0?.append(Outcome(result: .success(image), seconds: Date().timeIntervalSince(start))) }
                done.fulfill()
            },
            failure: ImageFailureAction("record") { _, error, _ in
                outcomes.update { $0?.append(Outcome(result: .failure(error), seconds: Date().timeIntervalSince(start))) }
                done.fulfill()
            })
        let waited = XCTWaiter().wait(for: [done], timeout: limit)
        guard waited == .completed else {
            XCTFail("no outcome for \(url) within \(limit) s", file: file, line: line)
            return nil
        }
        queue.sync {}
        let all = outcomes.value ?? []
        XCTAssertEqual(all.count, 1, "exactly one outcome for \(url)", file: file, line: line)
        return all.first
    }

    /// Loads `url` (a fault) with a new loader, asserts it fails within its
    /// time and that the loader then still works, prints the time, and returns the error.
    private func assertFault(
        _ name: String, _ url: URL, timeout: Double? = nil, transport: TransportConfiguration = TransportConfiguration(),
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> AsyncImageError {
        let loader = makeLoader(timeout: timeout ?? longTimeout, transport: transport)
        let limit = timeout.map { $0 + margin } ?? quickLimit
        let notifications = countNotifications(of: loader, for: url)
        let outcome = try XCTUnwrap(load(url, with: loader, within: limit, file: file, line: line), file: file, line: line)
        report(name, outcome)
        XCTAssertLessThanOrEqual(outcome.seconds, limit, "\(name) ended late", file: file, line: line)
        if let timeout {
            XCTAssertGreaterThanOrEqual(outcome.seconds, timeout * 0.9, "\(name) ended before its timeout", file: file, line: line)
        }
        try assertLoaderStillWorks(loader, after: url, file: file, line: line)
        XCTAssertEqual(notifications.value, 1, "\(name): one didFail notification", file: file, line: line)
        switch outcome.result {
        case .failure(let error):
            XCTAssertEqual(error.url, url, file: file, line: line)
            XCTAssertFalse(error.description.isEmpty, file: file, line: line)
            return error
        case .success(let image):
            XCTFail("\(name): expected a failure, got a \(image.width)x\(image.height) image", file: file, line: line)
            throw NoFailure()
        }
    }

    /// Counts `didFail` and `didFinish` notifications of `loader` for `url`
    /// (until the test ends).
    private func countNotifications(of loader: AsyncImageLoader, for url: URL) -> Counter {
        let counter = Counter()
        let center = loader.notificationCenter!
        let observers = [Notification.Name.asyncImageLoadDidFail, .asyncImageLoadDidFinish].map { name in
            center.addObserver(forName: name, object: nil, queue: nil) { note in
                if note.userInfo?[AsyncImageURLKey] as? URL == url { counter.increment() }
            }
        }
        addTeardownBlock { observers.forEach(center.removeObserver) }
        return counter
    }

    /// The same loader loads the good image from the same server, nothing
    /// is left in flight or pending, and no late outcome arrived for `url`.
    private func assertLoaderStillWorks(
        _ loader: AsyncImageLoader, after url: URL, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let next = server.imageURL(UUID().uuidString)
        let outcome = try XCTUnwrap(load(next, with: loader, within: quickLimit, file: file, line: line), file: file, line: line)
        switch outcome.result {
        case .success(let loaded):
            XCTAssertEqual(loaded.width, 64, file: file, line: line)
            XCTAssertEqual(loaded.pixel(x: 10, y: 50), image.pixel(x: 10, y: 50), file: file, line: line)
        case .failure(let error):
            XCTFail("the next request after \(url.path) failed: \(error)", file: file, line: line)
        }
        queue.sync {}
        let activity = loader.activity
        XCTAssertEqual(activity.inFlight, 0, "a transfer slot is still held", file: file, line: line)
        XCTAssertEqual(activity.pendingRequests, 0, file: file, line: line)
        XCTAssertEqual(activity.delivered, 2, "one outcome for the fault, one for the next image", file: file, line: line)
    }

    private struct NoFailure: Error {}

    private func report(_ name: String, _ outcome: Outcome) {
        let what: String
        switch outcome.result {
        case .success(let image): what = "success (\(image.width)x\(image.height))"
        case .failure(let error): what = "\(error)"
        }
        print(String(format: "fault %@: %.3f s: %@", name, outcome.seconds, what))
    }
}
