import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

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
        XCTAssertEqual(report.screen.count, 8)
        XCTAssertTrue(report.screen.allSatisfy { ["loaded", "failed"].contains($0.state) }, "\(report.screen)")

        // 4 columns of 160x120 cells with 8 px gaps and an 18 px label.
        XCTAssertEqual(try pngSize("contact-sheet.png"), PixelSize(width: 4 * 168 + 8, height: 2 * 146 + 8))
        XCTAssertEqual(try pngSize("crossfade.png"), PixelSize(width: 5 * 168 + 8, height: 120 + 18 + 16))
        XCTAssertEqual(try pngSize("timeline.png").width, 1020)
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
}
