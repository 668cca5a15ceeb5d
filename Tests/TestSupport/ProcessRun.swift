import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Running another program from a test: the one way the package's tests
/// do it. Standard output and standard error go to files, read after the
/// child ends, so that neither stream can fill a pipe while the other is
/// read and a grandchild that keeps a pipe open cannot hold the wait; the
/// wait has a time limit, after which the child is stopped (SIGTERM, then
/// SIGKILL) and the run fails.
public enum ProcessRun {
    /// How a run ended.
    public struct Result: Sendable {
        public let status: Int32
        public let output: Data
        public let errors: Data

        /// Standard error as text.
        public var errorText: String { String(decoding: errors, as: UTF8.self) }
        /// Standard output as text.
        public var outputText: String { String(decoding: output, as: UTF8.self) }
    }

    /// Why a run did not end: it could not start, or ran past its limit.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Runs `executable` with `arguments` to its end (at most `timeLimit`
    /// seconds), in `directory` (nil: this process's), `environment` added
    /// to this process's.
    public static func run(
        _ executable: URL, _ arguments: [String], directory: URL? = nil, environment: [String: String] = [:],
        timeLimit: Double = 300
    ) throws -> Result {
        let folder = FileManager.default.temporaryDirectory
        let stem = "process-run-\(getpid())-\(UUID().uuidString.prefix(8))"
        let outFile = folder.appendingPathComponent("\(stem).out")
        let errFile = folder.appendingPathComponent("\(stem).err")
        defer {
            try? FileManager.default.removeItem(at: outFile)
            try? FileManager.default.removeItem(at: errFile)
        }
        guard FileManager.default.createFile(atPath: outFile.path, contents: nil),
            FileManager.default.createFile(atPath: errFile.path, contents: nil)
        else { throw Failure(description: "cannot create \(outFile.path)") }
        let out = try FileHandle(forWritingTo: outFile)
        let err = try FileHandle(forWritingTo: errFile)
        defer {
            try? out.close()
            try? err.close()
        }
        let process = make(executable, arguments, directory: directory, environment: environment, output: out)
        process.standardError = err
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let summary = ([executable.lastPathComponent] + arguments).joined(separator: " ")
        do {
            try process.run()
        } catch {
            throw Failure(description: "could not start \(summary): \(error)")
        }
        if exited.wait(timeout: .now() + timeLimit) == .timedOut {
            process.terminate()
            if exited.wait(timeout: .now() + 3) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                _ = exited.wait(timeout: .now() + 5)
            }
            throw Failure(description: "\(summary) ran past \(timeLimit) s and was stopped")
        }
        return Result(
            status: process.terminationStatus, output: (try? Data(contentsOf: outFile)) ?? Data(),
            errors: (try? Data(contentsOf: errFile)) ?? Data())
    }

    /// Starts `executable` for the test to stop (a worker, a server), in
    /// `directory` (nil: this process's), `environment` added to this
    /// process's; its standard output and error written to `log` (an open
    /// file), or discarded.
    public static func start(
        _ executable: URL, _ arguments: [String], directory: URL? = nil, environment: [String: String] = [:],
        log: FileHandle? = nil
    ) throws -> Process {
        let process = make(
            executable, arguments, directory: directory, environment: environment, output: log ?? FileHandle.nullDevice)
        try process.run()
        return process
    }

    /// A process not yet run: no standard input, standard output and error
    /// both to `output` (``run(_:_:directory:environment:timeLimit:)`` then
    /// gives standard error a file of its own).
    private static func make(
        _ executable: URL, _ arguments: [String], directory: URL?, environment: [String: String], output: FileHandle
    ) -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = output
        return process
    }
}
