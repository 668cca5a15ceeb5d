import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// asyncimage-bench disk [--count N] [--entries N] [--large]: the disk cache against
// the network it saves, in one run, on 127.0.0.1 only.
//
// 1. Loads of N photos (the loader benchmark's set) at display size
//    (256x256) through a loader with a disk cache, served by an in-process
//    loopback server: cold (empty disk: network, decode, store), warm (a new
//    loader with an empty memory cache over the same disk) from stored
//    originals (read, decoded at display size) and from stored thumbnails
//    (read back, no decode of the original), and revalidated (the server
//    sends `no-cache`: every load asks again and gets a 304, then reads the
//    stored thumbnail). Images per second, CPU per image, and the requests
//    the server saw; then the thumbnails' ratio against the originals.
// 2. A DataCache with `--entries` small entries: the time `init` takes
//    (start-up never waits for the folder), the time the background rebuild
//    takes (`flush`), and lookup latency for hits and misses (median, p99).

/// Options of `disk`.
struct DiskOptions {
    var count = 100
    var entries = 100_000
    /// `--large`: 12-megapixel photos (4000x3000 and 3000x4000) instead of the loader set's 1.5-5 MP.
    var large = false
}

/// What the loads part of `disk` measured: per row, one sample per round.
struct DiskFigures {
    struct Row {
        var name: String
        var rates: [Double] = []
        /// CPU milliseconds per image.
        var cpu: [Double] = []
        /// Requests the server saw.
        var requests: [Int] = []
    }

    var count: Int
    var megabytes: Double
    var rows: [Row] = []
    /// Loads that failed, over every pass.
    var failures = 0

    func row(_ name: String) -> Row? { rows.first { $0.name == name } }
}

let diskWarmOriginalRow = "warm, original decoded"
let diskWarmThumbnailRow = "warm, thumbnail read back"

/// The loads part of `disk`: `count` photos at display size through a
/// loader with a disk cache, cold, warm and revalidated, `runs` rounds; each
/// row's line goes to `log`. The set is generated into `sets` (the loader
/// set's photos unless `large`); the disks live in `work`.
func measureDiskLoads(
    count: Int, large: Bool, sets: URL, work: URL, runs: Int, sizes: [(Int, Int)] = defaultPhotoSizes,
    setName: String = "loader-set", log: (String) -> Void
) throws -> DiskFigures {
    let setFolder = sets.appendingPathComponent(large ? "disk-12mp-set" : setName)
    let names = try makeImageSet(count: count, folder: setFolder, sizes: large ? [(4000, 3000), (3000, 4000)] : sizes)
    let bodies = try names.map { try Data(contentsOf: setFolder.appendingPathComponent($0)) }
    let megabytes = Double(bodies.reduce(0) { $0 + $1.count }) / 1e6
    let revalidating = Locked(false)
    let requests = Locked(0)
    let server = try LoopbackServer { request, connection in
        requests.withLock { $0 += 1 }
        guard let index = Int(request.path.dropFirst().split(separator: ".").first ?? ""), index < bodies.count else {
            return connection.respond(status: 404, body: Data())
        }
        let etag = "\"\(index)\""
        if revalidating.withLock({ $0 }) {
            if request.headers["if-none-match"] == etag {
                return connection.respond(status: 304, headers: [("ETag", etag), ("Cache-Control", "no-cache")], body: Data())
            }
            return connection.respond(
                status: 200, headers: [("ETag", etag), ("Cache-Control", "no-cache"), ("Content-Type", "image/jpeg")],
                body: bodies[index])
        }
        connection.respond(
            status: 200, headers: [("ETag", etag), ("Cache-Control", "max-age=3600"), ("Content-Type", "image/jpeg")],
            body: bodies[index])
    }
    defer { server.stop() }
    let urls = (0..<bodies.count).map { server.url("/\($0).jpg") }
    log("disk: \(bodies.count) photos (\(String(format: "%.0f", megabytes)) MB) at 256x256 through a loader with a disk cache, 2 loads")
    log("workload                       images/s  CPU ms/image  server requests")
    var figures = DiskFigures(count: bodies.count, megabytes: megabytes)

    func pass(_ name: String, disk: DataCache, storage: DiskStorage = .both) {
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: ImageCache(), deliveryQueue: DispatchQueue(label: "disk bench"),
                notificationCenter: NotificationCenter(), diskCache: disk, diskStorage: storage))
        let before = requests.withLock { $0 }
        let (start, cpu) = (now(), cpuSeconds())
        let done = DispatchGroup()
        let failures = Locked([String]())
        for url in urls {
            done.enter()
            loader.loadImage(
                ImageRequest(url: url, targetSize: PixelSize(width: 256, height: 256)), target: nil,
                success: ImageAction("bench") { _, _, _ in done.leave() },
                failure: ImageFailureAction("bench") { _, error, _ in
                    failures.withLock { $0.append("\(error)") }
                    done.leave()
                })
        }
        done.wait()
        for failure in failures.withLock({ $0 }) { log("  failure: \(failure)") }
        figures.failures += failures.withLock { $0.count }
        loader.flushDiskWrites()
        let seconds = now() - start
        let perImage = (cpuSeconds() - cpu) * 1000 / Double(urls.count)
        let seen = requests.withLock { $0 } - before
        let padded = name.padding(toLength: 28, withPad: " ", startingAt: 0)
        log(padded + String(format: " %10.1f %13.2f %16d", Double(urls.count) / seconds, perImage, seen))
        if !figures.rows.contains(where: { $0.name == name }) { figures.rows.append(DiskFigures.Row(name: name)) }
        let index = figures.rows.firstIndex { $0.name == name }!
        figures.rows[index].rates.append(Double(urls.count) / seconds)
        figures.rows[index].cpu.append(perImage)
        figures.rows[index].requests.append(seen)
    }

    // Each round: two fresh disks, one keeping originals only (a warm load
    // decodes the original at display size), the other thumbnails too (a
    // warm load reads one back); cold loads into each, then warm loads from
    // each, in turns so that the machine's drift hits both; then a fresh disk
    // whose server answers `no-cache` (every load asks again and gets a 304).
    for round in 0..<runs {
        let folder = work.appendingPathComponent("round-\(round)")
        let originals = try DataCache(directory: folder.appendingPathComponent("originals"), limits: .init(sizeLimit: 1 << 30))
        let disk = try DataCache(directory: folder.appendingPathComponent("loads"), limits: .init(sizeLimit: 1 << 30))
        pass("cold, originals stored", disk: originals, storage: .originals)
        pass("cold, both stored", disk: disk)
        pass(diskWarmOriginalRow, disk: originals, storage: .originals)
        pass(diskWarmThumbnailRow, disk: disk)
        revalidating.withLock { $0 = true }
        let revalidated = try DataCache(directory: folder.appendingPathComponent("revalidated"), limits: .init(sizeLimit: 1 << 30))
        pass("cold, no-cache", disk: revalidated)
        pass("revalidated (304)", disk: revalidated)
        revalidating.withLock { $0 = false }
        try? FileManager.default.removeItem(at: folder)
    }
    return figures
}

