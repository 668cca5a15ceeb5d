@testable import AsyncImageKit
@testable import DemoSupport
import Foundation
import TestSupport
import ImageFixtures
import XCTest

/// The demo runner end to end: a real process, a real embedded server, real
/// pictures. (Its command line and its recorder, in process: DemoSupportTests
/// in AsyncImageKitTests.)
final class DemoTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("demo-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// The demo binary, built beside this test bundle.
    private var demo: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("asyncimage-demo")
    }

    private func run(_ arguments: [String]) throws -> (status: Int32, output: Data, errors: String) {
        // Both streams read together (a child that fills standard error
        // while standard output is read would hang a pipe read in turn).
        let result = try ProcessRun.run(demo, arguments)
        return (result.status, result.output, result.errorText)
    }

    private struct Report: Decodable {
        struct Summary: Decodable {
            let requests: Int
            let loaded: Int
            let failed: Int
            let cancelled: Int
            let cacheHits: Int
            let memoryCacheHits: Int
            let diskCacheHits: Int
            let pairsBothStarted: Int
            let thumbnailStartedFirst: Int
        }
        struct Cell: Decodable {
            let state: String
            let error: String?
        }
        struct Request: Decodable {
            let id: UInt64
            let outcome: String
            let queued: Double?
            let finished: Double?
            let loading: Double?
            let role: String?
            let cell: Int?
            let item: Int?
        }
        let summary: Summary
        let screen: [Cell]
        let files: [String]
        let requests: [Request]
    }

    private func pngSize(_ name: String) throws -> PixelSize {
        let data = try Data(contentsOf: folder.appendingPathComponent(name))
        XCTAssertEqual(ImageFormat.sniff(data), .png, name)
        return try PNGDecoder().decode(data).size
    }

    func testGeneratedGalleryEndToEnd() throws {
        let result = try run([
            "--images", "20", "--cells", "8", "--seed", "5", "--scroll-speed", "30", "--latency", "2",
            "--output", folder.path, "--json",
        ])
        XCTAssertEqual(result.status, 0, result.errors)
        let report = try JSONDecoder().decode(Report.self, from: result.output)
        let onDisk = try JSONDecoder().decode(Report.self, from: Data(contentsOf: folder.appendingPathComponent("report.json")))
        XCTAssertEqual(onDisk.summary.requests, report.summary.requests)

        XCTAssertGreaterThan(report.summary.loaded, 0)
        XCTAssertEqual(report.requests.count, report.summary.requests)
        XCTAssertEqual(
            report.summary.loaded + report.summary.failed + report.summary.cancelled, report.summary.requests,
            "every request is counted once: loaded, failed or cancelled")
        XCTAssertEqual(
            report.requests.filter { $0.outcome == "pending" }.count, 0, "every request ended in an outcome")
        XCTAssertTrue(report.requests.allSatisfy { ($0.queued ?? -1) >= 0 && ($0.finished ?? -1) >= ($0.queued ?? 0) })
        // Cache hits are the images delivered from the memory cache (the
        // demo has no disk cache): the requests whose outcome is "cache".
        XCTAssertEqual(report.summary.memoryCacheHits, report.requests.filter { $0.outcome == "cache" }.count)
        XCTAssertEqual(report.summary.diskCacheHits, 0)
        XCTAssertEqual(report.summary.cacheHits, report.summary.memoryCacheHits)
        XCTAssertLessThan(report.summary.cacheHits, report.summary.loaded, "the first loads came from the network")
        XCTAssertEqual(report.screen.count, 8)
        XCTAssertTrue(report.screen.allSatisfy { ["loaded", "failed"].contains($0.state) }, "\(report.screen)")
        // Per-target order: a cell that started both transfers started its thumbnail first.
        XCTAssertGreaterThan(report.summary.pairsBothStarted, 0)
        XCTAssertEqual(report.summary.thumbnailStartedFirst, report.summary.pairsBothStarted)
        // The same count, from the requests themselves: a full request right after its cell's thumbnail.
        let byID = Dictionary(uniqueKeysWithValues: report.requests.map { ($0.id, $0) })
        let started = report.requests.filter { full in
            guard full.role == "full", full.loading != nil, let thumbnail = byID[full.id - 1] else { return false }
            return thumbnail.role == "thumbnail" && thumbnail.cell == full.cell && thumbnail.item == full.item
                && thumbnail.loading != nil
        }
        XCTAssertEqual(report.summary.pairsBothStarted, started.count)

        // 4 columns of 160x120 cells with 8 px gaps and an 18 px label.
        XCTAssertEqual(try pngSize("contact-sheet.png"), PixelSize(width: 4 * 168 + 8, height: 2 * 146 + 8))
        XCTAssertEqual(try pngSize("crossfade.png"), PixelSize(width: 5 * 168 + 8, height: 120 + 18 + 16))
        XCTAssertEqual(try pngSize("timeline.png").width, 1020)

        // scaling.png: Nimbus' four results side by side, each at its own size on a checkerboard.
        let scaling = try png("scaling.png")
        XCTAssertEqual(scaling.size, PixelSize(width: 10 + 4 * 150, height: 24 + 110 + 24))
        func grey(_ x: Int, _ y: Int) -> Bool {
            let p = scaling.pixel(x: x, y: y)
            return p.r == p.g && p.g == p.b && (p.r == 200 || p.r == 150)
        }
        XCTAssertTrue(grey(10 + 50, 24 + 2), "fit: a transparent margin above, the checkerboard shows")
        XCTAssertFalse(grey(10 + 50, 24 + 50), "fit: the photo in the middle")
        XCTAssertFalse(grey(160 + 50, 24 + 2), "fill: no margin")
        XCTAssertTrue(grey(310 + 50, 24 + 80), "fit crops excess: 100x75, nothing below row 75")
        XCTAssertFalse(grey(460 + 120, 24 + 50), "fill leaves excess: 133 wide")
    }

    private struct PlaybackReport: Decodable {
        struct Cell: Decodable {
            let position: Int
            let kind: String?
            let state: String
            let frames: Int?
            let frameLabel: String?
        }
        struct Playback: Decodable {
            struct Step: Decodable {
                let t: Double
                let frame: Int
            }
            let position: Int
            let frames: Int
            let loopCount: Int?
            let loopDuration: Double
            let steps: [Step]
        }
        let screen: [Cell]
        let playback: Playback?
    }

    private func png(_ name: String) throws -> Image {
        try PNGDecoder().decode(Data(contentsOf: folder.appendingPathComponent(name)))
    }

    /// With every item of a 20-picture gallery on screen (two animated GIFs
    /// among them), the contact sheet labels each animated cell with its
    /// frame count over its first frame, and crossfade.png gets a playback row.
    func testAnimatedCellsAreLabelledAndPlayed() throws {
        let result = try run([
            "--images", "20", "--cells", "20", "--seed", "5", "--scroll-speed", "30", "--latency", "2",
            "--output", folder.path, "--json",
        ])
        XCTAssertEqual(result.status, 0, result.errors)
        let report = try JSONDecoder().decode(PlaybackReport.self, from: result.output)
        let gifs = report.screen.filter { $0.kind == "gif" }
        XCTAssertEqual(gifs.count, 2, "\(report.screen)")
        for gif in gifs {
            XCTAssertEqual(gif.state, "loaded")
            XCTAssertEqual(gif.frames, 8)
            XCTAssertEqual(gif.frameLabel, "8F")
        }
        XCTAssertTrue(report.screen.filter { $0.kind == "photo" }.allSatisfy { $0.frames == 1 && $0.frameLabel == nil })
        // One picture in 20 is an AVIF photo (with an AVIF thumbnail): decoded like the rest.
        let avifs = report.screen.filter { $0.kind == "avif" }
        XCTAssertEqual(avifs.count, 1, "\(report.screen)")
        XCTAssertTrue(avifs.allSatisfy { $0.state == "loaded" && $0.frames == 1 }, "\(avifs)")

        // The label on the contact sheet: "8F" in the 3x5 font at scale 2, 5 px
        // into the cell (4 columns of 168 px, rows of 146 px, 8 px margin).
        let sheet = try png("contact-sheet.png")
        XCTAssertEqual(sheet.size, PixelSize(width: 4 * 168 + 8, height: 5 * 146 + 8))
        let label = RGBA(r: 230, g: 230, b: 230)
        for gif in gifs {
            let x = 8 + (gif.position % 4) * 168 + 5
            let y = 8 + (gif.position / 4) * 146 + 5
            // "8": rows 111 101 111 101 111; "F": 111 100 110 100 100, 8 px to the right.
            XCTAssertEqual(sheet.pixel(x: x, y: y), label, "top-left of the 8")
            XCTAssertEqual(sheet.pixel(x: x + 5, y: y + 9), label, "right side of the 8")
            XCTAssertNotEqual(sheet.pixel(x: x + 2, y: y + 2), label, "the hole of the 8")
            XCTAssertEqual(sheet.pixel(x: x + 8, y: y + 9), label, "stem of the F")
            XCTAssertNotEqual(sheet.pixel(x: x + 12, y: y + 9), label, "beside the F's stem")
        }

        // The playback row: the first GIF on screen, drawn at 0, 0.24, ... s:
        // 80 ms frames, looping forever, so each step shows another frame.
        let playback = try XCTUnwrap(report.playback)
        XCTAssertEqual(playback.position, gifs[0].position)
        XCTAssertEqual(playback.frames, 8)
        XCTAssertEqual(playback.loopCount, 0)
        XCTAssertEqual(playback.loopDuration, 0.64, accuracy: 1e-9)
        XCTAssertEqual(playback.steps.map(\.frame), [0, 3, 6, 1, 4])
        let strip = try png("crossfade.png")
        XCTAssertEqual(strip.size, PixelSize(width: 5 * 168 + 8, height: 2 * 146 + 8))
        // Steps 2 to 4 are past the 0.4 s crossfade: three different frames.
        func crop(_ step: Int) -> [RGBA] {
            let x0 = 8 + step * 168
            let y0 = 146 + 8
            return stride(from: 0, to: 160, by: 7).flatMap { dx in
                stride(from: 0, to: 120, by: 7).map { dy in strip.pixel(x: x0 + dx, y: y0 + dy) }
            }
        }
        let shown = (2...4).map(crop)
        XCTAssertNotEqual(shown[0], shown[1])
        XCTAssertNotEqual(shown[1], shown[2])
        XCTAssertNotEqual(shown[0], shown[2])
    }

    func testBadInputsBecomeFailedCells() throws {
        let good = folder.appendingPathComponent("good.png")
        try PNGEncoder().encode(SyntheticImage.alphaRamp(width: 40, height: 30)).write(to: good)
        let jpeg = try JPEGEncoder().encode(SyntheticImage.photo(width: 64, height: 48))
        let broken = folder.appendingPathComponent("broken.jpg")
        try jpeg.prefix(jpeg.count / 2).write(to: broken)
        let result = try run([
            good.path, broken.path, folder.appendingPathComponent("nonexistent.png").path,
            "ftp://127.0.0.1/picture.png", "http://127.0.0.1:1/unreachable.png",
            "--cells", "8", "--output", folder.path, "--json",
        ])
        XCTAssertEqual(result.status, 0, result.errors)
        let report = try JSONDecoder().decode(Report.self, from: result.output)
        XCTAssertEqual(report.summary.loaded, 1)
        XCTAssertEqual(report.summary.failed, 4)
        XCTAssertEqual(report.screen.filter { $0.state == "failed" }.count, 4)
        XCTAssertTrue(report.screen.compactMap(\.error).contains { $0.contains("unsupported URL scheme") })
    }

    func testBadOptionPrintsUsageAndExits2() throws {
        let result = try run(["--cells", "many"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.errors.lowercased().contains("usage"), result.errors)
        XCTAssertEqual(try run(["--concurrent-loads", "0"]).status, 2)
        XCTAssertEqual(try run(["--bogus"]).status, 2)
        XCTAssertEqual(try run(["decode"]).status, 2)

        let help = try run(["--help"])
        XCTAssertEqual(help.status, 0, help.errors)
        XCTAssertTrue(String(decoding: help.output, as: UTF8.self).contains("USAGE: asyncimage-demo [<inputs> ...]"))
        XCTAssertEqual(help.errors, "")
    }

    // MARK: Cache hits

    /// The "memory hits" and "disk hits" columns count images delivered from
    /// a cache, and only those (every image loaded was counted as a hit: its
    /// notification names the memory cache that now holds it). Three images
    /// loaded, then asked for again: 3 memory hits of 6 loaded. A new loader
    /// (a restart) over the same disk cache: 3 disk hits, then 3 memory hits.
    func testCacheHitsCountOnlyImagesDeliveredFromACache() throws {
        let server = try ImageServer()
        server.extraHeaders = [("Cache-Control", "max-age=60")]
        let disk = try DataCache(directory: folder.appendingPathComponent("disk"))
        let urls = (1...3).map { server.url($0) }
        let delivery = DispatchQueue(label: "cache hits delivery")
        func makeLoader() -> (AsyncImageLoader, Recorder) {
            let loader = AsyncImageLoader(
                configuration: .init(
                    cache: ImageCache(), deliveryQueue: delivery, notificationCenter: NotificationCenter(),
                    diskCache: disk))
            let recorder = Recorder(start: ProcessInfo.processInfo.systemUptime)
            recorder.attach(to: loader)
            return (loader, recorder)
        }
        func loadAll(_ loader: AsyncImageLoader) {
            let done = expectation(description: "3 delivered")
            done.expectedFulfillmentCount = urls.count
            for url in urls {
                loader.loadImage(
                    ImageRequest(url: url), target: nil,
                    success: ImageAction("done") { _, _, _ in done.fulfill() },
                    failure: ImageFailureAction("done") { _, error, _ in
                        XCTFail("\(error)")
                        done.fulfill()
                    })
            }
            wait(for: [done], timeout: 15)
            delivery.sync {}
            loader.flushDiskWrites()
        }
        func counts(_ recorder: Recorder) -> [Int] {
            let s = recorder.snapshot
            return [s.loaded, s.memoryHits, s.diskHits]
        }

        let (first, firstRecorder) = makeLoader()
        loadAll(first)
        XCTAssertEqual(counts(firstRecorder), [3, 0, 0], "loaded, memory hits, disk hits: from the network")
        loadAll(first)
        XCTAssertEqual(counts(firstRecorder), [6, 3, 0], "the same images again: from memory")
        XCTAssertEqual(firstRecorder.all.map(\.outcome), ["loaded", "loaded", "loaded", "cache", "cache", "cache"])

        let (second, secondRecorder) = makeLoader()
        loadAll(second)
        XCTAssertEqual(counts(secondRecorder), [3, 0, 3], "after a restart: from disk")
        loadAll(second)
        XCTAssertEqual(counts(secondRecorder), [6, 3, 3])
        XCTAssertEqual(urls.map { server.requestCount($0) }, [1, 1, 1], "the network served each image once")

        // What the summary shows.
        let line = ProgressPrinter.line(secondRecorder, (6, 6), terminal: false)
        XCTAssertTrue(line.contains("loaded 6  failed 0  cancelled 0  memory hits 3  disk hits 3"), line)
    }

    func testDecodeSubcommandKeepsItsShape() throws {
        let good = folder.appendingPathComponent("g.png")
        try PNGEncoder().encode(SyntheticImage.solid(width: 3, height: 2, color: RGBA(r: 1, g: 2, b: 3))).write(to: good)
        let result = try run(["decode", good.path, folder.appendingPathComponent("none.gif").path])
        XCTAssertEqual(result.status, 1)
        let lines = String(decoding: result.output, as: UTF8.self).split(separator: "\n")
        XCTAssertEqual(lines.count, 2)
        XCTAssertEqual(
            String(lines[0]),
            "{\"path\":\"\(good.path)\",\"ok\":true,\"format\":\"png\",\"width\":3,\"height\":2,\"frames\":1,\"error\":null}")
        XCTAssertTrue(lines[1].contains("\"ok\":false"))
    }

    /// `decode` on AVIF, HEIC and JPEG XL files made with Debian's
    /// encoders: the JSON line's `format` names each; a truncated AVIF and
    /// a corrupt JPEG XL fail with the format named and a readable error.
    func testDecodeSubcommandNamesTheModernFormats() throws {
        let tools = try CodecTools(["avifenc": "libavif-bin", "heif-enc": "libheif-examples", "cjxl": "libjxl-tools"])
        defer { tools.remove() }
        let picture = SyntheticImage.quadrants(width: 40, height: 30)
        let avif = try tools.avifenc([picture])
        var jxl = try tools.cjxl(picture, ["-d", "1"])
        jxl.replaceSubrange(jxl.count / 2..<jxl.count, with: Data(repeating: 0xA5, count: jxl.count - jxl.count / 2))
        let files: [(name: String, data: Data)] = [
            ("p.avif", avif), ("p.heic", try tools.heifenc(picture, CodecTools.losslessHEIC + ["--no-alpha"])),
            ("p.jxl", try tools.cjxl(picture, ["-d", "0"])), ("cut.avif", avif.prefix(avif.count * 2 / 3)), ("bad.jxl", jxl),
        ]
        var paths: [String] = []
        for file in files {
            let url = folder.appendingPathComponent(file.name)
            try file.data.write(to: url)
            paths.append(url.path)
        }
        let result = try run(["decode"] + paths)
        XCTAssertEqual(result.status, 1, "two files fail")
        let lines = String(decoding: result.output, as: UTF8.self).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 5)
        for (line, format) in zip(lines.prefix(3), ["avif", "heic", "jxl"]) {
            XCTAssertTrue(line.contains("\"ok\":true,\"format\":\"\(format)\",\"width\":40,\"height\":30,\"frames\":1"), line)
        }
        for (line, format) in zip(lines.suffix(2), ["avif", "jxl"]) {
            XCTAssertTrue(line.contains("\"ok\":false,\"format\":\"\(format)\""), line)
            XCTAssertTrue(line.contains("\"error\":\"cannot decode \(format) (pixels): "), line)
        }
    }

    private struct AlbumReport: Decodable {
        struct Step: Decodable {
            let sizeClass: String
            let originalSize: String?
        }
        struct Page: Decodable {
            let index: Int
            let steps: [Step]
        }
        let photos: Int
        let pages: [Page]
        let thumbnailFirst: Int
        let sizeBeforePixels: Int
        let previews: Int
    }

    /// `album`: every page ends with its original; none shows the original
    /// before a thumbnail or nothing; the picture has a row per page.
    func testTheAlbumPagesThroughPhotos() throws {
        let result = try run(["album", "--photos", "4", "--latency", "20", "--output", folder.path, "--json"])
        XCTAssertEqual(result.status, 0, result.errors)
        let report = try JSONDecoder().decode(AlbumReport.self, from: result.output)
        XCTAssertEqual(report.photos, 4)
        for page in report.pages {
            XCTAssertEqual(page.steps.last?.sizeClass, "original", "page \(page.index)")
            XCTAssertNotNil(page.steps.last?.originalSize, "the original's size is known")
            let classes = page.steps.map(\.sizeClass)
            XCTAssertEqual(classes, classes.sorted { rank($0) < rank($1) }, "never worse over time: \(classes)")
        }
        XCTAssertGreaterThan(report.thumbnailFirst, 0)
        XCTAssertGreaterThan(report.previews, 0, "the progressive photo showed previews before its final image")
        XCTAssertEqual(try png("progressive.png").width, 8 + (report.previews + 1) * (240 + 8))
        let picture = try png("album.png")
        XCTAssertEqual(picture.height, 8 + 4 * (120 + 18 + 8))
    }

    private func rank(_ sizeClass: String) -> Int { ["none": 0, "thumbnail": 1, "original": 2][sizeClass] ?? -1 }
}
