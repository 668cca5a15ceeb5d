import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// asyncimage-bench thumbnails: 12-megapixel files to 256x256 thumbnails (fit),
// the loader (`file://` URLs, 2 loads) against the thumbnailers a Linux
// developer would pick instead, and against libjpeg-turbo's own scaled decode
// of the same files (the floor: no loader can decode for less), timed in
// CPU seconds on one thread.
//
//   asyncimage-bench thumbnails [--count 200] [--runs 3] [--output DIR]
//                               [--peers vips,vips-each,magick,pillow]
//
// Each round runs every contestant once, in a fixed order that rotates by one
// each round, so the machine's drift hits all of them; rows are medians of the
// rounds with min-max. Each contestant runs in processes of its own, timed
// from outside: wall time for the whole set, CPU (user + system) of its
// processes from wait4, and peak RSS (GNU time's %M) summed over the
// processes that can run at once (the two largest: every peer runs two
// processes at a time, one per core; the loader runs one process, 2 loads).

/// The thumbnail set: 12-MP photos (4000x3000, every third one 3000x4000),
/// every fourth JPEG progressive, every twentieth a PNG. `width` and
/// `height` give another landscape size (a smoke run's small files).
func makeThumbnailSet(count: Int, folder: URL, width: Int = 4000, height: Int = 3000) throws -> [String] {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var names: [String] = []
    for index in 0..<count {
        let png = index % 20 == 19
        let name = String(format: "photo-%03d.%@", index, png ? "png" : "jpg")
        names.append(name)
        let file = folder.appendingPathComponent(name)
        if FileManager.default.fileExists(atPath: file.path) { continue }
        let portrait = index % 3 == 2
        let image = SyntheticImage.photo(
            width: portrait ? height : width, height: portrait ? width : height, seed: UInt64(1000 + index))
        let data =
            png
            ? try PNGEncoder().encode(image)
            : try JPEGEncoder(quality: 90, progressive: index % 4 == 3).encode(image)
        try data.write(to: file)
    }
    return names
}

/// What a batch of processes used: wall seconds, CPU seconds, and the sum of
/// the `parallel` largest peak RSS figures (MB).
struct ProcessBatchResult {
    var seconds: Double
    var cpu: Double
    var peakMB: Double
    var failures: Int
}

/// Runs `commands` with at most `parallel` at a time; each command is argv.
///
/// Peak RSS comes from GNU time (`/usr/bin/time -f %M`), not from this
/// process's `wait4`: Linux keeps a process's high-water mark across `exec`,
/// and a child spawned from this (large) process starts as a copy of it, so
/// its `ru_maxrss` would be this process's size. time is small, and measures
/// its own child.
func runProcessBatch(_ commands: [[String]], parallel: Int) -> ProcessBatchResult {
    var pending = Array(commands.enumerated())[...]
    var running: [pid_t: String] = [:]
    var cpu = 0.0
    var peaks: [Double] = []
    var failures = 0
    let start = now()
    let devNull = open("/dev/null", O_WRONLY)
    defer { close(devNull) }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("asyncimage-bench-rss-\(getpid())")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let timeTool = FileManager.default.isExecutableFile(atPath: "/usr/bin/time") ? "/usr/bin/time" : nil
    func spawn(_ argv: [String], rssFile: String) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, devNull, 1)
        let full = timeTool.map { [$0, "-f", "%M", "-o", rssFile] + argv } ?? argv
        var cArgs = full.map { strdup($0) } + [nil]
        defer { for pointer in cArgs { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, full[0], &actions, nil, &cArgs, environ)
        return status == 0 ? pid : nil
    }
    while !pending.isEmpty || !running.isEmpty {
        while running.count < parallel, let (index, next) = pending.popFirst() {
            let rssFile = folder.appendingPathComponent("\(index)").path
            if let pid = spawn(next, rssFile: rssFile) { running[pid] = rssFile } else { failures += 1 }
        }
        var status: Int32 = 0
        var usage = rusage()
        let pid = wait4(-1, &status, 0, &usage)
        guard pid > 0, let rssFile = running.removeValue(forKey: pid) else { break }
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        // wait4 reports the child with the children it reaped (time's one child).
        cpu += seconds(usage.ru_utime) + seconds(usage.ru_stime)
        let text = (try? String(contentsOfFile: rssFile, encoding: .utf8)) ?? ""
        let kilobytes = text.split(separator: "\n").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        peaks.append((kilobytes ?? Double(usage.ru_maxrss)) / 1024)
        // Exited normally with status 0 (WIFEXITED, WEXITSTATUS).
        if status & 0x7f != 0 || (status >> 8) & 0xff != 0 { failures += 1 }
    }
    let peak = peaks.sorted(by: >).prefix(parallel).reduce(0, +)
    return ProcessBatchResult(seconds: now() - start, cpu: cpu, peakMB: peak, failures: failures)
}

