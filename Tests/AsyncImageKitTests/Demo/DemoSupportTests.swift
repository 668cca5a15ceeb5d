@testable import AsyncImageKit
@testable import DemoSupport
import Foundation
import XCTest

/// The demo's support library in process (DemoSupport): its command line, and
/// the recorder's transfers-in-flight strip of the timeline. (The demo end to
/// end, as a process: DemoTests in AsyncImageKitIntegrationTests.)
final class DemoSupportTests: XCTestCase {
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
                concurrentLoads: AsyncImageLoader.defaultConcurrentLoads, timeout: 10, output: "demo-output", cells: 16, scrollSpeed: 25, seed: 1, images: 300,
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
            "                          Transfers in flight at once. (default: 32)",
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
}
