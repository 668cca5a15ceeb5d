import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures

// `all`, decode: the decoders against the C libraries' own tools in the same
// run, round after round (each round times AsyncImageKit, then its peer, for
// every row), one thread: a 24-MP JPEG at full size and at the 1/2, 1/4 and
// 1/8 scales against tjbench (`-scale`), a 12-MP PNG against libpng's
// simplified API, an animated GIF against giflib's DGifSlurp.

/// What the decode workload measured: per row, AsyncImageKit's and the
/// peer's source megapixels per second, one sample per round.
struct DecodeFigures {
    struct Row {
        var name: String
        var peer: String
        var ours: Samples
        var theirs: Samples
        /// Milliseconds per decode (AsyncImageKit).
        var milliseconds: Samples
    }

    var rows: [Row] = []
    /// AsyncImageKit's full-size JPEG decode time against its 1/8-scale one (same rounds).
    var eighthSpeedup = Samples([])
    var inputs: [String] = []
    var skipped: [String] = []
}

/// The decode inputs: generated once into `folder` (smaller ones for a smoke run).
func decodeInputs(folder: URL, smoke: Bool) throws -> (jpeg: String, png: String, gif: String) {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let jpeg = folder.appendingPathComponent(smoke ? "photo-smoke-q90.jpg" : "photo-24mp-q90.jpg").path
    let png = folder.appendingPathComponent(smoke ? "photo-smoke.png" : "photo-12mp.png").path
    let gif = folder.appendingPathComponent(smoke ? "animated-smoke.gif" : "animated-480x270x60.gif").path
    if !FileManager.default.fileExists(atPath: jpeg) {
        try JPEGEncoder(quality: 90).encode(
            SyntheticImage.photo(width: smoke ? 640 : 6000, height: smoke ? 480 : 4000, seed: 24)
        ).write(to: URL(fileURLWithPath: jpeg))
    }
    if !FileManager.default.fileExists(atPath: png) {
        try PNGEncoder().encode(SyntheticImage.photo(width: smoke ? 400 : 4000, height: smoke ? 300 : 3000, seed: 12))
            .write(to: URL(fileURLWithPath: png))
    }
    if !FileManager.default.fileExists(atPath: gif) {
        try (smoke ? makeAnimatedGIF(width: 64, height: 48, frames: 6) : makeAnimatedGIF(width: 480, height: 270, frames: 60))
            .write(to: URL(fileURLWithPath: gif))
    }
    return (jpeg, png, gif)
}

