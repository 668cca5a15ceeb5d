import Foundation
import LoopbackHTTP

/// The suite's origin server (test-engine/server/server.mjs), run by node on
/// 127.0.0.1 only (Scripts/loopback-only.mjs wraps its `listen`), on a port
/// the system picks.
final class Origin: Sendable {
    /// `http://127.0.0.1:PORT`.
    let url: URL
    private let child: ChildProcess

    /// How long node may take to start listening.
    static let startTimeout = 15.0

    /// Starts the origin; `echo` copies its log to standard error.
    init(_ location: SuiteLocation, scratch: URL, echo: Bool) throws(ChildProcess.Failure) {
        let output = Pipe()
        child = try ChildProcess(
            executable: location.node,
            arguments: [
                "--no-warnings", "--import", location.script("loopback-only.mjs"), "test-engine/server/server.mjs",
            ],
            directory: location.directory,
            environment: [
                "npm_config_protocol": "http",
                "npm_config_port": "0",  // the system picks a free one; loopback-only.mjs prints it
                "npm_config_pidfile": scratch.appendingPathComponent("origin.pid").path,
            ],
            standardOutput: output)
        let port = Locked<Int?>(nil)
        let listening = DispatchSemaphore(value: 0)
        // Drained for as long as node runs: a full pipe would stop the server.
        let reader = Thread {
            let marker = "conformance-origin-port "
            for line in Self.lines(of: output.fileHandleForReading) {
                if line.hasPrefix(marker), let number = Int(line.dropFirst(marker.count)) {
                    port.withLock { $0 = number }
                    listening.signal()
                } else if echo {
                    FileHandle.standardError.write(Data("origin: \(line)\n".utf8))
                }
            }
            listening.signal()  // node ended
        }
        reader.name = "asyncimage-conformance.origin-log"
        reader.start()
        _ = listening.wait(timeout: .now() + Self.startTimeout)
        guard let number = port.withLock({ $0 }) else {
            child.stop()
            throw ChildProcess.Failure(
                description: "the suite's origin server did not start listening within \(Int(Self.startTimeout)) s")
        }
        url = URL(string: "http://127.0.0.1:\(number)")!
    }

    /// Stops node (and waits for it).
    func stop() {
        child.stop()
    }

    /// The lines of `handle`, until end of file.
    private static func lines(of handle: FileHandle) -> AnyIterator<String> {
        var pending = Data()
        var ended = false
        return AnyIterator {
            while true {
                if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending = Data(pending[pending.index(after: newline)...])
                    return line
                }
                if ended {
                    guard !pending.isEmpty else { return nil }
                    defer { pending = Data() }
                    return String(decoding: pending, as: UTF8.self)
                }
                let chunk = handle.availableData
                if chunk.isEmpty { ended = true } else { pending.append(chunk) }
            }
        }
    }
}
