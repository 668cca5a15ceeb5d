import AsyncImageKit
import BenchmarkSupport
import Foundation
import LoopbackHTTP

// asyncimage-bench loader --source builtin|nginx|both --set photos|mixed:
// the loader workload (AsyncImageLoader against URLSession + TaskGroup, each
// run in a child process of its own) with the files served by the built-in
// loopback server, by nginx, or both side by side in one run; on the loader
// set (200 photo-like JPEGs) or the issue's mixed set (1,000 JPEGs up to
// 12 MP, progressive ones, PNGs, GIFs). Next to the loader rows:
//
// - the perfect-overlap decode bound: the CPU seconds our decoders need for
//   the whole set (one thread each, `cores` threads at once, in a child
//   process; nothing else: no transfer, no queueing) divided by the number
//   of cores, as images/s: what a loader whose transfers and decodes
//   overlapped perfectly, with every core decoding all the time, would make.
//   Measured again each round, next to the runs it is compared with; each row
//   is given as a fraction of the median bound (goal: >= 0.95 at 2 loads,
//   full size);
// - with nginx, the download-then-decode yardstick (see CurlYardstick):
//   curl --parallel with --parallel-max = the loads, then the codecs' tools.
//
//   asyncimage-bench loader --source both --set mixed [--loads 2,8] [--repeats 3]
//       [--workloads full,display] [--count N] [--loaders peer,ours,ours-nopool]
//       [--no-curl] [--smoke] [--output DIR]

/// Where the files come from.
enum LoaderSource: String, CaseIterable, Sendable {
    /// The benchmark's own LoopbackServer in a child process (`serve`), bodies in memory.
    case builtin
    /// nginx, started by the benchmark with its own configuration (NginxServer).
    case nginx
}

/// Which images.
enum LoaderImageSet: String, Sendable {
    /// The loader set: photo-like JPEGs of 1.5 to 5 Mpx (makeImageSet).
    case photos
    /// The issue's mixed set (MixedImageSet).
    case mixed

    var defaultCount: Int { self == .photos ? 200 : 1000 }
}

struct LoaderSourcesOptions: Sendable {
    var set = LoaderImageSet.photos
    /// nil: the set's default (200 photos, 1,000 mixed; 24 with `smoke`).
    var count: Int?
    var sources: [LoaderSource] = [.builtin]
    var loads = [2, 8]
    var workloads = ["full"]
    var repeats = 3
    /// run-one modes: "peer" (URLSession + TaskGroup), "ours", "ours-nopool".
    var loaders = ["peer", "ours", "ours-nopool"]
    /// The curl + tools yardstick, with nginx.
    var curl = true
    /// Tiny sizes, one run: the harness only (figures mean nothing).
    var smoke = false
    var output = "bench-output"

    var imageCount: Int { count ?? (smoke ? 24 : set.defaultCount) }
}

/// One child-process run of a loader.
struct LoaderRunSample: Sendable {
    var seconds: Double
    var images: Int
    var megapixels: Double
    /// The child's own peak RSS (VmHWM), MB.
    var peakMB: Double
    /// The child's CPU seconds (user + system).
    var cpu: Double
    var failures: Int
    /// The whole machine over the run (/proc/stat): CPU seconds no process
    /// used (idle + iowait), and CPU seconds used by processes other than the
    /// child (its server included). Idle cores with the loader below the bound
    /// mean it left decoders waiting; none, that something else had the CPU.
    var machineIdle: Double = 0
    var othersCPU: Double = 0

    var imagesPerSecond: Double { Double(images) / seconds }
}

/// The machine's CPU seconds so far from /proc/stat's first line: (busy, idle).
func machineCPUSeconds() -> (busy: Double, idle: Double) {
    guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") })
    else { return (0, 0) }
    let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard ticks.count >= 8 else { return (0, 0) }
    let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
    // user nice system idle iowait irq softirq steal
    let idle = ticks[3] + ticks[4]
    let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
    return (busy / hertz, idle / hertz)
}

/// One measurement of the perfect-overlap decode bound.
struct DecodeBoundSample: Sendable {
    var images: Int
    /// CPU seconds our decoders took for the whole set (sum over threads).
    var cpu: Double
    /// Wall seconds of the whole set decoded on `cores` threads.
    var wall: Double
    var cores: Int

    /// images / (CPU / cores): the bound.
    var imagesPerSecond: Double { Double(images) * Double(cores) / cpu }
    var cpuPerImage: Double { cpu / Double(images) }
}

