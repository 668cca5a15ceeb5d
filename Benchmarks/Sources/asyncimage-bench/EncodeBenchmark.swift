import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures

/// `encode` (issue 32, item 4): `WebPEncoder` and `AVIFEncoder` against
/// libwebp's and libavif's own command-line encoders, `cwebp` and
/// `avifenc`, at the same settings on the same pixels, in the same run.
///
/// - The pixels: real photos from the corpus, decoded and area-averaged
///   to at most 512 pixels a side (a display size; smaller ones are kept
///   as they are), and one generated photo-like picture at 512x384, each
///   written as a PNG for the tools.
/// - The settings: WebP `-q Q -m M` (ours: `WebPEncoder(quality: Q,
///   method: M)`); AVIF `avifenc -c aom -j 1 -s S -y 420 --min q --max q
///   --minalpha q --maxalpha q`, q the quantizer our quality maps to
///   (`AVIFEncoder.quantizer(forQuality:)`; ours: `AVIFEncoder(quality:
///   Q, speed: S)`). The bytes must be the same (`same`): otherwise the
///   settings did not match.
/// - JPEG (`JPEGEncoder`, libjpeg-turbo) is timed too, ours alone, for
///   reference: what the same pictures cost and weigh as JPEG.
/// - Ours: the median time of `encode(_:)` over runs of at least
///   `seconds` (after a warm-up), the RGBA-to-YUV conversion included.
/// - The tools': the median wall time of the process (spawned directly)
///   over as many runs, minus the tool's fixed cost, the median of the
///   same command on a one-pixel PNG (start-up, loading the libraries,
///   setting the codec up, writing a file): what is left is reading the
///   PNG, converting and encoding. For `cwebp`, its own timer (`-v`: "Time
///   to encode picture", the encode alone, without reading and converting)
///   is shown too.
func runEncodeBenchmark(_ options: EncodeOptions) throws {
    let folder = URL(fileURLWithPath: options.output).appendingPathComponent("encode")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let inputs = try encodeInputs(options, folder: folder)
    let cwebp = which("cwebp")
    let avifenc = which("avifenc")
    for (tool, package) in [("cwebp", cwebp), ("avifenc", avifenc)] where package == nil {
        print("\(tool) not found (apt-get install \(tool == "cwebp" ? "webp" : "libavif-bin")): its rows show ours alone\n")
    }
    let cwebpVersion = try cwebp.map { try runTool($0, ["-version"]).output.trimmingCharacters(in: .whitespacesAndNewlines) }
    let avifencVersion = try avifenc.map {
        try runTool($0, ["--version"]).output.split(separator: "\n").first.map(String.init) ?? "?"
    }
    print("cwebp \(cwebpVersion ?? "-"); avifenc \(avifencVersion ?? "-")")
    // The tools' fixed cost: the same command on a one-pixel PNG.
    let onePixel = folder.appendingPathComponent("one-pixel.png")
    try PNGEncoder().encode(SyntheticImage.solid(width: 1, height: 1, color: RGBA(r: 90, g: 120, b: 150))).write(to: onePixel)
    print("Inputs: " + inputs.map { "\($0.name) \($0.image.width)x\($0.image.height)" }.joined(separator: ", "))
    print("Each figure: the median of runs over at least \(options.seconds) s; one thread.\n")

    var settings: [EncodeSetting] = [.jpeg(quality: options.jpegQuality)]
    settings += options.webpMethods.map { .webp(quality: options.webpQuality, method: $0) }
    settings += options.avifSpeeds.map { .avif(quality: options.avifQuality, speed: $0) }
    print(
        "| setting | image | ours | tool | ratio (ours / tool) | ours, bytes | tool, bytes | bytes | cwebp's own timer | ratio (ours / cwebp's timer) |")
    print("|---|---|---:|---:|---:|---:|---:|---|---:|---:|")
    var fixedCosts: [String] = []
    var mismatches = 0
    for setting in settings {
        var total = (ours: 0.0, tool: 0.0, oursBytes: 0, toolBytes: 0, own: 0.0)
        let toolPath = setting.isJPEG ? nil : setting.isWebP ? cwebp : avifenc
        let fixedCost = try toolPath.map { path in
            let arguments = setting.toolArguments(
                input: onePixel.path, output: folder.appendingPathComponent("one-pixel-\(setting.fileName)").path)
            _ = try runTool(path, arguments)
            return Samples(try (0..<15).map { _ in try runTool(path, arguments).seconds }).median
        }
        if let fixedCost { fixedCosts.append(String(format: "%@ %.1f ms", setting.name, fixedCost * 1000)) }
        for input in inputs {
            let ours = try setting.encode(input.image)
            let oursTime = try measure(seconds: options.seconds) { _ = try setting.encode(input.image) }
            var cells = [setting.name, input.name, milliseconds(oursTime)]
            if let toolPath, let fixedCost {
                let output = folder.appendingPathComponent("\(input.name)-\(setting.fileName)")
                let arguments = setting.toolArguments(input: input.png.path, output: output.path)
                var walls: [Double] = []
                var ownTimes: [Double] = []
                let started = now()
                while walls.count < 3 || now() - started < options.seconds {
                    let run = try runTool(toolPath, arguments)
                    walls.append(run.seconds)
                    if let own = cwebpEncodeTime(run.errors) { ownTimes.append(own) }
                }
                let toolTime = Samples(walls).median - fixedCost
                let theirs = try Data(contentsOf: output)
                let same = theirs == ours
                if !same { mismatches += 1 }
                let own = Samples(ownTimes).median
                cells += [
                    toolTime > 0 ? milliseconds(toolTime) : "within its fixed cost",
                    toolTime > 0 ? String(format: "%.2fx", oursTime / toolTime) : "-", "\(ours.count)", "\(theirs.count)",
                    same ? "same" : "DIFFERENT", ownTimes.isEmpty ? "-" : milliseconds(own),
                    ownTimes.isEmpty ? "-" : String(format: "%.2fx", oursTime / own),
                ]
                if !ownTimes.isEmpty { total.own += own }
                total.tool += toolTime
                total.toolBytes += theirs.count
            } else {
                cells += ["-", "-", "\(ours.count)", "-", "-", "-", "-"]
            }
            total.ours += oursTime
            total.oursBytes += ours.count
            print("| " + cells.joined(separator: " | ") + " |")
        }
        if inputs.count > 1 {
            let ratio = total.tool > 0 ? String(format: "**%.2fx**", total.ours / total.tool) : "-"
            let own = total.own > 0 ? milliseconds(total.own) : "-"
            let ownRatio = total.own > 0 ? String(format: "**%.2fx**", total.ours / total.own) : "-"
            let cells = [
                setting.name, "**all \(inputs.count)**", milliseconds(total.ours), total.tool > 0 ? milliseconds(total.tool) : "-",
                ratio, "\(total.oursBytes)", total.toolBytes > 0 ? "\(total.toolBytes)" : "-", "", own, ownRatio,
            ]
            print("| " + cells.joined(separator: " | ") + " |")
        }
    }
    print("")
    print("The tools' fixed cost (their wall time on a one-pixel PNG), subtracted: " + fixedCosts.joined(separator: "; "))
    print(
        mismatches == 0
            ? "Every file is byte for byte the tool's at the same settings."
            : "\(mismatches) files differ from the tool's: the settings do not match.")
}

