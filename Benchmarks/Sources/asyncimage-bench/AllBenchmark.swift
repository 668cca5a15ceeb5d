import AsyncImageKit
import BenchmarkSupport
import Foundation

// asyncimage-bench all: every workload with its peers in one run, several
// runs each, peers and AsyncImageKit alternating; medians with min-max; the
// BENCHMARKS.md tables (with the date, machine and library versions) and
// PNG plots drawn with the project's own encoder.
//
//   asyncimage-bench all [--runs R] [--output DIR] [--sets DIR] [--only decode,thumbnails,loader,mixed,cache,disk,scale]
//                        [--update FILE] [--smoke]
//
// DIR (default bench-output/all) gets `benchmarks.md`, `benchmarks.txt`
// and the plots; `--update FILE` also writes the generated text into FILE
// between the markers of `BenchmarkReport` (appending them the first time),
// leaving the rest of FILE as it was. The image sets are generated into
// `--sets` (default bench-output, shared with the single workloads'
// subcommands) and kept. `--smoke`: tiny sizes and one run, seconds in all
// (the test suite runs it so that the harness cannot rot; its figures decide
// nothing). Exits 1 if a workload could not run, or if AsyncImageKit
// failed a load.

/// An error of the benchmark harness itself, with what went wrong.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A progress line on standard error (standard output carries the tables).
func progressLine(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// What `all` runs.
struct AllOptions {
    static let workloads = ["decode", "thumbnails", "loader", "mixed", "cache", "disk", "scale"]

    var smoke = false
    var runs: Int?
    var output = "bench-output/all"
    var sets = "bench-output"
    var only = AllOptions.workloads
    var update: String?

    /// Runs per figure: 3 by default, 1 in a smoke run.
    var effectiveRuns: Int { runs ?? (smoke ? 1 : 3) }
}

/// `command`: the command line, as the report names it.
func runAllBenchmarks(_ options: AllOptions, command: String) throws {
    let folder = URL(fileURLWithPath: options.output)
    let sets = URL(fileURLWithPath: options.sets)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try FileManager.default.createDirectory(at: sets, withIntermediateDirectories: true)
    let runs = options.effectiveRuns
    let smoke = options.smoke
    var report = BenchmarkReport(machine: .current(), command: command)
    var failures: [String] = []
    progressLine("all: \(options.only.joined(separator: ", ")); \(runs) runs each\(smoke ? " (smoke: tiny sizes)" : "")")

    // Per workload: its section, or why it failed (the others still run).
    var thumbnailFigures: ThumbnailFigures?
    var loaderFigures: LoaderFigures?
    for workload in options.only {
        let started = now()
        do {
            switch workload {
            case "decode":
                let figures = try measureDecode(
                    folder: sets.appendingPathComponent("decode-inputs"), smoke: smoke, runs: runs, seconds: smoke ? 0.05 : 3)
                report.sections.append(
                    decodeSection(figures, command: "asyncimage-bench decode --seconds 3  # the same rows, printed alone"))
            case "thumbnails":
                var thumbnails = ThumbnailOptions()
                thumbnails.runs = runs
                thumbnails.output = sets.path
                if smoke {
                    (thumbnails.count, thumbnails.width, thumbnails.height, thumbnails.floorSecondsPerFile) = (4, 640, 480, 0.01)
                }
                let figures = try measureThumbnails(thumbnails, log: progressLine)
                thumbnailFigures = figures
                report.sections.append(thumbnailSection(figures, command: "asyncimage-bench thumbnails --count 200 --runs 3"))
                if let ours = figures.contestants.first, ours.results.contains(where: { $0.failures > 0 }) {
                    failures.append("thumbnails: AsyncImageKit's process failed")
                }
            case "loader":
                var loader = LoaderWorkloadOptions()
                loader.runs = runs
                loader.sets = sets
                if smoke {
                    loader.count = 6
                    loader.loads = [1, 2]
                    loader.sizes = [(320, 240), (240, 320)]
                    loader.setName = "loader-set-smoke"
                    (loader.ceilingSeconds, loader.ceilingWarmup) = (0.1, 0.05)
                }
                let figures = try measureLoaderWorkload(loader, log: progressLine)
                loaderFigures = figures
                report.sections.append(
                    try loaderSection(
                        figures, command: "asyncimage-bench loader --count 200 --repeats 3 --loads 1,2,4,8,32", folder: folder))
                let failed = figures.cells.filter { $0.mode == "ours" }.reduce(0) { $0 + $1.runs.reduce(0) { $0 + $1.failures } }
                if failed > 0 { failures.append("loader: AsyncImageKit failed \(failed) loads") }
            case "mixed":
                let (section, failed) = try measureMixedSection(runs: runs, sets: sets, smoke: smoke, log: progressLine)
                report.sections.append(section)
                if failed > 0 { failures.append("mixed: AsyncImageKit failed \(failed) loads") }
            case "cache":
                report.sections.append(
                    cacheSection(
                        smoke
                            ? measureCacheBenchmark(lookups: 20_000, rounds: 1, calls: 200)
                            : measureCacheBenchmark(rounds: max(3, runs))))
            case "disk":
                let work = folder.appendingPathComponent("disk-work")
                defer { try? FileManager.default.removeItem(at: work) }
                let figures = try measureDiskLoads(
                    count: smoke ? 4 : 100, large: false, sets: sets, work: work, runs: runs,
                    sizes: smoke ? [(320, 240), (240, 320)] : defaultPhotoSizes, setName: smoke ? "loader-set-smoke" : "loader-set",
                    log: progressLine)
                report.sections.append(diskSection(figures, command: "asyncimage-bench disk --count 100"))
                if figures.failures > 0 { failures.append("disk: \(figures.failures) loads failed") }
            case "scale":
                var scale = ScaleOptions()
                scale.sizes = smoke ? [100, 1_000] : [1_000, 10_000, 100_000, 1_000_000]
                scale.maxSeconds = smoke ? 10 : 60
                let tables = try measureScale(scale)
                report.sections.append(try scaleSection(tables, options: scale, folder: folder))
            default:
                break
            }
        } catch {
            failures.append("\(workload): \(error)")
            var section = ReportSection(title: workload)
            section.skipped = ["the workload failed: \(error)"]
            report.sections.append(section)
        }
        progressLine(String(format: "all: %@ took %.0f s", workload, now() - started))
    }
    // The plots that cut across workloads.
    if thumbnailFigures != nil || loaderFigures != nil {
        report.sections.append(
            try summarySection(thumbnails: thumbnailFigures, loader: loaderFigures, folder: folder))
    }

    let markdown = report.markdown
    print(report.plain, terminator: "")
    try markdown.write(to: folder.appendingPathComponent("benchmarks.md"), atomically: true, encoding: .utf8)
    try report.plain.write(to: folder.appendingPathComponent("benchmarks.txt"), atomically: true, encoding: .utf8)
    print("Written: \(folder.path)/benchmarks.md, benchmarks.txt and the plots")
    if let update = options.update {
        let document = (try? String(contentsOfFile: update, encoding: .utf8)) ?? ""
        // Plot paths relative to the updated file's folder.
        let relative = relativePath(from: URL(fileURLWithPath: update).deletingLastPathComponent(), to: folder)
        var generated = markdown
        for section in report.sections {
            for plot in section.plots {
                generated = generated.replacingOccurrences(of: "](\(plot.file))", with: "](\(relative)/\(plot.file))")
            }
        }
        try BenchmarkReport.splice(generated, into: document).write(
            toFile: update, atomically: true, encoding: .utf8)
        print("Updated the generated part of \(update)")
    }
    if !failures.isEmpty {
        for failure in failures { progressLine("FAILED: \(failure)") }
        exit(1)
    }
}

/// The thumbnails workload's section: the table with the floor, and the goal rows.
func thumbnailSection(_ figures: ThumbnailFigures, command: String) -> ReportSection {
    var section = ReportSection(title: "Thumbnails from files, against the thumbnailers and the decode floor")
    section.summary = [
        "\(figures.count) generated photos (every third portrait, every fourth JPEG progressive, every twentieth a PNG) "
            + "made into thumbnails that fit 256x256: AsyncImageKit through `file://` URLs (one process, 2 loads); "
            + "vipsthumbnail in two processes and in one process per file; ImageMagick `convert -thumbnail` per file; "
            + "Pillow `draft` + `thumbnail` in two processes. Peak RSS is summed over the processes that run at once. "
            + "The floor: libjpeg-turbo's own scaled decode of every file at the scale the loader picks "
            + "(TurboJPEG, one thread, CPU time; libpng for the PNGs), measured in each round, and the default "
            + "filter alone from each decoded size to its thumbnail (`ImageResizer`, `.high`, on a synthetic photo of "
            + "that size), timed the same way."
    ]
    section.command = command
    let n = Double(figures.count)
    var table = ResultTable(title: "", header: ["contestant", "images/s", "CPU ms/image", "peak RSS MB"])
    func rates(_ results: [ProcessBatchResult]) -> Samples { Samples(results.map { n / $0.seconds }) }
    func cpu(_ results: [ProcessBatchResult]) -> Samples { Samples(results.map { 1000 * $0.cpu / n }) }
    func peak(_ results: [ProcessBatchResult]) -> Samples { Samples(results.map(\.peakMB)) }
    for contestant in figures.contestants {
        table.add([contestant.name, rates(contestant.results).formatted(1), cpu(contestant.results).formatted(1),
                   peak(contestant.results).formatted(0)])
        let failed = contestant.results.reduce(0) { $0 + $1.failures }
        if failed > 0 { table.notes.append("\(contestant.name): \(failed) processes failed") }
    }
    let floor = Samples(figures.floors.map { 1000 * $0 / n })
    if !floor.isEmpty { table.add(["floor: libjpeg-turbo scaled decode alone, 1 thread", "-", floor.formatted(1), "-"]) }
    let filter = Samples(figures.filters.map { 1000 * $0 / n })
    let floorAndFilter = Samples(zip(figures.floors, figures.filters).map { 1000 * ($0 + $1) / n })
    if !filter.isEmpty {
        table.add(["the default filter alone (ImageResizer, `.high`), 1 thread", "-", filter.formatted(1), "-"])
        table.add(["floor + the filter", "-", floorAndFilter.formatted(1), "-"])
    }
    if let ours = figures.contestants.first {
        let peers = figures.contestants.dropFirst()
        if let best = peers.max(by: { rates($0.results).median < rates($1.results).median }) {
            table.addGoal(
                "goal: images/s / the best peer's (\(best.name))", ratio: rates(ours.results).ratio(to: rates(best.results)),
                goal: .atLeast(1.5))
            table.addGoal(
                "goal: peak RSS / the best peer's", ratio: peak(ours.results).ratio(to: peak(best.results)), goal: .atMost(1.0))
        }
        if !floor.isEmpty {
            table.add(["CPU per image / the floor", cpu(ours.results).ratio(to: floor).formattedRatio(), "", ""])
        }
        if !floorAndFilter.isEmpty {
            table.addGoal(
                "goal: CPU per image / (the floor + the filter)", ratio: cpu(ours.results).ratio(to: floorAndFilter),
                goal: .atMost(1.10))
        }
    }
    section.tables = [table]
    section.skipped = figures.skipped
    return section
}

/// The scale workload's section: a table per shape and the plot of cost against queue size.
func scaleSection(
    _ tables: [(shape: ScaleShape, results: [Int: ScaleCaseResult])], options: ScaleOptions, folder: URL
) throws -> ReportSection {
    var section = ReportSection(title: "Scale: cost per operation against the number of pending requests")
    section.summary = [
        "Enqueue N requests behind a transfer the loopback server holds (concurrentLoads 1, so all stay queued), "
            + "then look up, re-rank and cancel them by every API. Nanoseconds per call (the median of up to "
            + "\(scaleMaxRuns) runs per size), memory per pending request. Goal: at most 2x from the smallest N to the largest."
    ]
    section.command = "asyncimage-bench scale --sizes " + options.sizes.map(scaleSizeLabel).joined(separator: ",")
    var plotSeries: [LineChart.Series] = []
    for (shape, results) in tables {
        var table = scaleTable(shape: shape, sizes: options.sizes, results: results)
        table.title = "Shape `\(shape.rawValue)`: \(shape.summary)"
        for size in options.sizes {
            for note in results[size]?.notes ?? [] { table.notes.append("\(scaleSizeLabel(size)): \(note)") }
            for (name, figure) in results[size]?.rows ?? [] {
                if case .overTime(let done, let total, let seconds) = figure {
                    table.notes.append(
                        "\(scaleSizeLabel(size)), \(name): stopped after \(scaleSeconds(seconds)) s, \(done) of \(total) calls")
                }
            }
        }
        section.tables.append(table)
        guard shape == .many else { continue }
        // The plot: every timed row of shape `many` (memory rows and the run count left out).
        for name in table.rows.map({ $0[0] }) where ![scaleMallocRow, scaleRSSRow, scaleRunsRow].contains(name) {
            let points = options.sizes.compactMap { size -> (x: Double, y: Samples)? in
                guard case .value(let value)? = results[size]?[name] else { return nil }
                return (Double(size), Samples([value]))
            }
            plotSeries.append(.init(name: name, points: points, dashed: name.hasPrefix("yardstick")))
        }
    }
    let chart = LineChart(
        title: "SCALE: NS PER OPERATION AGAINST PENDING REQUESTS", xLabel: "PENDING REQUESTS", yLabel: "NS PER CALL",
        series: plotSeries, logX: true, logY: true,
        xTickLabel: { scaleSizeLabel(Int($0)) }, xTicks: options.sizes.map(Double.init))
    try chart.canvas().writePNG(to: folder.appendingPathComponent("scale-cost-vs-queue.png"))
    section.plots.append(("scale-cost-vs-queue.png", "Nanoseconds per call against pending requests (shape many; log-log)"))
    return section
}

/// CPU per image and peak memory per loader, across the workloads measured.
func summarySection(thumbnails: ThumbnailFigures?, loader: LoaderFigures?, folder: URL) throws -> ReportSection {
    var section = ReportSection(title: "CPU per image and peak memory, per workload and loader")
    var cpuGroups: [(name: String, bars: [BarChart.Bar])] = []
    var memoryGroups: [(name: String, bars: [BarChart.Bar])] = []
    if let thumbnails {
        let n = Double(thumbnails.count)
        var cpu: [BarChart.Bar] = []
        var memory: [BarChart.Bar] = []
        for (index, contestant) in thumbnails.contestants.enumerated() {
            cpu.append(.init(label: contestant.name, value: Samples(contestant.results.map { 1000 * $0.cpu / n }), color: index))
            memory.append(.init(label: contestant.name, value: Samples(contestant.results.map(\.peakMB)), color: index))
        }
        if !thumbnails.floors.isEmpty {
            cpu.append(.init(label: "floor: libjpeg-turbo scaled decode", value: Samples(thumbnails.floors.map { 1000 * $0 / n }), color: 6))
        }
        cpuGroups.append(("THUMBNAILS FROM FILES", cpu))
        memoryGroups.append(("THUMBNAILS FROM FILES", memory))
    }
    if let loader {
        let n = Double(loader.count)
        for workload in ["full", "display"] {
            // At the default concurrentLoads of 2 (or the nearest measured).
            let measured = Set(loader.cells.filter { $0.workload == workload }.map(\.loads))
            guard let loads = measured.min(by: { abs($0 - 2) < abs($1 - 2) }) else { continue }
            var cpu: [BarChart.Bar] = []
            var memory: [BarChart.Bar] = []
            for (index, mode) in ["ours", "peer"].enumerated() {
                guard let cell = loader.cell(workload, loads, mode) else { continue }
                let name = loaderModeNames[mode] ?? mode
                cpu.append(.init(label: name, value: Samples(cell.runs.map { 1000 * $0.cpu / n }), color: index))
                memory.append(.init(label: name, value: Samples(cell.runs.map(\.peakMB)), color: index))
            }
            let title = "HTTP, \(workload.uppercased()) SIZE, \(loads) LOADS"
            cpuGroups.append((title, cpu))
            memoryGroups.append((title, memory))
        }
    }
    try BarChart(title: "CPU PER IMAGE (MS, USER + SYSTEM)", unit: "MS", groups: cpuGroups).canvas()
        .writePNG(to: folder.appendingPathComponent("cpu-per-image.png"))
    try BarChart(title: "PEAK MEMORY PER LOADER (MB RSS)", unit: "MB", groups: memoryGroups).canvas()
        .writePNG(to: folder.appendingPathComponent("peak-memory.png"))
    section.plots = [
        ("cpu-per-image.png", "CPU milliseconds per image, per workload and loader"),
        ("peak-memory.png", "Peak RSS per loader (summed over a peer's processes that run at once)"),
    ]
    return section
}

/// The disk cache's section: cold, warm and revalidated loads at display size.
func diskSection(_ figures: DiskFigures, command: String) -> ReportSection {
    var section = ReportSection(title: "Disk cache: cold, warm and revalidated loads at display size")
    section.summary = [
        String(format: "%d photos (%.0f MB, the loader set's first) loaded at 256x256 by a loader with a disk cache ", figures.count, figures.megabytes)
            + "(2 loads, an empty memory cache each pass) from an in-process server on 127.0.0.1. Each round uses fresh disks: "
            + "cold (network, decode, store), warm from stored originals (read, decoded at display size) and from stored "
            + "thumbnails (read back), and with `no-cache` (every load revalidated: a 304, then the stored thumbnail)."
    ]
    section.command = command
    var table = ResultTable(title: "", header: ["workload", "images/s", "CPU ms/image", "server requests"])
    for row in figures.rows {
        table.add([
            row.name, Samples(row.rates).formatted(1), Samples(row.cpu).formatted(2),
            Samples(row.requests.map(Double.init)).formatted(0),
        ])
    }
    if let original = figures.row(diskWarmOriginalRow), let thumbnail = figures.row(diskWarmThumbnailRow) {
        table.addGoal(
            "goal: warm thumbnail / warm original, images/s", ratio: Samples(thumbnail.rates).ratio(to: Samples(original.rates)),
            goal: .atLeast(20))
    }
    if figures.failures > 0 { table.notes.append("\(figures.failures) loads failed (see the log)") }
    section.tables = [table]
    return section
}
