import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The loader benchmark: AsyncImageLoader against what a Linux Swift developer
// would write without it (URLSession in a TaskGroup, decoding with the same
// C libraries, resizing after a full decode for display size).

/// Generates the image set once: photo-like JPEGs of 1.5 to 5 megapixels, q90.
/// The loader set's photo sizes: 1.5 to 5 megapixels.
let defaultPhotoSizes = [(1500, 1000), (2000, 1500), (2400, 1600), (1200, 1600), (2700, 1800), (1600, 1200)]

func makeImageSet(count: Int, folder: URL, sizes: [(Int, Int)] = defaultPhotoSizes) throws -> [String] {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var names: [String] = []
    for index in 0..<count {
        let name = "photo-\(index).jpg"
        names.append(name)
        let file = folder.appendingPathComponent(name)
        if FileManager.default.fileExists(atPath: file.path) { continue }
        let (w, h) = sizes[index % sizes.count]
        let image = SyntheticImage.photo(width: w, height: h, seed: UInt64(index + 1))
        try JPEGEncoder(quality: 90).encode(image).write(to: file)
    }
    return names
}

/// Child process: serves every file of a folder at `/NAME` on 127.0.0.1 and prints its port.
func serveFolder(_ arguments: [String]) throws {
    guard let path = arguments.first else { exit(2) }
    var files: [String: Data] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: path) {
        files["/" + name] = try Data(contentsOf: URL(fileURLWithPath: path).appendingPathComponent(name))
    }
    let bodies = files
    let server = try LoopbackServer { request, connection in
        if let body = bodies[request.path] {
            connection.respond(status: 200, headers: [("Content-Type", "image/jpeg")], body: body)
        } else {
            connection.respond(status: 404, body: Data())
        }
    }
    print("PORT \(server.port)")
    fflush(nil)
    while true { sleep(60) }
}

/// CPU seconds (user + system) this process has used.
func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Peak resident memory of this process, in MB: VmHWM from /proc/self/status
/// (this process image's own high-water mark; `ru_maxrss` would include the
/// parent's size when it spawned this child), else `ru_maxrss`.
func peakRSSMegabytes() -> Double {
    if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
        let kilobytes = Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ")[0])
    {
        return kilobytes / 1024
    }
    var usage = rusage()
    getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// Child process: one measured run. Prints `RESULT seconds megapixels peakMB failures cpuSeconds`.
func runOne(_ arguments: [String]) throws {
    // run-one MODE CONCURRENCY WORKLOAD PORT LIST-FILE
    guard arguments.count == 5, let concurrency = Int(arguments[1]), let port = Int(arguments[3]) else { exit(2) }
    let mode = arguments[0]
    let display = arguments[2] == "display"
    let names = try String(contentsOfFile: arguments[4], encoding: .utf8).split(separator: "\n").map(String.init)
    let urls = names.map { URL(string: "http://127.0.0.1:\(port)/\($0)")! }
    let target = PixelSize(width: 256, height: 256)
    let pixels = Locked(0)
    let failures = Locked(0)
    // The peer decodes with the same C libraries into a fresh buffer each
    // time, as code written without this library would: no recycling.
    if mode == "peer" || mode == "ours-nopool" {
        PixelBufferPool.shared.countLimit = 0
    } else if let count = ProcessInfo.processInfo.environment["BENCH_POOL_COUNT"].flatMap({ Int($0) }) {
        PixelBufferPool.shared.countLimit = count  // BENCH_POOL_COUNT=N: try another countLimit
    }
    let start = now()
    let cpuStart = cpuSeconds()
    if mode.hasPrefix("ours") {
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: concurrency, deliveryQueue: DispatchQueue(label: "bench delivery"))
        let done = DispatchGroup()
        for url in urls {
            done.enter()
            let request = ImageRequest(url: url, targetSize: display ? target : nil)
            loader.loadImage(
                request, target: nil,
                success: ImageAction("bench") { _, image, _ in
                    pixels.withLock { $0 += image.originalSize.pixelCount }
                    done.leave()
                },
                failure: ImageFailureAction("bench") { _, _, _ in
                    failures.withLock { $0 += 1 }
                    done.leave()
                })
        }
        done.wait()
    } else {
        let session = URLSession(configuration: .default)
        let finished = DispatchSemaphore(value: 0)
        Task {
            await withTaskGroup(of: Int?.self) { group in
                var iterator = urls.makeIterator()
                func addNext() -> Bool {
                    guard let url = iterator.next() else { return false }
                    group.addTask {
                        guard let (data, _) = try? await session.data(from: url),
                            let image = try? ImageDecoder().decode(data)
                        else { return nil }
                        if display {
                            _ = try? ImageResizer.resize(image, to: image.size.scaled(toFit: target, contentMode: .aspectFill))
                        }
                        return image.originalSize.pixelCount
                    }
                    return true
                }
                for _ in 0..<concurrency { _ = addNext() }
                while let result = await group.next() {
                    if let result { pixels.withLock { $0 += result } } else { failures.withLock { $0 += 1 } }
                    _ = addNext()
                }
            }
            finished.signal()
        }
        finished.wait()
    }
    let seconds = now() - start
    let cpu = cpuSeconds() - cpuStart
    // BENCH_POOL_STATS=1 in the environment: what the pool did, on stderr.
    if ProcessInfo.processInfo.environment["BENCH_POOL_STATS"] != nil {
        FileHandle.standardError.write(Data("pool: \(PixelBufferPool.shared.statistics)\n".utf8))
    }
    print("RESULT \(seconds) \(Double(pixels.withLock { $0 }) / 1e6) \(peakRSSMegabytes()) \(failures.withLock { $0 }) \(cpu)")
}

