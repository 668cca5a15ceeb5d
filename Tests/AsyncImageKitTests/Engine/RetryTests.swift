@testable import AsyncImageKit
import Foundation
import ImageFixtures
import Logging
import TestSupport
import XCTest

#if MetricsSupport
    import MetricsTestKit
#endif

/// Retries of transient failures (issue 29, item 4; ``RetryPolicy``): the
/// rule (which failures pass), the schedule (exponential, capped, jittered,
/// `Retry-After`), and the engine's part, through the fake transport whose
/// answers each test scripts: attempt counts, deadlines, cancellation
/// during the wait, coalesced requests, the stale response's precedence,
/// events, logs and metrics. Waits are tens of milliseconds; gaps are
/// checked as lower bounds only.
final class RetryTests: XCTestCase {
    private static let url = URL(string: "http://127.0.0.1/img/1.png")!

    /// 20 ms, then 40, 80 (no jitter: the schedule is exact).
    private static let quick = RetryPolicy(
        maxRetries: 3, baseDelay: .milliseconds(20), maxDelay: .seconds(1), jitter: .none)

    // MARK: The rule

    func testTheRuleSaysWhichFailuresAreTransient() {
        let url = Self.url
        func passes(_ error: AsyncImageError, body: Bool = false, timeouts: Bool = false) -> Bool {
            TransientFailure(error, bodyArrived: body, now: 0, retriesTimeouts: timeouts) != nil
        }
        // Connection refused, broken while sending or receiving, closed with no reply.
        for code in [7, 52, 55, 56] {
            XCTAssertTrue(passes(.transport(url, code: code, message: "")), "curl \(code)")
            XCTAssertFalse(passes(.transport(url, code: code, message: ""), body: true), "curl \(code) after body bytes")
        }
        // A timed-out transfer: only when the policy asks (the loading timeout bounds a load).
        XCTAssertFalse(passes(.timedOut(url, seconds: 60, stage: .transfer)), "not retried by default")
        XCTAssertTrue(passes(.timedOut(url, seconds: 60, stage: .transfer), timeouts: true))
        XCTAssertFalse(
            passes(.timedOut(url, seconds: 60, stage: .transfer), body: true, timeouts: true), "resumed, not retried")
        XCTAssertFalse(RetryPolicy.standard.retriesTimeouts)
        XCTAssertNotEqual(RetryPolicy.standard.keyPart, RetryPolicy(retriesTimeouts: true).keyPart)
        for stage in [LoadStage.queued, .diskRead, .decode] {
            XCTAssertFalse(passes(.timedOut(url, seconds: 1, stage: stage), timeouts: true), "a request's own deadline")
        }
        for code in [408, 429, 502, 503, 504] {
            XCTAssertTrue(passes(.httpStatus(url, code: code)), "\(code)")
        }
        for code in [400, 401, 403, 404, 410, 416, 451, 500, 501, 505] {
            XCTAssertFalse(passes(.httpStatus(url, code: code)), "\(code)")
        }
        let never: [AsyncImageError] = [
            .transport(url, code: 0, message: "cancelled"), .transport(url, code: 6, message: "could not resolve host"),
            .transport(url, code: 18, message: "partial file"), .transport(url, code: 42, message: "aborted"),
            .tls(url, code: 60, message: "self-signed"), .refused(url, reason: "loopback"),
            .bodyTooLarge(url, limit: 1), .headersTooLarge(url, limit: 1), .tooManyRedirects(url, limit: 10),
            .disallowedRedirect(url, message: "file"), .unsupportedScheme(url), .fileNotFound(url), .notCached(url),
            .queueFull(url, limit: 1), .decoding(DecodingFailure(format: .png, stage: .pixels, reason: "bad"), url: url),
        ]
        for error in never { XCTAssertFalse(passes(error), "\(error)") }
    }

