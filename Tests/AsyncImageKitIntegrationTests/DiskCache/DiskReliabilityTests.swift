@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The disk cache under writers that race: two processes storing the same
/// keys at the same moment lose nothing and mix nothing; the size limit
/// holds while entries are being written.
final class DiskReliabilityTests: XCTestCase {
    private static let sharedCount = 40
    private static let ownCount = 40

    /// A body that says which answer it was: the `n`th image, answered as
    /// version `version` (its colour encodes both).
    private static func png(_ n: Int, version: Int) -> Data {
        try! PNGEncoder().encode(
            SyntheticImage.solid(width: 6, height: 6, color: RGBA(r: UInt8(n), g: UInt8(version * 60), b: 9)))
    }

    /// Two worker processes load the same 40 URLs (and 40 of their own) into
    /// one folder; the server answers each shared URL only once both have
    /// asked, so their writes of one key overlap, with a different version
    /// (ETag and pixels) for each. A third loader then reads every URL
    /// offline: each is there, and its headers and its body are of one answer.
    func testTwoProcessesStoringTheSameKeysLoseNothing() throws {
        let folder = temporaryFolder("two-writers")
        let arrivals = LoopbackHTTP.Locked([String: Int]())
        let bothAsked = LoopbackHTTP.Locked([String: Gate]())
        let server = try LoopbackServer { request, connection in
            let name = String(request.path.dropFirst())
            let (version, gate) = arrivals.withLock { counts -> (Int, Gate?) in
                counts[name, default: 0] += 1
                let gate = bothAsked.withLock { gates -> Gate? in
                    guard name.hasPrefix("shared-") else { return nil }
                    if gates[name] == nil { gates[name] = Gate() }
                    return gates[name]
                }
                return (counts[name]!, gate)
            }
            if let gate {
                if version >= 2 { gate.open() } else { _ = gate.wait(timeout: 20) }
            }
            let n = Int(name.split(separator: "-")[1].split(separator: ".")[0])!
            connection.respond(
                status: 200,
                headers: [("ETag", "\"v\(version)\""), ("Cache-Control", "max-age=3600"), ("Content-Type", "image/png")],
                body: Self.png(n, version: version))
        }
        defer { server.stop() }
        let base = server.url("/").absoluteString
        let workers = try ["a", "b"].map { name in
            try startWorker(
                "DiskReliabilityTests/testStoringWorker", "STORING_WORKER", "\(folder.path)|\(base)|\(name)")
        }
        for worker in workers {
            worker.waitUntilExit()
            XCTAssertEqual(worker.terminationStatus, 0, "the worker loaded and stored everything")
        }
        let shared = arrivals.withLock { counts in counts.filter { $0.key.hasPrefix("shared-") } }
        XCTAssertEqual(shared.count, Self.sharedCount)
        XCTAssertTrue(shared.values.allSatisfy { $0 == 2 }, "both workers fetched every shared URL: \(shared)")

        let reader = AsyncImageLoader(
            configuration: .init(
                cache: nil, deliveryQueue: DispatchQueue(label: "reader"), notificationCenter: NotificationCenter(),
                diskCache: try DataCache(directory: folder)))
        var paths = (0..<Self.sharedCount).map { "shared-\($0).png" }
        for worker in ["a", "b"] { paths += (0..<Self.ownCount).map { "own\(worker)-\($0).png" } }
        let lost = LoopbackHTTP.Locked([String]())
        for path in paths {
            let done = expectation(description: path)
            reader.loadImage(
                ImageRequest(url: server.url("/" + path), cachePolicy: .cachedOnly),
                success: ImageAction("check", response: { _, response in
                    let image = response.image
                    let etag = response.http?.headers["etag"] ?? ""
                    let version = Int(etag.dropFirst(2).dropLast()) ?? 0
                    let n = Int(path.split(separator: "-")[1].split(separator: ".")[0])!
                    let expected = RGBA(r: UInt8(n), g: UInt8(version * 60), b: 9)
                    XCTAssertEqual(image.pixel(x: 0, y: 0), expected, "\(path): the headers (\(etag)) and the body of one answer")
                    done.fulfill()
                }),
                failure: ImageFailureAction("lost") { _, error, _ in
                    lost.withLock { $0.append("\(path): \(error)") }
                    done.fulfill()
                })
            wait(for: [done], timeout: 10)
        }
        XCTAssertEqual(lost.withLock { $0 }, [], "stored by both writers, and lost")
    }

