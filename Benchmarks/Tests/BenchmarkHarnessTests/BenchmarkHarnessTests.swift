import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import XCTest

/// `asyncimage-bench all`: the smoke run end to end (a real process, real
/// peers where installed, real files). Figures never decide a test: only that
/// every workload ran and wrote its tables and plots. (The result model it is
/// built on: BenchmarkSupportTests.)
final class BenchmarkHarnessTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("bench-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// The benchmark binary, built beside this test bundle.
    private var bench: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("asyncimage-bench")
    }

    private func run(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = bench
        process.arguments = arguments
        let out = Pipe()
        // Standard error to a file, so that neither stream can fill a pipe while the other is read.
        let errorsFile = folder.appendingPathComponent("stderr-\(UUID().uuidString).txt")
        XCTAssertTrue(FileManager.default.createFile(atPath: errorsFile.path, contents: nil))
        let errors = try FileHandle(forWritingTo: errorsFile)
        defer { try? errors.close() }
        process.standardOutput = out
        process.standardError = errors
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: output, as: UTF8.self),
            (try? String(contentsOf: errorsFile, encoding: .utf8)) ?? ""
        )
    }

    func testSmokeRunWritesEveryWorkloadsTablesAndPlots() throws {
        let output = folder.appendingPathComponent("out")
        let document = folder.appendingPathComponent("docs/BENCHMARKS.md")
        try FileManager.default.createDirectory(at: document.deletingLastPathComponent(), withIntermediateDirectories: true)
        let before = "# Benchmarks\n\nWritten by hand.\n\n"
        let after = "\n\n## Written by hand after the generated part\n"
        try (before + BenchmarkReport.beginMarker + "\nan old generated table\n" + BenchmarkReport.endMarker + after)
            .write(to: document, atomically: true, encoding: .utf8)

        let started = Date()
        let result = try run([
            "all", "--smoke", "--output", output.path, "--sets", folder.appendingPathComponent("sets").path,
            "--update", document.path,
        ])
        XCTAssertEqual(result.status, 0, "stderr:\n\(result.errors)\nstdout:\n\(result.output)")
        // Smoke is seconds in a release build; generous for debug and ThreadSanitizer builds.
        XCTAssertLessThan(Date().timeIntervalSince(started), 600)

        let markdown = try String(contentsOf: output.appendingPathComponent("benchmarks.md"), encoding: .utf8)
        for heading in [
            "### Decoding against the C libraries' own tools", "### Thumbnails from files",
            "### Loading over HTTP from 127.0.0.1", "### Disk cache: cold, warm and revalidated",
            "### Scale: cost per operation",
            "### Full and display size on the mixed set, from nginx",
            "### Memory cache: hits and a hit's delivery",
            "### CPU per image and peak memory",
        ] {
            XCTAssertTrue(markdown.contains(heading), "no section \(heading)")
        }
        // Every workload's table, with AsyncImageKit's row measured (a figure, not "-").
        for row in [
            "| JPEG, 1/4 scale, fresh buffer | ", "| AsyncImageKit (2 loads, 1 process) | ", "| full | 2 | AsyncImageKit | ",
            "| display | 1 | URLSession + TaskGroup | ", "| warm, thumbnail read back | ", "| revalidated (304) | ",
            "| loadImage (enqueue) | ", "| image(for:) awaited in a Task | ",
        ] {
            guard let line = markdown.split(separator: "\n").first(where: { $0.hasPrefix(row) }) else {
                XCTFail("no row starting \(row)")
                continue
            }
            let figure = line.dropFirst(row.count).split(separator: "|").first.map { $0.trimmingCharacters(in: .whitespaces) }
            XCTAssertNotNil(
                figure.flatMap { Double($0.split(separator: " ").first?.replacingOccurrences(of: ",", with: "") ?? "") },
                "row \(line) has no figure")
        }
        XCTAssertTrue(markdown.contains("goal: 1/8 scale faster than full size"), "no goal row")
        XCTAssertTrue(markdown.contains("Versions: "), "no library versions")
        XCTAssertFalse(result.output.contains("the workload failed"), result.output)

        // The plots: real PNGs that our own decoder reads, with something drawn on them.
        for name in ["throughput-vs-concurrency.png", "scale-cost-vs-queue.png", "cpu-per-image.png", "peak-memory.png"] {
            let data = try Data(contentsOf: output.appendingPathComponent(name))
            let image = try PNGDecoder().decode(data)
            XCTAssertEqual(image.size.width, 1000, name)
            XCTAssertTrue(markdown.contains("](\(name))"), "\(name) is not in the report")
            var colors = Set<UInt32>()
            image.pixels.withUnsafeBytes { raw in
                let words = raw.bindMemory(to: UInt32.self)
                for index in stride(from: 0, to: words.count, by: 7) { colors.insert(words[index]) }
            }
            XCTAssertGreaterThan(colors.count, 4, "\(name) is nearly blank")
        }

        // --update: the generated part replaced, the rest of the file kept, plots linked from the file's folder.
        let updated = try String(contentsOf: document, encoding: .utf8)
        XCTAssertTrue(updated.hasPrefix(before + BenchmarkReport.beginMarker), updated)
        XCTAssertTrue(updated.hasSuffix(BenchmarkReport.endMarker + after), updated)
        XCTAssertFalse(updated.contains("an old generated table"))
        XCTAssertTrue(updated.contains("### Scale: cost per operation"))
        XCTAssertTrue(updated.contains("](../out/cpu-per-image.png)"), "plots not linked relative to the file")
    }

    /// `formats --smoke`: the C reference compiled and run for AVIF, HEIC
    /// and JPEG XL, every row measured on both sides, and the full-size
    /// pixels the same as the C program's.
    func testFormatsSmokeRunComparesWithTheCProgram() throws {
        let result = try run(["formats", "--smoke", "--output", folder.appendingPathComponent("out").path])
        XCTAssertEqual(result.status, 0, result.errors)
        for label in ["AVIF 8-bit", "AVIF 10-bit", "HEIC", "JPEG XL"] {
            let rows = result.output.split(separator: "\n").filter { $0.hasPrefix("| \(label), ") }
            XCTAssertEqual(rows.count, 3, "\(label):\n\(result.output)")
            XCTAssertEqual(rows.filter { $0.hasSuffix("| yes |") }.count, 2, "\(label): full-size pixels differ:\n\(result.output)")
        }
        XCTAssertEqual(result.output.components(separatedBy: "| goal: ").count - 1, 4)
    }

    /// Refusals come from the argument parser: EX_USAGE (64), what is wrong, and the subcommand's usage.
    func testBadOptionsAreRefusedWithUsage() throws {
        let refused: [(arguments: [String], says: String)] = [
            (["all", "--only", "decode,nonsense"], "--only"),
            (["all", "--runs", "0"], "--runs"),
            (["loader", "--loads", "2,x"], "--loads"),
            (["loader", "--source", "ftp"], "--source"),
            (["scale", "--sizes", "1k,4"], "--sizes"),
            (["thumbnails", "--unknown"], "--unknown"),
            (["encode", "--avif-speeds", "6,11"], "--avif-speeds"),
            (["nonsense"], "nonsense"),
        ]
        for (arguments, says) in refused {
            let result = try run(arguments)
            XCTAssertEqual(result.status, 64, "\(arguments): \(result.errors)")
            XCTAssertTrue(result.errors.contains(says), "\(arguments): \(result.errors)")
            XCTAssertTrue(result.errors.contains("Usage: asyncimage-bench"), "\(arguments): \(result.errors)")
        }
    }

    /// Every workload is a subcommand in the help; the child processes are not.
    func testHelpListsTheWorkloadsAndHidesTheChildren() throws {
        let result = try run(["--help"])
        XCTAssertEqual(result.status, 0, result.errors)
        let subcommands = result.output.components(separatedBy: "SUBCOMMANDS:").last ?? ""
        let listed = Set(subcommands.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   ") else { return nil }
            return line.split(separator: " ").first.map(String.init)
        })
        for workload in [
            "all", "decode", "resize", "colour", "formats", "encode", "loader", "cache", "disk", "scale", "thumbnails",
            "progressive", "soak", "net", "net-report", "nginx-serve",
        ] {
            XCTAssertTrue(listed.contains(workload), "\(workload) is not in the help:\n\(result.output)")
        }
        for child in ["serve", "run-one", "decode-bound", "thumb-one", "net-one"] {
            XCTAssertFalse(listed.contains(child), "the child \(child) is in the help")
        }
    }

    /// `encode --smoke`: our encoders' rows and, where `cwebp` and `avifenc`
    /// are installed, theirs, with the same bytes at the same settings.
    func testEncodeSmokeRun() throws {
        let result = try run(["encode", "--smoke", "--output", folder.appendingPathComponent("out").path])
        XCTAssertEqual(result.status, 0, "stderr:\n\(result.errors)\nstdout:\n\(result.output)")
        for row in ["| WebP q75 m4 | generated-96 | ", "| AVIF q60 (quantizer 25) s10 4:2:0 | generated-96 | "] {
            XCTAssertTrue(result.output.contains(row), "no row starting \(row):\n\(result.output)")
        }
        XCTAssertFalse(result.output.contains("DIFFERENT"), result.output)
    }

    /// A child process reports its result on one `TAG payload` line, which
    /// its parent reads (BenchChild): here `decode-bound` on two generated JPEGs.
    func testChildReportsItsResultOnOneTaggedLine() throws {
        let set = folder.appendingPathComponent("set")
        try FileManager.default.createDirectory(at: set, withIntermediateDirectories: true)
        for name in ["a.jpg", "b.jpg"] {
            try JPEGEncoder(quality: 80).encode(SyntheticImage.photo(width: 64, height: 48, seed: 3)).write(
                to: set.appendingPathComponent(name))
        }
        let list = folder.appendingPathComponent("list.txt")
        try "a.jpg\nb.jpg".write(to: list, atomically: true, encoding: .utf8)
        let result = try run(["decode-bound", "display", set.path, list.path, "2"])
        XCTAssertEqual(result.status, 0, result.errors)
        let lines = result.output.split(separator: "\n").filter { $0.hasPrefix("BOUND ") }
        XCTAssertEqual(lines.count, 1, result.output)
        let fields = lines.first?.split(separator: " ").dropFirst().compactMap { Double($0) } ?? []
        XCTAssertEqual(fields.count, 3, result.output)
        XCTAssertEqual(fields.first, 2, "images decoded")
        XCTAssertGreaterThan(fields.dropFirst().first ?? 0, 0, "CPU seconds")
    }
}
