@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The memory pressure monitor on sockets (the rest of its tests:
/// MemoryPressureMonitorTests in AsyncImageKitTests): a socket's urgent
/// byte, which raises `POLLPRI` as a PSI trigger does, and an `AF_UNIX`
/// socket named by systemd's `$MEMORY_PRESSURE_WATCH`.
final class SocketMemoryPressureMonitorTests: XCTestCase {
    private func filledCache() -> ImageCache {
        let cache = ImageCache()
        cache[ImageCacheKey(url: "http://127.0.0.1/a.png", processing: "")] =
            SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3))
        return cache
    }

    /// A stand-in system: a cgroup v2 tree and a system PSI file, all regular
    /// files in a temporary directory (as in MemoryPressureMonitorTests,
    /// whose `MemoryPressureMonitor.System` is internal to the library).
    private struct FakeSystem {
        let root: URL
        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("pressure-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root.appendingPathComponent("cgroup/svc"), withIntermediateDirectories: true)
            try Data().write(to: root.appendingPathComponent("cgroup/svc/memory.pressure"))
            try Data("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n".utf8).write(to: root.appendingPathComponent("cgroup/svc/memory.events"))
            try Data().write(to: root.appendingPathComponent("system-memory"))
        }
        func path(_ relative: String) -> String { root.appendingPathComponent(relative).path }
        func system(_ environment: [String: String] = [:], membership: String? = "0::/svc\n") -> MemoryPressureMonitor.System {
            MemoryPressureMonitor.System(
                environment: environment, membership: membership, cgroupRoot: path("cgroup"), systemPressure: path("system-memory"))
        }
        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    func testAPSIStyleTriggerPurges() throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends), 0)
        defer { close(ends[0]) }
        let (sender, watched) = (ends[0], ends[1])
        let purged = expectation(description: "purged")
        let monitor = MemoryPressureMonitor(sources: [.psi(watched, path: "socket")]) {
            // Take the urgent byte, or POLLPRI stays up (a PSI trigger's event is consumed by poll).
            var byte: UInt8 = 0
            _ = recv(watched, &byte, 1, Int32(MSG_OOB))
            purged.fulfill()
        }
        defer { monitor.stop() }
        XCTAssertEqual(monitor.watchedSources, ["psi"])
        XCTAssertEqual(monitor.sources.map(\.description), ["system memory pressure socket"])
        let cache = filledCache()
        monitor.register(cache)

        var byte: UInt8 = 1
        XCTAssertEqual(send(sender, &byte, 1, Int32(MSG_OOB)), 1)
        wait(for: [purged], timeout: 10)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(monitor.purgeCount, 1)
    }

    /// An `AF_UNIX` stream socket named by `$MEMORY_PRESSURE_WATCH`: the
    /// monitor connects and writes `$MEMORY_PRESSURE_WRITE`; any data it then
    /// receives is pressure.
    func testSystemdWatchOnASocketWritesThenPurges() throws {
        let fake = try FakeSystem()
        defer { fake.remove() }
        let path = fake.path("pressure.sock")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        XCTAssertGreaterThanOrEqual(listener, 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8) + [0])
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 1), 0)

        let write = Data("some 100000 1000000\0".utf8)
        let sources = MemoryPressureMonitor.systemSources(fake.system(
            ["MEMORY_PRESSURE_WATCH": path, "MEMORY_PRESSURE_WRITE": write.base64EncodedString()], membership: nil))
        XCTAssertEqual(sources.map(\.info), [MemoryPressureSource(kind: .systemdWatch, path: path)])
        let peer = accept(listener, nil, nil)  // the monitor's connection waits in the backlog
        XCTAssertGreaterThanOrEqual(peer, 0)
        defer { close(peer) }
        var received = [UInt8](repeating: 0, count: write.count)
        XCTAssertEqual(recv(peer, &received, received.count, Int32(MSG_WAITALL)), write.count)
        XCTAssertEqual(received, [UInt8](write))

        let purged = expectation(description: "purged")
        let monitor = MemoryPressureMonitor(sources: sources) { purged.fulfill() }
        defer { monitor.stop() }
        let cache = filledCache()
        monitor.register(cache)
        XCTAssertEqual(send(peer, "pressure", 8, 0), 8)
        wait(for: [purged], timeout: 10)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(monitor.purgeCount, 1)
    }
}
