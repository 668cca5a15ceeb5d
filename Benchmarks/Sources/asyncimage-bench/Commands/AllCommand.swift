import ArgumentParser

/// `all`: every workload with its peers in one run (AllBenchmark.swift).
struct AllCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all",
        abstract: "Every workload with its peers in one run: medians with min-max, the BENCHMARKS.md tables and PNG plots.",
        discussion: """
            DIR gets benchmarks.md, benchmarks.txt and the plots. --update FILE also writes the \
            generated text into FILE between its markers (appending them the first time), leaving \
            the rest of FILE as it was. Exits 1 if a workload could not run or AsyncImageKit failed a load.
            """)

    @Option(help: "Runs per figure (default 3; 1 with --smoke).")
    var runs: Int?

    @Option(help: ArgumentHelp("Where the report and the plots go.", valueName: "DIR"))
    var output = "bench-output/all"

    @Option(help: ArgumentHelp("Where the image sets are generated and kept (shared with the single workloads).", valueName: "DIR"))
    var sets = "bench-output"

    @Option(help: ArgumentHelp("Some of: \(AllOptions.workloads.joined(separator: ",")).", valueName: "LIST"))
    var only: CommaSeparated<String>?

    @Option(help: ArgumentHelp("A Markdown file whose generated part is replaced.", valueName: "FILE"))
    var update: String?

    @Flag(help: "Tiny sizes and one run, seconds in all: the harness only (its figures decide nothing).")
    var smoke = false

    func validate() throws {
        if let runs, runs < 1 { throw ValidationError("--runs takes a positive count, not \(runs)") }
        let unknown = only?.values.filter { !AllOptions.workloads.contains($0) } ?? []
        if !unknown.isEmpty {
            throw ValidationError(
                "--only takes some of \(AllOptions.workloads.joined(separator: ",")), not \(unknown.joined(separator: ","))")
        }
    }

    func run() throws {
        var options = AllOptions()
        options.smoke = smoke
        options.runs = runs
        options.output = output
        options.sets = sets
        options.update = update
        if let only { options.only = AllOptions.workloads.filter(only.values.contains) }
        try runAllBenchmarks(options, command: commandLine())
    }
}

/// The command line as typed (`asyncimage-bench all --smoke`), for the reports that name it.
func commandLine() -> String {
    (["asyncimage-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
}
