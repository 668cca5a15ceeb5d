import Foundation

// The result model of `asyncimage-bench all`: every figure is kept as its
// samples (one per run), shown as the median with the min-max of the runs;
// tables of such cells, with goal rows stated as ratios; sections of tables
// and plots, rendered as Markdown (BENCHMARKS.md) and as plain text (the
// terminal).

/// One figure measured several times: the samples, in the order the runs made them.
package struct Samples: Sendable {
    package var values: [Double]

    package init(_ values: [Double]) { self.values = values }

    package var isEmpty: Bool { values.isEmpty }
    package var count: Int { values.count }

    /// The median (of an even count, the mean of the two middle values); nan if empty.
    package var median: Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    package var min: Double { values.min() ?? .nan }
    package var max: Double { values.max() ?? .nan }

    /// `value` at the fraction `p` of the sorted samples (0.99 for p99), nearest rank.
    package func percentile(_ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = Int((p * Double(sorted.count)).rounded(.up)) - 1
        return sorted[Swift.max(0, Swift.min(sorted.count - 1, rank))]
    }

    /// Each sample through `transform` (a rate from a time, say).
    package func map(_ transform: (Double) -> Double) -> Samples { Samples(values.map(transform)) }

    /// Sample by sample `self / other` (runs made side by side in the same
    /// round); if the counts differ, the ratio of the medians alone.
    package func ratio(to other: Samples) -> Samples {
        if values.count == other.values.count, !values.isEmpty {
            return Samples(zip(values, other.values).map { $0 / $1 })
        }
        return Samples([median / other.median])
    }

    /// `1.23x (1.19-1.28)`: a ratio's median, and the range when there is more than one sample.
    package func formattedRatio() -> String {
        guard !values.isEmpty else { return "-" }
        let middle = String(format: "%.2fx", median)
        guard values.count > 1 else { return middle }
        return middle + " (" + String(format: "%.2f", min) + "-" + String(format: "%.2f", max) + ")"
    }

    /// `12.3 (11.9-12.8)`: the median, and the range when there is more than one sample.
    package func formatted(_ digits: Int = 1) -> String {
        guard !values.isEmpty else { return "-" }
        let format = "%.\(digits)f"
        let middle = String(format: format, median)
        guard values.count > 1 else { return middle }
        return middle + " (" + String(format: format, min) + "-" + String(format: format, max) + ")"
    }
}

/// A goal stated as a ratio: measured against a bound, met or missed by how much.
package struct Goal: Sendable {
    package enum Direction: Sendable {
        /// The ratio must be at least the bound (a speed-up).
        case atLeast
        /// The ratio must be at most the bound (a cost).
        case atMost
    }

    package let bound: Double
    package let direction: Direction

    package static func atLeast(_ bound: Double) -> Goal { Goal(bound: bound, direction: .atLeast) }
    package static func atMost(_ bound: Double) -> Goal { Goal(bound: bound, direction: .atMost) }

    package func isMet(by value: Double) -> Bool {
        switch direction {
        case .atLeast: return value >= bound
        case .atMost: return value <= bound
        }
    }

    /// `≥ 0.95x: met` or `≥ 0.95x: missed by 12%` (how far the median is from the bound).
    package func verdict(for value: Double) -> String {
        let stated = (direction == .atLeast ? ">= " : "<= ") + String(format: "%.2fx", bound)
        guard value.isFinite else { return stated + ": not measured" }
        if isMet(by: value) { return stated + ": met" }
        let shortfall = direction == .atLeast ? 1 - value / bound : value / bound - 1
        return stated + ": missed by " + String(format: "%.0f%%", 100 * shortfall)
    }
}

