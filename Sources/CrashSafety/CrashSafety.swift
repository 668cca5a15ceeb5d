import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The disk cache's crash test, after SQLite's and LMDB's: a writer process
/// loads through a real loader (stores, revalidates with `304`s, replaces
/// with `200`s, writes thumbnails, trims), is killed with SIGKILL at a
/// random moment, and a checker then reads the folder as the next start
/// would. Shared by `asyncimage-crashtest` (hundreds of kills, release) and
/// the test suite (about ten).
public enum CrashSafety {
    /// The URLs the writer loads, and the versions each can have.
    public static let urlCount = 16
    /// The size limit the writer's cache runs under: about 16 bodies and
    /// their thumbnails, so that it trims all the time.
    public static let sizeLimit = 60_000
    /// The display size of the thumbnails it stores.
    public static let thumbnail = PixelSize(width: 24, height: 24)

    /// The body of version `version` of image `index`: a PNG whose pixels
    /// say both (the colour) and whose noise makes it some 20 KB, so that
    /// the writer's cache trims.
    public static func body(_ index: Int, version: Int) -> Data {
        let image = SyntheticImage.make(width: 96, height: 72) { pixels in
            var random = SplitMix64(seed: UInt64(index * 1000 + version))
            for offset in stride(from: 0, to: 96 * 72 * 4, by: 4) {
                let noise = UInt8(truncatingIfNeeded: random.next() & 7)
                pixels[offset] = UInt8(index * 12) &+ noise
                pixels[offset + 1] = UInt8(truncatingIfNeeded: version * 37) &+ noise
                pixels[offset + 2] = 77 &+ noise
                pixels[offset + 3] = 255
            }
        }
        return try! PNGEncoder().encode(image)
    }

    /// The colour of version `version` of image `index`, noise aside.
    static func colour(_ index: Int, version: Int) -> RGBA {
        RGBA(r: UInt8(index * 12), g: UInt8(truncatingIfNeeded: version * 37), b: 77)
    }

    /// The cache key of image `index`.
    static func key(_ index: Int) -> String { "crash-\(index)" }

    // MARK: The writer

