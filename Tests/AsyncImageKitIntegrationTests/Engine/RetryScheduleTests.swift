import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Retries (``RetryPolicy``) through libcurl against a loopback server
/// whose answers each test scripts and holds (``ScriptedServer``): `503`
/// with and without `Retry-After`, `429`, `502`, a reset or a close before
/// any byte, a refused connection, a timeout before the first byte, then
/// the image. Each test counts the tries the server saw and checks that
/// the gap between an answer and the next try is at least the wait the
/// loader scheduled (lower bounds only: a loaded machine is only ever
/// slower); waits are tens of milliseconds, but for a `Retry-After`
/// (whole seconds) and the default policy's.
final class RetryScheduleTests: XCTestCase {
    private static let png = try! PNGEncoder().encode(SyntheticImage.quadrants(width: 32, height: 32))
    private let queue = DispatchQueue(label: "RetryScheduleTests.delivery")
    private var servers: [ScriptedServer] = []

    override func tearDown() {
        servers.forEach { $0.stop() }
        servers = []
    }

    private func serve(_ script: [ScriptedServer.Answer], holding: Set<Int> = []) throws -> ScriptedServer {
        let server = try ScriptedServer(script, holding: holding)
        servers.append(server)
        return server
    }

    /// A loader over libcurl with `policy` (nil: the default), and its events.
    private func makeLoader(_ policy: RetryPolicy?, loadingTimeout: Double = 20) -> (AsyncImageLoader, Events) {
        var configuration = AsyncImageLoader.Configuration(
            cache: ImageCache(), loadingTimeout: loadingTimeout, deliveryQueue: queue, notificationCenter: nil)
        if let policy { configuration.retryPolicy = policy }
        let loader = AsyncImageLoader(configuration: configuration)
        let events = Events()
        loader.eventMonitor = { event in events.record(event) }
        return (loader, events)
    }

    /// Each answer sent, then the next try: at least `delays[n]` between
    /// answer `n` and try `n + 1`.
    private func assertGaps(
        _ server: ScriptedServer, atLeast delays: [Double], file: StaticString = #filePath, line: UInt = #line
    ) {
        let (arrivals, answered) = (server.arrivals, server.answered)
        XCTAssertEqual(arrivals.count, delays.count + 1, "tries", file: file, line: line)
        for (n, delay) in delays.enumerated() where n + 1 < arrivals.count {
            XCTAssertGreaterThanOrEqual(
                arrivals[n + 1] - answered[n], delay, "the wait before try \(n + 2)", file: file, line: line)
        }
    }

    // MARK: Tests

    /// `503`, `429` with `Retry-After: 1`, `502`, a reset before any byte,
    /// then the image: four retries, one try at a time (each answer held
    /// until the test has seen its try), the `Retry-After` in place of the
    /// computed wait.
    func testEachTransientAnswerIsRetriedOnItsScheduleUntilTheImageComes() async throws {
        let server = try serve(
            [.status(503, []), .status(429, [("Retry-After", "1")]), .status(502, []), .reset, .body(Self.png)],
            holding: [0, 1, 2, 3, 4])
        let (loader, events) = makeLoader(
            RetryPolicy(
                maxRetries: 4, baseDelay: .milliseconds(20), maxDelay: .seconds(1), jitter: .none,
                maxRetryAfter: .seconds(2)))
        let url = server.url
        let load = Task { try await loader.response(for: ImageRequest(url: url)) }
        for n in 1...5 {
            await fulfillment(of: [server.arrival(n, self)], timeout: 20)
            XCTAssertEqual(server.arrivals.count, n, "no try before the one before it is answered")
            server.release(n - 1)
        }
        let response = try await load.value
        XCTAssertEqual(response.image.width, 32)
        XCTAssertEqual(response.source, .network)
        let delays = [0.02, 1, 0.08, 0.16]
        XCTAssertEqual(events.retries.map(\.attempt), [1, 2, 3, 4])
        XCTAssertEqual(events.retries.map(\.delay), delays)
        assertGaps(server, atLeast: delays)
        let errors = events.retries.map(\.error)
        XCTAssertEqual(errors.map { $0.flatMap(status) }, [503, 429, 502, nil])
        if case .httpStatus(_, 429, let headers)? = errors.dropFirst().first {
            XCTAssertEqual(headers["retry-after"], "1")
        }
        guard case .transport(_, let code, let message)? = errors.last else {
            return XCTFail("expected a transport error for the reset, got \(String(describing: errors.last))")
        }
        XCTAssertTrue([52, 56].contains(code), "\(code): \(message)")  // reset (56), or seen as an empty reply
        XCTAssertEqual(loader.activity.inFlight, 0)
    }

