@testable import AsyncImageKit
import Foundation
import LoopbackHTTP
import TestSupport
import XCTest

/// The transport over an emulated link (`LinkEmulator`: a relay on
/// 127.0.0.1 that adds a round trip and a rate), and the link itself.
final class EmulatedLinkTests: XCTestCase {
    private func body(_ count: Int) -> Data { Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }) }

    /// The link delays a new connection's first bytes by one and a half
    /// round trips (the TCP handshake, then half a round trip), the answer
    /// by half a round trip more, and paces the body at its rate: a 100 KB
    /// body at 4 Mbit/s over 100 ms takes at least 0.2 + 0.2 s. What crossed
    /// is counted. (Lower bounds only: the link adds at least this much.)
    func testLinkAddsItsRoundTripAndRate() throws {
        let payload = body(100_000)
        let server = try LoopbackServer { _, connection in connection.respond(status: 200, body: payload) }
        defer { server.stop() }
        let link = try LinkEmulator(upstreamPort: server.port, settings: .init(roundTrip: 0.100, bitsPerSecond: 4e6))
        defer { link.stop() }
        let loader = DataLoader(configuration: TransportConfiguration(timeout: 30))
        let url = URL(string: "http://127.0.0.1:\(link.port)/body")!
        let done = expectation(description: "loaded")
        let started = ProcessInfo.processInfo.systemUptime
        let elapsed = LoopbackHTTP.Locked(0.0)
        loader.loadData(from: url) { result in
            elapsed.withLock { $0 = ProcessInfo.processInfo.systemUptime - started }
            XCTAssertEqual(try? result.get().data, payload)
            done.fulfill()
        }
        wait(for: [done], timeout: 30)
        let seconds = elapsed.withLock { $0 }
        XCTAssertGreaterThanOrEqual(seconds, 0.2 + Double(payload.count * 8) / 4e6 - 0.005, "took \(seconds) s")
        let counters = link.counters
        XCTAssertEqual(counters.connections, 1)
        XCTAssertGreaterThan(counters.bytesDown, payload.count)
        XCTAssertGreaterThan(counters.bytesUp, 0)
    }

    /// Both ends' closes pass through, and a stopped link closes what is open.
    func testLinkPassesClosesAndStops() throws {
        let server = try LoopbackServer { _, connection in connection.respond(status: 200, body: Data("ok".utf8)) }
        defer { server.stop() }
        let link = try LinkEmulator(upstreamPort: server.port, settings: .init(roundTrip: 0.010))
        let loader = DataLoader(configuration: TransportConfiguration(timeout: 30))
        let url = URL(string: "http://127.0.0.1:\(link.port)/")!
        let done = expectation(description: "loaded")
        loader.loadData(from: url) { result in
            XCTAssertEqual(try? result.get().data, Data("ok".utf8))
            done.fulfill()
        }
        wait(for: [done], timeout: 30)
        XCTAssertEqual(link.counters.connections, 1)
        link.stop()
        XCTAssertTrue(waitUntil { link.openConnections == 0 }, "the stopped link closed its connections")
    }

    /// A transfer cancelled while the TLS connection it opened is still
    /// being set up does not take the connection down with it: the
    /// connection finishes its handshake (HTTP/2, known from then on), and
    /// the next transfer reuses it. Over a 200 ms round trip the handshake
    /// takes at least 400 ms, so the cancel (once the link has the
    /// connection) lands inside it. Without this, libcurl closes the
    /// connection and the next transfer opens a second one.
    func testCancelDuringConnectionSetUpKeepsTheHTTP2Connection() async throws {
        let folder = temporaryFolder("link-h2")
        let certificates = try TestCertificates.make(in: folder)
        let docroot = folder.appendingPathComponent("h2")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        let payload = body(20_000)
        try payload.write(to: docroot.appendingPathComponent("a.bin"))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let link = try LinkEmulator(upstreamPort: UInt16(server.port), settings: .init(roundTrip: 0.200))
        defer { link.stop() }
        let loader = DataLoader(configuration: TransportConfiguration(timeout: 30, certificateAuthorities: certificates.authority))
        let url = URL(string: "https://127.0.0.1:\(link.port)/a.bin")!
        let origin = "https://127.0.0.1:\(link.port)"
        let loop = CurlEventLoop.shared(maxConnectionsPerHost: TransportConfiguration.defaultMaxConnectionsPerHost)

        let first = loader.loadData(from: url) { _ in XCTFail("a cancelled transfer completed") }
        XCTAssertTrue(waitUntil { link.counters.connections == 1 }, "the first transfer connected")
        XCTAssertTrue(first.cancel(), "cancelled before any answer")
        // Its connection finishes setting up (its pre-request callback notes
        // the protocol, then stops the abandoned transfer before its request).
        XCTAssertTrue(waitUntil { loop.mayMultiplex(origin) == true }, "the handshake completed and said HTTP/2")

        let response = try await loader.data(from: url)
        XCTAssertEqual(response.data, payload)
        XCTAssertEqual(response.httpVersion, .http2)
        XCTAssertEqual(response.connection?.newConnections, 0, "the second transfer reused the first one's connection")
        XCTAssertEqual(link.counters.connections, 1)
    }

    /// Without HTTP/2 (an origin whose connections say HTTP/1.1, or
    /// `allowsHTTP2` off), a cancel during set-up removes the transfer at
    /// once, as before: no connection is kept for others.
    func testCancelDuringConnectionSetUpWithoutHTTP2RemovesTheTransfer() throws {
        let folder = temporaryFolder("link-h1")
        let certificates = try TestCertificates.make(in: folder)
        let docroot = folder.appendingPathComponent("h2")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        try body(1_000).write(to: docroot.appendingPathComponent("a.bin"))
        let server = try startHTTP2Server(docroot: docroot, certificates: certificates)
        let link = try LinkEmulator(upstreamPort: UInt16(server.port), settings: .init(roundTrip: 0.200))
        defer { link.stop() }
        var configuration = TransportConfiguration(timeout: 30, certificateAuthorities: certificates.authority)
        configuration.allowsHTTP2 = false
        let loader = DataLoader(configuration: configuration)
        let url = URL(string: "https://127.0.0.1:\(link.port)/a.bin")!
        let task = loader.loadData(from: url) { _ in XCTFail("a cancelled transfer completed") }
        XCTAssertTrue(waitUntil { link.counters.connections == 1 })
        XCTAssertTrue(task.cancel())
        // Closed at once: the link sees the client's end long before a handshake could finish.
        XCTAssertTrue(waitUntil(upTo: 5) { link.openConnections == 0 }, "the connection was closed")
        let loop = CurlEventLoop.shared(maxConnectionsPerHost: TransportConfiguration.defaultMaxConnectionsPerHost)
        XCTAssertNil(loop.mayMultiplex("https://127.0.0.1:\(link.port)"), "no request was ever about to be sent")
    }
}
