import ArgumentParser
import AsyncImageKit
import BenchmarkSupport
import Foundation

/// `quality`: thumbnails of real photographs, scored with SSIMULACRA2
/// against a linear-light Lanczos3 reference, beside libvips and Pillow,
/// each timed in-process (QualityBenchmark.swift).
struct QualityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quality",
        abstract: "Thumbnail quality (SSIMULACRA2, SSIM) against CPU: both resize qualities, libvips and Pillow, in one run.",
        discussion: """
            Needs libvips-dev (the C peer), python3 with pillow, numpy, scipy and ssimulacra2 \
            (pip install pillow numpy scipy ssimulacra2). Without --photos, the photographs of \
            Debian's mate-backgrounds (GPL-2+, downloaded with apt-get download, never committed) \
            are used: 12 JPEGs of 1280 to 2560 pixels.
            """)

    @Option(parsing: .upToNextOption, help: ArgumentHelp("JPEG photographs (default: mate-backgrounds' nature/).", valueName: "FILE"))
    var photos: [String] = []

    @Option(help: ArgumentHelp("Boxes the photos are fitted inside.", valueName: "LIST"))
    var sizes = CommaSeparated([256, 512])

    @Option(help: "Each thumbnail's CPU time: the best of this many.")
    var runs = 5

    @Option(help: ArgumentHelp("Where the thumbnails, the references and the plot are written.", valueName: "DIR"))
    var output = "bench-output/quality"

    @Flag(help: "Also print, per photo, a full-size decode's CPU and the high resize's alone (ours).")
    var breakdown = false

    func run() throws {
        if breakdown { try printBreakdown(photos: photos, sizes: sizes.values, runs: max(1, runs)) }
        try runQualityBenchmark(photos: photos, sizes: sizes.values, runs: max(1, runs), output: output)
    }
}

/// Our two resize qualities timed in-process (thread CPU time, the best of
/// `runs`, from bytes in memory, through the public `ImageDecoder` as a
/// display-size request decodes), the libvips C peer, then score.py (the
/// Pillow peer, the references, the scores and the plot).
func runQualityBenchmark(photos: [String], sizes: [Int], runs: Int, output: String) throws {
    let out = URL(fileURLWithPath: output)
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    let files = try photos.isEmpty ? mateBackgroundPhotos(into: out) : photos
    guard !files.isEmpty else { throw BenchError("no photos") }
    var candidates: [(name: String, folder: URL)] = []

    for quality in ResizeQuality.allCases {
        let folder = out.appendingPathComponent("asyncimagekit-\(quality)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var cpu: [String: Double] = [:]
        for path in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            let name = URL(fileURLWithPath: path).lastPathComponent
            for size in sizes {
                var options = DecodingOptions(
                    targetSize: PixelSize(width: size, height: size), contentMode: .aspectFit, scaling: .fitWithoutMargins)
                options.resizeQuality = quality
                var best = Double.infinity
                var kept: Image?
                for _ in 0..<runs {
                    let start = threadCPUMilliseconds()
                    let image = try ImageDecoder().decode(data, options: options)
                    best = min(best, threadCPUMilliseconds() - start)
                    kept = image
                }
                try PNGEncoder().encode(kept!).write(to: folder.appendingPathComponent("\(name)-\(size).png"))
                cpu["\(name)-\(size)"] = best
            }
        }
        try JSONEncoder().encode(cpu).write(to: folder.appendingPathComponent("cpu.json"))
        candidates.append(("AsyncImageKit \(quality == .high ? ".high (default)" : ".fast")", folder))
        progressLine("quality: AsyncImageKit \(quality) done")
    }

    let vips = try ReferenceProgram(folder: "reference-quality", name: "vips_thumbnail", packages: ["vips"], into: out)
    for mode in ["default", "linear"] {
        let folder = out.appendingPathComponent("vips-\(mode)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var cpu: [String: Double] = [:]
        for size in sizes {
            let (status, text) = try ReferenceProgram.run(vips.binary, [mode, String(size), String(runs), folder.path] + files)
            guard status == 0 else { throw BenchError("vips_thumbnail \(mode) failed (\(status))") }
            for line in text.split(separator: "\n") {
                var fields: [String: String] = [:]
                for pair in line.split(separator: " ") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
                }
                if let name = fields["name"], let ms = fields["cpu_ms"].flatMap(Double.init) { cpu["\(name)-\(size)"] = ms }
            }
        }
        try JSONEncoder().encode(cpu).write(to: folder.appendingPathComponent("cpu.json"))
        candidates.append((mode == "default" ? "libvips 8.14 thumbnail, defaults" : "libvips 8.14 thumbnail, linear", folder))
        progressLine("quality: libvips \(mode) done")
    }

    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../../quality/score.py").standardized
    var arguments = [script.path, "--out", out.path, "--runs", String(runs), "--sizes"] + sizes.map(String.init)
    arguments += ["--photos"] + files
    for candidate in candidates { arguments += ["--candidate", "\(candidate.name)=\(candidate.folder.path)"] }
    // Both streams are this process's: score.py reports its progress.
    let run = try ProcessRun.run(
        URL(fileURLWithPath: "/usr/bin/env"), ["python3"] + arguments, output: .passedThrough, errors: .passedThrough)
    guard run.status == 0 else { throw BenchError("score.py failed (\(run.status))") }
}

/// The photographs of Debian's mate-backgrounds (nature/), fetched with
/// `apt-get download` into `folder` once.
private func mateBackgroundPhotos(into folder: URL) throws -> [String] {
    let photos = folder.appendingPathComponent("photos")
    let nature = photos.appendingPathComponent("usr/share/backgrounds/mate/nature")
    if !FileManager.default.fileExists(atPath: nature.path) {
        try FileManager.default.createDirectory(at: photos, withIntermediateDirectories: true)
        let status = try ReferenceProgram.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "cd '\(photos.path)' && apt-get download mate-backgrounds >/dev/null 2>&1 && dpkg-deb -x mate-backgrounds_*.deb ."]
        ).status
        guard status == 0 else { throw BenchError("cannot fetch mate-backgrounds (apt-get download)") }
    }
    return try FileManager.default.contentsOfDirectory(atPath: nature.path)
        .filter { $0.hasSuffix(".jpg") }.sorted().map { nature.appendingPathComponent($0).path }
}

/// Where `.high`'s time goes: the full-size decode, then the resize alone.
private func printBreakdown(photos: [String], sizes: [Int], runs: Int) throws {
    for path in photos {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var decode = Double.infinity
        var full: Image?
        for _ in 0..<runs {
            let start = threadCPUMilliseconds()
            full = try ImageDecoder().decode(data)
            decode = min(decode, threadCPUMilliseconds() - start)
        }
        var line = "\(URL(fileURLWithPath: path).lastPathComponent): full decode \(String(format: "%.1f", decode)) ms"
        for size in sizes {
            let final = full!.size.scaled(toFit: PixelSize(width: size, height: size), contentMode: .aspectFit, enlarges: false)
            for quality in ResizeQuality.allCases {
                var best = Double.infinity
                for _ in 0..<runs {
                    let start = threadCPUMilliseconds()
                    _ = try ImageResizer.resize(full!, to: final, quality: quality)
                    best = min(best, threadCPUMilliseconds() - start)
                }
                line += ", resize to \(final) \(quality) \(String(format: "%.1f", best)) ms"
            }
        }
        print(line)
    }
}

/// This thread's CPU time in milliseconds.
func threadCPUMilliseconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) * 1e3 + Double(time.tv_nsec) / 1e6
}