    /// The worker of the test above (does nothing in a normal run): loads the
    /// shared URLs, then its own, at 4 loads, and flushes.
    func testStoringWorker() throws {
        guard let spec = ProcessInfo.processInfo.environment["STORING_WORKER"] else { return }
        let parts = spec.split(separator: "|").map(String.init)
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: nil, concurrentLoads: 4, deliveryQueue: DispatchQueue(label: "worker"),
                notificationCenter: NotificationCenter(), diskCache: try DataCache(directory: URL(fileURLWithPath: parts[0]))))
        var paths = (0..<Self.sharedCount).map { "shared-\($0).png" }
        paths += (0..<Self.ownCount).map { "own\(parts[2])-\($0).png" }
        let done = DispatchGroup()
        let failed = LoopbackHTTP.Locked(0)
        // One at a time into the queue, oldest first (the queue is LIFO):
        // both workers ask for the shared URLs in the same order.
        for path in paths {
            done.enter()
            loader.loadImage(
                ImageRequest(url: URL(string: parts[1] + path)!),
                success: ImageAction("ok") { _, _, _ in done.leave() },
                failure: ImageFailureAction("failed") { _, _, _ in
                    failed.withLock { $0 += 1 }
                    done.leave()
                })
            done.wait()
        }
        loader.flushDiskWrites()
        if failed.withLock({ $0 }) > 0 { exit(3) }
    }

    /// The folder (every file's apparent size, temporary files included),
    /// sampled while 30 bodies of about 280 KB are loaded and stored, 4
    /// transfers at once, into a 2 MiB cache, never passes the limit by more
    /// than the entry being written (the loader stores one at a time).
    func testTheSizeLimitHoldsWhileWriting() throws {
        let folder = temporaryFolder("size-limit")
        let limit = 2 << 20
        let disk = try DataCache(directory: folder, limits: .init(sizeLimit: limit))
        let bodies = (0..<30).map { n in
            try! PNGEncoder().encode(SyntheticImage.photo(width: 480, height: 360, seed: UInt64(n + 1)))
        }
        let largest = bodies.map(\.count).max()!
        XCTAssertGreaterThan(largest, 200_000, "bodies large enough that a few pass the limit")
        let server = try LoopbackServer { request, connection in
            let n = Int(request.path.dropFirst().split(separator: ".")[0]) ?? 0
            connection.respond(
                status: 200, headers: [("Cache-Control", "max-age=3600"), ("Content-Type", "image/png")], body: bodies[n])
        }
        defer { server.stop() }
        let sampling = LoopbackHTTP.Locked(true)
        let peak = LoopbackHTTP.Locked(0)
        let sampler = Thread {
            while sampling.withLock({ $0 }) {
                let size = Self.apparentSize(of: folder)
                peak.withLock { $0 = max($0, size) }
            }
        }
        sampler.start()
        // Bytes through the HTTP cache with no decoding between them: the
        // writes come as fast as the loopback answers (4 at once; the
        // loader's disk write queue stores one at a time).
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: nil, deliveryQueue: DispatchQueue(label: "limit"), notificationCenter: NotificationCenter(),
                diskCache: disk))
        let done = DispatchGroup()
        for lane in 0..<4 {
            done.enter()
            Task {
                for n in stride(from: lane, to: bodies.count, by: 4) {
                    _ = try? await loader.data(for: server.url("/\(n).png"))
                }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
        loader.flushDiskWrites()
        sampling.withLock { $0 = false }
        let final = Self.apparentSize(of: folder)
        print("size limit \(limit): peak \(peak.withLock { $0 }), final \(final), largest entry \(largest)")
        // One writer (the loader's disk write queue) at a time: the entry
        // being written is the only excess allowed, plus the small lock file.
        let allowed = limit + largest + 4096 + 64 * 1024
        XCTAssertLessThanOrEqual(peak.withLock { $0 }, allowed, "the folder's peak while writing")
        XCTAssertLessThanOrEqual(final, limit + 4096)
        XCTAssertGreaterThan(peak.withLock { $0 }, limit / 2, "the sampler saw the folder fill")
    }

    /// At the cache's own level: once a write returns, the folder is within
    /// the limit (eviction happens before the entry goes in, not later on a
    /// background queue), and the least recently used entries went first.
    func testEveryWriteReturnsWithinTheLimit() throws {
        let folder = temporaryFolder("write-limit")
        let limit = 1 << 20
        let disk = try DataCache(directory: folder, limits: .init(sizeLimit: limit))
        disk.flush()
        let body = Data(repeating: 7, count: 150_000)
        func write(_ n: Int) throws {
            try disk.store(body, for: "key-\(n)")
            XCTAssertLessThanOrEqual(Self.apparentSize(of: folder), limit + 4096, "after write \(n)")
        }
        for n in 0..<20 { try write(n) }
        // The oldest entry left, read: now more recently used than the others.
        let present = (0..<20).filter { disk.contains("key-\($0)") }
        let oldest = try XCTUnwrap(present.first)
        XCTAssertNotNil(disk.data(for: "key-\(oldest)"))
        for n in 20..<23 { try write(n) }
        XCTAssertTrue(disk.contains("key-\(oldest)"), "read last: kept")
        XCTAssertFalse(disk.contains("key-\(present[1])"), "not read since its write: gone first")
        XCTAssertLessThanOrEqual(disk.totalSize, limit)
    }

    /// The apparent size of every file under `folder`.
    static func apparentSize(of folder: URL) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return 0 }
        var total = 0
        while let name = walker.nextObject() as? String {
            var info = stat()
            if stat(folder.path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG { total += Int(info.st_size) }
        }
        return total
    }
}
