@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The way from a kernel signal to a purge, with real descriptors standing in
/// for the kernel's: inotify on a file (as on cgroup v2 `memory.events`), a
/// FIFO, and in-process `AF_UNIX` sockets for a PSI trigger's urgent byte and
/// systemd's watch (no server, no network).
final class MemoryPressureMonitorTests: XCTestCase {
    private func filledCache() -> ImageCache {
        let cache = ImageCache()
        cache[ImageCacheKey(url: "http://127.0.0.1/a.png", processing: "")] =
            SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3))
        return cache
    }

    /// A rise of `high`, `max`, `oom` or `oom_kill` purges; other changes
    /// (`low`, a file caught half-written) do not.
    func testARiseInMemoryEventsPurges() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("memory.events-\(UUID().uuidString)")
        try Data("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let source = try XCTUnwrap(MemoryPressureMonitor.inotifySource(watching: file.path))
        let purged = expectation(description: "purged")
        let monitor = MemoryPressureMonitor(sources: [source]) { purged.fulfill() }  // twice would fail the test
        defer { monitor.stop() }
        XCTAssertEqual(monitor.watchedSources, ["cgroup2"])
        XCTAssertEqual(monitor.sources, [MemoryPressureSource(kind: .cgroupEvents, path: file.path)])
        let cache = filledCache()
        monitor.register(cache)
        XCTAssertEqual(cache.count, 1)

        try Data("low 7\nhigh 0\nmax 0\noom 0\noom_kill 0\n".utf8).write(to: file)  // not pressure
        try Data("low 7\nhigh 1\nmax 0\noom 0\noom_kill 0\n".utf8).write(to: file)
        wait(for: [purged], timeout: 10)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(monitor.purgeCount, 1)
        monitor.stop()  // and again in the defer: only the first closes anything
    }

    func testEventCountersRise() {
        var baseline = MemoryPressureMonitor.eventCounters("low 3\nhigh 2\nmax 0\noom 0\noom_kill 0\n")
        XCTAssertEqual(baseline["high"], 2)
        XCTAssertFalse(MemoryPressureMonitor.countersRose(from: &baseline, to: ["low": 9, "high": 2]))
        XCTAssertFalse(MemoryPressureMonitor.countersRose(from: &baseline, to: [:]), "a half-written file")
        XCTAssertEqual(baseline["high"], 2)
        for name in ["high", "max", "oom", "oom_kill"] {
            XCTAssertTrue(MemoryPressureMonitor.countersRose(from: &baseline, to: [name: baseline[name, default: 0] + 1]), name)
            XCTAssertFalse(MemoryPressureMonitor.countersRose(from: &baseline, to: [name: baseline[name, default: 0]]), name)
        }
        XCTAssertEqual(MemoryPressureMonitor.eventCounters("garbage\nhigh x\nmax 4 5\noom 1"), ["oom": 1])
    }

    // MARK: - Where the monitor looks, in order

    /// A stand-in system: a cgroup v2 tree and a system PSI file, all regular
    /// files in a temporary directory (a regular file takes the trigger as a
    /// PSI file does, so what was written can be read back).
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
        func contents(_ relative: String) -> [UInt8] { [UInt8]((try? Data(contentsOf: root.appendingPathComponent(relative))) ?? Data()) }
        func system(_ environment: [String: String] = [:], membership: String? = "0::/svc\n") -> MemoryPressureMonitor.System {
            MemoryPressureMonitor.System(
                environment: environment, membership: membership, cgroupRoot: path("cgroup"), systemPressure: path("system-memory"))
        }
        func remove() { try? FileManager.default.removeItem(at: root) }
    }

    /// The sources `system` yields, their descriptors closed.
    private func chosen(_ system: MemoryPressureMonitor.System) -> [MemoryPressureSource] {
        let sources = MemoryPressureMonitor.systemSources(system)
        sources.forEach { close($0.descriptor) }
        return sources.map(\.info)
    }

    func testWithoutSystemdTheCgroupsPressureFileComesBeforeTheSystems() throws {
        let fake = try FakeSystem()
        defer { fake.remove() }
        let trigger = Array("some 150000 2000000".utf8) + [0]
        XCTAssertEqual(chosen(fake.system()), [
            MemoryPressureSource(kind: .cgroupPressure, path: fake.path("cgroup/svc/memory.pressure")),
            MemoryPressureSource(kind: .cgroupEvents, path: fake.path("cgroup/svc/memory.events")),
        ])
        XCTAssertEqual(fake.contents("cgroup/svc/memory.pressure"), trigger)
        XCTAssertEqual(fake.contents("system-memory"), [])

        // No memory.pressure in the cgroup (no PSI there, or not writable): the system's file.
        try FileManager.default.removeItem(atPath: fake.path("cgroup/svc/memory.pressure"))
        XCTAssertEqual(chosen(fake.system()).map(\.kind), [.systemPressure, .cgroupEvents])
        XCTAssertEqual(fake.contents("system-memory"), trigger)
        // No cgroup v2 membership (v1 only): the system's file alone.
        XCTAssertEqual(chosen(fake.system(membership: "4:memory:/jobs\n")), [
            MemoryPressureSource(kind: .systemPressure, path: fake.path("system-memory"))
        ])
        XCTAssertEqual(chosen(fake.system(membership: nil)).map(\.kind), [.systemPressure])
        // Nothing at all.
        var nothing = fake.system(membership: nil)
        nothing.systemPressure = fake.path("missing")
        XCTAssertEqual(chosen(nothing), [])
        XCTAssertNil(MemoryPressureMonitor(sources: []).sources.first)
    }

    /// `$MEMORY_PRESSURE_WATCH` comes first, its `$MEMORY_PRESSURE_WRITE`
    /// written (decoded) right after opening; `memory.events` is still watched.
    func testSystemdsWatchComesFirstAndGetsItsWrite() throws {
        let fake = try FakeSystem()
        defer { fake.remove() }
        try Data().write(to: fake.root.appendingPathComponent("service.pressure"))
        let write = Data("some 200000 2000000\0".utf8)
        let system = fake.system([
            "MEMORY_PRESSURE_WATCH": fake.path("service.pressure"), "MEMORY_PRESSURE_WRITE": write.base64EncodedString(),
        ])
        let sources = MemoryPressureMonitor.systemSources(system)
        defer { sources.forEach { close($0.descriptor) } }
        XCTAssertEqual(sources.map(\.info), [
            MemoryPressureSource(kind: .systemdWatch, path: fake.path("service.pressure")),
            MemoryPressureSource(kind: .cgroupEvents, path: fake.path("cgroup/svc/memory.events")),
        ])
        XCTAssertEqual(sources.first?.events, Int16(POLLPRI), "a regular (PSI) file: POLLPRI")
        XCTAssertEqual(fake.contents("service.pressure"), [UInt8](write))
        XCTAssertEqual(fake.contents("cgroup/svc/memory.pressure"), [], "the cgroup's file was left alone")
        XCTAssertEqual(sources.map(\.name), ["systemd", "cgroup2"])
    }

    func testSystemdsDevNullTurnsPressureHandlingOffAndBadWatchesFallBack() throws {
        let fake = try FakeSystem()
        defer { fake.remove() }
        XCTAssertEqual(chosen(fake.system(["MEMORY_PRESSURE_WATCH": "/dev/null"])), [])
        // A path that does not open, or a write that is not Base64: the kernel's files, in order.
        XCTAssertEqual(chosen(fake.system(["MEMORY_PRESSURE_WATCH": fake.path("gone")])).map(\.kind), [.cgroupPressure, .cgroupEvents])
        try Data().write(to: fake.root.appendingPathComponent("service.pressure"))
        let bad = fake.system(["MEMORY_PRESSURE_WATCH": fake.path("service.pressure"), "MEMORY_PRESSURE_WRITE": "%%%"])
        XCTAssertEqual(chosen(bad).map(\.kind), [.cgroupPressure, .cgroupEvents])
        XCTAssertEqual(fake.contents("service.pressure"), [])
        // Set but without a write: nothing is written.
        XCTAssertEqual(chosen(fake.system(["MEMORY_PRESSURE_WATCH": fake.path("service.pressure")])).first?.kind, .systemdWatch)
        XCTAssertEqual(fake.contents("service.pressure"), [])
    }

    /// A FIFO named by `$MEMORY_PRESSURE_WATCH`: data written to it is pressure.
    func testSystemdWatchOnAFIFOPurges() throws {
        let fake = try FakeSystem()
        defer { fake.remove() }
        let fifo = fake.path("pressure.fifo")
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let sources = MemoryPressureMonitor.systemSources(fake.system(["MEMORY_PRESSURE_WATCH": fifo], membership: nil))
        XCTAssertEqual(sources.map(\.info), [MemoryPressureSource(kind: .systemdWatch, path: fifo)])
        XCTAssertEqual(sources.first?.events, Int16(POLLIN))
        let purged = expectation(description: "purged")
        let monitor = MemoryPressureMonitor(sources: sources) { purged.fulfill() }
        defer { monitor.stop() }
        XCTAssertEqual(monitor.watchedSources, ["systemd"])
        let cache = filledCache()
        monitor.register(cache)

        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)  // the monitor holds the FIFO open: no wait
        XCTAssertGreaterThanOrEqual(writer, 0)
        defer { close(writer) }
        XCTAssertEqual(write(writer, "x", 1), 1)
        wait(for: [purged], timeout: 10)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(monitor.purgeCount, 1)
    }

    /// A tenth of what the process may use (physical memory, or a smaller
    /// cgroup limit), at most 1 GiB.
    func testDefaultCostLimit() {
        let physical = Int(clamping: ProcessInfo.processInfo.physicalMemory)
        let available = min(physical, MemoryPressureMonitor.cgroupMemoryLimit ?? .max)
        XCTAssertEqual(ImageCache.defaultTotalCostLimit, min(available / 10, 1 << 30))
        XCTAssertEqual(ImageCache().totalCostLimit, ImageCache.defaultTotalCostLimit)
        XCTAssertGreaterThan(ImageCache.defaultTotalCostLimit, 0)
    }

    /// The effective limit is the smallest on the cgroup's path: its own, or
    /// any ancestor's; "max" and v1's huge "unlimited" value do not count.
    func testCgroupLimitIsTheSmallestOnTheProcessPath() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("cgroup-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func put(_ path: String, _ text: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        // v1 (this machine kind): memory controller under /memory, unlimited at the root.
        try put("memory/memory.limit_in_bytes", "9223372036854771712\n")
        try put("memory/jobs/memory.limit_in_bytes", "536870912\n")
        try put("memory/jobs/one/memory.limit_in_bytes", "1073741824\n")
        let v1 = "5:cpu:/\n4:memory:/jobs/one\n0::/\n"
        XCTAssertEqual(MemoryPressureMonitor.cgroupMemoryLimit(membership: v1, root: root.path), 536_870_912)
        // v2: the process's own cgroup, below the root.
        try put("svc/memory.max", "300000000\n")
        try put("svc/web/memory.max", "max\n")
        XCTAssertEqual(MemoryPressureMonitor.cgroupMemoryLimit(membership: "0::/svc/web\n", root: root.path), 300_000_000)
        XCTAssertNil(MemoryPressureMonitor.cgroupMemoryLimit(membership: "0::/elsewhere\n", root: root.path))
        XCTAssertNil(MemoryPressureMonitor.cgroupMemoryLimit(membership: "garbage", root: root.path))
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
