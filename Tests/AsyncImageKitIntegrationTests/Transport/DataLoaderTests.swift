@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The libcurl transport against a real HTTP server on 127.0.0.1.
final class DataLoaderTests: XCTestCase {
    private var server: LoopbackServer!
    private var gates: [Gate] = []
    private let held = Box<HTTPConnection>()
    private let heldArrived = Box<XCTestExpectation>()
    private let body = Data((0..<5000).map { UInt8($0 % 251) })

    override func setUpWithError() throws {
        let body = self.body
        let holdGate = Gate()
        gates.append(holdGate)
        let held = self.held
        let heldArrived = self.heldArrived
        server = try LoopbackServer(routes: [
            "/ok": { _, c in c.respond(status: 200, headers: [("Content-Type", "application/octet-stream")], body: body) },
            "/missing": { _, c in c.respond(status: 404, headers: [("X-Request-Id", "r-7")], body: Data("no such image".utf8)) },
            "/broken": { _, c in c.respond(status: 500, body: Data("server error".utf8)) },
            "/r3": { _, c in c.respond(status: 302, headers: [("Location", "/r2")], body: Data()) },
            "/r2": { _, c in c.respond(status: 301, headers: [("Location", "/r1")], body: Data()) },
            "/r1": { _, c in c.respond(status: 302, headers: [("Location", "/ok")], body: Data()) },
            "/loop": { _, c in c.respond(status: 302, headers: [("Location", "/loop")], body: Data()) },
            "/to-file": { _, c in c.respond(status: 302, headers: [("Location", "file:///etc/passwd")], body: Data()) },
            "/to-ftp": { _, c in c.respond(status: 302, headers: [("Location", "ftp://127.0.0.1/a.png")], body: Data()) },
            "/to-no-status-line": { _, c in c.respond(status: 302, headers: [("Location", "/no-status-line")], body: Data()) },
            "/gzip": { request, c in
                let accepts = request.headers["accept-encoding"]?.contains("gzip") ?? false
                if accepts {
                    c.respond(status: 200, headers: [("Content-Encoding", "gzip")], body: Gzip.compress(body))
                } else {
                    c.respond(status: 406, body: Data())
                }
            },
            "/hold": { _, c in
                held.value = c
                heldArrived.value?.fulfill()
                holdGate.wait()
                c.respond(status: 200, body: body)
            },
            "/endless-chunked": { _, c in
                c.startChunked()
                let chunk = Data(repeating: 0x41, count: 16 * 1024)
                for _ in 0..<1000 where c.writeChunk(chunk) {}  // stops when the client hangs up
                c.close()
            },
            "/big-with-length": { _, c in
                c.write("HTTP/1.1 200 OK\r\nContent-Length: 10000000\r\n\r\n")
                c.write(Data(repeating: 0x42, count: 64 * 1024))
                c.close()
            },
            "/no-status-line": { _, c in
                c.write("not HTTP at all\r\n\r\n")
                c.close()
            },
            "/cut": { _, c in
                c.write("HTTP/1.1 200 OK\r\nContent-Length: 10000\r\n\r\n")
                c.write(Data(repeating: 0x43, count: 100))
                c.close()
            },
        ])
    }

    override func tearDown() {
        gates.forEach { $0.open() }
        server.stop()
        server = nil
    }

    private func load(
        _ url: URL, configuration: TransportConfiguration = TransportConfiguration(),
        file: StaticString = #filePath, line: UInt = #line
    ) -> Result<DataResponse, AsyncImageError>? {
        let done = expectation(description: "completion for \(url)")
        let result = Box<Result<DataResponse, AsyncImageError>>()
        let calls = Counter()
        DataLoader(configuration: configuration).loadData(from: url) { outcome in
            result.value = outcome
            calls.increment()
            done.fulfill()
        }
        wait(for: [done], timeout: 15)
        XCTAssertEqual(calls.value, 1, "completion must run exactly once", file: file, line: line)
        return result.value
    }

    private func loadError(
        _ url: URL, configuration: TransportConfiguration = TransportConfiguration(),
        file: StaticString = #filePath, line: UInt = #line
    ) -> AsyncImageError? {
        switch load(url, configuration: configuration, file: file, line: line) {
        case .failure(let error): return error
        case .success(let response):
            XCTFail("expected a failure, got \(response.data.count) bytes", file: file, line: line)
        case nil: break
        }
        return nil
    }

