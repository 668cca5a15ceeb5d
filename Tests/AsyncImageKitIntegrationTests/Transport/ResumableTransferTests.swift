@testable import AsyncImageKit
import Foundation
import LoopbackHTTP
import TestSupport
import XCTest

/// The transport's side of resumable downloads (issue 14 item 9): progress,
/// partial bodies of transfers cut off, timed out or cancelled mid-body, and
/// `Range` / `If-Range` requests answered with 206, 200 or 416, against a
/// loopback server that cuts or holds connections mid-body.
final class ResumableTransferTests: XCTestCase {
    private var server: ImageServer!
    private var gates: [Gate] = []
    /// Pseudo-random (incompressible) bytes.
    private let body: Data = {
        var seed: UInt32 = 0x1234_5678
        return Data((0..<20_000).map { _ in
            seed = seed &* 1_664_525 &+ 1_013_904_223
            return UInt8(truncatingIfNeeded: seed >> 24)
        })
    }()

    override func setUpWithError() throws {
        server = try ImageServer()
    }

    override func tearDown() {
        gates.forEach { $0.open() }
        server.stop()
        server = nil
    }

    private func gate() -> Gate {
        let gate = Gate()
        gates.append(gate)
        return gate
    }

    // MARK: Cut off, then resumed

    func testCutMidBodyKeepsWhatArrivedAndResumesWithRange() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/big", resource: resource)
        resource.inject(.cut(after: 7_000))

        let first = TransferRecorder(self)
        let result = first.load(url)
        guard case .failure(.transport(let failed, let code, _)) = result else {
            return XCTFail("expected a transport error, got \(result)")
        }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(code, 18)  // CURLE_PARTIAL_FILE
        let partial = try XCTUnwrap(first.partials.first)
        XCTAssertEqual(first.partials.count, 1)
        XCTAssertEqual(first.order, ["partial", "completion"], "the partial body comes before the completion")
        XCTAssertEqual(partial.data, body.prefix(7_000))
        XCTAssertEqual(partial.statusCode, 200)
        XCTAssertEqual(partial.url, url)
        XCTAssertEqual(partial.finalURL, url)
        XCTAssertEqual(partial.headers["etag"], resource.etag)
        XCTAssertEqual(partial.headers["last-modified"], resource.lastModified)
        XCTAssertEqual(partial.headers["content-length"], "20000")
        XCTAssertEqual(partial.ifRangeValidator, resource.etag)
        XCTAssertEqual(partial.firstByteOffset, 0)
        XCTAssertEqual(first.lastProgress?.received, 7_000)
        XCTAssertEqual(first.lastProgress?.expected, 20_000)

