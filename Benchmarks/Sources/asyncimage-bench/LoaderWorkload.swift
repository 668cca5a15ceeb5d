import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// Loading over HTTP, for `loader` and `all`: full size and display size at
// several concurrency levels, AsyncImageKit against URLSession + TaskGroup,
// with the results kept as samples. Each measured run is a `run-one` child
// (runLoaderChild, shared with `loader --source/--set`), so that its peak
// RSS is its own; the source is `serve` in a child process; the decode
// ceiling is one tjbench per core at once, measured each round.

/// Where the loader workload's images come from: a server of a folder's
/// files at `/NAME` on 127.0.0.1 (run-one asks `http://127.0.0.1:PORT/NAME`).
struct HTTPSource {
    /// As the tables name it: `built-in`, `nginx`.
    var name: String
    /// Starts serving `folder`; returns the port and what stops the server.
    var start: (URL) throws -> (port: Int, stop: () -> Void)

    /// The benchmark's own raw-socket server, in a child process (`serve`), keep-alive.
    static var builtin: HTTPSource {
        HTTPSource(name: "built-in") { folder in
            let server = try BuiltinServerProcess(folder: folder.path)
            return (server.port, server.stop)
        }
    }
}

/// What the loader workload runs.
struct LoaderWorkloadOptions {
    /// The servers to load from, each measured in turn (nginx can join the built-in one).
    var sources = [HTTPSource.builtin]
    var count = 200
    var loads = [1, 2, 4, 8, 32]
    var workloads = ["full", "display"]
    /// run-one's modes, in the order of the first round (each round rotates it by one).
    var modes = ["peer", "ours"]
    var runs = 3
    /// Where the image set is generated (kept between runs).
    var sets = URL(fileURLWithPath: "bench-output")
    /// Photo sizes of the set; a smoke run uses small ones.
    var sizes = defaultPhotoSizes
    var setName = "loader-set"
    /// tjbench's time for each ceiling measurement, and its warm-up.
    var ceilingSeconds = 2.0
    var ceilingWarmup = 1.0
}

/// What the loader workload measured.
struct LoaderFigures {
    struct Cell {
        /// The source's name (`built-in`, `nginx`).
        var source: String
        var workload: String
        var loads: Int
        /// `ours` or `peer` (run-one's modes).
        var mode: String
        var runs: [LoaderRunSample]
    }

    var count: Int
    var megabytes: Double
    var cells: [Cell] = []
    /// The decode ceiling (Mpx/s, every core decoding) measured in the rounds of each workload and load count.
    var ceilings: [String: Samples] = [:]
    var skipped: [String] = []

    static func key(_ workload: String, _ loads: Int, _ source: String) -> String { "\(source)/\(workload)/\(loads)" }

    /// The cell of the first source unless `source` is given.
    func cell(_ workload: String, _ loads: Int, _ mode: String, source: String? = nil) -> Cell? {
        cells.first {
            $0.workload == workload && $0.loads == loads && $0.mode == mode && $0.source == (source ?? cells.first?.source)
        }
    }
}

/// The display names of run-one's modes.
let loaderModeNames = ["ours": "AsyncImageKit", "peer": "URLSession + TaskGroup", "ours-nopool": "AsyncImageKit, no pool"]