    func testSuccess() throws {
        let response = try XCTUnwrap(load(server.url("/ok"))).get()
        XCTAssertEqual(response.data, body)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.contentType, "application/octet-stream")
        XCTAssertEqual(response.finalURL, server.url("/ok"))
    }

    func testHTTPErrorsCarryTheStatus() {
        XCTAssertEqual(withoutHeaders(loadError(server.url("/missing"))), .httpStatus(server.url("/missing"), code: 404))
        XCTAssertEqual(withoutHeaders(loadError(server.url("/broken"))), .httpStatus(server.url("/broken"), code: 500))
        XCTAssertTrue(loadError(server.url("/missing"))?.description.contains("404") ?? false)
        guard case .httpStatus(_, _, let headers) = loadError(server.url("/missing")) else { return XCTFail() }
        XCTAssertEqual(headers["x-request-id"], "r-7", "an HTTP error carries its response's headers")
        XCTAssertEqual(headers["content-length"], "13")
    }

    func testRedirectChainIsFollowed() throws {
        let response = try XCTUnwrap(load(server.url("/r3"))).get()
        XCTAssertEqual(response.data, body)
        XCTAssertEqual(response.finalURL, server.url("/ok"))
        XCTAssertEqual(response.url, server.url("/r3"))
    }

    func testRedirectLimit() {
        XCTAssertEqual(loadError(server.url("/loop")), .tooManyRedirects(server.url("/loop"), limit: 10))
        // A chain of three is over a limit of two.
        let limited = TransportConfiguration(maxRedirects: 2)
        XCTAssertEqual(loadError(server.url("/r3"), configuration: limited), .tooManyRedirects(server.url("/r3"), limit: 2))
    }

    func testRedirectToFileIsRefused() {
        guard case .disallowedRedirect(let url, _)? = loadError(server.url("/to-file")) else {
            return XCTFail("expected disallowedRedirect")
        }
        XCTAssertEqual(url, server.url("/to-file"))
    }

    func testGzipBodyIsDecoded() throws {
        let response = try XCTUnwrap(load(server.url("/gzip"))).get()
        XCTAssertEqual(response.data, body)
    }

    func testResponseSlowerThanTheTimeout() {
        let arrived = expectation(description: "request reached the server")
        heldArrived.value = arrived
        let configuration = TransportConfiguration(timeout: 0.5)
        let done = expectation(description: "timed out")
        let result = Box<Result<DataResponse, AsyncImageError>>()
        DataLoader(configuration: configuration).loadData(from: server.url("/hold")) {
            result.value = $0
            done.fulfill()
        }
        wait(for: [arrived, done], timeout: 15, enforceOrder: true)
        guard case .failure(.timedOut(let url, let seconds, .transfer))? = result.value else {
            return XCTFail("expected timedOut, got \(String(describing: result.value))")
        }
        XCTAssertEqual(url, server.url("/hold"))
        XCTAssertEqual(seconds, 0.5)
    }

    func testBodyLimitWithoutContentLength() {
        let configuration = TransportConfiguration(maxBodySize: 100_000)
        XCTAssertEqual(
            loadError(server.url("/endless-chunked"), configuration: configuration),
            .bodyTooLarge(server.url("/endless-chunked"), limit: 100_000))
    }

    func testBodyLimitWithContentLength() {
        let configuration = TransportConfiguration(maxBodySize: 100_000)
        XCTAssertEqual(
            loadError(server.url("/big-with-length"), configuration: configuration),
            .bodyTooLarge(server.url("/big-with-length"), limit: 100_000))
        XCTAssertEqual(TransportConfiguration().maxBodySize, 50_000_000)
    }

    func testConnectionClosedMidBody() {
        guard case .transport(let url, let code, let message)? = loadError(server.url("/cut")) else {
            return XCTFail("expected a transport error")
        }
        XCTAssertEqual(url, server.url("/cut"))
        XCTAssertEqual(code, 18)  // CURLE_PARTIAL_FILE
        XCTAssertFalse(message.isEmpty)
    }

    func testConnectionRefused() throws {
        let closed = try LoopbackServer { _, c in c.close() }
        let url = closed.url("/gone")
        closed.stop()
        guard case .transport(_, let code, _)? = loadError(url) else { return XCTFail("expected a transport error") }
        XCTAssertEqual(code, 7)  // CURLE_COULDNT_CONNECT
    }

    func testFileURLs() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("loader-\(UUID().uuidString).bin")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        XCTAssertEqual(try XCTUnwrap(load(file)).get().data, body)
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("missing-\(UUID().uuidString).png")
        XCTAssertEqual(loadError(missing), .fileNotFound(missing))
    }

    /// A `file` URL must name a regular file: a FIFO with no writer used to
    /// block the transport thread (and every other transfer) for good.
    func testFileURLsMustBeRegularFilesWithinTheLimit() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("loader-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("pipe")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        XCTAssertEqual(loadError(fifo), .fileNotFound(fifo))
        XCTAssertEqual(loadError(directory), .fileNotFound(directory))
        // The transport thread is free.
        XCTAssertEqual(try XCTUnwrap(load(server.url("/ok"))).get().data, body)

        let big = directory.appendingPathComponent("big.bin")
        try Data(count: 2_000).write(to: big)
        XCTAssertEqual(loadError(big, configuration: TransportConfiguration(maxBodySize: 1_999)), .bodyTooLarge(big, limit: 1_999))
        XCTAssertEqual(try XCTUnwrap(load(big, configuration: TransportConfiguration(maxBodySize: 2_000))).get().data.count, 2_000)
    }

    /// A reply without an HTTP status line is a transport failure, not a refused redirect.
    func testResponseWithoutStatusLine() {
        guard case .transport(let url, _, let message)? = loadError(server.url("/no-status-line")) else {
            return XCTFail("expected a transport error")
        }
        XCTAssertEqual(url, server.url("/no-status-line"))
        XCTAssertFalse(message.isEmpty)
    }

    /// The same after a redirect: libcurl gives both cases one error code;
    /// only a refused scheme is a refused redirect.
    func testResponseWithoutStatusLineAfterARedirect() {
        guard case .transport(let url, _, let message)? = loadError(server.url("/to-no-status-line")) else {
            return XCTFail("expected a transport error")
        }
        XCTAssertEqual(url, server.url("/to-no-status-line"))
        XCTAssertFalse(message.isEmpty)
        guard case .disallowedRedirect(let refused, _)? = loadError(server.url("/to-ftp")) else {
            return XCTFail("expected disallowedRedirect")
        }
        XCTAssertEqual(refused, server.url("/to-ftp"))
    }

    /// The connection phase has the transfer's limit, not libcurl's default
    /// of 300 s (which used to apply under "no limit" and cut longer limits short).
    func testConnectTimeoutFollowsTheLoadingTimeout() {
        XCTAssertEqual(CurlTransfer.connectMilliseconds(60), 60_000)
        XCTAssertEqual(CurlTransfer.connectMilliseconds(600), 600_000)
        XCTAssertEqual(CurlTransfer.connectMilliseconds(0.0001), 1)
        for unlimited in [0, -1, Double.nan, .infinity, 1e300] {
            XCTAssertEqual(CurlTransfer.connectMilliseconds(unlimited), Int(Int32.max), "\(unlimited)")
        }
    }

    func testUnsupportedSchemesFailAtOnce() throws {
        for text in ["ftp://127.0.0.1/a.png", "dict://127.0.0.1/x", "data:image/png;base64,AAAA", "gopher://127.0.0.1/"] {
            let url = try XCTUnwrap(URL(string: text))
            XCTAssertEqual(loadError(url), .unsupportedScheme(url), text)
        }
        let hostless = try XCTUnwrap(URL(string: "http:///image.png"))
        XCTAssertEqual(loadError(hostless), .invalidURL(hostless.absoluteString))
        XCTAssertEqual(server.requestCount, 0, "nothing was sent")
    }

    /// Cancelling a running transfer frees its handle at once (the server sees
    /// the connection close) and the completion handler never runs.
    func testCancelRunningTransfer() throws {
        let arrived = expectation(description: "request reached the server")
        heldArrived.value = arrived
        let queue = DispatchQueue(label: "serial completions")
        let loader = DataLoader(completionQueue: queue)
        let called = Counter()
        let task = loader.loadData(from: server.url("/hold")) { _ in called.increment() }
        wait(for: [arrived], timeout: 15)
        task.cancel()
        XCTAssertTrue(task.isCancelled)
        let connection = try XCTUnwrap(held.value)
        XCTAssertTrue(connection.waitForPeerClose(timeout: 10), "the transfer's connection was not closed")
        gates.forEach { $0.open() }
        // Anything the cancelled transfer could still deliver would be queued before this.
        let after = expectation(description: "a later transfer completes")
        loader.loadData(from: server.url("/ok")) { _ in after.fulfill() }
        wait(for: [after], timeout: 15)
        queue.sync {}
        XCTAssertEqual(called.value, 0, "a cancelled transfer delivered a result")
    }

    func testManyConcurrentTransfers() {
        let loader = DataLoader()
        let count = 64
        let done = expectation(description: "all done")
        done.expectedFulfillmentCount = count
        let ok = Counter()
        let body = self.body
        for i in 0..<count {
            let path = i % 4 == 0 ? "/missing" : (i % 4 == 1 ? "/r1" : "/ok")
            loader.loadData(from: server.url(path)) { result in
                if case .success(let response) = result, response.data == body { ok.increment() }
                done.fulfill()
            }
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(ok.value, count * 3 / 4)
    }

    func testAsyncAwait() async throws {
        let response = try await DataLoader().data(from: server.url("/ok"))
        XCTAssertEqual(response.data, body)
        do {
            _ = try await DataLoader().data(from: server.url("/missing"))
            XCTFail("expected an error")
        } catch let error as AsyncImageError {
            XCTAssertEqual(withoutHeaders(error), .httpStatus(server.url("/missing"), code: 404))
        }
    }

    func testCancellingTheSwiftTaskCancelsTheTransfer() async throws {
        let arrived = expectation(description: "request reached the server")
        heldArrived.value = arrived
        let url = server.url("/hold")
        let task = Task { try await DataLoader().data(from: url) }
        await fulfillment(of: [arrived], timeout: 15)
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("expected cancellation")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        let connection = try XCTUnwrap(held.value)
        XCTAssertTrue(connection.waitForPeerClose(timeout: 10))
    }
}