/// The rows of one source, workload, concurrency and loader: every run.
struct LoaderSourceRow: Sendable {
    var source: LoaderSource
    var workload: String
    var loads: Int
    /// The run-one mode ("peer", "ours", "ours-nopool") or "curl".
    var loader: String
    var samples: [LoaderRunSample]
}

struct CurlYardstickRow: Sendable {
    var workload: String
    var parallelMax: Int
    var samples: [CurlYardstickSample]
}

struct LoaderSourcesResult: Sendable {
    var options: LoaderSourcesOptions
    var images: Int
    var bytes: Int
    var cores: Int
    var rows: [LoaderSourceRow]
    /// By workload: one bound per round.
    var bounds: [String: [DecodeBoundSample]]
    var curl: [CurlYardstickRow]
    /// Why a part did not run (a tool or nginx missing).
    var skipped: [String]
}

let loaderDisplayNames = ["peer": "URLSession+TG (peer)", "ours": "AsyncImageKit", "ours-nopool": "AsyncImageKit, no pool"]

/// `loader --source ... --set ...`: measures and prints the table.
func runLoaderSourcesCommand(_ options: LoaderSourcesOptions) throws {
    let result = try measureLoaderSources(options) { print($0); fflush(nil) }
    printLoaderSources(result)
    let csv = URL(fileURLWithPath: options.output).appendingPathComponent("loader-\(options.set.rawValue)-runs.csv")
    try loaderSourcesCSV(result).write(to: csv, atomically: true, encoding: .utf8)
    print("Every run: \(csv.path)")
}

/// Starts the built-in server (`serve` in a child process); stopped on deinit and on exit.
final class BuiltinServerProcess {
    let port: Int
    private let process: Process

    init(folder: String) throws {
        let (process, text) = try BenchChild.start(["serve", folder], tag: "PORT")
        self.process = process
        guard let port = Int(text) else {
            process.terminate()
            ChildProcessCleanup.forget(process.processIdentifier)
            throw BenchError("serve reported no port: \(text)")
        }
        self.port = port
    }

    /// Stops the server (again: nothing). Its pid is forgotten even when it
    /// had already ended, so the cleanup at exit never signals a reused pid.
    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        ChildProcessCleanup.forget(process.processIdentifier)
    }

    deinit { stop() }
}

/// One measured run of a loader: a `run-one` child (`mode`: peer, ours,
/// ours-nopool) loading every image of `list` from 127.0.0.1:`port`, with the
/// machine's CPU around it. Every loader benchmark runs its loaders through it.
func runLoaderChild(_ mode: String, loads: Int, workload: String, port: Int, list: URL, images: Int) throws
    -> LoaderRunSample
{
    let before = machineCPUSeconds()
    let fields = try BenchChild.numbers(["run-one", mode, String(loads), workload, String(port), list.path], tag: "RESULT")
    let after = machineCPUSeconds()
    guard fields.count == 5 else {
        throw BenchError("run-one (\(mode), \(loads) loads, \(workload)) printed an unreadable result: \(fields)")
    }
    return LoaderRunSample(
        seconds: fields[0], images: images - Int(fields[3]), megapixels: fields[1], peakMB: fields[2], cpu: fields[4],
        failures: Int(fields[3]), machineIdle: after.idle - before.idle, othersCPU: max(0, after.busy - before.busy - fields[4]))
}

/// Measures every source, workload, concurrency and loader, `repeats` rounds;
/// `log` gets progress lines.
func measureLoaderSources(_ options: LoaderSourcesOptions, log: (String) -> Void = { _ in }) throws -> LoaderSourcesResult {
    let output = URL(fileURLWithPath: options.output)
    let count = options.imageCount
    let folder = output.appendingPathComponent(options.set == .photos ? "loader-set" : "mixed-set")
    log("Generating (or reusing) \(count) \(options.set == .photos ? "photo-like JPEGs" : "mixed images") in \(folder.path) ...")
    let names =
        options.set == .photos ? try makeImageSet(count: count, folder: folder) : try MixedImageSet.make(count: count, folder: folder)
    let list = output.appendingPathComponent("\(options.set.rawValue)-\(count).txt")
    try names.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
    let bytes = try names.reduce(0) {
        $0 + (try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($1).path)[.size] as? Int ?? 0)
    }
    let cores = ProcessInfo.processInfo.activeProcessorCount
    var skipped: [String] = []

    // The servers, for the whole run.
    var ports: [(LoaderSource, Int)] = []
    var builtin: BuiltinServerProcess?
    var nginx: NginxServer?
    defer {
        nginx?.stop()
        builtin = nil
    }
    for source in options.sources {
        switch source {
        case .builtin:
            builtin = try BuiltinServerProcess(folder: folder.path)
            ports.append((.builtin, builtin!.port))
        case .nginx:
            guard NginxServer.isAvailable else {
                skipped.append("nginx (apt-get install nginx)")
                continue
            }
            nginx = try NginxServer(root: folder.path, workers: cores)
            ports.append((.nginx, nginx!.port))
        }
    }
    let nginxPort = ports.first { $0.0 == .nginx }?.1
    var curlLoads: [Int] = []
    if options.curl, nginxPort != nil {
        let missing = CurlYardstick.missingTools()
        if missing.isEmpty { curlLoads = options.loads } else { skipped.append("the curl yardstick: " + missing.joined(separator: ", ")) }
    }
    log("\(count) images, \(bytes / 1_000_000) MB; " + ports.map { "\($0.0.rawValue) on 127.0.0.1:\($0.1)" }.joined(separator: ", "))

    var rows: [String: LoaderSourceRow] = [:]
    var rowOrder: [String] = []
    var bounds: [String: [DecodeBoundSample]] = [:]
    var curlRows: [String: CurlYardstickRow] = [:]
    var curlOrder: [String] = []
    for workload in options.workloads {
        for round in 0..<options.repeats {
            // The bound first, then every run of the round, the loaders'
            // order rotating by one each round so the drift hits all of them.
            let bound = try BenchChild.numbers(["decode-bound", workload, folder.path, list.path, String(cores)], tag: "BOUND")
            let sample = DecodeBoundSample(images: Int(bound[0]), cpu: bound[1], wall: bound[2], cores: cores)
            bounds[workload, default: []].append(sample)
            log(String(format: "  %@ round %d: decode bound %.1f images/s (%.1f ms CPU per image)", workload, round + 1,
                       sample.imagesPerSecond, 1000 * sample.cpuPerImage))
            for (source, port) in ports {
                for loads in options.loads {
                    for offset in 0..<options.loaders.count {
                        let mode = options.loaders[(offset + round) % options.loaders.count]
                        let run = try runLoaderChild(
                            mode, loads: loads, workload: workload, port: port, list: list, images: count)
                        if run.failures > 0 { log("  (\(run.failures) failures: \(mode), \(source.rawValue), \(loads) loads)") }
                        let key = "\(workload) \(source.rawValue) \(loads) \(mode)"
                        if rows[key] == nil {
                            rows[key] = LoaderSourceRow(source: source, workload: workload, loads: loads, loader: mode, samples: [])
                            rowOrder.append(key)
                        }
                        rows[key]!.samples.append(run)
                    }
                    if source == .nginx, curlLoads.contains(loads) {
                        let run = try CurlYardstick.run(
                            names: names, port: port, parallelMax: loads, display: workload == "display", decoders: cores,
                            scratch: output)
                        if run.failures > 0 { log("  (\(run.failures) failures: curl yardstick, \(loads))") }
                        let key = "\(workload) \(loads)"
                        if curlRows[key] == nil {
                            curlRows[key] = CurlYardstickRow(workload: workload, parallelMax: loads, samples: [])
                            curlOrder.append(key)
                        }
                        curlRows[key]!.samples.append(run)
                    }
                }
            }
        }
    }
    return LoaderSourcesResult(
        options: options, images: count, bytes: bytes, cores: cores, rows: rowOrder.map { rows[$0]! }, bounds: bounds,
        curl: curlOrder.map { curlRows[$0]! }, skipped: skipped)
}

/// Every run as CSV (one line per run; the bound's rounds as loader "decode-bound").
func loaderSourcesCSV(_ result: LoaderSourcesResult) -> String {
    var lines = ["workload,source,loads,loader,seconds,images,images_per_s,peak_mb,cpu_s,failures,machine_idle_s,others_cpu_s"]
    for (workload, bounds) in result.bounds.sorted(by: { $0.key < $1.key }) {
        for bound in bounds {
            lines.append("\(workload),-,-,decode-bound,\(bound.wall),\(bound.images),\(bound.imagesPerSecond),,\(bound.cpu),0,,")
        }
    }
    for row in result.rows {
        for run in row.samples {
            lines.append(
                "\(row.workload),\(row.source.rawValue),\(row.loads),\(row.loader),\(run.seconds),\(run.images),"
                    + "\(run.imagesPerSecond),\(run.peakMB),\(run.cpu),\(run.failures),\(run.machineIdle),\(run.othersCPU)")
        }
    }
    for row in result.curl {
        for run in row.samples {
            lines.append(
                "\(row.workload),nginx,\(row.parallelMax),curl,\(run.seconds),\(run.images),\(run.imagesPerSecond),"
                    + "\(run.peakMB),\(run.cpu),\(run.failures),,")
        }
    }
    return lines.joined(separator: "\n") + "\n"
}

func printLoaderSources(_ result: LoaderSourcesResult) {
    let options = result.options
    print("\nLoader, \(options.set.rawValue) set: \(result.images) images, \(result.bytes / 1_000_000) MB, \(result.cores) cores; "
        + "\(options.repeats) round(s), each run in a child process; medians (min-max).")
    for reason in result.skipped { print("skipped: \(reason)") }
    print("Bound: the perfect-overlap decode bound, images / (CPU seconds of our decoders for the set / cores), measured each round.")
    print("Idle %: the machine's idle CPU over the run (of cores x wall); others %: CPU used by other processes (the server too).")
    var table = ResultTable(
        title: "",
        header: ["workload", "source", "loads", "loader", "images/s", "of bound", "peak RSS MB", "CPU ms/image", "idle %", "others %"])
    let cores = Double(result.cores)
    for workload in options.workloads {
        let bounds = result.bounds[workload] ?? []
        let bound = Samples(bounds.map(\.imagesPerSecond)).median
        func ofBound(_ rates: Samples) -> String { String(format: "%.0f%%", 100 * rates.median / bound) }
        table.add([
            workload, "-", "-", "decode bound", Samples(bounds.map(\.imagesPerSecond)).formatted(1), "100%", "-",
            Samples(bounds.map { 1000 * $0.cpuPerImage }).formatted(1), "-", "-",
        ])
        // The same decodes' wall time on `cores` threads: what the bound was
        // on this (shared) machine at that moment, for reference.
        let wall = Samples(bounds.map { Double($0.images) / $0.wall })
        table.add([workload, "-", "-", "decode alone, \(result.cores) threads, wall time", wall.formatted(1), ofBound(wall), "-", "-", "-", "-"])
        for row in result.rows where row.workload == workload {
            let rates = Samples(row.samples.map(\.imagesPerSecond))
            table.add([
                workload, row.source.rawValue, "\(row.loads)", loaderDisplayNames[row.loader] ?? row.loader, rates.formatted(1),
                ofBound(rates), Samples(row.samples.map(\.peakMB)).formatted(0),
                Samples(row.samples.map { 1000 * $0.cpu / Double($0.images) }).formatted(1),
                Samples(row.samples.map { 100 * $0.machineIdle / (cores * $0.seconds) }).formatted(0),
                Samples(row.samples.map { 100 * $0.othersCPU / (cores * $0.seconds) }).formatted(0),
            ])
        }
        for row in result.curl where row.workload == workload {
            let rates = Samples(row.samples.map(\.imagesPerSecond))
            table.add([
                workload, "nginx", "\(row.parallelMax)",
                "curl --parallel, then \(workload == "display" ? "djpeg -scale 1/4" : "djpeg"), pngtopnm, giftopnm",
                rates.formatted(1), ofBound(rates), Samples(row.samples.map(\.peakMB)).formatted(0),
                Samples(row.samples.map { 1000 * $0.cpu / Double($0.images) }).formatted(1), "-", "-",
            ])
        }
    }
    print("\n" + table.markdown, terminator: "")
    if !result.curl.isEmpty {
        print("\nThe curl yardstick's two phases (medians): ")
        for row in result.curl {
            print(String(
                format: "  %@, --parallel-max %d: download %.2f s (%.2f s CPU), decode %.2f s (%.2f s CPU, %d processes at once)",
                row.workload, row.parallelMax, Samples(row.samples.map(\.downloadSeconds)).median,
                Samples(row.samples.map(\.downloadCPU)).median, Samples(row.samples.map(\.decodeSeconds)).median,
                Samples(row.samples.map(\.decodeCPU)).median, result.cores))
        }
    }
    // The runs the rest of the machine left alone (other processes under 5%
    // of the cores): on a shared machine, the ones that say what the loader can do.
    let quiet = result.rows.compactMap { row -> String? in
        let runs = row.samples.filter { $0.othersCPU < 0.05 * Double(result.cores) * $0.seconds }
        guard !runs.isEmpty, let bounds = result.bounds[row.workload] else { return nil }
        let rate = Samples(runs.map(\.imagesPerSecond)).median
        return String(format: "  %@ %@ %d loads %@: %.1f images/s, %.1f%% of the bound (%d of %d runs)", row.workload,
                      row.source.rawValue, row.loads, loaderDisplayNames[row.loader] ?? row.loader, rate,
                      100 * rate / Samples(bounds.map(\.imagesPerSecond)).median, runs.count, row.samples.count)
    }
    if !quiet.isEmpty {
        print("\nRuns with other processes under 5% of the CPU (medians):")
        quiet.forEach { print($0) }
    }
    // The goal, full size at 2 loads: >= 0.95 of the bound at no more peak RSS than the peer.
    if let bound = result.bounds["full"].map({ Samples($0.map(\.imagesPerSecond)).median }) {
        for source in options.sources {
            guard let ours = result.rows.first(where: { $0.workload == "full" && $0.source == source && $0.loads == 2 && $0.loader == "ours" })
            else { continue }
            let rate = Samples(ours.samples.map(\.imagesPerSecond)).median
            let rss = Samples(ours.samples.map(\.peakMB)).median
            let peer = result.rows.first { $0.workload == "full" && $0.source == source && $0.loads == 2 && $0.loader == "peer" }
            let peerRSS = peer.map { Samples($0.samples.map(\.peakMB)).median }
            let met = rate >= 0.95 * bound && (peerRSS.map { rss <= $0 } ?? true)
            print(String(
                format: "Goal (full size, 2 loads, %@): >= 95%% of the bound at no more peak RSS than the peer: %.1f%% of %.1f images/s, %.0f MB against the peer's %@: %@%@.",
                source.rawValue, 100 * rate / bound, bound, rss, peerRSS.map { String(format: "%.0f MB", $0) } ?? "-",
                met ? "met" : "not met",
                met ? "" : String(format: " (%.1f points short of 95%%%@)", max(0, 100 * (0.95 - rate / bound)),
                    peerRSS.map { rss > $0 ? String(format: "; %.0f MB over the peer", rss - $0) : "" } ?? "")))
        }
    }
}