/// Child process: the loader makes thumbnails of the files listed in `list`
/// (`thumb-one LOADS LIST-FILE`); reports `RESULT images failures`.
func thumbnailOne(loads: Int, list: String) throws {
    let paths = try String(contentsOfFile: list, encoding: .utf8).split(separator: "\n").map(String.init)
    let loader = AsyncImageLoader(cache: nil, concurrentLoads: loads, deliveryQueue: DispatchQueue(label: "bench delivery"))
    let done = DispatchGroup()
    let images = Locked(0)
    let failures = Locked(0)
    let size = PixelSize(width: 256, height: 256)
    for path in paths {
        done.enter()
        let request = ImageRequest(url: URL(fileURLWithPath: path), targetSize: size, contentMode: .aspectFit)
        loader.loadImage(
            request, target: nil,
            success: ImageAction("bench") { _, image, _ in
                precondition(image.size.width <= 256 && image.size.height <= 256)
                images.withLock { $0 += 1 }
                done.leave()
            },
            failure: ImageFailureAction("bench") { _, error, _ in
                FileHandle.standardError.write(Data("thumbnail failed: \(error)\n".utf8))
                failures.withLock { $0 += 1 }
                done.leave()
            })
    }
    done.wait()
    BenchChild.report("RESULT", "\(images.withLock { $0 }) \(failures.withLock { $0 })")
    exit(failures.withLock { $0 } == 0 ? 0 : 1)
}

/// The largest libjpeg scale denominator (8, 4, 2, 1) whose output still
/// covers twice `size` fitted into 256x256: the scale the loader decodes at
/// with its default `ResizeQuality.high` (the library's ShrinkOnLoad rule,
/// package-internal there, restated for the yardstick).
func thumbnailScaleDenominator(width: Int, height: Int) -> Int {
    let fitted = PixelSize(width: width, height: height).scaled(
        toFit: PixelSize(width: 256, height: 256), contentMode: .aspectFit)
    for denominator in [8, 4, 2] {
        let w = (width + denominator - 1) / denominator
        let h = (height + denominator - 1) / denominator
        if w >= 2 * fitted.width && h >= 2 * fitted.height { return denominator }
    }
    return 1
}

