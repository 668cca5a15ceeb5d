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

/// Child process: serves every file of the folder `path` at `/NAME` on
/// 127.0.0.1 (`serve FOLDER`); reports `PORT n`, then serves until stopped.
func serveFolder(path: String) throws {
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
    BenchChild.report("PORT", "\(server.port)")
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

/// Child process: one measured run (`run-one MODE CONCURRENCY WORKLOAD PORT
/// LIST-FILE`): `mode` (peer, ours, ours-nopool) loads every image named in
/// `list` from 127.0.0.1:`port`. Reports `RESULT seconds megapixels peakMB failures cpuSeconds`.
func runOne(mode: String, concurrency: Int, display: Bool, port: Int, list: String) throws {
    let names = try String(contentsOfFile: list, encoding: .utf8).split(separator: "\n").map(String.init)
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
    BenchChild.report(
        "RESULT", "\(seconds) \(Double(pixels.withLock { $0 }) / 1e6) \(peakRSSMegabytes()) \(failures.withLock { $0 }) \(cpu)")
}

/// `loader`: the loading-over-HTTP workload (`LoaderWorkload.swift`, the
/// same as `all`'s), with AsyncImageKit also run with its pixel-buffer pool
/// off, printed as a table; then the memory cache against NSCache.
/// `command`: the command line, as the section names it.
func runLoaderBenchmark(_ options: LoaderWorkloadOptions, command: String) throws {
    let figures = try measureLoaderWorkload(options) { print($0); fflush(nil) }
    try FileManager.default.createDirectory(at: options.sets, withIntermediateDirectories: true)
    let section = try loaderSection(figures, command: command, folder: options.sets)
    print("\n" + section.summary.joined(separator: "\n") + " \"No pool\": PixelBufferPool.shared.countLimit = 0.\n")
    print(section.plain, terminator: "")
    print("The throughput plot: \(options.sets.appendingPathComponent("throughput-vs-concurrency.png").path)\n")
    fflush(nil)

    runCacheBenchmark()
}
