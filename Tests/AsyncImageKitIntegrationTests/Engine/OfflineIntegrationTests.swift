@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Offline against real parts (issue 29, item 5): a loopback server, the
/// libcurl transport and a disk cache in a folder, with the reachability
/// flipped by the test; and, as root, a network namespace where nothing
/// has a route, for the transport's own "no route" and the system
/// reachability's rule and netlink watch.
final class OfflineIntegrationTests: XCTestCase {
    /// The host the loader is asked for: not this machine's by its name (so
    /// the loader may be offline for it), sent to the loopback server by
    /// the request modifier, as a CDN rewrite would be.
    private static let host = "images.test"

    /// A server of two images with an ETag, stale at once: `/stale.png`
    /// (may be served stale) and `/strict.png` (`must-revalidate`); a
    /// matching `If-None-Match` gets a `304`.
    private func makeServer() throws -> ImageServer {
        let server = try ImageServer()
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 8, height: 8, color: RGBA(r: 200, g: 30, b: 30)))
        for (path, control) in [("/stale.png", "max-age=0"), ("/strict.png", "max-age=0, must-revalidate")] {
            let url = server.url(path: path)
            server.respond(path) { connection in
                let headers = [("ETag", "\"v1\""), ("Cache-Control", control), ("Content-Type", "image/png")]
                if server.headers(of: url)?["if-none-match"] == "\"v1\"" {
                    connection.respond(status: 304, headers: headers, body: Data())
                } else {
                    connection.respond(status: 200, headers: headers, body: png)
                }
            }
        }
        return server
    }

    /// `path` on ``host`` at the server's port.
    private func url(_ server: ImageServer, _ path: String) -> URL {
        var components = URLComponents(url: server.url(path: path), resolvingAgainstBaseURL: false)!
        components.host = Self.host
        return components.url!
    }

    func testOfflineServesFromTheDiskThenRevalidatesWhenOnline() async throws {
        let server = try makeServer()
        let folder = temporaryFolder("offline")
        let reachability = FakeReachability()
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: DispatchQueue(label: "offline"), notificationCenter: nil,
            diskCache: try DataCache(directory: folder))
        configuration.reachability = reachability
        configuration.requestModifier = { request in
            var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)!
            if components.host == Self.host { components.host = "127.0.0.1" }
            request.url = components.url!
        }
        let loader = AsyncImageLoader(configuration: configuration)
        let (stale, strict) = (url(server, "/stale.png"), url(server, "/strict.png"))
        let (staleOnServer, strictOnServer) = (server.url(path: "/stale.png"), server.url(path: "/strict.png"))

        // Online: loaded from the server, stored.
        for url in [stale, strict] { _ = try await loader.image(for: url) }
        await loader.flushDiskWrites()
        XCTAssertEqual(server.requestCount(staleOnServer), 1)

        // Offline: from the disk, marked stale; must-revalidate fails. The
        // server hears nothing.
        reachability.isReachable = false
        let offline = try await loader.response(for: ImageRequest(url: stale))
        XCTAssertTrue(offline.isStale)
        XCTAssertEqual(offline.source, .diskCache)
        XCTAssertEqual(offline.image.width, 8)
        do {
            _ = try await loader.image(for: strict)
            XCTFail("must-revalidate served offline")
        } catch {
            XCTAssertEqual(error as? AsyncImageError, .offline(strict))
        }
        XCTAssertEqual(server.requestCount(staleOnServer), 1)
        XCTAssertEqual(server.requestCount(strictOnServer), 1)

        // Online again: the next request revalidates against the server.
        reachability.isReachable = true
        let revalidated = try await loader.response(for: ImageRequest(url: stale))
        XCTAssertFalse(revalidated.isStale)
        XCTAssertEqual(revalidated.http?.isRevalidated, true)
        XCTAssertEqual(server.requestCount(staleOnServer), 2)
        XCTAssertEqual(server.headers(of: staleOnServer)?["if-none-match"], "\"v1\"")
        _ = try await loader.image(for: strict)
        XCTAssertEqual(server.requestCount(strictOnServer), 2)
        withExtendedLifetime(server) {}
    }

    /// The system's reachability answers here, and an instance's watcher
    /// thread starts with its first observation and ends with the instance.
    func testTheSystemReachabilityAnswersAndObserves() async {
        var reachability: SystemNetworkReachability? = SystemNetworkReachability()
        let watcher = reachability!.watcher
        _ = reachability!.isReachable  // this machine's answer; only that it comes
        XCTAssertFalse(watcher.isWatching, "no thread before an observation")
        let observation = reachability!.observe { _ in }
        let started = await Self.waitFor { watcher.isWatching }
        XCTAssertTrue(started, "its thread runs")
        reachability = nil
        let stopped = await Self.waitFor { !watcher.isWatching }
        XCTAssertTrue(stopped, "released: its thread ends")
        observation.cancel()
    }

    // MARK: No route at all, in a network namespace of its own

    /// As root, this test binary again in a new network namespace
    /// (`unshare -n`: only a loopback interface, down, so even 127.0.0.1
    /// has no route): the transport's failure is ``AsyncImageError/offline(_:)``
    /// (libcurl's "couldn't connect" with `ENETUNREACH`), the system
    /// reachability says unreachable and a loader made there starts
    /// offline; then a veth pair with an address is a route beyond
    /// loopback (reachable, told through netlink, the loader online), and
    /// its peer taken down leaves it without a carrier (unreachable again).
    /// Nothing leaves the namespace: it has no way out.
    func testNoRouteInANetworkNamespace() throws {
        guard getuid() == 0 else { throw XCTSkip("needs root, for unshare -n (CI runs as root)") }
        guard let unshare = Self.tool("unshare") else { throw XCTSkip("no unshare on this machine") }
        let results = temporaryFolder("offline-worker")
        try FileManager.default.createDirectory(at: results, withIntermediateDirectories: true)
        let file = results.appendingPathComponent("results.txt")
        let run = try ProcessRun.run(
            unshare, ["-n", CommandLine.arguments[0], "AsyncImageKitIntegrationTests.OfflineIntegrationTests/testNamespaceWorker"],
            environment: ["OFFLINE_WORKER": file.path])
        let stderr = run.errorText
        guard let text = try? String(contentsOf: file, encoding: .utf8) else {
            if stderr.contains("unshare failed") || stderr.contains("Operation not permitted") {
                throw XCTSkip("unshare -n is not allowed here: \(stderr.prefix(200))")
            }
            return XCTFail("the worker wrote nothing (status \(run.status)): \(stderr.suffix(2000))")
        }
        let lines = Dictionary(
            text.split(separator: "\n").map { line -> (String, String) in
                let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { $1 })
        XCTAssertEqual(lines["transport"], "offline", text)
        XCTAssertEqual(lines["reachable"], "false", text)
        XCTAssertEqual(lines["loader"], "offline (reachability)", text)
        XCTAssertEqual(lines["local"], "offline", "a local URL is tried, and fails as the transport says")
        if lines["blackhole"] != "skipped" {
            XCTAssertEqual(lines["blackhole"], "reachable false", "`ip route add blackhole default` leads nowhere: \(text)")
        }
        if lines["veth"] == "skipped" {
            print("no veth pair could be made here: the netlink part was not checked")
        } else {
            XCTAssertEqual(lines["veth up"], "told true, loader online", text)
            XCTAssertEqual(
                lines["host unreachable"], "transport 7, loader online",
                "EHOSTUNREACH is one host's failure, not the network's: \(text)")
            XCTAssertEqual(lines["veth down"], "told false, loader offline (reachability)", text)
        }
        XCTAssertEqual(run.status, 0, stderr.suffix(2000).description)
    }

    /// The worker (does nothing unless `OFFLINE_WORKER` names its results
    /// file): runs in the namespace, writes `key=value` lines.
    func testNamespaceWorker() async throws {
        guard let path = ProcessInfo.processInfo.environment["OFFLINE_WORKER"] else { return }
        var lines: [String] = []
        defer { try? lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8) }

        // The transport: no route to 127.0.0.1 here.
        let target = URL(string: "http://127.0.0.1:9/a.png")!
        do {
            _ = try await DataLoader(configuration: .init(timeout: 5)).data(from: target)
            lines.append("transport=loaded?")
        } catch let error as AsyncImageError {
            lines.append("transport=\(error == .offline(target) ? "offline" : "\(error)")")
        }

        // The system's rule, and a loader made here.
        let system = SystemNetworkReachability()
        lines.append("reachable=\(system.isReachable)")
        var configuration = AsyncImageLoader.Configuration(
            cache: nil, deliveryQueue: DispatchQueue(label: "worker"), notificationCenter: nil)
        configuration.reachability = system
        configuration.retryPolicy = .disabled
        let loader = AsyncImageLoader(configuration: configuration)
        lines.append("loader=\(loader.networkStatus)")
        // A local URL is never offline: it goes to the transport, which has no route to it.
        do {
            _ = try await loader.image(for: target)
        } catch let error as AsyncImageError {
            lines.append("local=\(error == .offline(target) ? "offline" : "\(error)")")
        }

        // A blackhole default route (printed with no device, as an ordinary
        // route) leads nowhere.
        if Self.run("ip", "route", "add", "blackhole", "default") {
            lines.append("blackhole=reachable \(system.isReachable)")
            _ = Self.run("ip", "route", "del", "blackhole", "default")
        } else {
            lines.append("blackhole=skipped")
        }

        // Netlink: a route beyond loopback comes, then loses its carrier.
        let told = Box<[Bool]>([])
        let observation = system.observe { value in told.update { $0 = ($0 ?? []) + [value] } }
        guard
            Self.run("ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1"),
            Self.run("ip", "addr", "add", "10.77.0.1/24", "dev", "v0"),
            Self.run("ip", "link", "set", "v1", "up"), Self.run("ip", "link", "set", "v0", "up")
        else {
            lines.append("veth=skipped")
            return
        }
        let up = await Self.waitFor { told.value?.last == true && loader.networkStatus == .online }
        lines.append("veth up=told \(told.value?.last.map(String.init) ?? "nothing"), loader \(loader.networkStatus)\(up ? "" : " (timed out)")")
        // One host that cannot be reached (`EHOSTUNREACH`, as a firewall's
        // icmp-host-prohibited gives): its failure, not the network's.
        if Self.run("ip", "route", "add", "unreachable", "10.78.0.0/24") {
            let host = URL(string: "http://10.78.0.1:9/a.png")!
            var outcome = "loaded?"
            do {
                _ = try await loader.image(for: host)
            } catch let error as AsyncImageError {
                if case .transport(_, let code, _) = error { outcome = "transport \(code)" } else { outcome = "\(error)" }
            }
            lines.append("host unreachable=\(outcome), loader \(loader.networkStatus)")
            _ = Self.run("ip", "route", "del", "unreachable", "10.78.0.0/24")
        }
        _ = Self.run("ip", "link", "set", "v1", "down")
        let down = await Self.waitFor { told.value?.last == false && !loader.networkStatus.isOnline }
        lines.append("veth down=told \(told.value?.last.map(String.init) ?? "nothing"), loader \(loader.networkStatus)\(down ? "" : " (timed out)")")
        observation.cancel()
    }

    /// Polls `condition` for up to 10 s (the watcher settles for 100 ms after a change).
    private static func waitFor(_ condition: () -> Bool) async -> Bool {
        let deadline = ProcessInfo.processInfo.systemUptime + 10
        while !condition() {
            guard ProcessInfo.processInfo.systemUptime < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Runs a tool found on `PATH` (or in `/usr/sbin`, `/sbin`); true when
    /// it exits 0. With `posix_spawn` and `waitpid`, not `Process`: in the
    /// namespace `Process` never saw its child exit (CoreFoundation's socket
    /// manager makes its wake-up socket pair on loopback, which is down
    /// there: "Could not create wakeup socket pair for CFSocket").
    private static func run(_ name: String, _ arguments: String...) -> Bool {
        guard let tool = tool(name) else { return false }
        let argv = ([tool.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, tool.path, nil, nil, argv, environ) == 0 else { return false }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return false }
        }
        return status == 0  // exited, with 0
    }

    private static func tool(_ name: String) -> URL? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for folder in folders + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
            let path = folder + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return URL(fileURLWithPath: path) }
        }
        return nil
    }
}