        // The rest, with the validator.
        let second = TransferRecorder(self)
        let headers = ["Range": "bytes=\(partial.data.count)-", "If-Range": try XCTUnwrap(partial.ifRangeValidator)]
        let response = try second.load(url, headers: headers).get()
        XCTAssertEqual(response.statusCode, 206)
        XCTAssertEqual(response.headers["content-range"], "bytes 7000-19999/20000")
        XCTAssertEqual(response.headers["content-range"].flatMap(ContentRange.init), ContentRange(first: 7_000, last: 19_999, total: 20_000))
        XCTAssertEqual(response.data, body.dropFirst(7_000))
        XCTAssertEqual(partial.data + response.data, body)
        XCTAssertTrue(second.partials.isEmpty, "a transfer that got its whole body has no partial body")
        XCTAssertEqual(second.lastProgress?.received, 13_000)
        XCTAssertEqual(second.lastProgress?.expected, 13_000, "a 206's expected length is its part's")
        // A range is asked for unencoded, so offsets count the stored bytes.
        XCTAssertEqual(resource.answers.last?.requestHeaders["accept-encoding"], "identity")
        XCTAssertEqual(resource.answers.map(\.status), [200, 206])
    }

    func testResumeWithTheLastModifiedDate() throws {
        let resource = RangeResource(body: body, etag: "W/\"weak\"")
        let url = server.serve("/dated", resource: resource)
        resource.inject(.cut(after: 3_000))
        let first = TransferRecorder(self)
        _ = first.load(url)
        let partial = try XCTUnwrap(first.partials.first)
        XCTAssertEqual(partial.headers["etag"], "W/\"weak\"")
        // A weak ETag cannot be used in If-Range: the date is.
        XCTAssertEqual(partial.ifRangeValidator, resource.lastModified)

        let response = try TransferRecorder(self).load(
            url, headers: ["Range": "bytes=3000-", "If-Range": try XCTUnwrap(partial.ifRangeValidator)]
        ).get()
        XCTAssertEqual(response.statusCode, 206)
        XCTAssertEqual(partial.data + response.data, body)
    }

    /// The representation changed: `If-Range` does not match, and the answer
    /// is the whole new body (200), to start over with.
    func testIfRangeMismatchGetsTheWholeBody() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/changed", resource: resource)
        let oldTag = try XCTUnwrap(resource.etag)
        let newBody = Data(body.reversed())
        resource.replace(body: newBody)
        XCTAssertNotEqual(resource.etag, oldTag)

        let recorder = TransferRecorder(self)
        let response = try recorder.load(url, headers: ["Range": "bytes=5000-", "If-Range": oldTag]).get()
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.data, newBody)
        XCTAssertNil(response.headers["content-range"])
        XCTAssertEqual(response.headers["etag"], resource.etag)
        XCTAssertEqual(recorder.lastProgress?.expected, 20_000)

        // An old date does not match either.
        let byDate = try TransferRecorder(self).load(
            url, headers: ["Range": "bytes=5000-", "If-Range": "Wed, 21 Oct 2015 07:28:00 GMT"]
        ).get()
        XCTAssertEqual(byDate.statusCode, 200)
        XCTAssertEqual(byDate.data, newBody)
    }

    /// A resumed transfer cut again: its partial body is a 206's, with its `Content-Range`.
    func testResumedTransferCutAgainReportsA206PartialBody() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/again", resource: resource)
        resource.inject(.cut(after: 4_000))
        let recorder = TransferRecorder(self)
        let headers = ["Range": "bytes=6000-", "If-Range": try XCTUnwrap(resource.etag)]
        guard case .failure(.transport(_, 18, _)) = recorder.load(url, headers: headers) else {
            return XCTFail("expected a transfer cut short")
        }
        let partial = try XCTUnwrap(recorder.partials.first)
        XCTAssertEqual(partial.statusCode, 206)
        XCTAssertEqual(partial.contentRange, ContentRange(first: 6_000, last: 19_999, total: 20_000))
        XCTAssertEqual(partial.firstByteOffset, 6_000)
        XCTAssertEqual(partial.data, body[6_000..<10_000])
        XCTAssertEqual(recorder.lastProgress?.expected, 14_000)
    }

    func testBoundedAndSuffixRanges() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/ranges", resource: resource)
        let bounded = try TransferRecorder(self).load(url, headers: ["Range": "bytes=100-199"]).get()
        XCTAssertEqual(bounded.statusCode, 206)
        XCTAssertEqual(bounded.data, body[100..<200])
        XCTAssertEqual(bounded.headers["content-range"], "bytes 100-199/20000")
        let suffix = try TransferRecorder(self).load(url, headers: ["Range": "bytes=-10"]).get()
        XCTAssertEqual(suffix.data, body.suffix(10))
        let several = try TransferRecorder(self).load(url, headers: ["Range": "bytes=0-1,5-6"]).get()
        XCTAssertEqual(several.statusCode, 200, "several ranges are not served: the whole body")
        XCTAssertEqual(several.data, body)
        // Without accepted encodings, a range asks for none (as any request then).
        let plain = TransportConfiguration(acceptsEncodedBodies: false)
        XCTAssertEqual(try TransferRecorder(self).load(url, headers: ["Range": "bytes=1-"], configuration: plain).get().statusCode, 206)
        XCTAssertNil(resource.answers.last?.requestHeaders["accept-encoding"])
    }

    /// A range past the end is a typed 416 failure (libcurl's fail-on-error
    /// treats it as any other status of 400 or more), with no partial body.
    func testUnsatisfiableRangeFailsWith416() {
        let resource = RangeResource(body: body)
        let url = server.serve("/past-the-end", resource: resource)
        let recorder = TransferRecorder(self)
        let result = recorder.load(url, headers: ["Range": "bytes=20000-", "If-Range": resource.etag ?? ""])
        guard case .failure(let error) = result else { return XCTFail("expected a failure, got \(result)") }
        XCTAssertEqual(withoutHeaders(error), .httpStatus(url, code: 416))
        XCTAssertTrue(recorder.partials.isEmpty)
        XCTAssertEqual(resource.answers.map(\.status), [416])
    }

    func testPartialBodyAfterARedirectNamesTheFinalURL() throws {
        let resource = RangeResource(body: body)
        let target = server.serve("/target", resource: resource)
        server.respond("/moved") { c in c.respond(status: 302, headers: [("Location", "/target")], body: Data()) }
        resource.inject(.cut(after: 1_000))
        let recorder = TransferRecorder(self)
        _ = recorder.load(server.url(path: "/moved"))
        let partial = try XCTUnwrap(recorder.partials.first)
        XCTAssertEqual(partial.url, server.url(path: "/moved"))
        XCTAssertEqual(partial.finalURL, target)
        XCTAssertEqual(partial.data, body.prefix(1_000))
    }

    /// A failure's completion is claimed before its partial body is
    /// reported: a cancel from the partial handler answers false, and the
    /// completion runs.
    func testCancelFromThePartialHandlerOfAFailureIsTooLate() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/cut-later", resource: resource)
        let cut = gate()
        resource.inject(.holdThenCut(after: 3_000, gate: cut))
        let task = Box<DataTask>()
        let lateCancel = Box<Bool>()
        let recorder = TransferRecorder(self, onPartial: { _ in lateCancel.value = task.value?.cancel() })
        let reached = recorder.progress(reaching: 3_000)
        let result = Box<Result<DataResponse, AsyncImageError>>()
        task.value = recorder.start(url, result: result)
        wait(for: [reached], timeout: 15)
        cut.open()
        wait(for: [recorder.partialArrived, recorder.completed], timeout: 15, enforceOrder: true)
        XCTAssertEqual(lateCancel.value, false)
        XCTAssertEqual(recorder.order, ["partial", "completion"])
        XCTAssertEqual(recorder.partials.first?.data, body.prefix(3_000))
        guard case .failure(.transport(_, 18, _))? = result.value else {
            return XCTFail("expected a transfer cut short, got \(String(describing: result.value))")
        }
    }

    // MARK: Cancelled and timed out mid-body

    /// The server sends K bytes and holds; the test waits until progress has
    /// seen them, cancels, and gets exactly those bytes as a partial body;
    /// the completion handler never runs.
    func testCancelMidBodyReportsThePartialBodyAfterTheCancel() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/held", resource: resource)
        resource.inject(.hold(after: 5_000, gate: gate()))
        let queue = DispatchQueue(label: "serial completions")
        let recorder = TransferRecorder(self)
        let reached = recorder.progress(reaching: 5_000)
        let task = recorder.start(url, queue: queue)
        wait(for: [reached], timeout: 15)
        XCTAssertEqual(recorder.lastProgress?.received, 5_000)
        XCTAssertEqual(recorder.lastProgress?.expected, 20_000)
        XCTAssertTrue(recorder.partials.isEmpty, "no partial body while the transfer runs")
        let progressCalls = recorder.progressCount
        XCTAssertTrue(recorder.cancel(task))
        wait(for: [recorder.partialArrived], timeout: 15)
        let partial = try XCTUnwrap(recorder.partials.first)
        XCTAssertEqual(partial.data, body.prefix(5_000))
        XCTAssertEqual(partial.statusCode, 200)
        XCTAssertEqual(partial.headers["etag"], resource.etag)
        // Anything the cancelled transfer could still deliver would be queued before this.
        let later = TransferRecorder(self)
        _ = later.load(server.url(path: "/elsewhere"), queue: queue)
        queue.sync {}
        XCTAssertEqual(recorder.completions, 0, "a cancelled transfer ran its completion")
        XCTAssertEqual(recorder.partials.count, 1)
        XCTAssertEqual(recorder.order, ["cancelled", "partial"])
        XCTAssertEqual(recorder.progressCount, progressCalls, "progress after cancel() returned true")
        XCTAssertFalse(task.cancel(), "a second cancel changes nothing")
    }

    /// A progress handler may cancel its own transfer (no deadlock); the
    /// partial body follows, the completion never runs.
    func testProgressHandlerCancelsItsOwnTransfer() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/self-cancel", resource: resource)
        let hold = gate()
        resource.inject(.hold(after: 2_000, gate: hold))
        let task = Box<DataTask>()
        let cancelled = Box<Bool>()
        let recorder = TransferRecorder(self) { received, _ in
            guard received > 2_000, cancelled.value == nil, let task = task.value else { return }
            cancelled.value = task.cancel()
        }
        let reached = recorder.progress(reaching: 2_000)
        task.value = recorder.start(url, queue: DispatchQueue(label: "serial completions"))
        wait(for: [reached], timeout: 15)
        hold.open()  // the rest comes: the first progress call past 2,000 bytes cancels
        wait(for: [recorder.partialArrived], timeout: 15)
        XCTAssertEqual(cancelled.value, true)
        let partial = try XCTUnwrap(recorder.partials.first)
        XCTAssertGreaterThan(partial.data.count, 2_000)
        XCTAssertEqual(partial.data, body.prefix(partial.data.count))
        XCTAssertEqual(recorder.completions, 0)
    }

    func testTimeoutMidBodyReportsThePartialBody() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/slow", resource: resource)
        resource.inject(.hold(after: 6_000, gate: gate()))
        let recorder = TransferRecorder(self)
        let result = recorder.load(url, configuration: TransportConfiguration(timeout: 1))
        guard case .failure(.timedOut(let failed, let seconds, .transfer)) = result else {
            return XCTFail("expected a timeout, got \(result)")
        }
        XCTAssertEqual(failed, url)
        XCTAssertEqual(seconds, 1)
        XCTAssertEqual(recorder.order, ["partial", "completion"])
        let partial = try XCTUnwrap(recorder.partials.first)
        XCTAssertEqual(partial.data, body.prefix(6_000))
        XCTAssertEqual(partial.headers["etag"], resource.etag)
    }

    // MARK: No partial body

    /// A content-encoded body has no partial body: ranges count encoded
    /// bytes, and the transport keeps only decoded ones.
    func testNoPartialBodyForAnEncodedBody() {
        let compressed = Gzip.compress(body)
        server.respond("/gzip") { c in
            c.write(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: \(compressed.count)\r\n"
                    + "ETag: \"gz\"\r\nAccept-Ranges: bytes\r\n\r\n")
            c.write(compressed.prefix(compressed.count / 2))
            c.close()
        }
        let recorder = TransferRecorder(self)
        guard case .failure = recorder.load(server.url(path: "/gzip")) else { return XCTFail("expected a failure") }
        XCTAssertGreaterThan(recorder.lastProgress?.received ?? 0, 0, "decoded bytes arrived")
        XCTAssertEqual(recorder.progressCount, recorder.progressWithoutExpected, "no expected length for an encoded body")
        XCTAssertTrue(recorder.partials.isEmpty)
    }

    func testNoPartialBodyForAnErrorStatus() {
        server.respond("/missing") { c in
            c.write("HTTP/1.1 404 Not Found\r\nContent-Length: 5000\r\nETag: \"x\"\r\n\r\n")
            c.write(Data(repeating: 1, count: 100))
            c.close()
        }
        let recorder = TransferRecorder(self)
        XCTAssertEqual(withoutHeaders(recorder.load(server.url(path: "/missing")).failure), .httpStatus(server.url(path: "/missing"), code: 404))
        XCTAssertTrue(recorder.partials.isEmpty)
        XCTAssertEqual(recorder.progressCount, 0)
    }

    func testNoPartialBodyWhenNoBodyByteArrived() {
        let resource = RangeResource(body: body)
        let url = server.serve("/empty-cut", resource: resource)
        resource.inject(.cut(after: 0))
        let recorder = TransferRecorder(self)
        guard case .failure(.transport(_, 18, _)) = recorder.load(url) else { return XCTFail("expected a transfer cut short") }
        XCTAssertTrue(recorder.partials.isEmpty)
        XCTAssertEqual(recorder.progressCount, 0)
    }

    func testNoPartialBodyPastTheBodyLimit() {
        server.respond("/chunks") { c in
            c.startChunked(headers: [("ETag", "\"c\"")])
            for _ in 0..<3 where c.writeChunk(Data(repeating: 7, count: 4_000)) {}
            c.endChunks()
        }
        let recorder = TransferRecorder(self)
        let result = recorder.load(server.url(path: "/chunks"), configuration: TransportConfiguration(maxBodySize: 5_000))
        XCTAssertEqual(result.failure, .bodyTooLarge(server.url(path: "/chunks"), limit: 5_000))
        XCTAssertTrue(recorder.partials.isEmpty)
        // However libcurl splits the chunks, what was accepted is within the limit.
        XCTAssertTrue((1...5_000).contains(recorder.lastProgress?.received ?? 0))
        XCTAssertEqual(recorder.progressCount, recorder.progressWithoutExpected, "no length for a chunked body")
    }

    // MARK: Progress, files, other transports

    func testProgressReportsTheContentLength() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/whole", resource: resource)
        let recorder = TransferRecorder(self)
        XCTAssertEqual(try recorder.load(url).get().data, body)
        XCTAssertEqual(recorder.lastProgress?.received, 20_000)
        XCTAssertGreaterThan(recorder.progressCount, 0)
        XCTAssertEqual(recorder.progressWithoutExpected, 0, "every call carries Content-Length")
        XCTAssertTrue(recorder.progressIsIncreasing)
        XCTAssertTrue(recorder.partials.isEmpty)
        XCTAssertEqual(recorder.order, ["completion"])
        // Without a range the configuration's encodings are asked for, as before.
        XCTAssertNotEqual(resource.answers.last?.requestHeaders["accept-encoding"], "identity")
    }

    func testFileURLWithAnObserver() throws {
        let folder = temporaryFolder("resumable")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("body.bin")
        try body.write(to: file)
        let recorder = TransferRecorder(self)
        XCTAssertEqual(try recorder.load(file).get().data, body)
        XCTAssertEqual(recorder.lastProgress?.received, 20_000)
        XCTAssertEqual(recorder.lastProgress?.expected, 20_000)
        XCTAssertTrue(recorder.partials.isEmpty)
    }

    /// A transport that implements only `loadData(_:completion:)` still
    /// conforms: the observer is ignored.
    func testTransportsWithoutObservationIgnoreTheObserver() throws {
        struct Plain: DataLoading {
            struct Task: DataLoadingTask {
                func cancel() -> Bool { false }
            }
            func loadData(
                _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
            ) -> any DataLoadingTask {
                DispatchQueue.global().async { completion(.success(DataResponse(url: request.url, statusCode: 200, data: Data([1, 2])))) }
                return Task()
            }
        }
        let transport: any DataLoading = Plain()
        let done = expectation(description: "completion")
        let observed = Counter()
        let observer = DataTransferObserver(progress: { _, _ in observed.increment() }, partial: { _ in observed.increment() })
        _ = transport.loadData(DataRequest(url: URL(string: "http://127.0.0.1/x")!), observer: observer) { result in
            XCTAssertEqual(try? result.get().data, Data([1, 2]))
            done.fulfill()
        }
        wait(for: [done], timeout: 15)
        XCTAssertEqual(observed.value, 0)
    }

    /// The `DataLoading` entry point passes the observer through (the loader's seam).
    func testDataLoadingEntryPointReportsToTheObserver() throws {
        let resource = RangeResource(body: body)
        let url = server.serve("/seam", resource: resource)
        resource.inject(.cut(after: 900))
        let partial = Box<PartialBody>()
        let done = expectation(description: "completion")
        let transport: any DataLoading = DataLoader()
        _ = transport.loadData(DataRequest(url: url, timeout: 30), observer: DataTransferObserver(partial: { partial.value = $0 })) { _ in
            done.fulfill()
        }
        wait(for: [done], timeout: 15)
        XCTAssertEqual(partial.value?.data, body.prefix(900))
    }

    func testContentRangeParsing() {
        XCTAssertEqual(ContentRange("bytes 0-9/10"), ContentRange(first: 0, last: 9, total: 10))
        XCTAssertEqual(ContentRange(" bytes 5-9/*"), ContentRange(first: 5, last: 9, total: nil))
        XCTAssertEqual(ContentRange("bytes 5-9/*")?.count, 5)
        for bad in ["bytes */10", "bytes 9-5/10", "bytes 0-9/9", "items 0-9/10", "bytes 0-9", "bytes a-9/10", ""] {
            XCTAssertNil(ContentRange(bad), bad)
        }
    }

    func testRangeParsingOfTheTestServer() {
        XCTAssertEqual(RangeResource.parse(range: "bytes=10-", length: 100), .bytes(first: 10, last: 99))
        XCTAssertEqual(RangeResource.parse(range: "bytes=10-500", length: 100), .bytes(first: 10, last: 99))
        XCTAssertEqual(RangeResource.parse(range: "bytes=100-", length: 100), .unsatisfiable)
        XCTAssertEqual(RangeResource.parse(range: "bytes=-0", length: 100), .unsatisfiable)
        XCTAssertEqual(RangeResource.parse(range: "bytes=-150", length: 100), .bytes(first: 0, last: 99))
        XCTAssertEqual(RangeResource.parse(range: "bytes=20-10", length: 100), .ignored)
        XCTAssertEqual(RangeResource.parse(range: "pages=1-", length: 100), .ignored)
    }
}