/// Runs the decode workload: `runs` rounds, each timing every row for `seconds`.
func measureDecode(folder: URL, smoke: Bool, runs: Int, seconds: Double) throws -> DecodeFigures {
    let paths = try decodeInputs(folder: folder, smoke: smoke)
    let jpeg = try Data(contentsOf: URL(fileURLWithPath: paths.jpeg))
    let png = try Data(contentsOf: URL(fileURLWithPath: paths.png))
    let gif = try Data(contentsOf: URL(fileURLWithPath: paths.gif))
    guard let jpegSize = ImageFileProperties(data: jpeg)?.pixelSize, let pngSize = ImageFileProperties(data: png)?.pixelSize,
        let gifSize = ImageFileProperties(data: gif)?.pixelSize
    else { throw BenchError("decode: the generated inputs have no readable size") }
    let gifFrames = giflibSlurp(gif)
    let jpegMpx = Double(jpegSize.pixelCount) / 1e6
    let pngMpx = Double(pngSize.pixelCount) / 1e6
    let gifMpx = Double(gifSize.pixelCount * gifFrames) / 1e6

    var figures = DecodeFigures()
    figures.inputs = [
        "JPEG \(jpegSize.width)x\(jpegSize.height) q90 (\(jpeg.count / 1024) KiB)",
        "PNG \(pngSize.width)x\(pngSize.height) (\(png.count / 1024) KiB)",
        "GIF \(gifSize.width)x\(gifSize.height), \(gifFrames) frames (\(gif.count / 1024) KiB)",
    ]
    let haveTjbench = FileManager.default.isExecutableFile(atPath: "/usr/bin/tjbench")
    if !haveTjbench { figures.skipped.append("tjbench (apt-get install libjpeg-turbo-progs)") }
    let warmup = smoke ? 0.05 : 1

    let pool = PixelBufferPool.shared
    let poolLimit = pool.countLimit
    defer { pool.countLimit = poolLimit }
    /// Seconds per decode of `body` (the median of runs over `seconds`), with
    /// the pixel-buffer pool on (recycled buffers) or off (a fresh buffer each time).
    func time(recycled: Bool, _ body: () throws -> Void) rethrows -> Double {
        pool.countLimit = recycled ? poolLimit : 0
        return try measure(seconds: seconds, body)
    }
    /// Exactly 1/`denominator` of the source, with `ResizeQuality.fast`: the
    /// decoder at that DCT scale and nothing else, as tjbench `-scale` times
    /// it (the default `.high` would decode at twice the size and filter).
    func target(_ denominator: Int) -> DecodingOptions {
        var options = DecodingOptions(
            targetSize: denominator == 1
                ? nil
                : PixelSize(
                    width: (jpegSize.width + denominator - 1) / denominator,
                    height: (jpegSize.height + denominator - 1) / denominator))
        options.resizeQuality = .fast
        return options
    }

    // Each row: a name, the peer's name, AsyncImageKit's seconds per decode,
    // the peer's Mpx/s (nil: not measured), and the source megapixels.
    typealias RowMeasure = (name: String, peer: String, ours: () throws -> Double, theirs: () -> Double?, mpx: Double)
    var measures: [RowMeasure] = []
    for denominator in [1, 2, 4, 8] {
        let scale = denominator == 1 ? nil : "1/\(denominator)"
        measures.append((
            denominator == 1 ? "JPEG, full size, fresh buffer" : "JPEG, \(scale!) scale, fresh buffer",
            denominator == 1 ? "tjbench" : "tjbench -scale \(scale!)",
            { try time(recycled: false) { _ = try JPEGDecoder().decode(jpeg, options: target(denominator)) } },
            { haveTjbench ? tjbench(paths.jpeg, scale: scale, seconds: seconds, warmup: warmup) : nil },
            jpegMpx
        ))
    }
    measures.append((
        "JPEG, full size, recycled buffer (a loader under load)", "tjbench (reuses one buffer)",
        { try time(recycled: true) { _ = try JPEGDecoder().decode(jpeg) } },
        { haveTjbench ? tjbench(paths.jpeg, scale: nil, seconds: seconds, warmup: warmup) : nil },
        jpegMpx
    ))
    measures.append((
        "PNG, full size", "libpng simplified API",
        { try time(recycled: false) { _ = try PNGDecoder().decode(png) } },
        { let t = measure(seconds: seconds) { precondition(libpngSimplifiedDecode(png)) }; return pngMpx / t },
        pngMpx
    ))
    measures.append((
        "GIF, every frame composited to RGBA", "giflib DGifSlurp (indices only)",
        { try time(recycled: false) { _ = try GIFDecoder().decode(gif) } },
        { let t = measure(seconds: seconds) { precondition(giflibSlurp(gif) == gifFrames) }; return gifMpx / t },
        gifMpx
    ))

    var ours = Array(repeating: [Double](), count: measures.count)
    var theirs = Array(repeating: [Double](), count: measures.count)
    var milliseconds = Array(repeating: [Double](), count: measures.count)
    for round in 0..<runs {
        for (index, row) in measures.enumerated() {
            // Alternate which goes first, so that neither always follows the other.
            var oursSeconds = 0.0
            var peer: Double?
            if round % 2 == 0 {
                oursSeconds = try row.ours()
                peer = row.theirs()
            } else {
                peer = row.theirs()
                oursSeconds = try row.ours()
            }
            ours[index].append(row.mpx / oursSeconds)
            milliseconds[index].append(oursSeconds * 1000)
            if let peer { theirs[index].append(peer) }
        }
        progressLine("decode: round \(round + 1) of \(runs) done")
    }
    for (index, row) in measures.enumerated() {
        figures.rows.append(DecodeFigures.Row(
            name: row.name, peer: row.peer, ours: Samples(ours[index]), theirs: Samples(theirs[index]),
            milliseconds: Samples(milliseconds[index])))
    }
    // Full (row 0) against 1/8 (row 3), round by round.
    figures.eighthSpeedup = figures.rows[0].milliseconds.ratio(to: figures.rows[3].milliseconds)
    return figures
}

/// The decode workload's section of the report.
func decodeSection(_ figures: DecodeFigures, command: String) -> ReportSection {
    var section = ReportSection(title: "Decoding against the C libraries' own tools (one thread)")
    section.summary = [
        "Inputs: " + figures.inputs.joined(separator: "; ") + ". "
            + "Rates are source megapixels per second (as tjbench counts them, scaled decodes included). "
            + "\"Fresh buffer\": the pixel-buffer pool off, so every decode pays for a new buffer, as tjbench does not; "
            + "the recycled row is what a loader under load gets. The GIF peer only LZW-decodes to palette indices."
    ]
    section.command = command
    var table = ResultTable(
        title: "", header: ["decode", "AsyncImageKit Mpx/s", "ms per decode", "peer", "peer Mpx/s", "AsyncImageKit / peer"])
    for row in figures.rows {
        table.add([
            row.name, row.ours.formatted(1), row.milliseconds.formatted(1), row.peer, row.theirs.formatted(1),
            row.theirs.isEmpty ? "-" : row.ours.ratio(to: row.theirs).formattedRatio(),
        ])
    }
    if let full = figures.rows.first, !full.theirs.isEmpty {
        table.addGoal("goal: full-size JPEG into a fresh buffer / tjbench", ratio: full.ours.ratio(to: full.theirs), goal: .atLeast(0.95))
    }
    table.addGoal("goal: 1/8 scale faster than full size (AsyncImageKit)", ratio: figures.eighthSpeedup, goal: .atLeast(1.5))
    section.tables = [table]
    section.skipped = figures.skipped
    return section
}
