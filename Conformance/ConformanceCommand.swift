import Foundation

/// asyncimage-conformance: AsyncImageKit's HTTP cache held to the public
/// HTTP cache test suite (see `Options.help` and Conformance/README.md).
///
/// Exit status: 0 when the run finished and met `--min` (and
/// `--require-browser-common`); 1 when it did not, or failed; 2 for bad
/// usage. Without the suite or node: 0, or 1 when `CI` is set, so a
/// developer's build never fails for want of them but CI does.
@main
enum ConformanceCommand {
    static func main() {
        let options: Options
        do {
            switch try Options.parse(Array(CommandLine.arguments.dropFirst())) {
            case .help:
                say(Options.help, terminator: "")
                return
            case .run(let parsed):
                options = parsed
            }
        } catch {
            FileHandle.standardError.write(Data(error.description.utf8))
            exit(2)
        }
        let location: SuiteLocation
        switch SuiteLocation.find(options) {
        case .success(let found):
            location = found
        case .failure(let missing):
            FileHandle.standardError.write(Data(missing.description.utf8))
            exit(ProcessInfo.processInfo.environment["CI"] != nil ? 1 : 0)
        }
        do {
            Cleanup.exit(try ConformanceRun(options: options, location: location).run())
        } catch let error as Options.UsageError {
            FileHandle.standardError.write(Data(error.description.utf8))
            Cleanup.exit(2)
        } catch {
            if !Cleanup.isInterrupted {
                FileHandle.standardError.write(Data("asyncimage-conformance: \(error)\n".utf8))
            }
            Cleanup.exit(1)
        }
    }
}

/// One run: the origin, the relay, the suite's client, the report.
struct ConformanceRun {
    let options: Options
    let location: SuiteLocation

    /// The longest the suite's client may run: a backstop only, since the
    /// suite aborts each request after 10 s and a whole run takes about a minute.
    static let clientTimeLimit = 20 * 60.0

    /// The figures at the pinned commit; a suite that gives others is another version.
    static let pinnedApplicable = 276
    static let pinnedRequired = 132