/// CPU seconds this thread has used: the floor is timed in CPU, not wall
/// time, so that a busy machine does not inflate it.
func threadCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// libjpeg-turbo's own decoder, through its TurboJPEG API (what tjbench
/// times), opened at run time from Debian's libturbojpeg0 (installed with
/// libjpeg-turbo-progs) so that building the package needs no more headers.
struct TurboJPEG {
    typealias InitDecompress = @convention(c) () -> UnsafeMutableRawPointer?
    typealias DecompressHeader3 = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, UInt, UnsafeMutablePointer<Int32>?,
        UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?
    ) -> Int32
    typealias Decompress2 = @convention(c) (
        UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, UInt, UnsafeMutablePointer<UInt8>?, Int32, Int32, Int32, Int32,
        Int32
    ) -> Int32
    let handle: UnsafeMutableRawPointer
    let header: DecompressHeader3
    let decompress: Decompress2

    init?() {
        guard let library = dlopen("libturbojpeg.so.0", RTLD_NOW),
            let initialize = dlsym(library, "tjInitDecompress"),
            let header = dlsym(library, "tjDecompressHeader3"),
            let decompress = dlsym(library, "tjDecompress2"),
            let handle = unsafeBitCast(initialize, to: InitDecompress.self)()
        else { return nil }
        self.handle = handle
        self.header = unsafeBitCast(header, to: DecompressHeader3.self)
        self.decompress = unsafeBitCast(decompress, to: Decompress2.self)
    }

    /// CPU seconds of one decode at 1/`denominator` into RGBX with the
    /// loader's settings (accurate DCT; smooth chroma upsampling, as
    /// `ResizeQuality.high` asks), the
    /// median of decodes repeated for at least `seconds`; nil if it fails.
    func secondsPerDecode(_ data: Data, denominator: Int, seconds: Double) -> Double? {
        data.withUnsafeBytes { raw -> Double? in
            let bytes = raw.bindMemory(to: UInt8.self).baseAddress
            var width: Int32 = 0
            var height: Int32 = 0
            var subsampling: Int32 = 0
            var colorspace: Int32 = 0
            guard header(handle, bytes, UInt(raw.count), &width, &height, &subsampling, &colorspace) == 0 else { return nil }
            let w = (Int(width) + denominator - 1) / denominator
            let h = (Int(height) + denominator - 1) / denominator
            let output = UnsafeMutablePointer<UInt8>.allocate(capacity: w * h * 4)
            defer { output.deallocate() }
            let tjPixelFormatRGBX: Int32 = 2
            let flags: Int32 = 4096  // ACCURATEDCT (fancy upsampling: no FASTUPSAMPLE)
            var times: [Double] = []
            let start = threadCPUSeconds()
            repeat {
                let before = threadCPUSeconds()
                guard
                    decompress(
                        handle, bytes, UInt(raw.count), output, Int32(w), Int32(w * 4), Int32(h), tjPixelFormatRGBX, flags)
                        == 0
                else { return nil }
                times.append(threadCPUSeconds() - before)
            } while threadCPUSeconds() - start < seconds || times.count < 3
            return Samples(times).median
        }
    }
}

/// The floor: CPU seconds to decode the whole set at the loader's scales,
/// one thread, with nothing else (no file reading, no resize, no loader).
/// JPEGs: TurboJPEG at the scale; PNGs: libpng's simplified API (PNG has no
/// scaled decode). Each file's figure is the median of repeated decodes.
func thumbnailFloorSeconds(paths: [String], secondsPerFile: Double)
    -> (total: Double, filter: Double, jpegs: Int, pngs: Int)?
{
    guard let turbo = TurboJPEG() else { return nil }
    var total = 0.0
    var filter = 0.0
    var filterSeconds: [PixelSize: Double] = [:]
    /// The default filter alone (`ResizeQuality.high`: the box for a full
    /// decode, Lanczos3 in linear light) from the decoded size to the
    /// thumbnail, on a synthetic photo of that size: what the quality costs
    /// beyond the decode, timed as the floor is.
    func filterTime(_ decoded: PixelSize) -> Double {
        if let known = filterSeconds[decoded] { return known }
        let image = SyntheticImage.photo(width: decoded.width, height: decoded.height, seed: 7)
        let fitted = decoded.scaled(toFit: PixelSize(width: 256, height: 256), contentMode: .aspectFit)
        var times: [Double] = []
        let start = threadCPUSeconds()
        repeat {
            let before = threadCPUSeconds()
            _ = try? ImageResizer.resize(image, to: fitted, quality: .high)
            times.append(threadCPUSeconds() - before)
        } while threadCPUSeconds() - start < secondsPerFile || times.count < 3
        filterSeconds[decoded] = Samples(times).median
        return filterSeconds[decoded]!
    }
    var jpegs = 0
    var pngs = 0
    for path in paths {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        if path.hasSuffix(".png") {
            var times: [Double] = []
            let start = threadCPUSeconds()
            repeat {
                let before = threadCPUSeconds()
                guard libpngSimplifiedDecode(data) else { return nil }
                times.append(threadCPUSeconds() - before)
            } while threadCPUSeconds() - start < secondsPerFile || times.count < 3
            total += Samples(times).median
            if let size = ImageFileProperties(data: data)?.pixelSize { filter += filterTime(size) }
            pngs += 1
        } else {
            guard let size = ImageFileProperties(data: data)?.pixelSize else { return nil }
            let denominator = thumbnailScaleDenominator(width: size.width, height: size.height)
            guard let seconds = turbo.secondsPerDecode(data, denominator: denominator, seconds: secondsPerFile)
            else { return nil }
            total += seconds
            filter += filterTime(
                PixelSize(
                    width: (size.width + denominator - 1) / denominator,
                    height: (size.height + denominator - 1) / denominator))
            jpegs += 1
        }
    }
    return (total, filter, jpegs, pngs)
}

