@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The way from a kernel signal to a purge, with real descriptors standing in
/// for the kernel's: inotify on a file (as on cgroup v2 `memory.events`), and
/// a socket's urgent byte, which raises `POLLPRI` as a PSI trigger does.
final class MemoryPressureMonitorTests: XCTestCase {
    private func filledCache() -> ImageCache {
        let cache = ImageCache()
        cache[ImageCacheKey(url: "http://127.0.0.1/a.png", processing: "")] =
            SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3))
        return cache
    }

    func testAChangeToMemoryEventsPurges() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("memory.events-\(UUID().uuidString)")
        try Data("low 0\nhigh 0\nmax 0\noom 0\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let source = try XCTUnwrap(MemoryPressureMonitor.inotifySource(watching: file.path))
        let purged = expectation(description: "purged")
        let monitor = MemoryPressureMonitor(sources: [source]) { purged.fulfill() }
        defer { monitor.stop() }
        XCTAssertEqual(monitor.watchedSources, ["cgroup2"])
        let cache = filledCache()
        monitor.register(cache)
        XCTAssertEqual(cache.count, 1)

        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data("high 1\n".utf8))
        try handle.close()
        wait(for: [purged], timeout: 10)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(monitor.purgeCount, 1)
        monitor.stop()  // and again in the defer: only the first closes anything
    }

    func testAPSIStyleTriggerPurges() throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends), 0)
        defer { close(ends[0]) }
        let (sender, watched) = (ends[0], ends[1])
        let purged = expectation(description: "purged")
        let monitor = MemoryPressureMonitor(sources: [.psi(watched)]) {
            // Take the urgent byte, or POLLPRI stays up (a PSI trigger's event is consumed by poll).
            var byte: UInt8 = 0
            _ = recv(watched, &byte, 1, Int32(MSG_OOB))
            purged.fulfill()
        }
        defer { monitor.stop() }
        XCTAssertEqual(monitor.watchedSources, ["psi"])
        let cache = filledCache()
        monitor.register(cache)

        var byte: UInt8 = 1
        XCTAssertEqual(send(sender, &byte, 1, Int32(MSG_OOB)), 1)
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
}
