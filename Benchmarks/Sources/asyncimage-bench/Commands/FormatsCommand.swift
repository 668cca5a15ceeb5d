import ArgumentParser

/// `formats`: the AVIF, HEIC and JPEG XL decoders against their codecs' own
/// libraries called from C (FormatsBenchmark.swift).
struct FormatsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "formats",
        abstract: "AVIF, HEIC and JPEG XL decoding against a C program calling libavif, libheif and libjxl the same way.")

    @Option(help: "Each figure: the median of decodes over at least this many seconds.")
    var seconds = 3.0

    @Option(help: "Rounds (each times every row on both sides, alternating which goes first).")
    var runs = 3

    @Option(help: ArgumentHelp("Where the inputs and the C program are kept.", valueName: "DIR"))
    var output = "bench-output"

    @Flag(help: "Small inputs and short runs: checks that it works, measures nothing.")
    var smoke = false

    func run() throws {
        let section = try runFormatsBenchmark(
            seconds: smoke ? 0.05 : seconds, runs: smoke ? 1 : runs, output: output, smoke: smoke)
        print(section.summary.joined(separator: "\n\n") + "\n")
        print("```sh\n\(section.command ?? "")\n```\n")
        for table in section.tables { print(table.markdown) }
    }
}