    /// Runs everything; the exit status.
    func run() throws -> Int32 {
        let started = Date()
        let scratch = try Self.makeScratch()
        let catalogue = try Catalogue.load(location)
        let selected = try select(from: catalogue)
        let mode: CacheMode = options.shared ? .shared : .private
        let commit = location.commit
        say("Suite: \(location.directory.path) (commit \(commit ?? "unknown"))")
        if commit != SuiteLocation.pinnedCommit {
            say("  note: the figures in Conformance/README.md are for commit \(SuiteLocation.pinnedCommit)")
        }
        if mode == .shared && !Relay.hasSharedSwitch {
            say("  note: the loader has no shared-cache switch yet (TODO in Relay.swift): "
                + "--shared judges its one behaviour")
        }

        let origin = try Origin(location, scratch: scratch, echo: options.verbose || options.only != nil)
        let originCleanup = Cleanup.add { origin.stop() }
        defer {
            origin.stop()
            Cleanup.forget(originCleanup)
        }
        say("Origin: \(origin.url.absoluteString) (the suite's server)")

        let figure = try browserFigure(selected, mode: mode, origin: origin.url, scratch: scratch)
        var shared: (figure: SharedFigure, results: [String: SuiteResult])?
        if options.suiteShared {
            shared = try sharedFigure(catalogue, origin: origin.url, scratch: scratch)
        }

        let seconds = Date().timeIntervalSince(started)
        say("")
        say("Run time: \(Int(seconds) / 60) min \(Int(seconds) % 60) s")
        if let path = options.jsonPath {
            let report = JSONReport(
                suite: location.directory.path, suiteCommit: commit, mode: mode.rawValue,
                sharedSwitch: Relay.hasSharedSwitch, seconds: (seconds * 10).rounded() / 10,
                browserMode: figure.totals(), tests: figure.entries(), suiteShared: shared?.figure.totals(),
                suiteSharedResults: shared?.results)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: path))
            say("Results written to \(path)")
        }
        return verdict(figure)
    }

    /// The whole catalogue, or the one test `--only` names.
    private func select(from catalogue: [SuiteTest]) throws -> [SuiteTest] {
        guard let only = options.only else { return catalogue }
        guard let test = catalogue.first(where: { $0.id == only }) else {
            throw Options.UsageError(description: "no test \(only) in the suite at \(location.directory.path)\n")
        }
        return [test]
    }

    /// Plays the applicable tests of `selected` through a relay in `mode`
    /// and prints the results next to the browsers'.
    private func browserFigure(
        _ selected: [SuiteTest], mode: CacheMode, origin: URL, scratch: URL
    ) throws -> BrowserFigure {
        let applicable = selected.filter { $0.browserModeExclusion == nil }
        var results: [String: SuiteResult] = [:]
        if !applicable.isEmpty {
            let cache = scratch.appendingPathComponent("cache-browser")
            results = try withRelay(origin: origin, mode: mode, cache: cache) { relay in
                say("Relay: \(relay.absoluteString) (AsyncImageLoader.data(for:), \(mode.rawValue) cache)")
                say("Playing \(applicable.count) tests with the suite's client in browser mode "
                    + "(it pauses 3 s after some requests: about a minute) ...")
                return try playBrowserMode(applicable.map(\.id), origin: origin, relay: relay, scratch: scratch)
            }
        }
        let browsers = try Catalogue.browsers.map { (name: $0, results: try Catalogue.published($0, in: location)) }
        let figure = BrowserFigure(tests: selected, results: results, browsers: browsers)
        say("")
        figure.printTests()
        figure.printTotals(mode: mode)
        if options.only == nil
            && (figure.applicable.count != Self.pinnedApplicable || figure.required.count != Self.pinnedRequired)
        {
            say("  note: at commit \(SuiteLocation.pinnedCommit) the suite has \(Self.pinnedApplicable) "
                + "applicable tests, \(Self.pinnedRequired) required: this suite is another version")
        }
        return figure
    }

    /// Runs the suite's own cli.mjs against a shared relay and prints the
    /// count next to the proxies' and CDNs'; nil with `--only` (cli.mjs then
    /// prints its own log and verdict).
    private func sharedFigure(
        _ catalogue: [SuiteTest], origin: URL, scratch: URL
    ) throws -> (figure: SharedFigure, results: [String: SuiteResult])? {
        let cache = scratch.appendingPathComponent("cache-shared")
        let results = try withRelay(origin: origin, mode: .shared, cache: cache) { relay in
            say("")
            say("Shared figure: the suite's test-engine/cli.mjs against a shared relay at \(relay.absoluteString) ...")
            return try playSuiteShared(origin: origin, relay: relay, scratch: scratch)
        }
        guard let results else { return nil }
        let caches = try Catalogue.sharedCaches.map { (name: $0, results: try Catalogue.published($0, in: location)) }
        let figure = SharedFigure(tests: catalogue, results: results, caches: caches)
        figure.printTotals(sharedSwitch: Relay.hasSharedSwitch)
        return (figure, results)
    }

    /// The exit status `--min` and `--require-browser-common` ask for.
    private func verdict(_ figure: BrowserFigure) -> Int32 {
        var status: Int32 = 0
        let passed = passCount(figure.applicable, in: figure.results)
        if let minimum = options.minimum, passed < minimum {
            say("FAILED: \(passed) applicable tests passed, fewer than the minimum \(minimum)")
            status = 1
        }
        if options.requireBrowserCommon {
            let common = figure.browserCommon
            let failing = common.filter { figure.results[$0.id]?.isPass != true }.count
            if failing > 0 {
                say("FAILED: \(failing) of the \(common.count) required tests that all three browsers pass failed")
                status = 1
            }
        }
        return status
    }

    /// Runs `body` with a relay to `origin` (its URL), stopped afterwards however `body` ends.
    private func withRelay<T>(origin: URL, mode: CacheMode, cache: URL, _ body: (URL) throws -> T) throws -> T {
        let relay = try Relay(origin: origin, mode: mode, cacheDirectory: cache)
        let cleanup = Cleanup.add { relay.stop() }
        defer {
            relay.stop()
            Cleanup.forget(cleanup)
        }
        return try body(relay.url)
    }

    // MARK: - The suite's client

    /// Plays `ids` with Scripts/run-suite.mjs (the suite's client in browser
    /// mode, `/test/` fetches to the relay); the suite's results by test id.
    private func playBrowserMode(
        _ ids: [String], origin: URL, relay: URL, scratch: URL
    ) throws -> [String: SuiteResult] {
        let idsFile = scratch.appendingPathComponent("tests.json")
        let output = scratch.appendingPathComponent("results.json")
        try JSONEncoder().encode(ids).write(to: idsFile)
        let client = try ChildProcess(
            executable: location.node,
            arguments: [
                "--no-warnings", location.script("run-suite.mjs"), location.directory.path, idsFile.path, output.path,
            ] + (options.only != nil ? ["--dump"] : []),
            directory: location.directory,
            environment: ["CONFORMANCE_ORIGIN": origin.absoluteString, "CONFORMANCE_RELAY": relay.absoluteString])
        try finish(client, name: "the suite's client")
        return try JSONDecoder().decode([String: SuiteResult].self, from: Data(contentsOf: output))
    }

    /// Runs the suite's own cli.mjs (shared-cache judging) with the relay as
    /// its base URL (Scripts/route-fetch.mjs sends `/config/` and `/state/`
    /// to the origin). Its results by test id; nil with `--only`.
    private func playSuiteShared(origin: URL, relay: URL, scratch: URL) throws -> [String: SuiteResult]? {
        let output = scratch.appendingPathComponent("cli.json")
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else {
            throw ChildProcess.Failure(description: "could not create \(output.path)")
        }
        let handle = try FileHandle(forWritingTo: output)
        defer { try? handle.close() }
        let client = try ChildProcess(
            executable: location.node,
            arguments: ["--no-warnings", "--import", location.script("route-fetch.mjs"), "test-engine/cli.mjs"],
            directory: location.directory,
            environment: [
                "npm_config_base": relay.absoluteString, "npm_config_id": options.only ?? "",
                "npm_package_config_id": "",
                "CONFORMANCE_ORIGIN": origin.absoluteString, "CONFORMANCE_RELAY": relay.absoluteString,
            ],
            standardOutput: options.only == nil ? handle : nil)
        try finish(client, name: "the suite's cli.mjs")
        guard options.only == nil else { return nil }
        return try JSONDecoder().decode([String: SuiteResult].self, from: Data(contentsOf: output))
    }

    /// Waits for `client` (at most ``clientTimeLimit``); throws unless it exited with status 0.
    private func finish(_ client: ChildProcess, name: String) throws {
        guard let status = client.wait(seconds: Self.clientTimeLimit) else {
            client.stop()
            throw ChildProcess.Failure(description: "\(name) did not finish within \(Int(Self.clientTimeLimit)) s")
        }
        guard status == 0 else { throw ChildProcess.Failure(description: "\(name) exited with status \(status)") }
    }

    // MARK: - The temporary folder

    /// The start of a run's temporary folder's name (then its pid).
    static let scratchPrefix = "asyncimage-conformance-"

    /// This run's temporary folder (the disk caches, the client's files),
    /// removed however the run ends; first, those of killed runs.
    private static func makeScratch() throws -> URL {
        removeLeftovers()
        let scratch = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(scratchPrefix)\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        Cleanup.add { try? FileManager.default.removeItem(at: scratch) }
        return scratch
    }

    /// Removes the temporary folders of runs that were killed (SIGKILL runs
    /// no cleanup): those whose process is gone.
    private static func removeLeftovers() {
        let temporary = FileManager.default.temporaryDirectory
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? []
        for name in names where name.hasPrefix(scratchPrefix) {
            guard let pid = pid_t(name.dropFirst(scratchPrefix.count).prefix { $0 != "-" }), pid != getpid(),
                kill(pid, 0) != 0, errno == ESRCH
            else { continue }
            try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))
        }
    }
}
