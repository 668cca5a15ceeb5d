import Foundation
import LoopbackHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// A child process (node, or git for the suite's commit) that is stopped
/// however the command ends: by its owner, or by ``Cleanup``.
final class ChildProcess: Sendable {
    /// Why a child could not be run or did not finish.
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let process: Process
    private let exited = DispatchSemaphore(value: 0)
    private let cleanupID: Locked<Int?> = Locked(nil)
    /// What the command line was, for messages.
    let summary: String

    /// Starts `executable` with `arguments`, in `directory`, with `environment`
    /// added to this process's. Output goes where `standardOutput` and
    /// `standardError` say (a `Pipe`, a `FileHandle`; nil: this process's own).
    init(
        executable: URL, arguments: [String], directory: URL? = nil, environment: [String: String] = [:],
        standardOutput: Any? = nil, standardError: Any? = nil
    ) throws(Failure) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        if let standardOutput { process.standardOutput = standardOutput }
        if let standardError { process.standardError = standardError }
        self.process = process
        self.summary = ([executable.lastPathComponent] + arguments.map { ($0 as NSString).lastPathComponent })
            .joined(separator: " ")
        let exited = self.exited
        process.terminationHandler = { _ in exited.signal() }
        do {
            try process.run()
        } catch {
            throw Failure(description: "could not start \(summary): \(error)")
        }
        let id = Cleanup.add { [self] in self.stop() }
        cleanupID.withLock { $0 = id }
    }

    /// Waits for the child to end, at most `seconds`; its exit status, or nil
    /// if it is still running.
    func wait(seconds: Double) -> Int32? {
        guard exited.wait(timeout: .now() + seconds) == .success else { return nil }
        exited.signal()  // later waits return at once
        if let id = cleanupID.withLock({ $0 }) { Cleanup.forget(id) }
        return process.terminationStatus
    }

    /// Stops the child (SIGTERM, then SIGKILL after 3 s) and waits for it.
    func stop() {
        guard process.isRunning else {
            _ = wait(seconds: 5)
            return
        }
        process.terminate()
        if wait(seconds: 3) == nil {
            kill(process.processIdentifier, SIGKILL)
            _ = wait(seconds: 5)
        }
    }

    /// Runs `executable` to its end (at most `seconds`) and returns its
    /// standard output; throws when it fails, fails to start or runs over.
    /// (The output goes to a file, not a pipe, so the wait is bounded even
    /// if the child leaves the pipe open.)
    static func output(of executable: URL, _ arguments: [String], seconds: Double = 30) throws(Failure) -> Data {
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(ConformanceRun.scratchPrefix)\(getpid())-\(UUID().uuidString.prefix(8)).out")
        guard FileManager.default.createFile(atPath: file.path, contents: nil),
            let handle = try? FileHandle(forWritingTo: file)
        else { throw Failure(description: "could not create \(file.path)") }
        defer {
            try? handle.close()
            try? FileManager.default.removeItem(at: file)
        }
        let child = try ChildProcess(executable: executable, arguments: arguments, standardOutput: handle)
        guard let status = child.wait(seconds: seconds) else {
            child.stop()
            throw Failure(description: "\(child.summary) did not finish within \(Int(seconds)) s")
        }
        guard status == 0 else { throw Failure(description: "\(child.summary) exited with status \(status)") }
        return (try? Data(contentsOf: file)) ?? Data()
    }

    /// The executable `name` on `PATH`, if any.
    static func onPath(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}