    /// The default policy: a `503` without `Retry-After` is tried three
    /// times in all, after 125-250 ms and 250-500 ms, then fails with the
    /// status.
    func testByDefaultA503IsRetriedTwiceThenFails() async throws {
        let server = try serve([.status(503, []), .status(503, []), .status(503, [("X-Try", "3")])])
        let (loader, events) = makeLoader(nil)
        do {
            _ = try await loader.image(for: server.url)
            XCTFail("expected the 503")
        } catch AsyncImageError.httpStatus(_, let code, let headers) {
            XCTAssertEqual(code, 503)
            XCTAssertEqual(headers["x-try"], "3", "the last try's answer")
        }
        XCTAssertEqual(events.retries.map(\.attempt), [1, 2])
        let delays = events.retries.map(\.delay)
        XCTAssertEqual(delays.count, 2)
        if delays.count == 2 {
            XCTAssertTrue((0.125...0.25).contains(delays[0]), "\(delays[0])")
            XCTAssertTrue((0.25...0.5).contains(delays[1]), "\(delays[1])")
            assertGaps(server, atLeast: delays)
        }
        XCTAssertEqual(events.kinds.suffix(2), [.transferFailed, .delivered(success: false)])
    }

    /// A connection closed without a byte of reply is tried again.
    func testAConnectionClosedBeforeAnyReplyIsRetried() async throws {
        let server = try serve([.closeWithoutReply, .body(Self.png)])
        let (loader, events) = makeLoader(RetryPolicy(baseDelay: .milliseconds(20), jitter: .none))
        _ = try await loader.image(for: server.url)
        XCTAssertEqual(events.retries.count, 1)
        guard case .transport(_, let code, let message)? = events.retries.first?.error else {
            return XCTFail("expected a transport error, got \(String(describing: events.retries.first?.error))")
        }
        XCTAssertEqual(code, 52, message)  // "Empty reply from server"
        assertGaps(server, atLeast: [0.02])
    }

