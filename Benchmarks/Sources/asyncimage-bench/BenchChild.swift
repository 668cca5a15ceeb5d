import BenchmarkSupport
import Foundation

// The benchmark runs parts of itself as child processes of this same binary
// (the hidden subcommands `run-one`, `decode-bound`, `net-one`, `thumb-one`,
// `serve`): a measured run then starts cold and its peak RSS and CPU are its
// own. Parent and child speak one protocol: the child reports its result as
// one line `TAG payload` on standard output (anything else it prints is
// ignored), and the parent reads the last line with that tag.

enum BenchChild {
    /// This binary by its real path: the path it was started by may be
    /// relative to another folder or a symbolic link.
    static let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()

    /// In the child: the line the parent reads, flushed at once (a server's
    /// parent waits for it while the child goes on running).
    static func report(_ tag: String, _ payload: String) {
        print("\(tag) \(payload)")
        fflush(nil)  // every stream (Swift 6 refuses the global `stdout`)
    }

    /// Runs `asyncimage-bench ARGUMENTS` to its end and returns the payload of
    /// its last `TAG` line. `launcher`: a command that runs the rest of its
    /// arguments (`unshare ... exec "$@"`), or nothing.
    static func result(_ arguments: [String], tag: String, launcher: [String] = []) throws -> String {
        let argv = launcher + [executable.path] + arguments
        // Its standard error is this process's: the child's progress shows.
        let run = try ProcessRun.run(URL(fileURLWithPath: argv[0]), Array(argv.dropFirst()), errors: .passedThrough)
        let text = run.outputText
        guard let payload = payload(of: text, tag: tag) else {
            throw BenchError("\(arguments.first ?? "child") failed (status \(run.status)): \(text.suffix(500))")
        }
        return payload
    }

    /// `result` read as numbers separated by spaces (the measured runs' figures).
    static func numbers(_ arguments: [String], tag: String) throws -> [Double] {
        try result(arguments, tag: tag).split(separator: " ").compactMap { Double($0) }
    }

    /// Starts `asyncimage-bench ARGUMENTS` (a server), waits for its `TAG`
    /// line and leaves it running; it is stopped when this process exits
    /// (ChildProcessCleanup) unless its owner stops it first.
    static func start(_ arguments: [String], tag: String) throws -> (process: Process, payload: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        ChildProcessCleanup.register(process.processIdentifier)
        var text = Data()
        while !text.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            text.append(chunk)
        }
        guard let payload = payload(of: String(decoding: text, as: UTF8.self), tag: tag) else {
            process.terminate()
            process.waitUntilExit()
            ChildProcessCleanup.forget(process.processIdentifier)
            throw BenchError("\(arguments.first ?? "child") did not start: \(String(decoding: text, as: UTF8.self))")
        }
        return (process, payload)
    }

    /// What follows `TAG ` on the last line of `text` that starts with it.
    static func payload(of text: String, tag: String) -> String? {
        text.split(separator: "\n").last { $0.hasPrefix(tag + " ") }
            .map { String($0.dropFirst(tag.count + 1)).trimmingCharacters(in: .whitespaces) }
    }
}
