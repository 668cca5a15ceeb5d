import AsyncImageKit
import BenchmarkSupport
import Foundation
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

    func testBadOptionsAreRefusedWithUsage() throws {
        let result = try run(["all", "--only", "decode,nonsense"])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.errors.contains("--only"), result.errors)
        XCTAssertTrue(result.errors.contains("usage: asyncimage-bench all"), result.errors)
    }
}
