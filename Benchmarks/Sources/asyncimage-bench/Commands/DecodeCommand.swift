import ArgumentParser

/// `decode`: the decoders against tjbench, libpng's simplified API and giflib (DecodeBenchmark.swift).
struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode", abstract: "The decoders against tjbench, libpng's simplified API and giflib; then the resizer.")

    @Option(help: "Each figure: the median of runs over at least this many seconds.")
    var seconds = 3.0

    @Option(help: ArgumentHelp("Where the inputs are generated and kept.", valueName: "DIR"))
    var output = "bench-output"

    func run() throws { try runDecodeBenchmark(seconds: seconds, output: output) }
}

/// `resize`: ImageResizer on the loader benchmark's two display shapes (DecodeBenchmark.swift).
struct ResizeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resize", abstract: "ImageResizer on the shapes the loader benchmark's display workload produces.")

    @Option(help: "Each figure: the median of runs over at least this many seconds.")
    var seconds = 3.0

    func run() { runResizeBenchmark(seconds: seconds) }
}