    /// A refused connection is tried again, then fails with the refusal.
    func testARefusedConnectionIsRetriedThenFails() async throws {
        let url = URL(string: "http://127.0.0.1:\(ScriptedServer.closedPort())/refused.png")!
        let (loader, events) = makeLoader(RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(20), jitter: .none))
        let began = ProcessInfo.processInfo.systemUptime
        do {
            _ = try await loader.image(for: url)
            XCTFail("expected the refusal")
        } catch AsyncImageError.transport(_, let code, let message) {
            XCTAssertEqual(code, 7, message)  // "Couldn't connect to server"
        }
        XCTAssertGreaterThanOrEqual(ProcessInfo.processInfo.systemUptime - began, 0.06, "20 ms, then 40")
        XCTAssertEqual(events.retries.map(\.delay), [0.02, 0.04])
    }

    /// A timeout is not tried again by default: `loadingTimeout` bounds the
    /// load, retries included (one try, one timeout).
    func testATimeoutIsNotRetriedByDefault() async throws {
        let server = try serve([.body(Self.png), .body(Self.png)], holding: [0])
        let (loader, events) = makeLoader(RetryPolicy(baseDelay: .milliseconds(20), jitter: .none), loadingTimeout: 0.3)
        let url = server.url
        let began = ProcessInfo.processInfo.systemUptime
        do {
            _ = try await loader.image(for: url)
            XCTFail("expected the timeout")
        } catch let error as AsyncImageError {
            XCTAssertEqual(error, .timedOut(url, seconds: 0.3, stage: .transfer))
        }
        XCTAssertLessThan(ProcessInfo.processInfo.systemUptime - began, 0.3 + 1, "within the timeout and a margin")
        server.release(0)
        XCTAssertEqual(events.retries.count, 0)
        XCTAssertEqual(server.arrivals.count, 1)
    }

    /// Asked for (`retriesTimeouts`), a timeout before the first byte is
    /// tried again: the held first try times out (the loader's
    /// `loadingTimeout`), the second is answered.
    func testATimeoutBeforeTheFirstByteIsRetriedWhenAsked() async throws {
        let server = try serve([.body(Self.png), .body(Self.png)], holding: [0])
        let (loader, events) = makeLoader(
            RetryPolicy(baseDelay: .milliseconds(20), jitter: .none, retriesTimeouts: true), loadingTimeout: 0.3)
        let url = server.url
        _ = try await loader.image(for: url)
        server.release(0)
        XCTAssertEqual(events.retries.map(\.error), [.timedOut(url, seconds: 0.3, stage: .transfer)])
        let arrivals = server.arrivals
        XCTAssertEqual(arrivals.count, 2)
        // libcurl's clock starts before the connection (and so before the
        // first arrival), so the bound is the timeout less a margin for that.
        if arrivals.count == 2 { XCTAssertGreaterThanOrEqual(arrivals[1] - arrivals[0], 0.25, "after the timeout") }
    }

    /// Body bytes arrived before the reset: not retried (what came is for
    /// the `Range` machinery to resume), one try only.
    func testAResetAfterBodyBytesIsNotRetried() async throws {
        let body = try PNGEncoder().encode(SyntheticImage.photo(width: 128, height: 128))
        let server = try serve([.resetMidBody(body), .body(Self.png)])
        let (loader, events) = makeLoader(RetryPolicy(baseDelay: .milliseconds(20)))
        do {
            _ = try await loader.image(for: server.url)
            XCTFail("expected the reset")
        } catch AsyncImageError.transport(_, let code, let message) {
            XCTAssertTrue([18, 56].contains(code), "\(code): \(message)")
        }
        XCTAssertEqual(server.arrivals.count, 1)
        XCTAssertEqual(events.retries.count, 0)
    }

    /// A `Retry-After` that would outlast the request's deadline: the
    /// request fails at once with the status, not a timeout.
    func testARetryAfterPastTheDeadlineFailsAtOnceWithTheStatus() async throws {
        let server = try serve([.status(503, [("Retry-After", "2")]), .body(Self.png)])
        let (loader, events) = makeLoader(RetryPolicy(maxRetryAfter: .seconds(5)))
        var request = ImageRequest(url: server.url)
        request.timeout = .seconds(1)
        do {
            _ = try await loader.image(for: request)
            XCTFail("expected the 503")
        } catch AsyncImageError.httpStatus(_, let code, _) {
            XCTAssertEqual(code, 503)
        }
        XCTAssertEqual(server.arrivals.count, 1)
        XCTAssertEqual(events.retries.count, 0)
    }

    /// Two requests share the transfer and its retry: two tries in all,
    /// one image each.
    func testRequestsSharingTheTransferShareItsRetries() async throws {
        let server = try serve([.status(502, []), .body(Self.png)], holding: [0])
        let (loader, events) = makeLoader(RetryPolicy(baseDelay: .milliseconds(20), jitter: .none))
        let url = server.url
        async let full = loader.image(for: url)
        async let small = loader.image(for: ImageRequest(url: url, targetSize: PixelSize(width: 8, height: 8)))
        await fulfillment(of: [server.arrival(1, self)], timeout: 20)
        while loader.activity.pendingRequests < 2 { try await Task.sleep(for: .milliseconds(1)) }
        server.release(0)
        let (a, b) = try await (full, small)
        XCTAssertEqual(a.width, 32)
        XCTAssertEqual(b.width, 8)
        XCTAssertEqual(server.arrivals.count, 2)
        XCTAssertEqual(events.retries.count, 2, "one event per request for the one retry")
        assertGaps(server, atLeast: [0.02])
    }

    private func status(_ error: AsyncImageError) -> Int? {
        if case .httpStatus(_, let code, _) = error { return code }
        return nil
    }
}

/// A loader's events, for the retries.
private final class Events: @unchecked Sendable {
    struct Retry {
        let request: UInt64
        let attempt: Int
        let delay: Double
        let error: AsyncImageError?
    }

    private let lock = NSLock()
    private var events: [LoaderEvent] = []

    func record(_ event: LoaderEvent) { lock.withLock { events.append(event) } }

    private var ordered: [LoaderEvent] { lock.withLock { events.sorted { $0.sequence < $1.sequence } } }
    var kinds: [LoaderEvent.Kind] { ordered.map(\.kind) }

    /// Every retry event, in order (one per request waiting for it).
    var retries: [Retry] {
        ordered.compactMap { event in
            guard case .retrying(let attempt, let delay) = event.kind else { return nil }
            return Retry(request: event.requestID, attempt: attempt, delay: delay, error: event.error)
        }
    }
}