/// Records one transfer's progress calls, partial bodies and completions, in order.
private final class TransferRecorder: @unchecked Sendable {
    private let lock = NSLock()
    private var progressCalls: [(received: Int, expected: Int?)] = []
    private var storedPartials: [PartialBody] = []
    private var storedOrder: [String] = []
    private var storedCompletions = 0
    private var progressWaiters: [(bytes: Int, expectation: XCTestExpectation)] = []
    private let test: XCTestCase
    private let onProgress: (@Sendable (Int, Int?) -> Void)?
    private let onPartial: (@Sendable (PartialBody) -> Void)?
    let partialArrived: XCTestExpectation
    let completed: XCTestExpectation

    init(
        _ test: XCTestCase, onProgress: (@Sendable (Int, Int?) -> Void)? = nil,
        onPartial: (@Sendable (PartialBody) -> Void)? = nil
    ) {
        self.test = test
        self.onProgress = onProgress
        self.onPartial = onPartial
        // Not the test case's: a test waits only for those it needs.
        partialArrived = XCTestExpectation(description: "partial body")
        partialArrived.assertForOverFulfill = true
        completed = XCTestExpectation(description: "completion")
        completed.assertForOverFulfill = true
    }

    var partials: [PartialBody] { lock.withLock { storedPartials } }
    var order: [String] { lock.withLock { storedOrder } }
    var completions: Int { lock.withLock { storedCompletions } }
    var progressCount: Int { lock.withLock { progressCalls.count } }
    var progressWithoutExpected: Int { lock.withLock { progressCalls.filter { $0.expected == nil }.count } }
    var lastProgress: (received: Int, expected: Int?)? { lock.withLock { progressCalls.last } }
    var progressIsIncreasing: Bool {
        lock.withLock { zip(progressCalls, progressCalls.dropFirst()).allSatisfy { $0.received < $1.received } }
    }

