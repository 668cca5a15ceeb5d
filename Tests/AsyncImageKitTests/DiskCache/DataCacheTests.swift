@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// The disk cache's file format, recovery, limits and sharing, on real files.
final class DataCacheTests: XCTestCase {
    private var folder: URL!

    override func setUp() {
        folder = temporaryFolder("datacache")
    }

    func testSHA256MatchesTheStandardsVectors() {
        XCTAssertEqual(SHA256.hex(Array("".utf8)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(SHA256.hex(Array("abc".utf8)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(
            SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    func testRoundTripWithMetadataUnderAHashedName() throws {
        let cache = try DataCache(directory: folder)
        let key = "https://example.invalid/a/../b?q=1&x=/etc/passwd"
        let body = Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 * 7) })
        try cache.store(body, for: key, metadata: DataCacheMetadata(etag: "\"v1\"", lastModified: "Mon", freshUntil: 42))
        let entry = try XCTUnwrap(cache.entry(for: key))
        XCTAssertEqual(entry.data, body)
        XCTAssertEqual(entry.metadata.etag, "\"v1\"")
        XCTAssertEqual(entry.metadata.lastModified, "Mon")
        XCTAssertEqual(entry.metadata.freshUntil, 42)
        XCTAssertEqual(entry.metadata.key, key)
        XCTAssertGreaterThan(entry.metadata.storedAt, 1_700_000_000)
        XCTAssertTrue(cache.contains(key))
        XCTAssertNil(cache.data(for: key + "x"))
        // The file: <root>/ab/cd/<64 hex digits>, nothing of the key's text.
        let path = cache.path(for: key)
        let parts = path.dropFirst(cache.directory.path.count + 1).split(separator: "/")
        XCTAssertEqual(parts.count, 3)
        XCTAssertEqual(parts[2].count, 64)
        XCTAssertTrue(parts[2].allSatisfy { "0123456789abcdef".contains($0) })
        XCTAssertEqual(String(parts[0]), String(parts[2].prefix(2)))
        XCTAssertFalse(path.contains("example"))
        XCTAssertTrue(cache.directory.path.hasSuffix("AsyncImageKit.v1"))
        // A new instance (a restart) finds it.
        let again = try DataCache(directory: folder)
        XCTAssertEqual(again.data(for: key), body)
        again.flush()
        XCTAssertEqual(again.count, 1)
        XCTAssertEqual(again.totalSize, Int(try FileManager.default.attributesOfItem(atPath: path)[.size] as! UInt64))
        cache.removeData(for: key)
        XCTAssertNil(again.data(for: key))
        XCTAssertEqual(again.count, 0)
    }

    /// Files written by hand: corrupt, truncated, of another version, or not
    /// an entry at all. Each reads as a miss and is removed; the cache goes on.
    func testBadFilesAreMissesAndAreRemoved() throws {
        let cache = try DataCache(directory: folder)
        let body = Data(repeating: 9, count: 3000)
        for (index, damage) in ["flip", "truncate", "version", "garbage", "empty", "otherKey"].enumerated() {
            let key = "k\(index)"
            try cache.store(body, for: key)
            let path = cache.path(for: key)
            var file = try Data(contentsOf: URL(fileURLWithPath: path))
            switch damage {
            case "flip": file[file.count - 10] ^= 0xFF
            case "truncate": file = file.prefix(file.count - 1)
            case "version": file[4] = 99
            case "garbage": file = Data("not an entry at all, but long enough to have a header".utf8)
            case "empty": file = Data()
            default:
                try cache.store(body, for: "other")
                file = try Data(contentsOf: URL(fileURLWithPath: cache.path(for: "other")))
            }
            try file.write(to: URL(fileURLWithPath: path))
            XCTAssertNil(cache.data(for: key), damage)
            // A newer format's entry is left for the library that wrote it.
            XCTAssertEqual(FileManager.default.fileExists(atPath: path), damage == "version", "\(damage): removed or kept")
            try cache.store(body, for: key)
            XCTAssertEqual(cache.data(for: key), body, "\(damage): written again")
        }
    }

    /// Past a limit, the least recently used entries go, down to 85%.
    func testLimitsTrimTheLeastRecentlyUsedAsEntriesAreWritten() throws {
        let cache = try DataCache(directory: folder, limits: .init(sizeLimit: 40_000, countLimit: 1000))
        cache.flush()
        let body = Data(repeating: 1, count: 1900)  // about 2,000 bytes an entry with its header
        for n in 0..<18 { try cache.store(body, for: "k\(n)") }
        cache.flush()
        XCTAssertLessThanOrEqual(cache.totalSize, 40_000)
        // k0 and k1 used last: they stay when the next writes pass the limit.
        for n in [0, 1] {
            XCTAssertNotNil(cache.data(for: "k\(n)"))
            try setUsed(cache, "k\(n)", secondsAgo: -10)  // in the future: the most recent
        }
        for n in 18..<30 { try cache.store(body, for: "k\(n)") }
        cache.flush()
        XCTAssertLessThanOrEqual(cache.totalSize, 40_000)
        XCTAssertLessThanOrEqual(actualSize(cache), 40_000)
        XCTAssertEqual(cache.totalSize, actualSize(cache))
        XCTAssertNotNil(cache.data(for: "k0"))
        XCTAssertNotNil(cache.data(for: "k1"))
        XCTAssertNil(cache.data(for: "k2"), "the least recently used went first")
        XCTAssertNotNil(cache.data(for: "k29"))

        cache.limits = .init(sizeLimit: 1 << 30, countLimit: 10)
        try cache.store(body, for: "one more")
        cache.flush()
        XCTAssertLessThanOrEqual(cache.count, 10)
        XCTAssertNotNil(cache.data(for: "one more"))
    }

    func testEntriesPastTheAgeLimitGoAtTheNextTrim() throws {
        let cache = try DataCache(directory: folder, limits: .init(sizeLimit: 10_000, ageLimit: 3600))
        try cache.store(Data(count: 100), for: "old")
        try cache.store(Data(count: 100), for: "new")
        try setUsed(cache, "old", secondsAgo: 7200)
        try setUsed(cache, "new", secondsAgo: -60)  // used last: the size trim keeps it
        for n in 0..<6 { try cache.store(Data(count: 1900), for: "fill\(n)") }  // passes the size limit
        cache.flush()
        XCTAssertFalse(cache.contains("old"), "past the age limit")
        XCTAssertTrue(cache.contains("new"))
    }

    /// Four threads writing, reading and removing the same keys, with trims:
    /// never a corrupt read, and the ledger matches the folder.
    func testThreadsShareACache() throws {
        let cache = try DataCache(directory: folder, limits: .init(sizeLimit: 60_000, countLimit: 25))
        let bad = Counter()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            var random = SplitMix64(seed: 99 + UInt64(worker))
            for _ in 0..<400 {
                let key = "k\(random.next() % 40)"
                switch random.next() % 4 {
                case 0, 1: try? cache.store(Self.body(for: key, &random), for: key)
                case 2: if let data = cache.data(for: key), !Self.isValid(data, for: key) { bad.increment() }
                default: cache.removeData(for: key)
                }
            }
        }
        cache.flush()
        XCTAssertEqual(bad.value, 0)
        XCTAssertEqual(cache.totalSize, actualSize(cache))
        XCTAssertLessThanOrEqual(actualSize(cache), 60_000)
        XCTAssertLessThanOrEqual(cache.count, 25)
    }

    private static func body(for key: String, _ random: inout SplitMix64) -> Data { DataCacheEntries.body(for: key, &random) }

    private static func isValid(_ data: Data, for key: String) -> Bool { DataCacheEntries.isValid(data, for: key) }

    private func actualSize(_ cache: DataCache) -> Int { DataCacheEntries.actualSize(cache) }

    /// Sets when `key`'s entry was last used.
    private func setUsed(_ cache: DataCache, _ key: String, secondsAgo: Double) throws {
        let when = Date().timeIntervalSince1970 - secondsAgo
        var times = [timespec](repeating: timespec(tv_sec: Int(when), tv_nsec: 0), count: 2)
        XCTAssertEqual(utimensat(AT_FDCWD, cache.path(for: key), &times, 0), 0)
    }
}