/// What `encode` runs (EncodeCommand's options).
struct EncodeOptions {
    var seconds = 2.0
    var output = "bench-output"
    /// JPEG files; empty: the corpus photos (``defaultEncodePhotos``).
    var photos: [String] = []
    /// Ours alone, for reference (no tool).
    var jpegQuality = 75
    var webpQuality = 75
    var webpMethods = [4, 6]
    var avifQuality = 60
    var avifSpeeds = [6, 8]
    /// One small generated image, no photos: seconds, for the harness.
    var smoke = false
}

/// One encoder setting, ours and the tool's.
enum EncodeSetting {
    case jpeg(quality: Int)
    case webp(quality: Int, method: Int)
    case avif(quality: Int, speed: Int)

    var isWebP: Bool {
        if case .webp = self { return true }
        return false
    }

    var isJPEG: Bool {
        if case .jpeg = self { return true }
        return false
    }

    var name: String {
        switch self {
        case .jpeg(let quality): return "JPEG q\(quality) (ours alone)"
        case .webp(let quality, let method): return "WebP q\(quality) m\(method)"
        case .avif(let quality, let speed):
            return "AVIF q\(quality) (quantizer \(AVIFEncoder.quantizer(forQuality: quality))) s\(speed) 4:2:0"
        }
    }

    var fileName: String {
        switch self {
        case .jpeg(let quality): return "q\(quality).jpg"
        case .webp(let quality, let method): return "q\(quality)-m\(method).webp"
        case .avif(let quality, let speed): return "q\(quality)-s\(speed).avif"
        }
    }

    func encode(_ image: Image) throws -> Data {
        switch self {
        case .jpeg(let quality): return try JPEGEncoder(quality: quality).encode(image)
        case .webp(let quality, let method): return try WebPEncoder(quality: quality, method: method).encode(image)
        case .avif(let quality, let speed): return try AVIFEncoder(quality: quality, speed: speed).encode(image)
        }
    }

