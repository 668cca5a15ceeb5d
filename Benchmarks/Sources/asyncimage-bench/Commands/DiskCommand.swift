import ArgumentParser

/// `disk`: the disk cache against the network it saves (DiskBenchmark.swift).
struct DiskCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disk",
        abstract: "The disk cache: cold loads, warm disk hits and 304 revalidations at display size; start-up and lookups with many entries.")

    @Option(help: "Photos loaded.")
    var count = 100

    @Option(help: "Small entries in the start-up and lookup part.")
    var entries = 100_000

    @Flag(help: "12-megapixel photos instead of the loader set's 1.5-5 MP.")
    var large = false

    func validate() throws {
        guard count > 0, entries > 0 else { throw ValidationError("--count and --entries take positive counts") }
    }

    func run() throws {
        try runDiskBenchmark(DiskOptions(count: count, entries: entries, large: large))
    }
}