    func testRetryAfterIsReadAsSecondsOrAnHTTPDateFor429And503Only() {
        let url = Self.url
        func asked(_ code: Int, _ headers: [String: String], now: Double = 1_000_000) -> Double? {
            TransientFailure(.httpStatus(url, code: code, headers: headers), bodyArrived: false, now: now)?.retryAfter
        }
        XCTAssertEqual(asked(503, ["retry-after": "3"]), 3)
        XCTAssertEqual(asked(429, ["retry-after": " 0 "]), 0)
        XCTAssertEqual(asked(503, [:]), nil)
        XCTAssertEqual(asked(502, ["retry-after": "3"]), nil, "only 429 and 503 say when")
        XCTAssertEqual(asked(504, ["retry-after": "3"]), nil)
        for bad in ["-1", "1.5", "soon", "3 s", ""] { XCTAssertEqual(asked(503, ["retry-after": bad]), nil, bad) }
        // An HTTP-date: from the response's Date (the server's clock), else from now.
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        let then = HTTPFieldParsing.date(date)!
        XCTAssertEqual(asked(503, ["retry-after": "Sun, 06 Nov 1994 08:49:40 GMT", "date": date]), 3)
        XCTAssertEqual(asked(429, ["retry-after": "Sunday, 06-Nov-94 08:49:47 GMT", "date": date]), 10)
        XCTAssertEqual(asked(503, ["retry-after": date], now: then - 2), 2)
        XCTAssertEqual(asked(503, ["retry-after": date], now: then + 60), 0, "a date past is now")
    }

