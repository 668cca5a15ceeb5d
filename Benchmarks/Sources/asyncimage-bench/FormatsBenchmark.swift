import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures

/// `formats` (issue 32, item 5): the AVIF, HEIC and JPEG XL decoders against
/// a small C program doing the same work with each codec's own library
/// (Benchmarks/reference-formats/formats_reference.c, compiled here with
/// `cc -O2`): the same calls and settings, one thread, 8-bit RGBA out,
/// colour management off.
///
/// Rows per file: full size into a recycled buffer on both sides (the goal:
/// AsyncImageKit at least 0.95x the C program's rate), full size into a
/// fresh buffer on both sides (printed beside it), and display size (fit
/// 512x512: a full decode, then an area-average reduction, on both sides;
/// these codecs have no reduced-size decode). Full-size outputs are
/// checked to be byte for byte the C program's (checksums).
///
/// Rounds alternate which side goes first, so the machine's drift hits both.
func runFormatsBenchmark(seconds: Double, runs: Int, output: String, smoke: Bool) throws -> ReportSection {
    let folder = URL(fileURLWithPath: output).appendingPathComponent("formats")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let reference = try ReferenceProgram(
        folder: "reference-formats", name: "formats_reference", packages: ["libavif", "libheif", "libjxl"], into: folder)
    let files = try formatInputs(folder: folder, smoke: smoke)

    let pool = PixelBufferPool.shared
    let poolLimit = pool.countLimit
    defer { pool.countLimit = poolLimit }
    var off = DecodingOptions()
    off.colorManagement = .off
    var display = off
    display.targetSize = PixelSize(width: 512, height: 512)
    display.contentMode = .aspectFit

    struct Row {
        let name: String
        let file: FormatInput
        let recycled: Bool
        let options: DecodingOptions
        var ours = Samples([])
        var theirs = Samples([])
        var milliseconds = Samples([])
        var identical: Bool?
    }
    var rows: [Row] = []
    for file in files {
        rows.append(Row(name: "\(file.label), full size, recycled buffer", file: file, recycled: true, options: off))
        rows.append(Row(name: "\(file.label), full size, fresh buffer", file: file, recycled: false, options: off))
        rows.append(Row(name: "\(file.label), display size (fit 512x512)", file: file, recycled: true, options: display))
    }
    let decoders = ImageDecoderRegistry.default
    for round in 0..<runs {
        for index in rows.indices {
            let row = rows[index]
            guard let decoder = decoders.decoder(for: row.file.format) else { throw BenchError("no decoder for \(row.file.format)") }
            let megapixels = Double(row.file.size.pixelCount) / 1e6
            var oursSeconds = 0.0
            var line: [String: String] = [:]
            func timeOurs() throws {
                pool.countLimit = row.recycled ? poolLimit : 0
                oursSeconds = try measure(seconds: seconds) { _ = try decoder.decode(row.file.data, options: row.options) }
            }
            func timeTheirs() throws {
                // About as many decodes as ours took in `seconds`.
                let count = max(3, Int(seconds / max(oursSeconds, 0.001)))
                var arguments = [row.file.format.rawValue, row.file.path, "\(count)", row.recycled ? "recycled" : "fresh"]
                if row.options.targetSize != nil {
                    let size = row.options.naturalSize(for: row.file.size)
                    arguments += ["\(size.width)", "\(size.height)"]
                }
                line = try reference.run(arguments)
            }
            if round % 2 == 0 {
                try timeOurs()
                try timeTheirs()
            } else {
                // The C program's count needs a time: a first estimate.
                if oursSeconds == 0 { oursSeconds = rows[index].milliseconds.isEmpty ? 0.1 : rows[index].milliseconds.median / 1000 }
                try timeTheirs()
                try timeOurs()
            }
            guard let cMilliseconds = Double(line["median_ms"] ?? "") else { throw BenchError("formats_reference: no median_ms") }
            rows[index].ours.values.append(megapixels / oursSeconds)
            rows[index].theirs.values.append(megapixels / (cMilliseconds / 1000))
            rows[index].milliseconds.values.append(oursSeconds * 1000)
            if round == 0, row.options.targetSize == nil {
                pool.countLimit = poolLimit
                let image = try decoder.decode(row.file.data, options: row.options)
                rows[index].identical = line["checksum"] == ReferenceProgram.checksum(image)
            }
        }
        progressLine("formats: round \(round + 1) of \(runs) done")
    }

    var section = ReportSection(title: "AVIF, HEIC and JPEG XL decoding against the codecs' own libraries from C (one thread)")
    section.summary = [
        "Inputs: " + files.map(\.description).joined(separator: "; ") + ". "
            + "The C program (Benchmarks/reference-formats/formats_reference.c, `cc -O2`) makes the same calls with the same "
            + "settings as each decoder (libavif: maxThreads 1, avifImageYUVToRGB to 8-bit RGBA; libheif: decoding on the "
            + "calling thread, interleaved RGBA, rows copied out; libjxl: no parallel runner, 8-bit RGBA), colour management "
            + "off. Rates are megapixels of the file per second. \"Recycled\": both sides decode into a buffer used before "
            + "(AsyncImageKit's pixel-buffer pool; the C program's one buffer); \"fresh\": a new buffer every time on both "
            + "sides. Display size: a full decode, then an area-average reduction to fit 512x512, on both sides. "
            + "\"Same pixels\": the full-size outputs' checksums are equal."
    ]
    section.command = "asyncimage-bench formats --seconds \(seconds) --runs \(runs)"
    var table = ResultTable(
        title: "",
        header: ["decode", "AsyncImageKit Mpx/s", "ms per decode", "C program Mpx/s", "AsyncImageKit / C", "same pixels"])
    for row in rows {
        table.add([
            row.name, row.ours.formatted(1), row.milliseconds.formatted(1), row.theirs.formatted(1),
            row.ours.ratio(to: row.theirs).formattedRatio(), row.identical.map { $0 ? "yes" : "NO" } ?? "-",
        ])
    }
    for row in rows where row.recycled && row.options.targetSize == nil {
        table.addGoal("goal: \(row.file.label), full size, recycled / C", ratio: row.ours.ratio(to: row.theirs), goal: .atLeast(0.95))
    }
    section.tables = [table]
    return section
}

