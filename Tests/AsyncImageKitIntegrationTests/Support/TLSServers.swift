import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Real TLS servers from Debian's packages, started and stopped by the tests
/// on 127.0.0.1 only: `nghttpd` (HTTP/2, package nghttp2-server) and
/// `openssl s_server` (HTTP/1.1, package openssl), with certificates made at
/// test time by the `openssl` command; and Squid (package squid), the
/// caching forward proxy of the proxy tests (see ``SquidProxy``).
///
/// Under CI (`CI=true`) a missing program fails the test; elsewhere the test
/// is skipped with a message (`./quickstart test` installs them all).
enum ExternalTool {
    /// The Debian package of each program.
    static let packages = ["nghttpd": "nghttp2-server", "openssl": "openssl", "squid": "squid"]

    /// The program's path (`nghttpd` lives in /usr/sbin, which a user's
    /// PATH may lack), or a failure (CI) / skip (elsewhere).
    static func path(_ name: String) throws -> String {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        for folder in folders where !folder.isEmpty {
            let candidate = folder + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        let message = "\(name) not found (Debian package \(packages[name] ?? name); ./quickstart test installs it)"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail(message)
            throw XCTSkip("failed: \(message)")
        }
        throw XCTSkip(message + "; the tests that need it are skipped")
    }

    /// Runs `name` with `arguments` in `folder` and waits for it; throws with
    /// its output when it fails.
    static func run(_ name: String, _ arguments: [String], in folder: URL) throws {
        let result = try ProcessRun.run(URL(fileURLWithPath: try path(name)), arguments, directory: folder)
        guard result.status == 0 else {
            throw ToolFailure(
                description: "\(name) \(arguments.joined(separator: " ")) exited \(result.status): \(result.outputText)\(result.errorText)")
        }
    }

    /// A new, empty file at `url`, open for writing a program's output.
    static func openLog(_ url: URL) throws -> FileHandle {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw ToolFailure(description: "cannot create \(url.path)")
        }
        return try FileHandle(forWritingTo: url)
    }

    struct ToolFailure: Error, CustomStringConvertible {
        let description: String
    }
}

/// A throwaway certificate authority and a server certificate it signed for
/// `127.0.0.1` (subject alternative name `IP:127.0.0.1`, or another name to
/// make a certificate for the wrong host), as PEM files.
struct TestCertificates {
    /// The authority's certificate: what a client must trust.
    let authority: URL
    /// The server's certificate and private key.
    let certificate: URL
    let key: URL

    /// Makes a fresh authority named `name` and a server certificate for
    /// `subjectAltName` in `folder` (created).
    static func make(
        in folder: URL, name: String = "AsyncImageKit test CA", subjectAltName: String = "IP:127.0.0.1"
    ) throws -> TestCertificates {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let ecKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try ExternalTool.run(
            "openssl",
            ["req", "-x509"] + ecKey + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=\(name)",
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            ], in: folder)
        try ExternalTool.run(
            "openssl", ["req", "-new"] + ecKey + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
            in: folder)
        let extensions = """
            subjectAltName=\(subjectAltName)
            basicConstraints=critical,CA:FALSE
            keyUsage=critical,digitalSignature,keyEncipherment
            extendedKeyUsage=serverAuth

            """
        try Data(extensions.utf8).write(to: folder.appendingPathComponent("server.ext"))
        try ExternalTool.run(
            "openssl",
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "1",
                "-days", "2", "-extfile", "server.ext", "-out", "server.pem",
            ], in: folder)
        return TestCertificates(
            authority: folder.appendingPathComponent("ca.pem"), certificate: folder.appendingPathComponent("server.pem"),
            key: folder.appendingPathComponent("server.key"))
    }
}

/// A server program running on a free port of 127.0.0.1 until ``stop()``.
final class ServerProcess: @unchecked Sendable {
    let port: Int
    let process: Process
    private let log: URL

    /// Starts `name` with the arguments `arguments(port)` in `folder`, on a
    /// free port of 127.0.0.1, and returns once it accepts connections
    /// (polled with TCP connects; a port taken meanwhile by someone else
    /// means another try on another port).
    init(_ name: String, in folder: URL, arguments: (Int) -> [String]) throws {
        let executable = URL(fileURLWithPath: try ExternalTool.path(name))
        var failures: [String] = []
        for attempt in 1...5 {
            let port = try Self.freePort()
            let log = folder.appendingPathComponent("\(name)-\(port).log")
            let output = try ExternalTool.openLog(log)
            let process = try ProcessRun.start(executable, arguments(port), directory: folder, log: output)
            try? output.close()
            if Self.waitUntilListening(port, process) {
                self.port = port
                self.process = process
                self.log = log
                return
            }
            Self.kill(process)
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            failures.append("attempt \(attempt) on port \(port): \(text)")
        }
        throw ExternalTool.ToolFailure(description: "\(name) did not start: \(failures.joined(separator: "; "))")
    }

    deinit { stop() }

    /// `https://127.0.0.1:PORT` followed by `path`.
    func url(_ path: String) -> URL { URL(string: "https://127.0.0.1:\(port)\(path)")! }

    /// What the server printed.
    var output: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Stops the server and waits for it to exit.
    func stop() { Self.kill(process) }

    /// Kills `process` (SIGKILL: a child started from a Dispatch or
    /// concurrency thread inherits that thread's blocked signals, SIGTERM
    /// among them, and nghttpd does not unblock it) and waits for it.
    static func kill(_ process: Process) {
        if process.isRunning {
            _ = Glibc.kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    /// A port of 127.0.0.1 nobody listens on right now (the system's choice).
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ExternalTool.ToolFailure(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw ExternalTool.ToolFailure(description: "bind: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Polls TCP connects to 127.0.0.1:`port` until one succeeds (true), the
    /// process exits, or 15 seconds pass (false).
    static func waitUntilListening(_ port: Int, _ process: Process) -> Bool {
        let deadline = Date().addingTimeInterval(15)
        while process.isRunning, Date() < deadline {
            if canConnect(port) { return process.isRunning }
            usleep(10_000)  // polling interval, not an ordering
        }
        return false
    }

    private static func canConnect(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

extension XCTestCase {
    /// `nghttpd` serving `docroot` over HTTP/2 with TLS on 127.0.0.1 (and
    /// no other address), stopped when the test ends.
    func startHTTP2Server(docroot: URL, certificates: TestCertificates) throws -> ServerProcess {
        let server = try ServerProcess("nghttpd", in: docroot.deletingLastPathComponent()) { port in
            ["--address=127.0.0.1", "--htdocs=\(docroot.path)", "\(port)", certificates.key.path, certificates.certificate.path]
        }
        addTeardownBlock { server.stop() }
        return server
    }

    /// `openssl s_server -HTTP` on 127.0.0.1: each file of `docroot` holds a
    /// whole HTTP/1.1 response (see ``httpResponse(_:contentType:)``); one
    /// connection at a time, closed after each response. Stopped when the
    /// test ends.
    func startHTTP1Server(docroot: URL, certificates: TestCertificates) throws -> ServerProcess {
        let server = try ServerProcess("openssl", in: docroot) { port in
            [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificates.certificate.path, "-key",
                certificates.key.path, "-HTTP", "-quiet",
            ]
        }
        addTeardownBlock { server.stop() }
        return server
    }
}

/// A whole HTTP/1.1 response around `body`, for `openssl s_server -HTTP`.
func httpResponse(_ body: Data, contentType: String) -> Data {
    Data("HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
}