    func testTheBackoffDoublesUpToItsCapAndIsSpreadByTheJitter() {
        var policy = RetryPolicy(maxRetries: 9, baseDelay: .milliseconds(100), maxDelay: .milliseconds(500), jitter: .none)
        let exact = (1...5).map { policy.backoffSeconds(beforeRetry: $0, random: 0.7) }
        XCTAssertEqual(exact, [0.1, 0.2, 0.4, 0.5, 0.5])
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 10_000, random: 0), 0.5, "no overflow")
        XCTAssertEqual(policy.backoff(beforeRetry: 2, random: 0), .milliseconds(200))
        policy.jitter = .full
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 2, random: 0), 0)
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 2, random: 0.5), 0.1, accuracy: 1e-12)
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 3, random: 0.25), 0.1, accuracy: 1e-12)
        policy.jitter = .equal
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 2, random: 0), 0.1, accuracy: 1e-12, "never under half")
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 2, random: 0.5), 0.15, accuracy: 1e-12)
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 4, random: 1), 0.5, accuracy: 1e-12)
        XCTAssertEqual(policy.backoffSeconds(beforeRetry: 1, random: .nan), 0.05, accuracy: 1e-12)
        XCTAssertEqual(RetryPolicy(baseDelay: .seconds(-1)).backoffSeconds(beforeRetry: 1, random: 1), 0)
        // The default: two retries, 125-250 ms then 250-500 ms.
        let standard = RetryPolicy.standard
        XCTAssertEqual(standard.maxRetries, 2)
        XCTAssertEqual(standard.backoffSeconds(beforeRetry: 1, random: 0), 0.125)
        XCTAssertEqual(standard.backoffSeconds(beforeRetry: 2, random: 1), 0.5)
        XCTAssertEqual(RetryPolicy.disabled.maxRetries, 0)
        XCTAssertEqual(AsyncImageLoader.Configuration().retryPolicy, .standard)
    }

    func testRetryAfterReplacesTheBackoffUpToItsLimit() {
        let policy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(9), maxDelay: .seconds(9), maxRetryAfter: .seconds(5))
        let told = TransientFailure(.httpStatus(Self.url, code: 503, headers: ["retry-after": "4"]), bodyArrived: false, now: 0)!
        let tooLong = TransientFailure(.httpStatus(Self.url, code: 429, headers: ["retry-after": "6"]), bodyArrived: false, now: 0)!
        let silent = TransientFailure(.httpStatus(Self.url, code: 503), bodyArrived: false, now: 0)!
        XCTAssertEqual(policy.wait(beforeRetry: 1, after: told, random: 0), 4)
        XCTAssertNil(policy.wait(beforeRetry: 1, after: tooLong, random: 0), "asks for more than an image load has")
        XCTAssertEqual(policy.wait(beforeRetry: 1, after: silent, random: 0), 4.5)
        XCTAssertNil(policy.wait(beforeRetry: 3, after: told, random: 0), "past maxRetries")
        var ignoring = policy
        ignoring.maxRetryAfter = nil
        XCTAssertEqual(ignoring.wait(beforeRetry: 1, after: tooLong, random: 0), 4.5, "Retry-After ignored")
    }

    func testAMethodOverrideNamingAnUnsafeMethodMakesARequestNotIdempotent() {
        func idempotent(_ headers: [String: String]) -> Bool {
            TransientFailure.isIdempotent(DataRequest(url: Self.url, headers: headers))
        }
        XCTAssertTrue(idempotent([:]))
        XCTAssertTrue(idempotent(["X-HTTP-Method-Override": "GET"]))
        XCTAssertTrue(idempotent(["x-http-method": "put"]))
        XCTAssertTrue(idempotent(["X-Method-Override": ""]), "an empty value removes the header")
        XCTAssertFalse(idempotent(["X-HTTP-Method-Override": "POST"]))
        XCTAssertFalse(idempotent(["X-HTTP-METHOD": "patch"]))
        XCTAssertFalse(idempotent(["x-method-override": " Post "]))
    }

    // MARK: The schedule

    /// 503, 502, a reset, then the image: three retries, 20, 40 and 80 ms
    /// apart at least, each an event for the request and a log line.
    func testTransientFailuresAreRetriedOnTheScheduleUntilTheImageComes() async throws {
        let logs = LogRecorder(level: .info)
        let h = FakeHarness { $0.retryPolicy = Self.quick; $0.logger = logs.logger }
        let events = EventLog(h.loader)
        h.transport.script(
            h.url(1),
            [
                .failure(.httpStatus(h.url(1), code: 503)), .failure(.httpStatus(h.url(1), code: 502)),
                .failure(.transport(h.url(1), code: 56, message: "Connection reset by peer")), .image,
            ])
        h.transport.isSuspended = false
        let response = try await h.loader.response(for: ImageRequest(url: h.url(1)))
        XCTAssertEqual(response.source, .network)
        XCTAssertEqual(h.transport.startedPaths, Array(repeating: "/img/1.png", count: 4))
        XCTAssertEqual(events.retries, [Retry(1, 0.02), Retry(2, 0.04), Retry(3, 0.08)])
        XCTAssertEqual(
            events.errors(of: .retrying(attempt: 2, delay: 0.04)), [.httpStatus(h.url(1), code: 502)],
            "the failure rides on the event")
        XCTAssertEqual(events.kinds.filter { $0 == .transferFailed }, [])
        XCTAssertEqual(events.kinds.last, .delivered(success: true))
        let times = h.transport.startTimes
        for (n, delay) in [0.02, 0.04, 0.08].enumerated() {
            XCTAssertGreaterThanOrEqual(times[n + 1] - times[n], delay, "try \(n + 2) waited")
        }
        let lines = logs.messages.filter { $0.text.hasPrefix("retrying") }
        XCTAssertEqual(lines.map(\.level), [.info, .info, .info])
        XCTAssertEqual(lines.first?.text, "retrying in 20 ms (retry 1 of 3): HTTP status 503 for http://127.0.0.1/img/1.png")
        XCTAssertEqual(lines.last?.metadata["retry"], "3")
        XCTAssertEqual(lines.last?.metadata["url"], "\(h.url(1).absoluteString)")
        XCTAssertEqual(h.loader.activity.inFlight, 0)
    }

    /// A `Retry-After` date far ahead (year 9999), allowed by a huge
    /// `maxRetryAfter`, is a wait the timer can hold (at most about 31
    /// years), not a trap converting it to nanoseconds: a request with a
    /// deadline fails at once with the 503, one without waits (until cancelled).
    func testAFarFutureRetryAfterDoesNotTrap() async throws {
        let logs = LogRecorder(level: .info)
        let h = FakeHarness(concurrentLoads: 2) {
            $0.retryPolicy = RetryPolicy(maxRetries: 2, maxRetryAfter: .seconds(Int64.max))
            $0.logger = logs.logger
        }
        let events = EventLog(h.loader)
        let farAhead = ["retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"]
        let busy = AsyncImageError.httpStatus(h.url(1), code: 503, headers: farAhead)
        h.transport.script(h.url(1), [.failure(busy)])
        h.transport.isSuspended = false
        var withDeadline = ImageRequest(url: h.url(1))
        withDeadline.timeout = .seconds(30)
        await XCTAssertThrowsErrorAsync(try await h.loader.image(for: withDeadline)) {
            XCTAssertEqual($0 as? AsyncImageError, busy, "its deadline passes first")
        }
        XCTAssertEqual(AsyncImageLoader.waitable(1e300), AsyncImageLoader.longestRetryWait)
        XCTAssertEqual(AsyncImageLoader.waitable(.infinity), AsyncImageLoader.longestRetryWait)
        XCTAssertEqual(AsyncImageLoader.waitable(.nan), 0)
        XCTAssertEqual(AsyncImageLoader.waitable(-1), 0)

        let busy2 = AsyncImageError.httpStatus(h.url(2), code: 503, headers: farAhead)
        h.transport.script(h.url(2), [.failure(busy2)])
        let retrying = events.expectation(self) { if case .retrying = $0.kind { true } else { false } }
        let task = h.loader.loadImage(h.url(2))
        await fulfillment(of: [retrying], timeout: 10)
        XCTAssertEqual(events.retries(of: events.ids.last!).map(\.delay), [AsyncImageLoader.longestRetryWait])
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png", "/img/2.png"])
        task.cancel()
        XCTAssertTrue(waitUntil { h.loader.activity.pendingRequests == 0 && h.loader.activity.inFlight == 0 })
    }

    /// Past its retries the request fails with the last try's error, once.
    func testTheLastTrysFailureIsDeliveredOnceTheRetriesAreSpent() async {
        let logs = LogRecorder(level: .info)
        let h = FakeHarness { $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(5)); $0.logger = logs.logger }
        let events = EventLog(h.loader)
        h.transport.script(h.url(1), [.failure(.httpStatus(h.url(1), code: 503)), .failure(.httpStatus(h.url(1), code: 504))])
        h.transport.fail(h.url(1), with: .transport(h.url(1), code: 7, message: "Couldn't connect to server"))
        h.transport.isSuspended = false
        await XCTAssertThrowsErrorAsync(try await h.loader.image(for: h.url(1))) { error in
            XCTAssertEqual(error as? AsyncImageError, .transport(h.url(1), code: 7, message: "Couldn't connect to server"))
        }
        XCTAssertEqual(h.transport.startedPaths.count, 3)
        XCTAssertEqual(events.retries.map(\.attempt), [1, 2])
        XCTAssertEqual(Array(events.kinds.suffix(2)), [.transferFailed, .delivered(success: false)])
        XCTAssertTrue(
            logs.messages.contains { $0.text == "transfer failed after 2 retries: \(AsyncImageError.transport(h.url(1), code: 7, message: "Couldn't connect to server"))" },
            "\(logs.messages.map(\.text))")
    }

    /// One try each: nothing else passes the rule, a failure after body
    /// bytes is resumed rather than retried, and `.disabled` retries nothing.
    func testFailuresThatAreNotTransientAreTriedOnce() async {
        let h = FakeHarness(concurrentLoads: 4) { $0.retryPolicy = Self.quick }
        let answers: [FakeDataLoader.Answer] = [
            .failure(.httpStatus(h.url(1), code: 404)), .failure(.httpStatus(h.url(2), code: 500)),
            .failure(.tls(h.url(3), code: 60, message: "SSL certificate problem")),
            .failure(.bodyTooLarge(h.url(4), limit: 10)),
            .failureAfterBody(.transport(h.url(5), code: 56, message: "Connection reset by peer")),
            .failureAfterBody(.timedOut(h.url(6), seconds: 60, stage: .transfer)),
            .failure(.transport(h.url(7), code: 6, message: "Could not resolve host")),
        ]
        for (n, answer) in answers.enumerated() { h.transport.script(h.url(n + 1), [answer, .image]) }
        h.transport.isSuspended = false
        for n in 1...answers.count {
            await XCTAssertThrowsErrorAsync(try await h.loader.image(for: h.url(n)), "\(n)")
        }
        XCTAssertEqual(h.transport.startedPaths.sorted(), (1...answers.count).map { "/img/\($0).png" })

        let off = FakeHarness { $0.retryPolicy = .disabled }
        off.transport.fail(off.url(1), with: .httpStatus(off.url(1), code: 503))
        off.transport.isSuspended = false
        await XCTAssertThrowsErrorAsync(try await off.loader.image(for: off.url(1)))
        XCTAssertEqual(off.transport.startedPaths.count, 1)
    }

    /// A `Retry-After` replaces the computed wait; one longer than the
    /// policy allows is not waited for at all.
    func testRetryAfterIsWaitedForUnlessItIsTooLong() async throws {
        let h = FakeHarness {
            $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(30), maxRetryAfter: .milliseconds(500))
        }
        let events = EventLog(h.loader)
        h.transport.script(h.url(1), [.failure(.httpStatus(h.url(1), code: 503, headers: ["retry-after": "0"])), .image])
        h.transport.script(h.url(2), [.failure(.httpStatus(h.url(2), code: 429, headers: ["retry-after": "1"])), .image])
        h.transport.isSuspended = false
        _ = try await h.loader.image(for: h.url(1))  // not 30 s later
        XCTAssertEqual(events.retries, [Retry(1, 0)])
        await XCTAssertThrowsErrorAsync(try await h.loader.image(for: h.url(2))) { error in
            XCTAssertEqual(error as? AsyncImageError, .httpStatus(h.url(2), code: 429, headers: ["retry-after": "1"]))
        }
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png", "/img/1.png", "/img/2.png"])
    }

    /// The jitter is drawn from the loader's source, once per retry.
    func testTheJitterComesFromTheLoadersSource() async throws {
        let h = FakeHarness {
            $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(40), jitter: .full)
        }
        let draws = Box([0.25, 0.5])
        h.loader.state.withLock {
            $0.retryRandom = {
                var next = 0.0
                draws.update { next = $0!.removeFirst() }
                return next
            }
        }
        let events = EventLog(h.loader)
        h.transport.script(
            h.url(1), [.failure(.httpStatus(h.url(1), code: 503)), .failure(.httpStatus(h.url(1), code: 503)), .image])
        h.transport.isSuspended = false
        _ = try await h.loader.image(for: h.url(1))
        XCTAssertEqual(events.retries, [Retry(1, 0.01), Retry(2, 0.04)])
    }

    // MARK: Deadlines

    /// A request whose deadline would pass during the wait fails at once
    /// with the failure itself; one sharing its transfer without that
    /// deadline waits and gets the image.
    func testARetryThatWouldPassTheDeadlineIsNotWaitedFor() async throws {
        let h = FakeHarness { $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(2), jitter: .none) }
        let events = EventLog(h.loader)
        h.transport.script(h.url(1), [.failure(.httpStatus(h.url(1), code: 503)), .image])
        var hurried = ImageRequest(url: h.url(1))
        hurried.timeout = .milliseconds(1500)
        async let patient = h.loader.image(for: h.url(1))
        async let short = h.loader.image(for: hurried)
        await fulfillment(of: [h.transport.starts(1, self)], timeout: 10)
        while h.loader.activity.pendingRequests < 2 { await Task.yield() }
        h.transport.finish(h.url(1))
        do {
            _ = try await short
            XCTFail("expected the 503")
        } catch {
            XCTAssertEqual(error as? AsyncImageError, .httpStatus(h.url(1), code: 503), "the failure, not timedOut")
        }
        await fulfillment(of: [h.transport.starts(2, self)], timeout: 10)
        h.transport.finish(h.url(1))
        _ = try await patient
        // (`async let` makes the two in either order.)
        let hurriedID = try XCTUnwrap(events.all.first { $0.kind == .transferFailed }?.requestID)
        let patientID = try XCTUnwrap(events.ids.first { $0 != hurriedID })
        XCTAssertEqual(events.kinds(of: hurriedID), [.queued, .loading, .transferFailed, .delivered(success: false)])
        XCTAssertEqual(
            events.kinds(of: patientID),
            [.queued, .loading, .retrying(attempt: 1, delay: 2), .transferred(bytes: events.bytes), .decoding,
                .delivered(success: true)])
    }

    /// Alone, such a request fails at once; no timer is left behind.
    func testAloneARequestWhoseDeadlineComesFirstFailsAtOnce() async {
        let h = FakeHarness { $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(5)) }
        h.transport.fail(h.url(1), with: .httpStatus(h.url(1), code: 502))
        h.transport.isSuspended = false
        var request = ImageRequest(url: h.url(1))
        request.timeout = .seconds(1)
        let began = ProcessInfo.processInfo.systemUptime
        await XCTAssertThrowsErrorAsync(try await h.loader.image(for: request)) { error in
            XCTAssertEqual(error as? AsyncImageError, .httpStatus(h.url(1), code: 502))
        }
        XCTAssertLessThan(ProcessInfo.processInfo.systemUptime - began, 1)
        XCTAssertEqual(h.transport.startedPaths.count, 1)
        XCTAssertEqual(h.loader.activity.inFlight, 0)
    }

    // MARK: Cancellation and coalescing

    /// Cancelling the request during the wait frees the slot, lets go of
    /// the timer (and so the job), and no try follows.
    func testCancellingDuringTheWaitStopsTheRetry() async {
        let h = FakeHarness(concurrentLoads: 1) { $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(30)) }
        let events = EventLog(h.loader)
        h.transport.fail(h.url(1), with: .httpStatus(h.url(1), code: 503))
        h.transport.isSuspended = false
        let waiting = events.expectation(self) { $0.retryDelay != nil }
        let task = h.load(1)
        await fulfillment(of: [waiting], timeout: 10)
        weak let job = h.loader.state.withLock { $0.slots.holders.first }
        XCTAssertNotNil(job)
        XCTAssertEqual(h.loader.activity.inFlight, 1, "the slot is held during the wait")
        task.cancel()
        XCTAssertEqual(h.loader.activity.inFlight, 0, "freed at the cancel")
        await waitUntil { job == nil }  // the timer's handler, which held it, is gone
        XCTAssertNil(job)
        h.drainDeliveries()
        XCTAssertEqual(h.log.deliveredPaths, [], "cancelled: no outcome")
        XCTAssertEqual(events.kinds.last, .cancelled)
        XCTAssertEqual(h.transport.startedPaths.count, 1)
        // The slot serves the next request.
        _ = try? await h.loader.image(for: h.url(2))
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png", "/img/2.png"])
    }

    /// A loader let go during a wait cancels it too.
    func testALoaderLetGoDuringTheWaitLeavesNothingBehind() async {
        let transport = FakeDataLoader()
        transport.fail(Self.url, with: .httpStatus(Self.url, code: 503))
        transport.isSuspended = false
        weak var job: LoadJob?
        weak var weakLoader: AsyncImageLoader?
        do {
            let loader = AsyncImageLoader(
                configuration: .init(
                    cache: nil, deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil,
                    dataLoader: transport))
            loader.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .seconds(30))
            let events = EventLog(loader)
            let waiting = events.expectation(self) { $0.retryDelay != nil }
            loader.loadImage(Self.url)
            await fulfillment(of: [waiting], timeout: 10)
            job = loader.state.withLock { $0.slots.holders.first }
            weakLoader = loader
            XCTAssertNotNil(job)
        }
        await waitUntil { job == nil && weakLoader == nil }
        XCTAssertNil(weakLoader)
        XCTAssertNil(job)
        XCTAssertEqual(transport.startedPaths.count, 1)
    }

    /// Requests sharing the transfer share its retries: one try at a time
    /// for all, one outcome each; one that joins during the wait shares
    /// the next try.
    func testCoalescedRequestsShareTheRetriesAndGetOneOutcomeEach() async throws {
        let h = FakeHarness(concurrentLoads: 2) { $0.retryPolicy = RetryPolicy(maxRetries: 2, baseDelay: .milliseconds(300), jitter: .none) }
        let events = EventLog(h.loader)
        h.transport.script(h.url(1), [.failure(.httpStatus(h.url(1), code: 503)), .failure(.transport(h.url(1), code: 52, message: "Empty reply from server")), .image])
        let first = events.expectation(self) { $0.kind == .retrying(attempt: 1, delay: 0.3) }
        h.load(1)
        h.loader.loadImage(
            ImageRequest(url: h.url(1), targetSize: PixelSize(width: 2, height: 2)), success: h.log.success,
            failure: h.log.failure)
        await fulfillment(of: [h.transport.starts(1, self)], timeout: 10)
        while h.loader.activity.pendingRequests < 2 { await Task.yield() }
        h.transport.finish(h.url(1))
        await fulfillment(of: [first], timeout: 10)
        h.load(1)  // joins during the wait
        await fulfillment(of: [h.transport.starts(2, self)], timeout: 10)
        XCTAssertEqual(h.transport.running, ["/img/1.png"], "one try for the three")
        h.transport.isSuspended = false
        await fulfillment(of: [h.log.outcomes(3, self)], timeout: 10)
        h.drainDeliveries()
        XCTAssertEqual(h.transport.startedPaths.count, 3)
        XCTAssertEqual(h.log.deliveredPaths, Array(repeating: "/img/1.png", count: 3))
        XCTAssertEqual(h.log.errors, [:])
        let ids = events.ids
        XCTAssertEqual(ids.count, 3)
        for id in ids {
            XCTAssertEqual(events.kinds(of: id).filter { $0 == .delivered(success: true) }.count, 1, "one outcome")
        }
        XCTAssertEqual(events.retries(of: ids[0]).map(\.attempt), [1, 2])
        XCTAssertEqual(events.retries(of: ids[1]).map(\.attempt), [1, 2])
        XCTAssertEqual(events.retries(of: ids[2]).map(\.attempt), [2], "joined after the first")
        XCTAssertEqual(h.loader.activity.inFlight, 0)
    }

    /// A request's own policy replaces the loader's, and requests with
    /// different policies do not share a transfer.
    func testARequestsOwnPolicyReplacesTheLoadersAndHasItsOwnTransfer() async throws {
        let h = FakeHarness(concurrentLoads: 2) { $0.retryPolicy = .disabled }
        h.transport.script(h.url(1), [.failure(.httpStatus(h.url(1), code: 503)), .image])
        h.transport.script(h.url(2), [.failure(.httpStatus(h.url(2), code: 503)), .image])
        var retrying = ImageRequest(url: h.url(1))
        retrying.retryPolicy = Self.quick
        h.transport.isSuspended = false
        _ = try await h.loader.image(for: retrying)
        await XCTAssertThrowsErrorAsync(try await h.loader.image(for: h.url(2)))
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png", "/img/1.png", "/img/2.png"])
        XCTAssertNotEqual(retrying, ImageRequest(url: h.url(1)), "part of equality")

        // Two requests for one URL at once, one with its own policy: two transfers.
        h.transport.isSuspended = true
        var own = ImageRequest(url: h.url(3))
        own.retryPolicy = Self.quick
        var same = ImageRequest(url: h.url(3))
        same.retryPolicy = .disabled  // equal to the loader's: shares with the plain one
        h.loader.loadImage(own)
        h.loader.loadImage(ImageRequest(url: h.url(3)))
        h.loader.loadImage(same)
        await fulfillment(of: [h.transport.starts(5, self)], timeout: 10)
        XCTAssertEqual(h.transport.running, ["/img/3.png", "/img/3.png"])
        XCTAssertEqual(h.loader.activity.pendingRequests, 3)
        h.transport.isSuspended = false
        await waitUntil { h.loader.activity.pendingRequests == 0 }
    }

    /// A modifier that adds a method override naming an unsafe method turns
    /// retries off for the transfer; one naming `GET` does not.
    func testAMethodOverrideFromTheRequestModifierTurnsRetriesOff() async throws {
        let h = FakeHarness {
            $0.retryPolicy = Self.quick
            $0.requestModifier = { request in
                request.headers["X-HTTP-Method-Override"] = request.url.lastPathComponent == "1.png" ? "POST" : "GET"
            }
        }
        for n in [1, 2] { h.transport.script(h.url(n), [.failure(.httpStatus(h.url(n), code: 503)), .image]) }
        h.transport.isSuspended = false
        await XCTAssertThrowsErrorAsync(try await h.loader.image(for: h.url(1)))
        _ = try await h.loader.image(for: h.url(2))
        XCTAssertEqual(h.transport.startedPaths, ["/img/1.png", "/img/2.png", "/img/2.png"])
    }

    // MARK: The HTTP cache

    /// A stale stored response that may be served on error is served at
    /// once, not retried; with `.neverStale` the revalidation is retried,
    /// validators and all.
    func testAStaleResponseIsServedAtOnceRatherThanRetried() async throws {
        let fake = FakeDataLoader()
        let transport = AnsweringTransport(fake, headers: ["etag": "\"v1\"", "cache-control": "max-age=0"])
        let store = MemoryDataStore()
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), deliveryQueue: DispatchQueue(label: "d"), notificationCenter: nil,
                dataLoader: transport, diskCache: store))
        loader.retryPolicy = Self.quick
        let events = EventLog(loader)
        fake.isSuspended = false
        _ = try await loader.image(for: Self.url)  // stored, stale at once
        await loader.flushDiskWrites()
        fake.script(Self.url, [.failure(.httpStatus(Self.url, code: 503))])
        let revalidate = ImageRequest(url: Self.url, cachePolicy: [.skipMemoryReads])
        let stale = try await loader.response(for: revalidate)
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(fake.startedPaths.count, 2, "no retry: the stale image now")
        XCTAssertEqual(events.all.compactMap(\.retryDelay), [])

        fake.script(Self.url, [.failure(.transport(Self.url, code: 7, message: "Couldn't connect to server")), .image])
        let fresh = try await loader.response(for: ImageRequest(url: Self.url, cachePolicy: [.skipMemoryReads, .neverStale]))
        XCTAssertFalse(fresh.isStale)
        XCTAssertEqual(fake.startedPaths.count, 4)
        XCTAssertEqual(events.all.compactMap(\.retryDelay), [0.02])
        XCTAssertEqual(fake.startedRequests.last?.header("If-None-Match"), "\"v1\"", "the retry revalidates too")
    }

    // MARK: Metrics

    #if MetricsSupport
        /// `_retries_total` counts each retry once, however many requests share it.
        func testMetricsCountRetriesOncePerTransfer() async throws {
            let metrics = TestMetrics()
            let h = FakeHarness { $0.retryPolicy = Self.quick }
            let recorder = LoaderMetrics(loader: h.loader, factory: metrics)
            h.transport.script(
                h.url(1), [.failure(.httpStatus(h.url(1), code: 503)), .failure(.httpStatus(h.url(1), code: 503)), .image])
            async let a = h.loader.image(for: h.url(1))
            async let b = h.loader.image(for: ImageRequest(url: h.url(1), targetSize: PixelSize(width: 2, height: 2)))
            await fulfillment(of: [h.transport.starts(1, self)], timeout: 10)
            while h.loader.activity.pendingRequests < 2 { await Task.yield() }
            h.transport.isSuspended = false
            _ = try await (a, b)
            XCTAssertEqual(try metrics.expectCounter("asyncimage_retries_total").totalValue, 2)
            withExtendedLifetime(recorder) {}
        }
    #endif

    // MARK: Helpers

    /// Polls `condition` (a release on another thread, a timer's handler
    /// let go) for up to 10 s.
    private func waitUntil(_ condition: () -> Bool) async {
        let deadline = ProcessInfo.processInfo.systemUptime + 10
        while !condition(), ProcessInfo.processInfo.systemUptime < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// A retry as events report it.
struct Retry: Equatable, CustomStringConvertible {
    let attempt: Int
    let delay: Double

    init(_ attempt: Int, _ delay: Double) {
        self.attempt = attempt
        self.delay = delay
    }

    var description: String { "retry \(attempt) after \(delay) s" }
}

extension LoaderEvent {
    /// The wait of a ``LoaderEvent/Kind/retrying(attempt:delay:)`` event.
    var retryDelay: Double? {
        if case .retrying(_, let delay) = kind { return delay }
        return nil
    }
}

/// A loader's events in their true order (``LoaderEvent/sequence``), and
/// expectations fulfilled by the first that matches.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var events: [LoaderEvent] = []
    private var waiters: [(matches: @Sendable (LoaderEvent) -> Bool, expectation: XCTestExpectation)] = []

    init(_ loader: AsyncImageLoader) {
        loader.eventMonitor = { [self] event in record(event) }
    }

    private func record(_ event: LoaderEvent) {
        let ready = lock.withLock { () -> [XCTestExpectation] in
            events.append(event)
            let ready = waiters.filter { $0.matches(event) }.map(\.expectation)
            waiters.removeAll { $0.matches(event) }
            return ready
        }
        ready.forEach { $0.fulfill() }
    }

    var all: [LoaderEvent] { lock.withLock { events.sorted { $0.sequence < $1.sequence } } }
    var kinds: [LoaderEvent.Kind] { all.map(\.kind) }
    /// Request ids, in the order they were made.
    var ids: [UInt64] { Array(Set(all.map(\.requestID))).sorted() }
    func kinds(of id: UInt64) -> [LoaderEvent.Kind] { all.filter { $0.requestID == id }.map(\.kind) }

    /// The retries, once each (the first request's events).
    var retries: [Retry] {
        guard let first = ids.first else { return [] }
        return retries(of: first)
    }

    func retries(of id: UInt64) -> [Retry] {
        all.filter { $0.requestID == id }.compactMap {
            if case .retrying(let attempt, let delay) = $0.kind { return Retry(attempt, delay) }
            return nil
        }
    }

    func errors(of kind: LoaderEvent.Kind) -> [AsyncImageError] {
        all.filter { $0.kind == kind }.compactMap(\.error).reduce(into: []) { if !$0.contains($1) { $0.append($1) } }
    }

    /// The bytes of the first transfer that brought a body.
    var bytes: Int {
        for event in all { if case .transferred(let count) = event.kind { return count } }
        return -1
    }

    func expectation(_ test: XCTestCase, matching: @escaping @Sendable (LoaderEvent) -> Bool) -> XCTestExpectation {
        let expectation = test.expectation(description: "an event")
        let seen = lock.withLock { () -> Bool in
            if events.contains(where: matching) { return true }
            waiters.append((matching, expectation))
            return false
        }
        if seen { expectation.fulfill() }
        return expectation
    }
}

/// `XCTAssertThrowsError` for an async expression.
func XCTAssertThrowsErrorAsync<T>(
    _ expression: @autoclosure () async throws -> T, _ message: String = "", file: StaticString = #filePath,
    line: UInt = #line, _ handler: (Error) -> Void = { _ in }
) async {
    do {
        _ = try await expression()
        XCTFail("expected an error \(message)", file: file, line: line)
    } catch {
        handler(error)
    }
}
