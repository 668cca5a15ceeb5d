import ArgumentParser
import Foundation

// The child processes the workloads start (BenchChild): hidden from the help,
// positional arguments only, each reporting one `TAG payload` line.

/// `serve FOLDER`: the built-in server of `loader` (LoaderBenchmark.swift).
struct ServeChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", shouldDisplay: false)

    @Argument var folder: String

    func run() throws { try serveFolder(path: folder) }
}

/// `run-one MODE LOADS WORKLOAD PORT LIST-FILE`: one measured loader run (LoaderBenchmark.swift).
struct RunOneChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "run-one", shouldDisplay: false)

    @Argument var mode: String
    @Argument var loads: Int
    @Argument var workload: String
    @Argument var port: Int
    @Argument var list: String

    func run() throws {
        try runOne(mode: mode, concurrency: loads, display: workload == "display", port: port, list: list)
    }
}

/// `decode-bound WORKLOAD FOLDER LIST-FILE THREADS`: the perfect-overlap decode bound (LoaderSourcesBenchmark.swift).
struct DecodeBoundChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "decode-bound", shouldDisplay: false)

    @Argument var workload: String
    @Argument var folder: String
    @Argument var list: String
    @Argument var threads: Int

    func run() throws {
        try decodeBoundChild(display: workload == "display", folder: URL(fileURLWithPath: folder), list: list, threads: threads)
    }
}

/// `thumb-one LOADS LIST-FILE`: AsyncImageKit's contestant in `thumbnails` (ThumbnailBenchmark.swift).
struct ThumbOneChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "thumb-one", shouldDisplay: false)

    @Argument var loads: Int
    @Argument var list: String

    func run() throws { try thumbnailOne(loads: loads, list: list) }
}

/// `net-one JSON`: one client run of `net` (NetworkClient.swift).
struct NetOneChildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "net-one", shouldDisplay: false)

    @Argument(help: "A NetRunSpec as JSON.") var spec: String

    func run() throws {
        guard let decoded = try? JSONDecoder().decode(NetRunSpec.self, from: Data(spec.utf8)) else {
            throw ValidationError("net-one: expected a JSON spec")
        }
        try netRunChild(decoded)
    }
}