/// Child process: the perfect-overlap decode bound.
/// `decode-bound WORKLOAD FOLDER LIST-FILE THREADS`; reports `BOUND images cpuSeconds wallSeconds`.
///
/// Every file is read into memory first (not timed), then decoded by our
/// decoders as the loader decodes it (full size, or the display request's
/// options: 256x256 fill), THREADS at once, each file once; the CPU seconds
/// are each decoding thread's own, summed. A warm-up decode of the first file
/// comes first. The pixel-buffer pool is on, as in the loader.
func decodeBoundChild(display: Bool, folder: URL, list: String, threads: Int) throws {
    let names = try String(contentsOfFile: list, encoding: .utf8).split(separator: "\n").map(String.init)
    let bodies = try names.map { try Data(contentsOf: folder.appendingPathComponent($0)) }
    let options =
        display
        ? ImageRequest(url: URL(string: "http://127.0.0.1/bound")!, targetSize: PixelSize(width: 256, height: 256)).options
        : DecodingOptions()
    let decoder = ImageDecoder()
    _ = try? decoder.decode(bodies[0], options: options)
    let next = Locked(0)
    let cpu = Locked(0.0)
    let failures = Locked(0)
    let start = now()
    DispatchQueue.concurrentPerform(iterations: max(1, threads)) { _ in
        var mine = 0.0
        while true {
            let index = next.withLock { value -> Int in
                defer { value += 1 }
                return value
            }
            guard index < bodies.count else { break }
            let before = threadCPUSeconds()
            let decoded = try? decoder.decode(bodies[index], options: options)
            mine += threadCPUSeconds() - before
            if decoded == nil { failures.withLock { $0 += 1 } }
        }
        cpu.withLock { $0 += mine }
    }
    let wall = now() - start
    if failures.withLock({ $0 }) > 0 { FileHandle.standardError.write(Data("decode-bound: \(failures.withLock { $0 }) failed\n".utf8)) }
    BenchChild.report("BOUND", "\(bodies.count) \(cpu.withLock { $0 }) \(wall)")
}

/// Child process: nginx serving FOLDER on 127.0.0.1 until standard input
/// closes or a signal stops it (for profiling a run-one child by hand).
/// `nginx-serve FOLDER`; prints `PORT n`.
func nginxServeChild(folder: String) throws {
    let server = try NginxServer(root: folder)
    BenchChild.report("PORT", "\(server.port)")
    _ = FileHandle.standardInput.readDataToEndOfFile()
    server.stop()
}
