import ArgumentParser
import Foundation

/// `loader`: AsyncImageLoader against URLSession + TaskGroup over loopback
/// HTTP. Two benchmarks behind one name, as before: the loader workload
/// (LoaderBenchmark.swift, the same as `all`'s, then the memory cache), and
/// with any of --source, --set, --loaders, --no-curl or --smoke the served
/// sets with the decode bound and the curl yardstick (LoaderSourcesBenchmark.swift).
/// Their defaults differ, hence the options without defaults here.
struct LoaderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "loader",
        abstract: "AsyncImageLoader against URLSession + TaskGroup over loopback HTTP, each run in a child process.",
        discussion: """
            Without --source, --set, --loaders, --no-curl or --smoke: the loader set from the built-in \
            server at --loads (default 1,2,4), full and display size, AsyncImageKit also with its pixel-buffer \
            pool off, then the memory cache. With any of them: the files served by the built-in server \
            and/or nginx, on the photos or the mixed set, at --loads (default 2,8), --workloads (default full), \
            with the perfect-overlap decode bound and, with nginx, the curl --parallel yardstick.
            """)

    @Option(help: "Images in the set (default 200 photos, 1,000 mixed, 24 with --smoke).")
    var count: Int?

    @Option(help: "Rounds (default 3; 1 with --smoke).")
    var repeats: Int?

    @Option(help: ArgumentHelp("Concurrent loads.", valueName: "LIST"))
    var loads: CommaSeparated<Int>?

    @Option(help: ArgumentHelp("Some of full, display.", valueName: "LIST"))
    var workloads: CommaSeparated<String>?

    @Option(help: ArgumentHelp("Where the sets are generated and kept.", valueName: "DIR"))
    var output = "bench-output"

    @Option(help: ArgumentHelp("builtin, nginx or both.", valueName: "SOURCE"))
    var source: String?

    @Option(help: ArgumentHelp("photos or mixed.", valueName: "SET"))
    var set: LoaderImageSet?

    @Option(help: ArgumentHelp("Some of peer, ours, ours-nopool.", valueName: "LIST"))
    var loaders: CommaSeparated<String>?

    @Flag(help: "Without the curl + tools yardstick.")
    var noCurl = false

    @Flag(help: "Tiny sizes, one round: the harness only.")
    var smoke = false

    /// The sources a --source value names.
    private var sources: [LoaderSource]? {
        guard let source else { return nil }
        if source == "both" { return [.builtin, .nginx] }
        let named = source.split(separator: ",").compactMap { LoaderSource(rawValue: String($0)) }
        return named.count == source.split(separator: ",").count && !named.isEmpty ? named : []
    }

    func validate() throws {
        if sources?.isEmpty == true { throw ValidationError("--source: builtin, nginx or both, not \(source ?? "")") }
        if let repeats, repeats < 1 { throw ValidationError("--repeats takes a positive count") }
        if let count, count < 1 { throw ValidationError("--count takes a positive count") }
        if let loads, !loads.values.allSatisfy({ $0 > 0 }) { throw ValidationError("--loads takes positive counts, such as 2,8") }
        if let workloads, !workloads.values.allSatisfy(["full", "display"].contains) {
            throw ValidationError("--workloads: full, display")
        }
        if let loaders, !loaders.values.allSatisfy({ loaderDisplayNames[$0] != nil }) {
            throw ValidationError("--loaders: peer, ours, ours-nopool")
        }
    }

    func run() throws {
        if source != nil || set != nil || loaders != nil || noCurl || smoke {
            var options = LoaderSourcesOptions()
            options.set = set ?? options.set
            options.count = count.map { max(2, $0) }
            options.sources = sources ?? options.sources
            options.loads = loads?.values ?? options.loads
            options.workloads = workloads?.values ?? options.workloads
            options.repeats = repeats ?? (smoke ? 1 : options.repeats)
            options.loaders = loaders?.values ?? options.loaders
            options.curl = !noCurl
            options.smoke = smoke
            options.output = output
            try runLoaderSourcesCommand(options)
        } else {
            var options = LoaderWorkloadOptions()
            options.loads = loads?.values ?? [1, 2, 4]
            options.modes = ["peer", "ours", "ours-nopool"]
            options.count = count ?? options.count
            options.runs = repeats ?? options.runs
            options.workloads = workloads?.values ?? options.workloads
            options.sets = URL(fileURLWithPath: output)
            try runLoaderBenchmark(options, command: commandLine())
        }
    }
}

extension LoaderImageSet: ExpressibleByArgument {}

/// `nginx-serve FOLDER`: nginx serving a folder by hand, for profiling a `run-one` child.
struct NginxServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nginx-serve",
        abstract: "nginx serving FOLDER on 127.0.0.1 until standard input closes (for profiling a run-one child by hand).")

    @Argument(help: ArgumentHelp("The folder served.", valueName: "FOLDER"))
    var folder: String

    func run() throws { try nginxServeChild(folder: folder) }
}
