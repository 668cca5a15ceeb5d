import ArgumentParser

/// `scale`: the loader's cost per call against the number of pending requests (ScaleBenchmark.swift).
struct ScaleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scale",
        abstract: "The loader's cost per call against the number of pending requests (1k to 1M).",
        discussion: "A phase over --max-seconds is reported \"over time\". Sizes may be written 10k, 1M.")

    @Option(help: ArgumentHelp("Pending requests, each at least 8 (1000 or 1k, 1M).", valueName: "LIST"))
    var sizes = CommaSeparated([ScaleSize(1_000), ScaleSize(10_000), ScaleSize(100_000), ScaleSize(1_000_000)])

    @Option(help: ArgumentHelp("one, many or one,many.", valueName: "LIST"))
    var targets = CommaSeparated(ScaleShape.allCases)

    @Option(help: "A phase longer than this is stopped and reported over time.")
    var maxSeconds = 60.0

    @Option(help: ArgumentHelp("Where scale.md goes (none: printed only).", valueName: "DIR"))
    var output: String?

    func validate() throws {
        guard sizes.values.allSatisfy({ $0.count >= 8 }) else { throw ValidationError("--sizes: counts of at least 8") }
        guard maxSeconds > 0 else { throw ValidationError("--max-seconds: a positive number") }
    }

    func run() throws {
        var options = ScaleOptions()
        options.sizes = Array(Set(sizes.values.map(\.count))).sorted()
        options.shapes = ScaleShape.allCases.filter(targets.values.contains)
        options.maxSeconds = maxSeconds
        options.output = output
        try runScaleBenchmark(options)
    }
}

/// A count of pending requests: `1000`, `10k`, `1M`.
struct ScaleSize: ExpressibleByArgument {
    var count: Int

    init(_ count: Int) { self.count = count }

    init?(argument: String) {
        var digits = Substring(argument)
        var multiplier = 1
        switch argument.last {
        case "k", "K": multiplier = 1_000
        case "m", "M": multiplier = 1_000_000
        default: break
        }
        if multiplier > 1 { digits = digits.dropLast() }
        guard let value = Int(digits) else { return nil }
        count = value * multiplier
    }

    var defaultValueDescription: String { scaleSizeLabel(count) }
}

extension ScaleShape: ExpressibleByArgument {}
