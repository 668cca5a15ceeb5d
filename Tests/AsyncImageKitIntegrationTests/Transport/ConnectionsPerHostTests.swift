@testable import AsyncImageKit
import Foundation
import LoopbackHTTP
import TestSupport
import XCTest

/// ``TransportConfiguration/maxConnectionsPerHost`` against a real loopback
/// server (HTTP/1.1: one transfer per connection) whose answers the test
/// holds: how many transfers reach the server at once, in which order the
/// waiting ones get a connection, that a cancelled waiting one never
/// reaches it, and that waiting does not count against a transfer's timeout.
final class ConnectionsPerHostTests: XCTestCase {
    /// A server that records the paths it is asked for, in order, and holds
    /// each answer until the test opens the path's gate.
    private final class HeldServer: @unchecked Sendable {
        private final class Arrivals: @unchecked Sendable {
            let lock = NSLock()
            var paths: [String] = []
            var gates: [String: Gate] = [:]

            func gate(_ path: String, arriving: Bool) -> Gate {
                lock.withLock {
                    if arriving { paths.append(path) }
                    if let gate = gates[path] { return gate }
                    let gate = Gate()
                    gates[path] = gate
                    return gate
                }
            }
        }

        private let arrivals = Arrivals()
        let server: LoopbackServer

        init() throws {
            let arrivals = self.arrivals
            server = try LoopbackServer { request, connection in
                arrivals.gate(request.path, arriving: true).wait()
                connection.respond(status: 200, body: Data(request.path.utf8))
            }
        }

        var paths: [String] { arrivals.lock.withLock { arrivals.paths } }
        func release(_ path: String) { arrivals.gate(path, arriving: false).open() }
        func url(_ path: String) -> URL { server.url(path) }
    }

    func testWaitingTransfersGetConnectionsByUrgencyAndCancelsCostNothing() throws {
        let held = try HeldServer()
        defer { held.server.stop() }
        // A cap of 2 (a loop of its own: no other test's transfers share it).
        let loader = DataLoader(configuration: TransportConfiguration(timeout: 30, maxConnectionsPerHost: 2))
        let results = LoopbackHTTP.Locked([String]())
        func load(_ path: String, priority: Int, stamp: UInt64) -> any DataLoadingTask {
            var request = DataRequest(url: held.url(path), timeout: 30)
            request.urgency = TransferUrgency(priority: priority, stamp: stamp)
            return loader.loadData(request) { result in
                if case .success(let response) = result { results.withLock { $0.append(String(decoding: response.data, as: UTF8.self)) } }
            }
        }
        _ = load("/a", priority: 0, stamp: 1)
        _ = load("/b", priority: 0, stamp: 2)
        XCTAssertTrue(waitUntil { held.paths.count == 2 })
        // These wait for one of the two connections.
        _ = load("/old", priority: 0, stamp: 3)
        let cancelled = load("/cancelled", priority: 0, stamp: 9)
        _ = load("/new", priority: 0, stamp: 5)
        _ = load("/urgent", priority: 2, stamp: 0)
        _ = load("/old-too", priority: 0, stamp: 3)
        // The loop has filed all five before the first answer frees a connection.
        let loop = CurlEventLoop.shared(maxConnectionsPerHost: 2)
        XCTAssertTrue(waitUntil { loop.waitingTransfers == 5 }, "\(loop.waitingTransfers) waiting")
        XCTAssertTrue(cancelled.cancel())
        XCTAssertEqual(held.paths.count, 2, "no more than the cap at once: \(held.paths)")
        // One connection freed at a time, so each next transfer's arrival is certain:
        // the most urgent first: the higher priority, then the higher stamp,
        // then (equal urgency) the first asked for; the cancelled one never goes.
        // (The first two went out at once, on two connections: either may arrive first.)
        var expected = held.paths
        XCTAssertEqual(Set(expected), ["/a", "/b"])
        for (release, next) in [("/a", "/urgent"), ("/urgent", "/new"), ("/new", "/old"), ("/old", "/old-too")] {
            held.release(release)
            expected.append(next)
            XCTAssertTrue(waitUntil { held.paths.count == expected.count }, "\(held.paths)")
            XCTAssertEqual(held.paths, expected)
        }
        held.release("/b")
        held.release("/old-too")
        XCTAssertTrue(waitUntil { results.withLock { $0.count } == 6 }, "\(results.withLock { $0 })")
        XCTAssertFalse(held.paths.contains("/cancelled"))
    }

    /// A transfer's timeout starts when it gets a connection, not while it
    /// waits for one: with a cap of 1 and a 0.3 s timeout, a transfer that
    /// waits 0.6 s behind a held one still succeeds.
    func testWaitingForAConnectionDoesNotCountAgainstTheTimeout() throws {
        let held = try HeldServer()
        defer { held.server.stop() }
        let loader = DataLoader(configuration: TransportConfiguration(timeout: 30, maxConnectionsPerHost: 1))
        let first = expectation(description: "first")
        _ = loader.loadData(DataRequest(url: held.url("/first"), timeout: 30)) { result in
            XCTAssertNotNil(try? result.get())
            first.fulfill()
        }
        XCTAssertTrue(waitUntil { held.paths == ["/first"] })
        let second = expectation(description: "second")
        _ = loader.loadData(DataRequest(url: held.url("/second"), timeout: 0.3)) { result in
            XCTAssertEqual(try? result.get().data, Data("/second".utf8), "\(result)")
            second.fulfill()
        }
        held.release("/second")
        // The second waits for the one connection; its clock has not started.
        Thread.sleep(forTimeInterval: 0.6)  // the time that would have passed its timeout: what this test is about
        XCTAssertEqual(held.paths, ["/first"])
        held.release("/first")
        wait(for: [first, second], timeout: 10)
    }
}
