import BenchmarkSupport
import Foundation
import XCTest

/// The benchmark's result model and charts (BenchmarkSupport), in process:
/// samples, goals, the generated part of BENCHMARKS.md, chart axes. (The
/// `asyncimage-bench all` smoke run as a process: BenchmarkHarnessTests.)
final class BenchmarkSupportTests: XCTestCase {
    func testSamplesGiveMedianRangeAndRatios() {
        XCTAssertEqual(Samples([3, 1, 2]).median, 2)
        XCTAssertEqual(Samples([4, 1, 3, 2]).median, 2.5)
        XCTAssertTrue(Samples([]).median.isNaN)
        XCTAssertEqual(Samples([12.34, 11.9, 12.81]).formatted(1), "12.3 (11.9-12.8)")
        XCTAssertEqual(Samples([5]).formatted(2), "5.00")
        XCTAssertEqual(Samples([]).formatted(), "-")
        // Side by side, run by run; counts that differ: the medians' ratio.
        XCTAssertEqual(Samples([2, 4, 9]).ratio(to: Samples([1, 2, 3])).values, [2, 2, 3])
        XCTAssertEqual(Samples([2, 4, 9]).ratio(to: Samples([2, 2])).values, [2])
        XCTAssertEqual(Samples((1...100).map(Double.init)).percentile(0.99), 99)
        XCTAssertEqual(Samples((1...100).map(Double.init)).percentile(0.5), 50)
    }

    func testGoalsSayMetOrByHowMuchTheyAreMissed() {
        XCTAssertEqual(Goal.atLeast(0.95).verdict(for: 0.97), ">= 0.95x: met")
        XCTAssertEqual(Goal.atLeast(1.5).verdict(for: 1.2), ">= 1.50x: missed by 20%")
        XCTAssertEqual(Goal.atMost(1.10).verdict(for: 1.21), "<= 1.10x: missed by 10%")
        XCTAssertEqual(Goal.atMost(2).verdict(for: 2), "<= 2.00x: met")
        XCTAssertEqual(Goal.atMost(2).verdict(for: .nan), "<= 2.00x: not measured")

        var table = ResultTable(title: "t", header: ["name", "a", "b", "c"])
        table.addGoal("goal", ratio: Samples([0.9, 1.0, 1.1]), goal: .atLeast(0.95))
        XCTAssertEqual(table.rows, [["goal", "1.00x (0.90-1.10)", "", ">= 0.95x: met"]])
        XCTAssertEqual(Samples([1.5]).formattedRatio(), "1.50x")
    }

    func testSpliceReplacesOnlyTheGeneratedPart() {
        let begin = BenchmarkReport.beginMarker
        let end = BenchmarkReport.endMarker
        // No markers yet: appended, after a blank line.
        let first = BenchmarkReport.splice("TABLE 1\n", into: "# Title\ntext\n")
        XCTAssertEqual(first, "# Title\ntext\n\n\(begin)\n\nTABLE 1\n\n\(end)\n")
        // Markers: only what is between them changes, again and again.
        let second = BenchmarkReport.splice("TABLE 2\n", into: first + "\nafter\n")
        XCTAssertEqual(second, "# Title\ntext\n\n\(begin)\n\nTABLE 2\n\n\(end)\n\nafter\n")
        XCTAssertEqual(BenchmarkReport.splice("TABLE 2\n", into: second), second)
        // An empty file.
        XCTAssertEqual(BenchmarkReport.splice("T\n", into: ""), "\(begin)\n\nT\n\n\(end)\n")
    }

    func testAxesSpanTheirValues() {
        let linear = ChartAxis(low: 0, high: 87, logarithmic: false, fromZero: true)
        XCTAssertEqual(linear.lower, 0)
        XCTAssertGreaterThanOrEqual(linear.upper, 87)
        XCTAssertLessThan(linear.upper, 87 * 1.5)
        XCTAssertEqual(linear.position(linear.upper), 1)
        let logarithmic = ChartAxis(low: 40, high: 4_300, logarithmic: true, fromZero: false)
        XCTAssertEqual(logarithmic.ticks, [10, 100, 1_000, 10_000])
        XCTAssertEqual(logarithmic.position(100), 1.0 / 3, accuracy: 1e-9)
        let measured = ChartAxis(ticks: [1, 2, 4, 8, 32], logarithmic: true)
        XCTAssertEqual(measured.position(1), 0)
        XCTAssertEqual(measured.position(32), 1)
        XCTAssertEqual(chartNumber(10_000), "10K")
        XCTAssertEqual(chartNumber(2_000_000), "2M")
        XCTAssertEqual(chartNumber(0.25), "0.25")
        XCTAssertEqual(relativePath(from: URL(fileURLWithPath: "/a/b"), to: URL(fileURLWithPath: "/a/c/d")), "../c/d")
    }
}
