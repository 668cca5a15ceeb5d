import ArgumentParser

/// `soak`: the load test's mix for minutes, sampled every second (SoakBenchmark.swift).
struct SoakCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "The load test's mix for minutes: RSS, descriptors, in-flight and completed requests every second.",
        discussion: "Writes a table, soak.csv and soak.png into DIR; exits 1 if a check failed.")

    @Option(help: "How long.")
    var minutes = 5.0

    @Option(help: "The loader's concurrentLoads.")
    var loads = 8

    @Option(help: ArgumentHelp("Where the CSV and the plot go.", valueName: "DIR"))
    var output = "bench-output/soak"

    @Option(help: "The mix's random seed.")
    var seed: UInt64 = 2026

    func validate() throws {
        guard minutes > 0 else { throw ValidationError("--minutes takes a positive number") }
    }

    func run() throws {
        try runSoak(SoakOptions(minutes: minutes, loads: loads, output: output, seed: seed))
    }
}