/// One benchmark input: a file made with the codec's own encoder.
struct FormatInput {
    let label: String
    let format: ImageFormat
    let path: String
    let data: Data
    let size: PixelSize
    let settings: String

    var description: String { "\(label) \(size.width)x\(size.height), \(settings) (\(data.count / 1024) KiB)" }
}

/// The inputs, made once into `folder` from one generated photo with
/// Debian's encoders: AVIF 8- and 10-bit 4:2:0 (avifenc, aom), HEIC
/// (heif-enc, x265), JPEG XL lossy (cjxl, VarDCT).
func formatInputs(folder: URL, smoke: Bool) throws -> [FormatInput] {
    let (width, height) = smoke ? (320, 240) : (3000, 2000)
    let png = folder.appendingPathComponent("photo-\(width)x\(height).png")
    if !FileManager.default.fileExists(atPath: png.path) {
        try PNGEncoder().encode(SyntheticImage.photo(width: width, height: height, seed: 32)).write(to: png)
    }
    let specs: [(label: String, format: ImageFormat, name: String, tool: String, arguments: [String], settings: String)] = [
        (
            "AVIF 8-bit", .avif, "photo-8bit.avif", "avifenc",
            ["-j", "1", "-s", "6", "-d", "8", "-y", "420", "--min", "18", "--max", "26", png.path], "4:2:0, quantizers 18-26"
        ),
        (
            "AVIF 10-bit", .avif, "photo-10bit.avif", "avifenc",
            ["-j", "1", "-s", "6", "-d", "10", "-y", "420", "--min", "18", "--max", "26", png.path], "4:2:0, quantizers 18-26"
        ),
        ("HEIC", .heic, "photo.heic", "heif-enc", ["-q", "80", png.path, "-o"], "heif-enc -q 80 (x265, 4:2:0)"),
        ("JPEG XL", .jxl, "photo.jxl", "cjxl", [png.path], "cjxl -d 1 (VarDCT)"),
    ]
    var inputs: [FormatInput] = []
    for spec in specs {
        let file = folder.appendingPathComponent(spec.name)
        if !FileManager.default.fileExists(atPath: file.path) {
            var arguments = spec.arguments + [file.path]
            if spec.tool == "cjxl" { arguments += ["-d", "1"] }
            let tool = URL(fileURLWithPath: "/usr/bin/\(spec.tool)")
            guard FileManager.default.isExecutableFile(atPath: tool.path) else {
                throw BenchError("\(spec.tool) is missing (apt-get install libavif-bin libheif-examples libjxl-tools)")
            }
            let status = try ReferenceProgram.run(tool, arguments).status
            guard status == 0 else { throw BenchError("\(spec.tool) \(arguments.joined(separator: " ")) failed (\(status))") }
        }
        let data = try Data(contentsOf: file)
        guard let size = ImageFileProperties(data: data)?.pixelSize else { throw BenchError("\(file.path): no readable size") }
        inputs.append(FormatInput(label: spec.label, format: spec.format, path: file.path, data: data, size: size, settings: spec.settings))
    }
    return inputs
}
