import ArgumentParser

/// `encode`: WebPEncoder and AVIFEncoder against cwebp and avifenc at the same settings (EncodeBenchmark.swift).
struct EncodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encode",
        abstract: "WebPEncoder and AVIFEncoder against cwebp and avifenc at the same settings on the same display-size photos.")

    @Option(help: "Each figure: the median of runs over at least this many seconds.")
    var seconds = 2.0

    @Option(help: ArgumentHelp("Where the PNGs and the tools' files are written.", valueName: "DIR"))
    var output = "bench-output"

    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("JPEG photos to encode (default: the corpus's photos), at most 512 pixels a side.", valueName: "FILE"))
    var photos: [String] = []

    @Option(help: "WebP quality (cwebp -q).")
    var webpQuality = 75

    @Option(help: ArgumentHelp("WebP methods (cwebp -m).", valueName: "LIST"))
    var webpMethods = CommaSeparated([4, 6])

    @Option(help: "AVIF quality (mapped to avifenc's --min/--max quantizers).")
    var avifQuality = 60

    @Option(help: ArgumentHelp("AVIF speeds (avifenc -s).", valueName: "LIST"))
    var avifSpeeds = CommaSeparated([6, 8])

    @Flag(help: "One small generated image, one run each, WebP m4 and AVIF s10: seconds, for the harness.")
    var smoke = false

    func validate() throws {
        guard (0...100).contains(webpQuality), (0...100).contains(avifQuality) else {
            throw ValidationError("--webp-quality and --avif-quality must be within 0...100")
        }
        guard webpMethods.values.allSatisfy({ (0...6).contains($0) }) else {
            throw ValidationError("--webp-methods must be within 0...6")
        }
        guard avifSpeeds.values.allSatisfy({ (0...10).contains($0) }) else {
            throw ValidationError("--avif-speeds must be within 0...10")
        }
    }

    func run() throws {
        var options = EncodeOptions()
        options.seconds = smoke ? 0 : max(0, seconds)
        options.output = output
        options.photos = photos
        options.webpQuality = webpQuality
        options.webpMethods = smoke ? [4] : webpMethods.values
        options.avifQuality = avifQuality
        options.avifSpeeds = smoke ? [10] : avifSpeeds.values
        options.smoke = smoke
        try runEncodeBenchmark(options)
    }
}