    func toolArguments(input: String, output: String) -> [String] {
        switch self {
        case .jpeg: return []
        case .webp(let quality, let method):
            return ["-v", "-q", "\(quality)", "-m", "\(method)", input, "-o", output]
        case .avif(let quality, let speed):
            let q = String(AVIFEncoder.quantizer(forQuality: quality))
            return [
                "-c", "aom", "-j", "1", "-s", "\(speed)", "-y", "420", "--min", q, "--max", q, "--minalpha", q, "--maxalpha", q,
                input, output,
            ]
        }
    }
}

/// The corpus photos the benchmark encodes by default: the real photographs
/// among the corpus's JPEGs (the libjpeg test image, a photo of tablets and
/// one of a printer), from the test corpus and, when present, the shared one.
func defaultEncodePhotos() -> [String] {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized
    let corpus = root.appendingPathComponent("Tests/AsyncImageKitTests/Resources/corpus/valid/jpeg")
    let shared = root.appendingPathComponent("../shared/corpus/valid/jpeg").standardized
    return [
        corpus.appendingPathComponent("progressive3.jpg"), corpus.appendingPathComponent("testorig.jpg"),
        shared.appendingPathComponent("865db3dd2d380626f16b6f9dc6d62dba.jpg"),
    ].map(\.path).filter { FileManager.default.fileExists(atPath: $0) }
}

/// The images to encode, each also written as a PNG for the tools.
private func encodeInputs(_ options: EncodeOptions, folder: URL) throws -> [(name: String, image: Image, png: URL)] {
    var images: [(String, Image)] = []
    if options.smoke {
        images.append(("generated-96", SyntheticImage.photo(width: 96, height: 72, seed: 32)))
    } else {
        for path in options.photos.isEmpty ? defaultEncodePhotos() : options.photos {
            let decoded = try ImageDecoder().decode(try Data(contentsOf: URL(fileURLWithPath: path)))
            let side = max(decoded.width, decoded.height)
            let image =
                side <= 512
                ? decoded
                : try ImageResizer.resize(
                    decoded,
                    to: PixelSize(
                        width: max(1, (decoded.width * 512 + side / 2) / side),
                        height: max(1, (decoded.height * 512 + side / 2) / side)))
            images.append((URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent.prefix(16).description, image))
        }
        images.append(("generated", SyntheticImage.photo(width: 512, height: 384, seed: 32)))
    }
    return try images.map { name, image in
        // Opaque pixels, rows packed: what the PNG holds is exactly what we encode.
        let packed = Image(width: image.width, height: image.height, rgba: packedPixels(image))
        let png = folder.appendingPathComponent("\(name).png")
        try PNGEncoder(compressionLevel: 1).encode(packed).write(to: png)
        return (name, packed, png)
    }
}

private func packedPixels(_ image: Image) -> Data {
    let rowBytes = image.width * 4
    var packed = Data(capacity: rowBytes * image.height)
    for y in 0..<image.height {
        let start = image.pixels.startIndex + y * image.bytesPerRow
        packed.append(image.pixels[start..<start + rowBytes])
    }
    return packed
}

/// Runs a tool to its end (spawned directly: Foundation's `Process` adds
/// about 45 ms a start here, more than a WebP encode): its wall time,
/// standard output and standard error (both through files).
private func runTool(_ path: String, _ arguments: [String]) throws -> (seconds: Double, output: String, errors: String) {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("encode-bench-\(getpid())-\(UUID().uuidString)")
    let (outPath, errorPath) = (base.path + ".out", base.path + ".err")
    defer {
        unlink(outPath)
        unlink(errorPath)
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    var cArguments = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in cArguments { free(pointer) } }
    var pid: pid_t = 0
    let started = now()
    let spawned = posix_spawn(&pid, path, &actions, nil, &cArguments, environ)
    var status: Int32 = 0
    if spawned == 0 { _ = waitpid(pid, &status, 0) }
    let seconds = now() - started
    let output = (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? ""
    let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    // Exited normally with status 0 (WIFEXITED, WEXITSTATUS).
    guard spawned == 0, status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
        throw NSError(
            domain: "bench", code: 1,
            userInfo: [NSLocalizedDescriptionKey: "\(path) \(arguments.joined(separator: " ")) failed: \(errors)"])
    }
    return (seconds, output, errors)
}

/// `cwebp -v`'s "Time to encode picture: 0.012s", in seconds.
private func cwebpEncodeTime(_ text: String) -> Double? {
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Time to encode picture:") }) else { return nil }
    return Double(line.dropFirst("Time to encode picture:".count).trimmingCharacters(in: .whitespaces).dropLast())
}

private func milliseconds(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }
