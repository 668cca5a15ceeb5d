import BenchmarkSupport
import Foundation

// The download-then-decode yardstick: what a shell user would do with the
// codecs' own command-line tools. First `curl --parallel --parallel-max N`
// fetches the whole set from the server into a temporary folder, then the
// codecs' tools decode every file, one process per file, one process per
// core at a time (as `xargs -P`):
//   - JPEG: djpeg (libjpeg-turbo-progs), to PPM on /dev/null; full size, or
//     `-scale 1/4` for display size (the scale the loader picks for 256x256
//     on these photos);
//   - PNG: pngtopnm (netpbm), full size (no scaled decode exists);
//   - GIF: giftopnm --image=all (netpbm): every frame, as the loader does.
// Each process runs under GNU time for its peak RSS (see runProcessBatch):
// a fork and exec of a small program more per file.

/// One run of the yardstick.
struct CurlYardstickSample {
    var images: Int
    /// curl's wall and CPU seconds, and its peak RSS (MB).
    var downloadSeconds: Double
    var downloadCPU: Double
    var downloadPeakMB: Double
    /// The decoders' wall seconds, CPU summed over their processes, and the
    /// sum of the `decoders` largest peak RSS figures (those that can run at once).
    var decodeSeconds: Double
    var decodeCPU: Double
    var decodePeakMB: Double
    var failures: Int

    var seconds: Double { downloadSeconds + decodeSeconds }
    var cpu: Double { downloadCPU + decodeCPU }
    var imagesPerSecond: Double { Double(images) / seconds }
    var peakMB: Double { max(downloadPeakMB, decodePeakMB) }
}

enum CurlYardstick {
    /// The tools it needs and the Debian packages they come from; the missing ones.
    static func missingTools() -> [String] {
        [("curl", "curl"), ("djpeg", "libjpeg-turbo-progs"), ("pngtopnm", "netpbm"), ("giftopnm", "netpbm")]
            .filter { which($0.0) == nil }.map { "\($0.0) (apt-get install \($0.1))" }
    }

    /// Downloads `names` from `http://127.0.0.1:port/NAME` with at most
    /// `parallelMax` transfers at once, then decodes them with `decoders`
    /// processes at a time (at display scale if `display`). The downloaded
    /// files are removed afterwards.
    static func run(
        names: [String], port: Int, parallelMax: Int, display: Bool,
        decoders: Int = ProcessInfo.processInfo.activeProcessorCount, scratch: URL
    ) throws -> CurlYardstickSample {
        guard let curl = which("curl"), let djpeg = which("djpeg"), let pngtopnm = which("pngtopnm"),
            let giftopnm = which("giftopnm")
        else {
            throw NSError(
                domain: "bench", code: 1,
                userInfo: [NSLocalizedDescriptionKey: "missing: " + missingTools().joined(separator: ", ")])
        }
        let folder = scratch.appendingPathComponent("curl-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // One `url` and `output` pair per file, in a config file (no argv limit).
        let config = folder.appendingPathComponent("curl.config")
        try names.map { "url = \"http://127.0.0.1:\(port)/\($0)\"\noutput = \"\(folder.path)/\($0)\"\n" }.joined()
            .write(to: config, atomically: true, encoding: .utf8)
        // curl 7.88 draws its --parallel progress meter even with --silent:
        // its stderr goes to a file, shown if the download failed.
        let errors = folder.appendingPathComponent("curl.stderr")
        let download = runProcessBatch(
            [[curl, "--silent", "--show-error", "--fail", "--stderr", errors.path, "--parallel", "--parallel-max",
              String(parallelMax), "--config", config.path]],
            parallel: 1)
        if download.failures > 0, let text = try? String(contentsOf: errors, encoding: .utf8) {
            FileHandle.standardError.write(Data("curl: \(text.suffix(1000))\n".utf8))
        }
        var missing = 0
        let commands = names.compactMap { name -> [String]? in
            let path = folder.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: path) else {
                missing += 1
                return nil
            }
            switch URL(fileURLWithPath: name).pathExtension {
            case "png": return [pngtopnm, path]
            case "gif": return [giftopnm, "--image=all", path]
            default: return [djpeg] + (display ? ["-scale", "1/4"] : []) + [path]
            }
        }
        let decode = runProcessBatch(commands, parallel: decoders)
        return CurlYardstickSample(
            images: names.count, downloadSeconds: download.seconds, downloadCPU: download.cpu,
            downloadPeakMB: download.peakMB, decodeSeconds: decode.seconds, decodeCPU: decode.cpu,
            decodePeakMB: decode.peakMB, failures: download.failures + missing + decode.failures)
    }
}