/// Runs the loader workload: `runs` rounds per workload and load count, each
/// round a ceiling measurement, then each mode (in an order that rotates
/// round by round, so the machine's drift hits them all).
func measureLoaderWorkload(_ options: LoaderWorkloadOptions, log: (String) -> Void) throws -> LoaderFigures {
    let folder = options.sets.appendingPathComponent(options.setName)
    log("Generating \(options.count) photo-like JPEGs in \(folder.path) ...")
    let names = try makeImageSet(count: options.count, folder: folder, sizes: options.sizes)
    let list = options.sets.appendingPathComponent(options.setName + ".txt")
    try names.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
    let bytes = try names.reduce(0) {
        $0 + (try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($1).path)[.size] as? Int ?? 0)
    }
    let sample = folder.appendingPathComponent(names[2 % names.count]).path
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let haveTjbench = FileManager.default.isExecutableFile(atPath: "/usr/bin/tjbench")
    let (ceilingSeconds, ceilingWarmup) = (options.ceilingSeconds, options.ceilingWarmup)
    func measureCeiling() -> Double? {
        guard haveTjbench else { return nil }
        let rates = Locked([Double]())
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            if let rate = tjbench(sample, scale: nil, seconds: ceilingSeconds, warmup: ceilingWarmup) {
                rates.withLock { $0.append(rate) }
            }
        }
        let measured = rates.withLock { $0 }
        return measured.count == cores ? measured.reduce(0, +) : nil
    }
    var figures = LoaderFigures(count: names.count, megabytes: Double(bytes) / 1e6)
    if !haveTjbench { figures.skipped.append("the decode ceiling (tjbench: apt-get install libjpeg-turbo-progs)") }
    for source in options.sources {
        let (port, stop) = try source.start(folder)
        defer { stop() }
        for workload in options.workloads {
            for loads in options.loads {
                var runs: [String: [LoaderRunSample]] = [:]
                var ceilings: [Double] = []
                for round in 0..<options.runs {
                    if let ceiling = measureCeiling() { ceilings.append(ceiling) }
                    for offset in options.modes.indices {
                        let mode = options.modes[(offset + round) % options.modes.count]
                        let run = try runLoaderChild(
                            mode, loads: loads, workload: workload, port: port, list: list, images: names.count)
                        if run.failures > 0 { log("  (\(run.failures) failures: \(mode), \(loads) loads, \(workload))") }
                        runs[mode, default: []].append(run)
                    }
                }
                figures.ceilings[LoaderFigures.key(workload, loads, source.name)] = Samples(ceilings)
                // AsyncImageKit's rows first, as the tables show them.
                for mode in options.modes.filter({ $0 != "peer" }) + options.modes.filter({ $0 == "peer" }) {
                    figures.cells.append(
                        LoaderFigures.Cell(
                            source: source.name, workload: workload, loads: loads, mode: mode, runs: runs[mode] ?? []))
                }
                log("loader: \(source.name) server, \(workload), \(loads) loads done")
            }
        }
    }
    return figures
}

