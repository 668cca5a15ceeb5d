import ArgumentParser

/// `colour`: the colour transform against Little CMS from C, and an untagged decode on and off (ColourBenchmark.swift).
struct ColourCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "colour",
        abstract: "Colour management: the transform against Little CMS called from C on the same pixels; an untagged decode.")

    @Option(help: "Each figure: the median of runs over at least this many seconds.")
    var seconds = 3.0

    @Option(help: ArgumentHelp("Where the inputs and the C program are kept.", valueName: "DIR"))
    var output = "bench-output"

    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp("RGB ICC profiles to tag the photo with.", valueName: "PROFILE"))
    var profiles = ["/usr/share/color/icc/ghostscript/a98.icc", "/usr/share/color/icc/ghostscript/rommrgb.icc"]

    func run() throws { try runColourBenchmark(seconds: seconds, output: output, profiles: profiles) }
}
