import ArgumentParser

/// `progressive`: transfers ended at the DC scans against whole files (ProgressiveBenchmark.swift).
struct ProgressiveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "progressive",
        abstract: "Progressive 12-MP JPEGs at 256x256: transfers ended at the DC scans against whole files.")

    @Option(help: "Photos loaded.")
    var count = 24

    @Option(help: "Each transfer's rate, megabits per second.")
    var mbps = 100.0

    func validate() throws {
        guard count > 0 else { throw ValidationError("--count takes a positive count") }
        guard mbps > 0 else { throw ValidationError("--mbps takes a positive rate") }
    }

    func run() throws { try runProgressiveBenchmark(count: count, mbps: mbps) }
}
