@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The disk cache shared by processes: this test binary run again as
/// workers (the rest of the disk cache's tests: DataCacheTests in
/// AsyncImageKitTests).
final class MultiProcessDataCacheTests: XCTestCase {
    private var folder: URL!

    override func setUp() {
        folder = temporaryFolder("datacache")
    }

    /// Two more processes (this test binary, run as workers) and this one
    /// write, read, remove and trim the same keys in one folder at once.
    func testProcessesShareAFolder() throws {
        let limits = DataCache.Limits(sizeLimit: 80_000, countLimit: 30)
        let workers = try (0..<2).map { index -> Process in
            try startWorker("MultiProcessDataCacheTests/testWorker", "DATACACHE_WORKER", "\(folder.path)|\(index)")
        }
        let bad = try Self.work(in: folder, seed: 7, limits: limits)
        workers.forEach { $0.waitUntilExit() }
        XCTAssertEqual(workers.map(\.terminationStatus), [0, 0], "a worker saw a corrupt read or failed")
        XCTAssertEqual(bad, 0)
        let markers = try DataCache(directory: URL(fileURLWithPath: folder.path + "-markers"))
        defer { try? FileManager.default.removeItem(atPath: folder.path + "-markers") }
        XCTAssertEqual(markers.data(for: "worker-0"), Data("ran".utf8), "worker 0 ran")
        XCTAssertEqual(markers.data(for: "worker-1"), Data("ran".utf8), "worker 1 ran")
        // The ledger the three processes kept (read before anything rebuilds it) is exact.
        let ledger = try Data(contentsOf: folder.appendingPathComponent("AsyncImageKit.v1/lock"))
        let ledgerSize = ledger.prefix(8).withUnsafeBytes { $0.loadUnaligned(as: Int64.self) }
        let cache = try DataCache(directory: folder, limits: limits)
        XCTAssertEqual(Int(ledgerSize), actualSize(cache), "no update was lost between processes")
        XCTAssertLessThanOrEqual(actualSize(cache), 80_000, "the folder ends within its limit")
        cache.flush()  // the start-up rebuild
        XCTAssertEqual(cache.totalSize, actualSize(cache))
    }

    /// A worker process of ``testProcessesShareAFolder()`` (does nothing otherwise).
    func testWorker() throws {
        guard let spec = ProcessInfo.processInfo.environment["DATACACHE_WORKER"] else { return }
        let parts = spec.split(separator: "|")
        let bad = try Self.work(
            in: URL(fileURLWithPath: String(parts[0])), seed: UInt64(parts[1])!, limits: .init(sizeLimit: 80_000, countLimit: 30))
        if bad > 0 { exit(3) }
        // Proof that this worker ran (in a cache of its own, out of the trims'
        // way): read back by the test that started it.
        try DataCache(directory: URL(fileURLWithPath: String(parts[0]) + "-markers"))
            .store(Data("ran".utf8), for: "worker-\(parts[1])")
    }

    private static func work(in folder: URL, seed: UInt64, limits: DataCache.Limits) throws -> Int {
        let cache = try DataCache(directory: folder, limits: limits)
        var random = SplitMix64(seed: seed)
        var bad = 0
        for _ in 0..<600 {
            let key = "k\(random.next() % 50)"
            switch random.next() % 4 {
            case 0, 1: try cache.store(body(for: key, &random), for: key)
            case 2: if let data = cache.data(for: key), !isValid(data, for: key) { bad += 1 }
            default: cache.removeData(for: key)
            }
        }
        cache.flush()
        return bad
    }

    private static func body(for key: String, _ random: inout SplitMix64) -> Data { DataCacheEntries.body(for: key, &random) }

    private static func isValid(_ data: Data, for key: String) -> Bool { DataCacheEntries.isValid(data, for: key) }

    private func actualSize(_ cache: DataCache) -> Int { DataCacheEntries.actualSize(cache) }
}
