import AsyncImageKit
import BenchmarkSupport
import CBenchGIF
import CBenchPNG
import Foundation
import ImageFixtures

func now() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Runs `body` once to warm up, then until `seconds` have passed (at least 3
/// times); returns the median seconds per run.
func measure(seconds: Double, _ body: () throws -> Void) rethrows -> Double {
    try body()
    var times: [Double] = []
    let start = now()
    while times.count < 3 || now() - start < seconds {
        let t0 = now()
        try body()
        times.append(now() - t0)
    }
    return Samples(times).median
}

func row(_ name: String, _ megapixelsPerSecond: Double, _ note: String = "") {
    print(
        name.padding(toLength: 52, withPad: " ", startingAt: 0)
            + String(format: "%9.1f Mpx/s", megapixelsPerSecond) + (note.isEmpty ? "" : "  " + note))
}

func ratio(_ name: String, _ value: Double, goal: String) {
    print(name.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%9.2fx", value) + "   goal: " + goal)
}

/// Runs tjbench on a JPEG and returns its decompression throughput (Mpx/s).
func tjbench(_ path: String, scale: String?, seconds: Double, warmup: Double = 1) -> Double? {
    var arguments = [path, "-rgbx", "-accuratedct", "-benchtime", String(seconds), "-warmup", String(warmup), "-nowrite"]
    if let scale { arguments += ["-scale", scale] }
    guard let result = try? ProcessRun.run(URL(fileURLWithPath: "/usr/bin/tjbench"), arguments) else { return nil }
    let output = result.outputText + result.errorText
    // "Decompress    --> Frame rate: ... fps\n                  Throughput: 123.4 Megapixels/sec"
    guard let decompress = output.range(of: "Decompress") else { return nil }
    let rest = output[decompress.upperBound...]
    guard let throughput = rest.range(of: "Throughput:") else { return nil }
    let number = rest[throughput.upperBound...].drop { $0 == " " }.prefix { $0.isNumber || $0 == "." }
    return Double(number)
}

/// libpng's own one-call decoder into a fresh RGBA buffer.
func libpngSimplifiedDecode(_ data: Data) -> Bool {
    data.withUnsafeBytes { raw -> Bool in
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        guard png_image_begin_read_from_memory(&image, raw.baseAddress, raw.count) != 0 else { return false }
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        let size = Int(image.width) * Int(image.height) * 4
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer { buffer.deallocate() }
        let ok = png_image_finish_read(&image, nil, buffer, 0, nil) != 0
        png_image_free(&image)
        return ok
    }
}

/// giflib's DGifSlurp: reads and LZW-decodes every frame to palette indices.
func giflibSlurp(_ data: Data) -> Int {
    final class Input {
        let data: Data
        var offset = 0
        init(_ data: Data) { self.data = data }
    }
    let input = Input(data)
    var error: Int32 = 0
    let gif = withExtendedLifetime(input) {
        DGifOpen(Unmanaged.passUnretained(input).toOpaque(), { gif, buffer, length in
            guard let gif, let buffer, let user = gif.pointee.UserData else { return 0 }
            let input = Unmanaged<Input>.fromOpaque(user).takeUnretainedValue()
            let n = min(Int(length), input.data.count - input.offset)
            input.data.withUnsafeBytes { raw in
                buffer.update(from: raw.bindMemory(to: UInt8.self).baseAddress! + input.offset, count: n)
            }
            input.offset += n
            return Int32(n)
        }, &error)
    }
    guard let gif else { return 0 }
    let status = DGifSlurp(gif)
    let count = Int(gif.pointee.ImageCount)
    DGifCloseFile(gif, &error)
    withExtendedLifetime(input) {}
    return status == GIF_OK ? count : 0
}

func makeAnimatedGIF(width: Int, height: Int, frames: Int) throws -> Data {
    var palette: [RGBA] = []
    for i in 0..<256 { palette.append(RGBA(r: UInt8(i), g: UInt8((i * 3) & 0xFF), b: UInt8(255 - i))) }
    var specs: [GIFFrameSpec] = []
    for f in 0..<frames {
        var indices = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height {
            for x in 0..<width { indices[y * width + x] = UInt8((x / 4 + y / 4 + f * 5) & 0xFF) }
        }
        specs.append(GIFFrameSpec(width: width, height: height, indices: indices, delay: 4))
    }
    return try GIFWriter.encode(width: width, height: height, globalPalette: palette, frames: specs)
}

/// `decode`: the decoders against tjbench, libpng's simplified API and giflib,
/// each figure over at least `seconds`; the inputs are generated into `output`.
func runDecodeBenchmark(seconds: Double, output: String) throws {
    let folder = URL(fileURLWithPath: output)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

    print("Generating inputs in \(folder.path) ...")
    let jpegPath = folder.appendingPathComponent("photo-24mp-q90.jpg").path
    let pngPath = folder.appendingPathComponent("photo-12mp.png").path
    let gifPath = folder.appendingPathComponent("animated-480x270x60.gif").path
    if !FileManager.default.fileExists(atPath: jpegPath) {
        try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 6000, height: 4000, seed: 24))
            .write(to: URL(fileURLWithPath: jpegPath))
    }
    if !FileManager.default.fileExists(atPath: pngPath) {
        try PNGEncoder().encode(SyntheticImage.photo(width: 4000, height: 3000, seed: 12))
            .write(to: URL(fileURLWithPath: pngPath))
    }
    if !FileManager.default.fileExists(atPath: gifPath) {
        try makeAnimatedGIF(width: 480, height: 270, frames: 60).write(to: URL(fileURLWithPath: gifPath))
    }
    let jpeg = try Data(contentsOf: URL(fileURLWithPath: jpegPath))
    let png = try Data(contentsOf: URL(fileURLWithPath: pngPath))
    let gif = try Data(contentsOf: URL(fileURLWithPath: gifPath))
    print("Each figure: median of runs over at least \(seconds) s after a warm-up run; one thread.\n")

    // JPEG, full size.
    let jpegMegapixels = 24.0
    let ours = measure(seconds: seconds) { _ = try! JPEGDecoder().decode(jpeg) }
    let pool = PixelBufferPool.shared
    let countLimit = pool.countLimit
    pool.countLimit = 0
    let oursFresh = measure(seconds: seconds) { _ = try! JPEGDecoder().decode(jpeg) }
    pool.countLimit = countLimit
    var eighth = DecodingOptions(targetSize: PixelSize(width: 750, height: 500))
    eighth.resizeQuality = .fast  // the DCT scale alone, as tjbench -scale 1/8
    let oursEighth = measure(seconds: seconds) { _ = try! JPEGDecoder().decode(jpeg, options: eighth) }
    let oursThumb = measure(seconds: seconds) {
        _ = try! JPEGDecoder().decode(jpeg, options: DecodingOptions(targetSize: PixelSize(width: 256, height: 256)))
    }
    print("JPEG 6000x4000 q90 (\(jpeg.count / 1024) KiB)")
    row("  AsyncImageKit, full size, recycled RGBA buffer", jpegMegapixels / ours, String(format: "%.1f ms", ours * 1000))
    row(
        "  AsyncImageKit, full size, fresh buffer (no pool)", jpegMegapixels / oursFresh,
        String(format: "%.1f ms", oursFresh * 1000))
    let tj = tjbench(jpegPath, scale: nil, seconds: seconds)
    if let tj {
        row("  tjbench (libjpeg-turbo), full size, RGBX", tj, "reuses one buffer")
        ratio("  ratio AsyncImageKit / tjbench", (jpegMegapixels / ours) / tj, goal: ">= 0.85")
        ratio("  ratio AsyncImageKit (no pool) / tjbench", (jpegMegapixels / oursFresh) / tj, goal: ">= 0.85")
    } else {
        print("  tjbench not found: apt-get install libjpeg-turbo-progs")
    }
    row(
        "  AsyncImageKit, 1/8 scale (750x500)", jpegMegapixels / oursEighth,
        String(format: "%.1f ms, source Mpx/s", oursEighth * 1000))
    if let tj8 = tjbench(jpegPath, scale: "1/8", seconds: seconds) {
        row("  tjbench, 1/8 scale", tj8, "source Mpx/s, as tjbench counts")
    }
    ratio("  speed-up 1/8 scale vs full (AsyncImageKit)", ours / oursEighth, goal: ">= 1.5")
    row(
        "  AsyncImageKit, shown at 256x256 (1/8 + resize)", jpegMegapixels / oursThumb,
        String(format: "%.1f ms", oursThumb * 1000))

    // PNG.
    let pngMegapixels = 12.0
    let oursPNG = measure(seconds: seconds) { _ = try! PNGDecoder().decode(png) }
    let libpng = measure(seconds: seconds) { precondition(libpngSimplifiedDecode(png)) }
    print("\nPNG 4000x3000 RGBA (\(png.count / 1024) KiB)")
    row("  AsyncImageKit, full size", pngMegapixels / oursPNG, String(format: "%.1f ms", oursPNG * 1000))
    row("  libpng simplified API (png_image_finish_read)", pngMegapixels / libpng, String(format: "%.1f ms", libpng * 1000))
    ratio("  ratio AsyncImageKit / libpng simplified", libpng / oursPNG, goal: "~1 (same library)")

    // GIF.
    let frames = 60.0
    let gifMegapixels = 480.0 * 270.0 * frames / 1e6
    let oursGIF = measure(seconds: seconds) { _ = try! GIFDecoder().decode(gif) }
    let slurp = measure(seconds: seconds) { precondition(giflibSlurp(gif) == 60) }
    print("\nGIF 480x270, 60 frames (\(gif.count / 1024) KiB)")
    row("  AsyncImageKit, all frames composited to RGBA", gifMegapixels / oursGIF, String(format: "%.1f ms", oursGIF * 1000))
    row("  giflib DGifSlurp (indices only, no RGBA)", gifMegapixels / slurp, String(format: "%.1f ms", slurp * 1000))
    ratio("  ratio AsyncImageKit / DGifSlurp", slurp / oursGIF, goal: "informational (we do more work)")

    runResizeBenchmark(seconds: seconds)
}