/// A contestant: a name and the process batch one round runs.
struct ThumbnailContestant {
    var name: String
    var commands: [[String]]
    var parallel: Int
}

/// What `thumbnails` runs: the set, the rounds, the peers.
struct ThumbnailOptions {
    var count = 200
    var runs = 3
    var output = "bench-output"
    var peers = ["vips", "vips-each", "magick", "pillow"]
    /// The landscape photos' size (portraits are the same, turned); the set's
    /// folder is named after it unless it is the default 4000x3000.
    var width = 4000
    var height = 3000
    /// How long the floor decodes each file (its figure is the median).
    var floorSecondsPerFile = 0.05
}

/// What `thumbnails` measured: each contestant's process batches, one per
/// round (AsyncImageKit first), and the floor's CPU seconds for the whole set, one per round.
struct ThumbnailFigures {
    var count: Int
    var contestants: [(name: String, results: [ProcessBatchResult])]
    var floors: [Double]
    /// The default filter's CPU seconds for the whole set (from each file's
    /// decoded size to its thumbnail), one per round.
    var filters: [Double] = []
    var skipped: [String]
}

/// `thumbnails`: measures, then prints the same table and goal rows as `all`'s section.
func runThumbnailBenchmark(_ options: ThumbnailOptions) throws {
    let figures = try measureThumbnails(options, log: { print($0); fflush(nil) })
    let runs = figures.contestants.first?.results.count ?? 0
    print("\n\(figures.count) files, \(runs) rounds (medians, min-max), 256x256 fit\n")
    print(thumbnailSection(figures, command: commandLine()).markdown, terminator: "")
}

