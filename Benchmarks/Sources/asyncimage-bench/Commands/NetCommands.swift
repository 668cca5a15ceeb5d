import ArgumentParser
import Foundation

/// `net`: over emulated links, against the URLSession peer, `curl --parallel` and the physical limit (NetworkBenchmark.swift).
struct NetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "net",
        abstract: "Over emulated links to nginx (TLS, HTTP/2 and HTTP/1.1): a cold screen and the demo's scroll, against URLSession, curl --parallel and the physical limit.",
        discussion: "--smoke: one link (50 ms, 50 Mbit/s), one run, 64 items, unless those options are given too.")

    @Option(help: ArgumentHelp("Round trips, milliseconds.", valueName: "LIST"))
    var rtts: CommaSeparated<Double>?

    @Option(help: ArgumentHelp("Link rates, megabits per second.", valueName: "LIST"))
    var rates: CommaSeparated<Double>?

    @Option(help: ArgumentHelp("Some of h2, h1.", valueName: "LIST"))
    var protocols = CommaSeparated(["h2", "h1"])

    @Option(help: ArgumentHelp("Some of cold, scroll.", valueName: "LIST"))
    var workloads = CommaSeparated(["cold", "scroll"])

    @Option(help: ArgumentHelp("Some of ours, peer, curl.", valueName: "LIST"))
    var clients = CommaSeparated(["ours", "peer", "curl"])

    @Option(help: "Runs of each setting (default 3; 1 with --smoke).")
    var runs: Int?

    @Option(help: "Items in the gallery, at least 32 (default 300; 64 with --smoke).")
    var items: Int?

    @Option(help: "The scroll's speed, rows per second.")
    var speed = 25.0

    @Option(help: "AsyncImageKit's concurrentLoads (default: its own default).")
    var loads: Int?

    @Option(help: "AsyncImageKit's maxConnectionsPerHost (default: its own default).")
    var perHost: Int?

    @Option(help: ArgumentHelp("Where net.md, net-results.json and the charts go.", valueName: "DIR"))
    var output = "bench-output/net"

    @Flag(help: "One link, one run, 64 items: a minute.")
    var smoke = false

    func run() throws {
        var options = NetOptions()
        options.smoke = smoke
        options.roundTrips = rtts.map { $0.values.map { $0 / 1000 } } ?? (smoke ? [0.050] : options.roundTrips)
        options.rates = rates.map { $0.values.map { $0 * 1e6 } } ?? (smoke ? [50e6] : options.rates)
        options.protocols = protocols.values
        options.workloads = workloads.values
        options.clients = clients.values
        options.runs = max(1, runs ?? (smoke ? 1 : options.runs))
        options.items = max(32, items ?? (smoke ? 64 : options.items))
        options.rowsPerSecond = speed
        options.loads = loads
        options.perHost = perHost
        options.output = URL(fileURLWithPath: output)
        try runNetworkBenchmark(options)
    }
}

/// `net-report DIR`: the tables and charts again from DIR/net-results.json.
struct NetReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "net-report", abstract: "The net tables and charts again from DIR/net-results.json.")

    @Argument(help: ArgumentHelp("A net run's output folder.", valueName: "DIR"))
    var folder = "bench-output/net"

    func run() throws { try rewriteNetReport(folder: URL(fileURLWithPath: folder)) }
}