    /// Taken around a cancel and by the partial handler: the handler must
    /// see what was done under it (it never runs before cancel() decided).
    private let cancelLock = NSLock()

    /// Cancels `task`, and records it, holding a lock the partial handler takes.
    func cancel(_ task: DataTask) -> Bool {
        cancelLock.withLock {
            let cancelled = task.cancel()
            if cancelled { lock.withLock { storedOrder.append("cancelled") } }
            return cancelled
        }
    }

    /// Fulfilled once progress reports at least `bytes`.
    func progress(reaching bytes: Int) -> XCTestExpectation {
        let expectation = XCTestExpectation(description: "progress reaches \(bytes)")
        let reached = lock.withLock { () -> Bool in
            if (progressCalls.last?.received ?? 0) >= bytes { return true }
            progressWaiters.append((bytes, expectation))
            return false
        }
        if reached { expectation.fulfill() }
        return expectation
    }

    var observer: DataTransferObserver {
        DataTransferObserver(
            progress: { [self] received, expected in
                let ready = lock.withLock { () -> [XCTestExpectation] in
                    progressCalls.append((received, expected))
                    let ready = progressWaiters.filter { $0.bytes <= received }.map(\.expectation)
                    progressWaiters.removeAll { $0.bytes <= received }
                    return ready
                }
                ready.forEach { $0.fulfill() }
                onProgress?(received, expected)
            },
            partial: { [self] partial in
                cancelLock.lock()
                defer { cancelLock.unlock() }
                lock.withLock {
                    storedPartials.append(partial)
                    storedOrder.append("partial")
                }
                onPartial?(partial)
                partialArrived.fulfill()
            })
    }