func runLoaderBenchmark(_ arguments: [String]) throws {
    var count = 200
    var repeats = 3
    var output = "bench-output"
    var loadCounts = [1, 2, 4]
    var workloads = ["full", "display"]
    var iterator = arguments.makeIterator()
    while let argument = iterator.next() {
        switch argument {
        case "--count": count = Int(iterator.next() ?? "") ?? count
        case "--repeats": repeats = max(1, Int(iterator.next() ?? "") ?? repeats)
        case "--output": output = iterator.next() ?? output
        case "--loads":
            loadCounts = (iterator.next() ?? "").split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            if loadCounts.isEmpty { loadCounts = [1, 2, 4] }
        case "--workloads":
            workloads = (iterator.next() ?? "").split(separator: ",").map(String.init).filter { ["full", "display"].contains($0) }
            if workloads.isEmpty { workloads = ["full", "display"] }
        default:
            FileHandle.standardError.write(Data("unknown option \(argument)\n".utf8))
            exit(2)
        }
    }
    let folder = URL(fileURLWithPath: output).appendingPathComponent("loader-set")
    print("Generating \(count) photo-like JPEGs (1.5-5 Mpx, q90) in \(folder.path) ...")
    let names = try makeImageSet(count: count, folder: folder)
    let list = URL(fileURLWithPath: output).appendingPathComponent("loader-set.txt")
    try names.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
    let bytes = try names.reduce(0) {
        $0 + (try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent($1).path)[.size] as? Int ?? 0)
    }

    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let server = Process()
    server.executableURL = executable
    server.arguments = ["serve", folder.path]
    let pipe = Pipe()
    server.standardOutput = pipe
    try server.run()
    defer { server.terminate() }
    var line = Data()
    while !line.contains(0x0A) { line.append(pipe.fileHandleForReading.availableData) }
    let port = String(decoding: line, as: UTF8.self).split(separator: " ")[1].trimmingCharacters(in: .whitespacesAndNewlines)

    // The decode ceiling: libjpeg-turbo's own rate on one of the set's
    // photos, measured with one tjbench per core running at the same time.
    // The machine's speed drifts (by 15% within minutes here), so it is
    // measured again before each round of runs, and each row is divided by
    // the median of the ceilings measured next to its own runs.
    let sample = folder.appendingPathComponent(names[2 % names.count]).path
    let cores = ProcessInfo.processInfo.activeProcessorCount
    func measureCeiling() -> Double? {
        let rates = Locked([Double]())
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            if let rate = tjbench(sample, scale: nil, seconds: 2) { rates.withLock { $0.append(rate) } }
        }
        let measured = rates.withLock { $0 }
        return measured.count == cores ? measured.reduce(0, +) : nil
    }
    print(
        "\(count) images, \(bytes / 1_000_000) MB, served by a separate process on 127.0.0.1:\(port).")
    print("Each row: the median of \(repeats) runs, each in a fresh child process (peak RSS is its own);")
    print("the loaders alternate run by run, after a ceiling measurement (\(cores) tjbench at once) each round.")
    print("\"no pool\": PixelBufferPool.shared.countLimit = 0.\n")
    print("workload  loads  loader                   images/s    Mpx/s  of ceiling  peak RSS  CPU ms/image   vs peer")

    typealias Run = (seconds: Double, mpx: Double, rss: Double, cpu: Double)
    func run(_ mode: String, _ concurrency: Int, _ workload: String) throws -> Run {
        let child = Process()
        child.executableURL = executable
        child.arguments = ["run-one", mode, String(concurrency), workload, port, list.path]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        guard let result = text.split(separator: "\n").first(where: { $0.hasPrefix("RESULT") }) else {
            throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "child failed: \(text)"])
        }
        let fields = result.split(separator: " ").dropFirst().compactMap { Double($0) }
        if fields[3] > 0 { print("  (\(Int(fields[3])) failures in \(mode) run)") }
        return (fields[0], fields[1], fields[2], fields[4])
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    let loaders = [("peer", "URLSession+TG"), ("ours", "AsyncImageKit"), ("ours-nopool", "AsyncImageKit, no pool")]
    var allCeilings: [Double] = []
    for workload in workloads {
        for concurrency in loadCounts {
            var runs: [String: [Run]] = [:]
            var ceilings: [Double] = []
            for _ in 0..<repeats {
                if let ceiling = measureCeiling() { ceilings.append(ceiling) }
                for (mode, _) in loaders { runs[mode, default: []].append(try run(mode, concurrency, workload)) }
            }
            allCeilings += ceilings
            let ceiling = ceilings.isEmpty ? nil : median(ceilings)
            let peerSeconds = median(runs["peer"]!.map(\.seconds))
            for (mode, name) in loaders {
                let results = runs[mode]!
                let seconds = median(results.map(\.seconds))
                let mpx = results[0].mpx
                let fraction = ceiling.map { String(format: "%9.0f%%", 100 * (mpx / seconds) / $0) } ?? "        -"
                let speedup = mode == "peer" ? "" : String(format: "%8.2fx", peerSeconds / seconds)
                print(
                    workload.padding(toLength: 10, withPad: " ", startingAt: 0)
                        + String(format: "%5d  ", concurrency) + name.padding(toLength: 23, withPad: " ", startingAt: 0)
                        + String(format: "%10.1f %8.1f", Double(count) / seconds, mpx / seconds) + "  " + fraction
                        + String(format: "  %6.0f MB", median(results.map(\.rss)))
                        + String(format: "  %12.1f", 1000 * median(results.map(\.cpu)) / Double(count)) + speedup)
            }
            fflush(nil)
        }
    }
    if allCeilings.isEmpty {
        print("\nDecode ceiling: tjbench not found (apt-get install libjpeg-turbo-progs)")
    } else {
        print(String(
            format: "\nDecode ceiling (%d tjbench at once, one per round): %.1f to %.1f Mpx/s over the run; each row uses the median of its own rounds.",
            cores, allCeilings.min()!, allCeilings.max()!))
    }

    runCacheBenchmark()
}
