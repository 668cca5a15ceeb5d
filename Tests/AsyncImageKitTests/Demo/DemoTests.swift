@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest
@testable import asyncimage_demo

/// The demo runner end to end: a real process, a real embedded server, real pictures.
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
        let process = Process()
        process.executableURL = demo
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output, errors)
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

    // MARK: The command line, parsed in process

    private func usageError(_ arguments: [String]) -> String {
        do {
            let command = try DemoArguments.parse(arguments)
            XCTFail("\(arguments) parsed as \(command)")
            return ""
        } catch {
            return error.description
        }
    }

    func testCommandLineDefaults() throws {
        guard case .run(let options) = try DemoArguments.parse([]) else { return XCTFail("not a run") }
        XCTAssertEqual(options.inputs, [])
        XCTAssertNil(options.urlsFile)
        XCTAssertEqual(
            options.settings,
            DemoSettings(
                concurrentLoads: 2, timeout: 10, output: "demo-output", cells: 16, scrollSpeed: 25, seed: 1, images: 300,
                latency: 15, json: false))
    }

    func testCommandLineTakesEveryOption() throws {
        let command = try DemoArguments.parse([
            "a.png", "--urls", "list.txt", "--concurrent-loads", "4", "--timeout=2.5", "--output", "out", "--cells", "8",
            "--scroll-speed", "30", "--seed", "5", "--images", "20", "--latency", "0", "--json", "--cells", "12",
            "https://example.com/b.png", "-", "--", "--cells", "decode",
        ])
        let settings = DemoSettings(
            concurrentLoads: 4, timeout: 2.5, output: "out", cells: 12, scrollSpeed: 30, seed: 5, images: 20, latency: 0,
            json: true)
        XCTAssertEqual(
            command,
            .run(DemoOptions(
                inputs: ["a.png", "https://example.com/b.png", "-", "--cells", "decode"], urlsFile: "list.txt",
                settings: settings)))
        XCTAssertEqual(try DemoArguments.parse(["decode", "a.png", "--", "-b.png"]), .decode(files: ["a.png", "-b.png"]))
        XCTAssertEqual(try DemoArguments.parse(["a.png", "decode"]), .run(DemoOptions(inputs: ["a.png", "decode"])))
    }

    func testCommandLineRejectsABadOption() {
        let usage = "Usage: asyncimage-demo [<inputs> ...] [--urls <urls>] [--concurrent-loads <concurrent-loads>] "
            + "[--timeout <timeout>] [--output <output>] [--cells <cells>] [--scroll-speed <scroll-speed>] "
            + "[--seed <seed>] [--images <images>] [--latency <latency>] [--json]\n"
            + "  See 'asyncimage-demo --help' for more information.\n"
        XCTAssertEqual(usageError(["--bogus"]), "Error: Unknown option '--bogus'\n" + usage)
        XCTAssertEqual(usageError(["-json"]), "Error: Unknown option '-json'. Did you mean '--json'?\n" + usage)
        XCTAssertEqual(
            usageError(["--json=yes"]),
            "Error: The option '--json' does not take any value, but 'yes' was specified.\n" + usage)
        XCTAssertEqual(
            usageError(["decode", "-x", "a.png"]),
            "Error: Unknown option '-x'\nUsage: decode <files> ...\n  See 'decode --help' for more information.\n")
        XCTAssertTrue(usageError(["decode"]).hasPrefix("Error: Missing expected argument '<files> ...'\n\nOVERVIEW:"))
    }

    func testCommandLineRejectsABadValue() {
        let usage = "Usage: asyncimage-demo [<inputs> ...]"
        let invalid = usageError(["--cells", "many"])
        XCTAssertTrue(
            invalid.hasPrefix(
                "Error: The value 'many' is invalid for '--cells <cells>'\n"
                    + "Help:  --cells <cells>  Cells on screen (a multiple of 4 works best: the grid has 4 columns).\n"
                    + usage), invalid)
        XCTAssertTrue(usageError(["--seed", "-1"]).hasPrefix("Error: The value '-1' is invalid for '--seed <seed>'\n"))
        XCTAssertTrue(usageError(["--latency", "1.5"]).hasPrefix("Error: The value '1.5' is invalid for '--latency <latency>'\n"))
        XCTAssertTrue(usageError(["--cells"]).hasPrefix("Error: Missing value for '--cells <cells>'\n"))
        XCTAssertTrue(usageError(["--output", "--json"]).hasPrefix("Error: Missing value for '--output <output>'\n"))
        // A bad value is reported even when --help follows it.
        XCTAssertTrue(usageError(["--cells", "many", "--help"]).hasPrefix("Error: The value 'many'"))

        let validation = [
            (["--concurrent-loads", "0"], "--concurrent-loads must be at least 1"),
            (["--timeout", "-1"], "--timeout must be positive"),
            (["--timeout", "nan"], "--timeout must be positive"),
            (["--cells", "401"], "--cells must be between 1 and 400"),
            (["--scroll-speed", "0"], "--scroll-speed must be positive"),
            (["--images", "0"], "--images must be between 1 and 5000"),
            (["--latency=-1"], "--latency must not be negative"),
        ]
        for (arguments, message) in validation {
            let error = usageError(arguments)
            XCTAssertTrue(error.hasPrefix("Error: \(message)\n\(usage)"), "\(arguments): \(error)")
        }
    }

    func testCommandLineHelp() throws {
        guard case .help(let help) = try DemoArguments.parse(["--cells", "8", "--bogus", "--help"]) else {
            return XCTFail("no help")
        }
        XCTAssertEqual(try DemoArguments.parse(["-h"]), .help(help))
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.first, "OVERVIEW: Scroll a gallery of images loaded with AsyncImageKit, and show what")
        XCTAssertTrue(lines.allSatisfy { $0.count < 80 || $0.hasPrefix("USAGE: ") }, help)
        for line in [
            "USAGE: " + DemoArguments.rootUsage,
            "  --concurrent-loads <concurrent-loads>",
            "                          Transfers in flight at once. (default: 2)",
            "  --timeout <timeout>     Seconds a transfer may take. (default: 10.0)",
            "  --output <output>       Where to write the pictures and the report. (default:",
            "                          demo-output)",
            "  --seed <seed>           Seed for a repeatable run. (default: 1)",
            "  --json                  Print only the JSON report.",
            "  -h, --help              Show help information.",
        ] {
            XCTAssertTrue(lines.contains(line), "missing: \(line)\n\(help)")
        }
        XCTAssertTrue(help.hasSuffix("information.\n\n"))

        guard case .help(let decodeHelp) = try DemoArguments.parse(["decode", "a.png", "--help"]) else {
            return XCTFail("no decode help")
        }
        XCTAssertEqual(
            decodeHelp,
            """
            OVERVIEW: Decode files and print one JSON line each.

            USAGE: decode <files> ...

            ARGUMENTS:
              <files>                 Image files.

            OPTIONS:
              -h, --help              Show help information.


            """)
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

    // MARK: The timeline's transfers-in-flight strip

    /// A hand-made run with a cap of 2, in the order the loader reports its
    /// steps: a transfer keeps its slot until a decoder takes its body
    /// (`.decoding`), and only then does a queued one start.
    func testTimelineStripCountsTransfersFromStartToBody() {
        let a = URL(string: "http://127.0.0.1/a.jpg")!, b = URL(string: "http://127.0.0.1/b.jpg")!
        let c = URL(string: "http://127.0.0.1/c.jpg")!, d = URL(string: "http://127.0.0.1/d.jpg")!
        let e = URL(string: "http://127.0.0.1/e.jpg")!, missing = URL(string: "http://127.0.0.1/missing.jpg")!
        let broken = URL(string: "http://127.0.0.1/broken.jpg")!
        let steps: [(UInt64, URL, LoaderEvent.Kind)] = [
            (1, a, .queued), (1, a, .loading),  // t = 1, 2
            (2, b, .queued), (2, b, .loading),  // 3, 4: two in flight
            (3, c, .queued),  // 5: waits
            (1, a, .transferred(bytes: 100)),  // 6: a's body is in, its slot waits for a decoder
            (1, a, .decoding), (3, c, .loading),  // 7, 8: c takes a's slot
            // 9-12: another cell asks for a while it decodes: the loader sends the steps it missed at once.
            (4, a, .queued), (4, a, .loading), (4, a, .transferred(bytes: 100)), (4, a, .decoding),
            (1, a, .delivered(success: true)), (4, a, .delivered(success: true)),  // 13, 14
            (2, b, .transferred(bytes: 100)), (2, b, .decoding),  // 15, 16
            (5, d, .queued), (5, d, .loading),  // 17, 18
            (6, e, .queued),  // 19: waits
            (5, d, .cancelled), (6, e, .loading),  // 20, 21: d's cell is reused; e takes its slot
            (2, b, .delivered(success: true)),  // 22
            (3, c, .transferred(bytes: 100)), (3, c, .decoding),  // 23, 24
            (7, missing, .queued), (7, missing, .loading),  // 25, 26
            (6, e, .transferred(bytes: 100)), (6, e, .decoding),  // 27, 28
            (7, missing, .delivered(success: false)),  // 29: a 404 (no body), nothing queued meanwhile
            (8, broken, .queued), (8, broken, .loading),  // 30, 31
            (8, broken, .transferred(bytes: 10)), (8, broken, .decoding),  // 32, 33
            (8, broken, .delivered(success: false)),  // 34: a failed decode
            (3, c, .delivered(success: true)), (6, e, .delivered(success: true)),  // 35, 36
            (9, a, .cacheHit), (9, a, .delivered(success: true)),  // 37, 38
        ]
        let events = steps.enumerated().map { index, step in
            LoaderEvent(
                requestID: step.0, url: step.1, target: nil, kind: step.2, time: Double(index + 1),
                sequence: UInt64(index + 1))
        }
        // The monitor may see events out of order: the strip must not depend on it.
        let recorder = Recorder(start: 0)
        for event in events.reversed() { recorder.record(event) }
        let spans = Recorder.transferSpans(recorder.all)
        func inFlight(_ t: Double) -> Int { Recorder.transfersInFlight(spans, at: t) }

        let cap = 2
        let counts = events.map { inFlight($0.time) }
        XCTAssertEqual(counts.max(), cap, "\(counts)")
        XCTAssertEqual(
            counts,
            [0, 1, 1, 2, 2, 1, 1, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 1, 2, 2, 1, 1, 1, 2, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
        XCTAssertEqual(inFlight(6.5), 1, "a's transfer ends with its body, not at its decode")
        XCTAssertEqual(inFlight(10.5), 2, "a late joiner's replayed steps are not a transfer")
        XCTAssertEqual(inFlight(20.5), 1, "a cancelled transfer ends at its cancel")
        XCTAssertEqual(inFlight(28.5), 1, "a transfer failed without a body ends at its failure")
        XCTAssertEqual(inFlight(32.5), 0, "a body that fails to decode ended its transfer when it arrived")
        XCTAssertEqual(inFlight(0.5), 0)
    }

    /// A failed transfer ends at `.transferFailed`, when the loader freed its
    /// slot, not at its later delivery: the transfer that took the slot never
    /// overlaps it.
    func testTimelineStripEndsAFailedTransferWhenItsSlotIsFreed() {
        let missing = URL(string: "http://127.0.0.1/missing.jpg")!, next = URL(string: "http://127.0.0.1/next.jpg")!
        let steps: [(UInt64, URL, LoaderEvent.Kind)] = [
            (1, missing, .queued), (1, missing, .loading),  // 1, 2
            (2, next, .queued),  // 3: waits for the only slot
            (1, missing, .transferFailed), (2, next, .loading),  // 4, 5: the slot is taken at once
            (1, missing, .delivered(success: false)),  // 6: the failure reaches the delivery queue later
        ]
        let recorder = Recorder(start: 0)
        for (index, step) in steps.enumerated() {
            recorder.record(
                LoaderEvent(
                    requestID: step.0, url: step.1, target: nil, kind: step.2, time: Double(index + 1),
                    sequence: UInt64(index + 1)))
        }
        let spans = Recorder.transferSpans(recorder.all)
        XCTAssertEqual((1...6).map { Recorder.transfersInFlight(spans, at: Double($0) + 0.5) }, [0, 1, 1, 0, 1, 1])
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