    /// Runs the writer until it is killed (or `seconds` pass): a server on
    /// 127.0.0.1 whose images change version now and then, and a loader with
    /// a disk cache in `folder` loading them at full and thumbnail size, every
    /// load revalidated (`no-cache`: a `304` or a new `200`).
    public static func runWriter(folder: URL, seed: UInt64, seconds: Double = 3600) throws {
        let versions = Locked([Int](repeating: 1, count: urlCount))
        let random = Locked(SplitMix64(seed: seed))
        let server = try LoopbackServer { request, connection in
            guard let index = Int(request.path.dropFirst().split(separator: ".")[0]), index < urlCount else {
                return connection.respond(status: 404, body: Data())
            }
            // One answer in four brings a new version (a 200 that replaces).
            let version = versions.withLock { values -> Int in
                if random.withLock({ $0.next() % 4 }) == 0 { values[index] += 1 }
                return values[index]
            }
            let tag = "\"\(index)-\(version)\""
            if request.headers["if-none-match"] == tag {
                return connection.respond(status: 304, headers: [("ETag", tag), ("Cache-Control", "no-cache")], body: Data())
            }
            connection.respond(
                status: 200, headers: [("ETag", tag), ("Cache-Control", "no-cache"), ("Content-Type", "image/png")],
                body: body(index, version: version))
        }
        defer { server.stop() }
        let disk = try DataCache(directory: folder, limits: .init(sizeLimit: sizeLimit))
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: nil, concurrentLoads: 4, deliveryQueue: DispatchQueue(label: "crash-writer"),
                notificationCenter: NotificationCenter(), diskCache: disk))
        let deadline = Date(timeIntervalSinceNow: seconds)
        var picks = SplitMix64(seed: seed &+ 1)
        while Date() < deadline {
            let done = DispatchGroup()
            for _ in 0..<8 {
                let index = Int(picks.next() % UInt64(urlCount))
                let url = server.url("/\(index).png")
                // Keyed by name, not by the server's port: every writer run
                // meets (and replaces) the responses the earlier ones stored.
                let request =
                    picks.next() % 2 == 0
                    ? ImageRequest(url: url, key: key(index))
                    : ImageRequest(url: url, targetSize: thumbnail, key: key(index))
                done.enter()
                loader.loadImage(
                    request, success: ImageAction("stored") { _, _, _ in done.leave() },
                    failure: ImageFailureAction("failed") { _, _, _ in done.leave() })
            }
            done.wait()
        }
        loader.flushDiskWrites()
    }

    // MARK: The checker

    /// What one check found.
    public struct Report: Sendable, CustomStringConvertible {
        /// Stored responses (headers entries) read.
        public var responses = 0
        /// Bodies read back and found to be exactly their version's bytes.
        public var bodies = 0
        /// Thumbnails read back and found to show their version.
        public var thumbnails = 0
        /// Parts that were not their headers entry's version (a mix) or not
        /// an image: must stay 0.
        public var mismatches: [String] = []
        /// Temporary files the killed writer left (before the start-up clean-up).
        public var killedMidWrite = 0
        /// Temporary files left after the start-up clean-up: must stay 0.
        public var leftovers = 0
        /// The ledger's totals against the folder's after the start-up
        /// rebuild: must agree.
        public var ledger = (size: 0, count: 0)
        public var folder = (size: 0, count: 0)

        public init() {}

        public var isClean: Bool {
            mismatches.isEmpty && leftovers == 0 && ledger.size == folder.size && ledger.count == folder.count
        }

        public var description: String {
            "\(responses) responses, \(bodies) bodies, \(thumbnails) thumbnails checked; \(mismatches.count) mismatches, "
                + "\(killedMidWrite) temporary files found, \(leftovers) left, ledger \(ledger.size) B / \(ledger.count) against the folder's "
                + "\(folder.size) B / \(folder.count)"
        }
    }

    /// Reads `folder` as the next start would: opens the cache (its start-up
    /// rebuild of the totals and clean-up of a killed writer's temporary
    /// files), then reads every stored response and its parts.
    public static func check(folder: URL) throws -> Report {
        let found = scan(folder.appendingPathComponent("AsyncImageKit.v1")).temporary
        let disk = try DataCache(directory: folder, limits: .init(sizeLimit: sizeLimit))
        disk.flush()  // the start-up rebuild
        var report = Report()
        report.killedMidWrite = found
        let store = ImageDiskStore(cache: disk)
        let processing = ImageRequest(url: URL(string: "http://127.0.0.1/0.png")!, targetSize: thumbnail).cacheKey.processing
        for index in 0..<urlCount {
            let key = key(index)
            guard let headers = store.headers(for: key), let generation = headers.generation else { continue }
            report.responses += 1
            let etag = headers.etag ?? ""
            let parts = etag.dropFirst().dropLast().split(separator: "-").compactMap { Int($0) }
            guard parts.count == 2, parts[0] == index else {
                report.mismatches.append("\(key): headers with ETag \(etag)")
                continue
            }
            let version = parts[1]
            if let stored = disk.data(for: ImageDiskStore.originalKey(key, generation: generation)) {
                if stored == body(index, version: version) {
                    report.bodies += 1
                } else {
                    report.mismatches.append("\(key): a body that is not version \(version)'s")
                }
            }
            if let stored = disk.data(for: ImageDiskStore.processedKey(key, processing, generation: generation)) {
                let expected = colour(index, version: version)
                if let image = StoredImage.decode(stored, decoders: .default),
                    close(image.pixel(x: 12, y: 12), expected)
                {
                    report.thumbnails += 1
                } else {
                    report.mismatches.append("\(key): a thumbnail that is not version \(version)'s")
                }
            }
        }
        let files = scan(disk.directory)
        report.leftovers = files.temporary
        report.folder = (files.size, files.count)
        report.ledger = (disk.totalSize, disk.count)
        return report
    }

    private static func close(_ a: RGBA, _ b: RGBA) -> Bool {
        abs(Int(a.r) - Int(b.r)) <= 12 && abs(Int(a.g) - Int(b.g)) <= 12 && abs(Int(a.b) - Int(b.b)) <= 12
    }

    /// The entry files under `root` (their apparent sizes and count) and the
    /// temporary files.
    static func scan(_ root: URL) -> (size: Int, count: Int, temporary: Int) {
        var (size, count, temporary) = (0, 0, 0)
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return (0, 0, 0) }
        while let name = walker.nextObject() as? String {
            let last = (name as NSString).lastPathComponent
            var info = stat()
            guard stat(root.path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG, last != "lock" else { continue }
            if last.hasPrefix(".tmp-") {
                temporary += 1
            } else {
                size += Int(info.st_size)
                count += 1
            }
        }
        return (size, count, temporary)
    }

    // MARK: The driver

    /// Kills `kills` writers at random moments (each started by `start`, a
    /// process that runs ``runWriter(folder:seed:seconds:)`` on `folder`)
    /// and checks the folder after each. `log` is told each round.
    public static func run(
        kills: Int, folder: URL, seed: UInt64, start: (_ seed: UInt64) throws -> Process,
        log: (String) -> Void = { _ in }
    ) throws -> (kills: Int, total: Report, failures: [String]) {
        var random = SplitMix64(seed: seed)
        var total = Report()
        var failures: [String] = []
        var done = 0
        for round in 0..<kills {
            let writer = try start(random.next())
            // A moment in its life: 50 to 800 ms after it starts.
            usleep(useconds_t(50_000 + random.next() % 750_000))
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            done += 1
            let report = try check(folder: folder)
            log("kill \(round + 1): \(report)")
            if !report.isClean { failures.append("kill \(round + 1): \(report) \(report.mismatches.prefix(3))") }
            total.responses += report.responses
            total.bodies += report.bodies
            total.thumbnails += report.thumbnails
            total.mismatches += report.mismatches
            total.leftovers += report.leftovers
            total.killedMidWrite += report.killedMidWrite
        }
        return (done, total, failures)
    }
}