    /// Starts a transfer; the completion is recorded.
    func start(
        _ url: URL, headers: [String: String] = [:], configuration: TransportConfiguration = TransportConfiguration(),
        queue: DispatchQueue = .global(), result: Box<Result<DataResponse, AsyncImageError>> = Box()
    ) -> DataTask {
        DataLoader(configuration: configuration, completionQueue: queue).loadData(
            from: url, headers: headers, observer: observer
        ) { [self] outcome in
            lock.withLock {
                storedCompletions += 1
                storedOrder.append("completion")
            }
            result.value = outcome
            completed.fulfill()
        }
    }

    /// Runs a transfer to its completion (and its partial body, if it must have one).
    func load(
        _ url: URL, headers: [String: String] = [:], configuration: TransportConfiguration = TransportConfiguration(),
        queue: DispatchQueue = .global(), file: StaticString = #filePath, line: UInt = #line
    ) -> Result<DataResponse, AsyncImageError> {
        let result = Box<Result<DataResponse, AsyncImageError>>()
        _ = start(url, headers: headers, configuration: configuration, queue: queue, result: result)
        test.wait(for: [completed], timeout: 15)
        // A partial body comes before the completion: none now means none at all.
        if partials.isEmpty { partialArrived.fulfill() }
        XCTAssertEqual(completions, 1, "completion must run exactly once", file: file, line: line)
        return result.value ?? .failure(.transport(url, code: -1, message: "no completion"))
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