/// Runs the thumbnail contestants and the floor, `options.runs` rounds;
/// `log` gets the progress lines.
func measureThumbnails(_ options: ThumbnailOptions, log: (String) -> Void) throws -> ThumbnailFigures {
    let output = options.output
    let isDefaultSize = options.width == 4000 && options.height == 3000
    let setName = isDefaultSize ? "thumbnail-set" : "thumbnail-set-\(options.width)x\(options.height)"
    let folder = URL(fileURLWithPath: output).appendingPathComponent(setName)
    let megapixels = String(format: "%.1f", Double(options.width * options.height) / 1e6)
    log("Generating \(options.count) \(megapixels)-megapixel photos (every 3rd portrait, every 4th JPEG progressive, every 20th PNG) in \(folder.path) ...")
    let paths = try makeThumbnailSet(count: options.count, folder: folder, width: options.width, height: options.height)
        .map { folder.appendingPathComponent($0).path }
    let scratch = URL(fileURLWithPath: output).appendingPathComponent("thumbnail-out")
    try? FileManager.default.removeItem(at: scratch)
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    let halves = [Array(paths[..<(paths.count / 2)]), Array(paths[(paths.count / 2)...])]
    let list = URL(fileURLWithPath: output).appendingPathComponent(setName + ".txt")
    try paths.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
    let executable = BenchChild.executable.path

    var contestants = [
        ThumbnailContestant(
            name: "AsyncImageKit (2 loads, 1 process)", commands: [[executable, "thumb-one", "2", list.path]], parallel: 1)
    ]
    var skipped: [String] = []
    for peer in options.peers {
        switch peer {
        case "vips":
            guard let vips = which("vipsthumbnail") else { skipped.append("vipsthumbnail (apt-get install libvips-tools)"); continue }
            contestants.append(ThumbnailContestant(
                name: "vipsthumbnail, 2 processes of \(paths.count / 2)",
                commands: halves.map { [vips, "-s", "256x256", "-o", scratch.path + "/vips-%s.jpg"] + $0 }, parallel: 2))
        case "vips-each":
            guard let vips = which("vipsthumbnail") else { continue }
            contestants.append(ThumbnailContestant(
                name: "vipsthumbnail, a process per file",
                commands: paths.map { [vips, "-s", "256x256", "-o", scratch.path + "/vips1-%s.jpg", $0] }, parallel: 2))
        case "magick":
            // Debian's binary by its own name: `convert` on PATH may be a wrapper.
            guard let convert = which("convert-im6.q16") ?? which("magick") else {
                skipped.append("ImageMagick convert (apt-get install imagemagick)")
                continue
            }
            contestants.append(ThumbnailContestant(
                name: "ImageMagick convert -thumbnail, per file",
                commands: paths.map {
                    [convert, $0, "-thumbnail", "256x256", scratch.path + "/magick-" + URL(fileURLWithPath: $0).lastPathComponent + ".jpg"]
                }, parallel: 2))
        case "pillow":
            guard let python = which("python3"),
                runProcessBatch([[python, "-c", "import PIL.Image"]], parallel: 1).failures == 0
            else {
                skipped.append("Pillow (pip install pillow)")
                continue
            }
            let script = """
                import sys
                from PIL import Image
                for path in sys.argv[1:]:
                    with Image.open(path) as im:
                        im.draft('RGB', (256, 256))
                        im.thumbnail((256, 256))
                """
            contestants.append(ThumbnailContestant(
                name: "Pillow draft+thumbnail, 2 processes of \(paths.count / 2)",
                commands: halves.map { [python, "-c", script] + $0 }, parallel: 2))
        default:
            throw BenchError("thumbnails: unknown peer \(peer) (vips, vips-each, magick, pillow)")
        }
    }

    log("Each round: the floor (TurboJPEG at the loader's scale per file, libpng for PNGs, one thread, CPU time), then each contestant ...")
    var floors: [Double] = []
    var filters: [Double] = []
    var floorMissing = false
    var results: [[ProcessBatchResult]] = Array(repeating: [], count: contestants.count)
    for round in 0..<options.runs {
        if let floor = thumbnailFloorSeconds(paths: paths, secondsPerFile: options.floorSecondsPerFile) {
            floors.append(floor.total)
            filters.append(floor.filter)
        } else {
            floorMissing = true
        }
        for offset in 0..<contestants.count {
            let index = (offset + round) % contestants.count
            let result = runProcessBatch(contestants[index].commands, parallel: contestants[index].parallel)
            if result.failures > 0 { log("  (\(result.failures) failed processes: \(contestants[index].name))") }
            results[index].append(result)
        }
        log("  round \(round + 1) of \(options.runs) done")
    }
    if floorMissing { skipped.append("the floor (libturbojpeg.so.0: apt-get install libjpeg-turbo-progs)") }
    return ThumbnailFigures(
        count: paths.count, contestants: zip(contestants, results).map { ($0.name, $1) }, floors: floors, filters: filters, skipped: skipped)
}
