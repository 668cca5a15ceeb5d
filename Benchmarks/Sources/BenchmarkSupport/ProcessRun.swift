import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Running another program from the benchmark: the one way this package
/// does it (the root's tests have their own, `TestSupport.ProcessRun`).
/// A stream that is read goes to a file, read after the child ends, so
/// that neither stream can fill a pipe while the other is read; a stream
/// can instead be this process's (a child's progress lines) or discarded.
/// With a time limit, a child that runs past it is stopped (SIGTERM, then
/// SIGKILL) and the run fails; the benchmark's own children (timed
/// workloads) run without one.
package enum ProcessRun {
    /// Where one of the child's streams goes.
    package enum Stream: Sendable {
        /// Kept and returned.
        case captured
        /// This process's own (the child's progress shows as it runs).
        case passedThrough
        /// Thrown away.
        case discarded
    }

    /// How a run ended: its status and its captured streams (empty when not captured).
    package struct Result: Sendable {
        package let status: Int32
        package let output: Data
        package let errors: Data

        package var outputText: String { String(decoding: output, as: UTF8.self) }
        package var errorText: String { String(decoding: errors, as: UTF8.self) }
    }

    /// Why a run did not end: it could not start, or ran past its limit.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `executable` with `arguments` to its end, in `directory` (nil:
    /// this process's), `environment` added to this process's.
    package static func run(
        _ executable: URL, _ arguments: [String], directory: URL? = nil, environment: [String: String] = [:],
        output: Stream = .captured, errors: Stream = .captured, timeLimit: Double? = nil
    ) throws -> Result {
        let folder = FileManager.default.temporaryDirectory
        let stem = "bench-run-\(getpid())-\(UUID().uuidString.prefix(8))"
        let files = (folder.appendingPathComponent("\(stem).out"), folder.appendingPathComponent("\(stem).err"))
        defer {
            try? FileManager.default.removeItem(at: files.0)
            try? FileManager.default.removeItem(at: files.1)
        }
        func handle(_ stream: Stream, _ file: URL) throws -> FileHandle? {
            switch stream {
            case .passedThrough: return nil
            case .discarded: return FileHandle.nullDevice
            case .captured:
                guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
                    throw Failure(description: "cannot create \(file.path)")
                }
                return try FileHandle(forWritingTo: file)
            }
        }
        let out = try handle(output, files.0)
        let err = try handle(errors, files.1)
        defer {
            if output == .captured { try? out?.close() }
            if errors == .captured { try? err?.close() }
        }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = FileHandle.nullDevice
        if let out { process.standardOutput = out }
        if let err { process.standardError = err }
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let summary = ([executable.lastPathComponent] + arguments.prefix(3)).joined(separator: " ")
        do {
            try process.run()
        } catch {
            throw Failure(description: "could not start \(summary): \(error)")
        }
        if let timeLimit, exited.wait(timeout: .now() + timeLimit) == .timedOut {
            process.terminate()
            if exited.wait(timeout: .now() + 3) == .timedOut {
                kill(process.processIdentifier, SIGKILL)
                _ = exited.wait(timeout: .now() + 5)
            }
            throw Failure(description: "\(summary) ran past \(timeLimit) s and was stopped")
        }
        if timeLimit == nil { exited.wait() }
        func read(_ stream: Stream, _ file: URL) -> Data {
            stream == .captured ? (try? Data(contentsOf: file)) ?? Data() : Data()
        }
        return Result(status: process.terminationStatus, output: read(output, files.0), errors: read(errors, files.1))
    }
}