func runDiskBenchmark(_ options: DiskOptions) throws {
    let work = URL(fileURLWithPath: "bench-output/disk-\(getpid())")
    defer { try? FileManager.default.removeItem(at: work) }
    let figures = try measureDiskLoads(
        count: options.count, large: options.large, sets: URL(fileURLWithPath: "bench-output"), work: work, runs: 3,
        log: { print($0) })
    if let original = figures.row(diskWarmOriginalRow), let thumbnail = figures.row(diskWarmThumbnailRow) {
        let (rateO, cpuO) = (Samples(original.rates).median, Samples(original.cpu).median)
        let (rateT, cpuT) = (Samples(thumbnail.rates).median, Samples(thumbnail.cpu).median)
        print(String(format: "stored thumbnails vs originals decoded at display size (medians of 3): %.1fx images/s, %.1fx less CPU per image (goal: >= 20x faster)", rateT / rateO, cpuO / cpuT))
    }

    // A folder of many small entries: start-up and lookups.
    let folder = work.appendingPathComponent("many")
    do {
        let filling = try DataCache(directory: folder, limits: .init(sizeLimit: 1 << 32, countLimit: Int.max))
        let body = Data(repeating: 7, count: 200)
        let start = now()
        for index in 0..<options.entries { try filling.store(body, for: "key-\(index)") }
        filling.flush()
        print(String(format: "\n%d entries of 200 bytes written in %.1f s (%.0f us a write)", options.entries, now() - start, (now() - start) * 1e6 / Double(options.entries)))
    }
    let opening = now()
    let cache = try DataCache(directory: folder, limits: .init(sizeLimit: 1 << 32, countLimit: Int.max))
    let opened = now() - opening
    var hits: [Double] = []
    var misses: [Double] = []
    var random = SplitMix64(seed: 5)
    for round in 0..<4000 {
        let key = round % 2 == 0 ? "key-\(random.next() % UInt64(options.entries))" : "absent-\(round)"
        let t = now()
        let found = cache.data(for: key) != nil
        (found ? { hits.append(now() - t) } : { misses.append(now() - t) })()
    }
    let lookupsDone = now() - opening
    cache.flush()
    let rebuilt = now() - opening
    // Microseconds, from the shared samples' nearest-rank percentile.
    func percentile(_ values: [Double], _ p: Double) -> Double { values.isEmpty ? 0 : Samples(values).percentile(p) * 1e6 }
    print(String(format: "start-up: init returned in %.2f ms; 4,000 lookups done %.0f ms after it; the background rebuild done %.0f ms after it", opened * 1000, lookupsDone * 1000, rebuilt * 1000))
    print(String(format: "lookups (during the rebuild): hit median %.1f us, p99 %.1f us; miss median %.1f us, p99 %.1f us (%d hits, %d misses)", percentile(hits, 0.5), percentile(hits, 0.99), percentile(misses, 0.5), percentile(misses, 0.99), hits.count, misses.count))
    print("ledger after the rebuild: \(cache.count) entries, \(cache.totalSize / 1_000_000) MB")
}