/// ImageResizer on the two shapes the loader benchmark's display workload
/// produces: a full-size photo resized by the peer, and a 1/4-scale JPEG
/// decode resized by AsyncImageKit.
func runResizeBenchmark(seconds: Double) {
    print("\nResizing with ImageResizer, one thread (.fast: area average; .high: box and Lanczos3 in linear light)")
    for (source, target) in [
        (PixelSize(width: 2400, height: 1600), PixelSize(width: 384, height: 256)),
        (PixelSize(width: 600, height: 400), PixelSize(width: 384, height: 256)),
        // A 12 MP JPEG's margin decode (1/4) fitted to 256, as the thumbnail benchmark's.
        (PixelSize(width: 1000, height: 750), PixelSize(width: 256, height: 192)),
        (PixelSize(width: 1000, height: 750), PixelSize(width: 512, height: 384)),
    ] {
        let image = SyntheticImage.photo(width: source.width, height: source.height, seed: 7)
        for quality in ResizeQuality.allCases {
            let time = measure(seconds: seconds) { _ = try! ImageResizer.resize(image, to: target, quality: quality) }
            row(
                "  \(source.width)x\(source.height) -> \(target.width)x\(target.height) \(quality)",
                Double(source.pixelCount) / 1e6 / time, String(format: "%.2f ms, source Mpx/s", time * 1000))
        }
    }
}
