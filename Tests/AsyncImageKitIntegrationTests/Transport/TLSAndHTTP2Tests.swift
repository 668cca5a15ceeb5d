@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// TLS verification and HTTP/2 against real servers on 127.0.0.1: `nghttpd`
/// (HTTP/2 over TLS) and `openssl s_server` (HTTP/1.1 over TLS), with a
/// throwaway certificate authority made for each test (see `TLSServers.swift`).
final class TLSAndHTTP2Tests: XCTestCase {
    private var folder: URL!
    private var certificates: TestCertificates!
    /// nghttpd's document root.
    private var docroot: URL!

    override func setUpWithError() throws {
        folder = temporaryFolder("tls")
        certificates = try TestCertificates.make(in: folder)
        docroot = folder.appendingPathComponent("h2")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
    }

    /// A body of `count` bytes that differs for each `seed`.
    private func body(_ count: Int, seed: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7 &+ $0 >> 8) })
    }

    /// Writes `data` as `name` in nghttpd's document root.
    private func serve(_ name: String, _ data: Data) throws {
        try data.write(to: docroot.appendingPathComponent(name))
    }

    private func trusting(_ authority: URL?) -> DataLoader {
        DataLoader(configuration: TransportConfiguration(timeout: 30, certificateAuthorities: authority))
    }

    /// Asserts that `body` fails with ``AsyncImageError/tls(_:code:message:)`` for `url`, and returns its code.
    @discardableResult
    private func assertTLSFailure(
        _ url: URL, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async -> Int? {
        do {
            try await body()
            XCTFail("expected a TLS failure for \(url)", file: file, line: line)
        } catch let error as AsyncImageError {
            guard case .tls(let failedURL, let code, let message) = error else {
                XCTFail("expected .tls, got \(error)", file: file, line: line)
                return nil
            }
            XCTAssertEqual(failedURL, url, file: file, line: line)
            XCTAssertFalse(message.isEmpty, file: file, line: line)
            XCTAssertEqual(error.url, url, file: file, line: line)
            XCTAssertTrue(error.description.hasPrefix("TLS failed for \(url.absoluteString)"), "\(error)", file: file, line: line)
            return code
        } catch {
            XCTFail("expected AsyncImageError, got \(error)", file: file, line: line)
        }
        return nil
    }

    // MARK: Verification

    /// A certificate from an authority the system does not trust (a private
    /// or self-made one) is refused by default, with a typed, readable error.
    func testUnknownAuthorityIsRejectedByDefault() async throws {
        try serve("a.bin", body(1000, seed: 1))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let url = server.url("/a.bin")
        let code = await assertTLSFailure(url) { _ = try await DataLoader().data(from: url) }
        XCTAssertEqual(code, 60)  // CURLE_PEER_FAILED_VERIFICATION
        let failure = Box<AsyncImageError>()
        let done = expectation(description: "completion")
        DataLoader().loadData(from: url) { result in
            if case .failure(let error) = result { failure.value = error }
            done.fulfill()
        }
        await fulfillment(of: [done], timeout: 30)
        let description = try XCTUnwrap(failure.value).description
        XCTAssertTrue(description.contains("certificate"), description)
    }

    /// Trusting another authority is no better than trusting the system's.
    func testAnotherAuthorityIsRejected() async throws {
        try serve("a.bin", body(1000, seed: 1))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let other = try TestCertificates.make(in: folder.appendingPathComponent("other"), name: "Another test CA")
        let url = server.url("/a.bin")
        let code = await assertTLSFailure(url) { _ = try await self.trusting(other.authority).data(from: url) }
        XCTAssertEqual(code, 60)
    }

    /// A CA file that cannot be read fails every `https` transfer, typed as TLS.
    func testUnreadableAuthorityFileIsATLSFailure() async throws {
        try serve("a.bin", body(1000, seed: 1))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let url = server.url("/a.bin")
        let missing = folder.appendingPathComponent("no-such-ca.pem")
        let code = await assertTLSFailure(url) { _ = try await self.trusting(missing).data(from: url) }
        XCTAssertEqual(code, 77)  // CURLE_SSL_CACERT_BADFILE
    }

    /// With the authority configured the same server is accepted, over
    /// HTTP/2; a loader that does not trust it still gets no connection
    /// verified with the other's authorities.
    func testConfiguredAuthorityIsAccepted() async throws {
        let bytes = body(70_000, seed: 2)
        try serve("a.bin", bytes)
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let url = server.url("/a.bin")
        let response = try await trusting(certificates.authority).data(from: url)
        XCTAssertEqual(response.data, bytes)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.httpVersion, .http2)
        let connection = try XCTUnwrap(response.connection)
        XCTAssertEqual(connection.newConnections, 1)
        XCTAssertFalse(connection.isReused)
        XCTAssertGreaterThan(connection.localPort, 0)

        // The verified connection is still open, and not shared with a loader that trusts the system's store.
        await assertTLSFailure(url) { _ = try await DataLoader().data(from: url) }
        // Nor with one trusting another authority.
        let other = try TestCertificates.make(in: folder.appendingPathComponent("other"), name: "Another test CA")
        await assertTLSFailure(url) { _ = try await self.trusting(other.authority).data(from: url) }
        // A loader with the same authority reuses it.
        let again = try await trusting(certificates.authority).data(from: url)
        XCTAssertEqual(again.data, bytes)
        XCTAssertEqual(again.connection, DataResponse.Connection(localPort: connection.localPort, newConnections: 0))
    }

    // MARK: HTTP/2

    /// Concurrent transfers to an HTTP/2 server known to multiplex (its
    /// first connection said so) share one connection: each response says
    /// HTTP/2 and the first one's local port, and none opened a connection.
    func testConcurrentTransfersShareOneHTTP2Connection() async throws {
        let count = 8
        var expected: [URL: Data] = [:]
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        for n in 0..<count {
            let bytes = body(40_000 + n * 9_000, seed: n)
            try serve("\(n).bin", bytes)
            expected[server.url("/\(n).bin")] = bytes
        }
        try serve("first.bin", body(1_000, seed: 99))
        let loader = trusting(certificates.authority)
        let first = try await loader.data(from: server.url("/first.bin"))
        let firstConnection = try XCTUnwrap(first.connection)
        XCTAssertEqual(first.httpVersion, .http2)
        XCTAssertEqual(firstConnection.newConnections, 1)
        let responses = try await withThrowingTaskGroup(of: DataResponse.self) { group in
            for url in expected.keys { group.addTask { try await loader.data(from: url) } }
            return try await group.reduce(into: [DataResponse]()) { $0.append($1) }
        }
        XCTAssertEqual(responses.count, count)
        for response in responses {
            XCTAssertEqual(response.data, expected[response.url], "\(response.url)")
            XCTAssertEqual(response.httpVersion, .http2, "\(response.url)")
        }
        let connections = responses.compactMap(\.connection)
        XCTAssertEqual(connections.count, count)
        XCTAssertEqual(Set(connections.map(\.localPort)), [firstConnection.localPort], "\(connections)")
        XCTAssertEqual(connections.map(\.newConnections).reduce(0, +), 0, "\(connections)")
        XCTAssertEqual(connections.filter(\.isReused).count, count)
    }

    /// End to end: an ``AsyncImageLoader`` trusting the authority loads and
    /// decodes several images at once over one HTTP/2 connection (the
    /// first image's: from then on the server is known to multiplex).
    func testImageLoaderDecodesOverOneHTTP2Connection() async throws {
        let count = 6
        var images: [URL: Image] = [:]
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        for n in 0..<count {
            let image = SyntheticImage.photo(width: 160 + n * 16, height: 120, seed: UInt64(n + 1))
            try serve("\(n).png", try PNGEncoder().encode(image))
            images[server.url("/\(n).png")] = image
        }
        let transport = RecordingDataLoader(trusting(certificates.authority))
        let loader = AsyncImageLoader(
            configuration: AsyncImageLoader.Configuration(
                cache: nil, concurrentLoads: count, deliveryQueue: DispatchQueue(label: "tls-test.delivery"),
                dataLoader: transport))
        let firstURL = try XCTUnwrap(images.keys.min { $0.absoluteString < $1.absoluteString })
        var decoded = [firstURL: try await loader.image(for: firstURL)]
        decoded = try await withThrowingTaskGroup(of: (URL, Image).self) { group in
            for url in images.keys where url != firstURL { group.addTask { (url, try await loader.image(for: url)) } }
            return try await group.reduce(into: decoded) { $0[$1.0] = $1.1 }
        }
        XCTAssertEqual(decoded.count, count)
        for (url, image) in decoded {
            let original = try XCTUnwrap(images[url])
            XCTAssertEqual(image.size, original.size, "\(url)")
            XCTAssertEqual(image.pixel(x: 7, y: 5), original.pixel(x: 7, y: 5), "\(url)")
            XCTAssertEqual(image.pixel(x: original.width - 1, y: 119), original.pixel(x: original.width - 1, y: 119))
        }
        let responses = transport.responses
        XCTAssertEqual(responses.count, count)
        XCTAssertEqual(Set(responses.map(\.httpVersion)), [.http2])
        let connections = responses.compactMap(\.connection)
        XCTAssertEqual(Set(connections.map(\.localPort)).count, 1, "\(connections)")
        XCTAssertEqual(connections.map(\.newConnections).reduce(0, +), 1, "\(connections)")
    }

    /// The loader's convenience initializer hands its transport settings,
    /// the authorities among them, to every transfer it starts.
    func testImageLoaderTransportSettingReachesItsTransfers() async throws {
        let image = SyntheticImage.quadrants(width: 32, height: 32)
        try serve("q.png", try PNGEncoder().encode(image))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let url = server.url("/q.png")
        let queue = DispatchQueue(label: "tls-test.delivery")

        let untrusting = AsyncImageLoader(cache: nil, deliveryQueue: queue)
        await assertTLSFailure(url) { _ = try await untrusting.image(for: url) }

        let trusting = AsyncImageLoader(
            cache: nil, deliveryQueue: queue, transport: TransportConfiguration(certificateAuthorities: certificates.authority))
        let loaded = try await trusting.image(for: url)
        XCTAssertEqual(loaded.size, image.size)
        XCTAssertEqual(loaded.pixel(x: 3, y: 3), image.pixel(x: 3, y: 3))
        XCTAssertEqual(loaded.pixel(x: 28, y: 28), image.pixel(x: 28, y: 28))
    }

    /// With HTTP/2 turned off the transfer offers only HTTP/1.1 (ALPN), which
    /// nghttpd, an HTTP/2-only server, does not answer: libcurl's "empty
    /// reply" shows the request went out in HTTP/1.1.
    func testHTTP2CanBeTurnedOff() async throws {
        try serve("a.bin", body(1000, seed: 5))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let url = server.url("/a.bin")
        let loader = DataLoader(
            configuration: TransportConfiguration(timeout: 30, certificateAuthorities: certificates.authority, allowsHTTP2: false))
        do {
            let response = try await loader.data(from: url)
            XCTFail("nghttpd answered HTTP/\(response.httpVersion?.rawValue ?? "?")")
        } catch AsyncImageError.transport(let failedURL, let code, _) {
            XCTAssertEqual(failedURL, url)
            XCTAssertEqual(code, 52)  // CURLE_GOT_NOTHING
        }
        let response = try await trusting(certificates.authority).data(from: url)
        XCTAssertEqual(response.httpVersion, .http2)
    }

    // MARK: HTTP/1.1

    /// A TLS server that offers no HTTP/2 (`openssl s_server`) is spoken to
    /// in HTTP/1.1, and says so; it closes each connection, so each transfer
    /// opens its own.
    func testHTTP1OverTLSReports1_1() async throws {
        let h1root = folder.appendingPathComponent("h1")
        try FileManager.default.createDirectory(at: h1root, withIntermediateDirectories: true)
        let bytes = body(30_000, seed: 3)
        try httpResponse(bytes, contentType: "application/octet-stream").write(to: h1root.appendingPathComponent("a.bin"))
        let server = try startHTTP1Server(docroot: h1root, certificates: certificates)
        let url = server.url("/a.bin")

        await assertTLSFailure(url) { _ = try await DataLoader().data(from: url) }

        let loader = trusting(certificates.authority)
        for _ in 0..<2 {
            let response = try await loader.data(from: url)
            XCTAssertEqual(response.data, bytes)
            XCTAssertEqual(response.httpVersion, .http1_1)
            XCTAssertEqual(response.httpVersion?.description, "HTTP/1.1")
            XCTAssertEqual(response.contentType, "application/octet-stream")
            XCTAssertEqual(response.connection?.newConnections, 1)
        }
    }

    /// Responses that did not come over HTTP carry no HTTP metadata.
    func testFileResponsesHaveNoHTTPMetadata() async throws {
        let file = folder.appendingPathComponent("plain.bin")
        try body(100, seed: 4).write(to: file)
        let response = try await DataLoader().data(from: file)
        XCTAssertNil(response.httpVersion)
        XCTAssertNil(response.connection)
        XCTAssertEqual(DataResponse.HTTPVersion.allCases.map(\.rawValue), ["1.0", "1.1", "2", "3"])
    }
}

/// A ``DataLoading`` that passes transfers to a ``DataLoader`` and keeps every successful response.
private final class RecordingDataLoader: DataLoading, @unchecked Sendable {
    private let base: DataLoader
    private let lock = NSLock()
    private var recorded: [DataResponse] = []

    init(_ base: DataLoader) { self.base = base }

    var responses: [DataResponse] { lock.withLock { recorded } }

    func loadData(
        _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
    ) -> any DataLoadingTask {
        base.loadData(request) { [self] result in
            if case .success(let response) = result { lock.withLock { recorded.append(response) } }
            completion(result)
        }
    }
}