/// The loader workload's section: the table, the goal rows, the throughput plot.
func loaderSection(_ figures: LoaderFigures, command: String, folder: URL) throws -> ReportSection {
    let sources = figures.cells.map(\.source).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
    let several = sources.count > 1
    var section = ReportSection(
        title: "Loading over HTTP from 127.0.0.1 (" + sources.map { "the \($0) server" }.joined(separator: ", ") + ")")
    section.summary = [
        String(
            format: "%d photo-like q90 JPEGs (%.0f MB) served by a separate process; full size, and display size (fill 256x256). ",
            figures.count, figures.megabytes)
            + "Each run is a fresh child process (its peak RSS is its own). The peer: URLSession in a TaskGroup of N tasks, "
            + "decoding with the same C libraries into fresh buffers, resizing after a full decode. "
            + "\"Of ceiling\": Mpx/s against the decode ceiling (one tjbench per core at once, measured before each round; "
            + "each row against the ceilings of its own rounds)."
    ]
    section.command = command
    var table = ResultTable(
        title: "",
        header: (several ? ["source"] : [])
            + ["workload", "loads", "loader", "images/s", "Mpx/s", "of ceiling", "peak RSS MB", "CPU ms/image", "vs peer"])
    let n = Double(figures.count)
    var problems = 0
    for cell in figures.cells {
        let rates = Samples(cell.runs.map { n / $0.seconds })
        let mpx = Samples(cell.runs.map { $0.megapixels / $0.seconds })
        let ceiling = figures.ceilings[LoaderFigures.key(cell.workload, cell.loads, cell.source)] ?? Samples([])
        let ofCeiling = ceiling.isEmpty ? "-" : mpx.ratio(to: ceiling).map { 100 * $0 }.formatted(0) + "%"
        var versus = "-"
        if cell.mode != "peer", let peer = figures.cell(cell.workload, cell.loads, "peer", source: cell.source) {
            versus = rates.ratio(to: Samples(peer.runs.map { n / $0.seconds })).formattedRatio()
        }
        problems += cell.runs.reduce(0) { $0 + $1.failures }
        table.add(
            (several ? [cell.source] : []) + [
                cell.workload, String(cell.loads), loaderModeNames[cell.mode] ?? cell.mode, rates.formatted(1),
                mpx.formatted(1), ofCeiling, Samples(cell.runs.map(\.peakMB)).formatted(0),
                Samples(cell.runs.map { 1000 * $0.cpu / n }).formatted(1), versus,
            ])
    }
    // The full-size goal, at the default concurrentLoads of 2, from each source.
    for source in sources {
        guard let ours = figures.cell("full", 2, "ours", source: source),
            let peer = figures.cell("full", 2, "peer", source: source)
        else { continue }
        let from = several ? " (\(source))" : ""
        let mpx = Samples(ours.runs.map { $0.megapixels / $0.seconds })
        if let ceiling = figures.ceilings[LoaderFigures.key("full", 2, source)], !ceiling.isEmpty {
            table.addGoal("goal: full size at 2 loads / decode ceiling\(from)", ratio: mpx.ratio(to: ceiling), goal: .atLeast(0.95))
        }
        table.addGoal(
            "goal: full size at 2 loads, peak RSS / the peer's\(from)",
            ratio: Samples(ours.runs.map(\.peakMB)).ratio(to: Samples(peer.runs.map(\.peakMB))), goal: .atMost(1.0))
    }
    if problems > 0 { table.notes.append("\(problems) loads failed over the runs (see the log)") }
    section.tables = [table]
    section.skipped = figures.skipped

    // Throughput against concurrency.
    var series: [LineChart.Series] = []
    for source in sources {
        let from = several ? ", \(source)" : ""
        for workload in ["full", "display"] {
            for mode in ["ours", "peer"] {
                let points = figures.cells.filter { $0.source == source && $0.workload == workload && $0.mode == mode }.map {
                    (x: Double($0.loads), y: Samples($0.runs.map { n / $0.seconds }))
                }
                if !points.isEmpty { series.append(.init(name: "\(loaderModeNames[mode]!), \(workload)\(from)", points: points)) }
            }
        }
    }
    // The ceiling in images/s of the full-size set (its megapixels per image), from the first source's rounds.
    if let anyFull = figures.cells.first(where: { $0.workload == "full" && !$0.runs.isEmpty }) {
        let mpxPerImage = anyFull.runs[0].megapixels / n
        let points = figures.cells.filter { $0.source == anyFull.source && $0.workload == "full" && $0.mode == "ours" }
            .compactMap { cell -> (x: Double, y: Samples)? in
                guard let ceiling = figures.ceilings[LoaderFigures.key("full", cell.loads, cell.source)], !ceiling.isEmpty
                else { return nil }
                return (Double(cell.loads), ceiling.map { $0 / mpxPerImage })
            }
        if !points.isEmpty { series.append(.init(name: "decode ceiling, full", points: points, dashed: true)) }
    }
    let chart = LineChart(
        title: "LOADING OVER HTTP: THROUGHPUT AGAINST CONCURRENCY", xLabel: "CONCURRENT LOADS", yLabel: "IMAGES/S",
        series: series, logX: true, xTicks: Set(figures.cells.map { Double($0.loads) }).sorted())
    try chart.canvas().writePNG(to: folder.appendingPathComponent("throughput-vs-concurrency.png"))
    section.plots.append(("throughput-vs-concurrency.png", "Images per second against concurrent loads"))
    return section
}