/// A table: a header row, rows of cells, and notes below it.
package struct ResultTable: Sendable {
    package var title: String
    package var header: [String]
    package var rows: [[String]] = []
    package var notes: [String] = []

    package init(title: String, header: [String]) {
        self.title = title
        self.header = header
    }

    package mutating func add(_ cells: [String]) {
        precondition(cells.count == header.count, "a row of \(cells.count) cells in a table of \(header.count) columns")
        rows.append(cells)
    }

    /// A goal row: the figure's name, the measured ratio (median and range), and the verdict.
    /// The cells after the first two are padded with `-` to the table's width.
    package mutating func addGoal(_ name: String, ratio: Samples, goal: Goal) {
        var cells = [name, ratio.formattedRatio(), goal.verdict(for: ratio.median)]
        if cells.count < header.count {
            cells.insert(contentsOf: Array(repeating: "", count: header.count - cells.count), at: 2)
        }
        add(Array(cells.prefix(header.count)))
    }

    package var markdown: String {
        var lines = ["| " + header.joined(separator: " | ") + " |"]
        lines.append("|" + header.indices.map { $0 == 0 ? "---|" : "---:|" }.joined())
        for row in rows { lines.append("| " + row.map { $0.replacingOccurrences(of: "|", with: "\\|") }.joined(separator: " | ") + " |") }
        var text = (title.isEmpty ? "" : "#### \(title)\n\n") + lines.joined(separator: "\n") + "\n"
        if !notes.isEmpty { text += "\n" + notes.map { "- \($0)" }.joined(separator: "\n") + "\n" }
        return text
    }

    package var plain: String {
        let table = [header] + rows
        let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        let lines = table.map { row in
            row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                return column == 0 ? row[column] + padding : padding + row[column]
            }.joined(separator: "  ")
        }
        var text = (title.isEmpty ? "" : title + "\n") + lines.joined(separator: "\n") + "\n"
        for note in notes { text += "  " + note + "\n" }
        return text
    }
}

/// One workload's part of the report: what it measured, its tables and plots.
package struct ReportSection: Sendable {
    package var title: String
    /// Paragraphs above the tables: what was measured, against what.
    package var summary: [String] = []
    /// The subcommand that reproduces the section alone.
    package var command: String?
    package var tables: [ResultTable] = []
    /// File names of plots (in the report's folder), with a caption each.
    package var plots: [(file: String, caption: String)] = []
    /// Why something was not measured (a peer missing, a phase over time).
    package var skipped: [String] = []

    package init(title: String) { self.title = title }

    package var markdown: String {
        var text = "### \(title)\n\n"
        for paragraph in summary { text += paragraph + "\n\n" }
        if let command { text += "```sh\n\(command)\n```\n\n" }
        for table in tables { text += table.markdown + "\n" }
        for (file, caption) in plots { text += "![\(caption)](\(file))\n\n" }
        for reason in skipped { text += "- not measured: \(reason)\n" }
        if !skipped.isEmpty { text += "\n" }
        return text
    }

    package var plain: String {
        var text = "== \(title) ==\n"
        for table in tables { text += "\n" + table.plain }
        for reason in skipped { text += "not measured: \(reason)\n" }
        return text + "\n"
    }
}

/// The whole run: where and when, then its sections.
package struct BenchmarkReport: Sendable {
    package var machine: MachineDescription
    package var command: String
    package var sections: [ReportSection] = []

    package init(machine: MachineDescription, command: String) {
        self.machine = machine
        self.command = command
    }

    /// The markers between which `--update FILE` replaces the generated text.
    package static let beginMarker = "<!-- asyncimage-bench all: begin (generated; edit outside the markers) -->"
    package static let endMarker = "<!-- asyncimage-bench all: end -->"

    package var markdown: String {
        var text = "## All workloads side by side (`asyncimage-bench all`)\n\n"
        text += "Generated by `\(command)` on \(machine.date).\n\n"
        text += machine.markdown + "\n"
        text += "Each cell: the median of the runs, with their min-max in brackets. "
        text += "Peers and AsyncImageKit alternate run by run, so the machine's drift hits both. "
        text += "Goal rows give the ratio and whether it is met, or by how much it is missed.\n\n"
        for section in sections { text += section.markdown }
        return text
    }

    package var plain: String {
        var text = machine.plain + "\n"
        for section in sections { text += section.plain }
        return text
    }

    /// `document` with the text between the markers replaced by `generated`
    /// (the markers kept); without the markers, `document` with the markers
    /// and `generated` appended.
    package static func splice(_ generated: String, into document: String) -> String {
        let block = beginMarker + "\n\n" + generated + "\n" + endMarker
        if let begin = document.range(of: beginMarker),
            let end = document.range(of: endMarker, range: begin.upperBound..<document.endIndex)
        {
            return String(document[..<begin.lowerBound]) + block + String(document[end.upperBound...])
        }
        let separator = document.isEmpty || document.hasSuffix("\n\n") ? "" : (document.hasSuffix("\n") ? "\n" : "\n\n")
        return document + separator + block + "\n"
    }
}
