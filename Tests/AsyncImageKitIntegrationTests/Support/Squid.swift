import Foundation
import TestSupport
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Squid (Debian's `squid`, 5.7 on Debian 12) as a caching forward proxy on
/// 127.0.0.1, for the tests of a fleet's shared tier: its own configuration,
/// logs and memory cache in a folder of its own, no disk cache, no helper
/// processes, and nothing reached but 127.0.0.1.
///
/// - Started with `squid -N -f CONF` (no daemon: this process's child) on a
///   free port, and with `tls`, an `https_port` too (TLS to the proxy, with
///   a certificate for 127.0.0.1 from a throwaway authority: ``certificates``);
///   ready once it accepts connections.
/// - Names in `hosts` resolve to 127.0.0.1 through a hosts file of its own;
///   its DNS resolver points at 127.0.0.1, so no query leaves the machine.
/// - Its access rules: clients on 127.0.0.1 to 127.0.0.1 (any port,
///   `CONNECT` included); everything else 403.
/// - Stopped by ``stop()`` (SIGKILL, then reaped). A watchdog shell kills it
///   within a second should this process die first (a test run killed by a
///   timeout), so no Squid outlives the tests.
///
/// Under `CI=true` a missing `squid` fails the test; elsewhere it is
/// skipped (``ExternalTool``).
final class SquidProxy: @unchecked Sendable {
    let folder: URL
    private let server: ServerProcess
    private let watchdog: Process
    /// The `https_port`, when started with TLS.
    let httpsPort: Int?
    /// The `https_port`'s certificate and its authority, when started with TLS.
    let certificates: TestCertificates?

    init(hosts: [String], tls: Bool = false) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("squid-\(UUID().uuidString)")
        self.folder = folder
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // Run as root, Squid works as `proxy`: it must write its logs
            // here and read the certificate's key.
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: folder.path)
            let certificates = tls ? try TestCertificates.make(in: folder.appendingPathComponent("tls")) : nil
            for file in [certificates?.certificate, certificates?.key].compactMap({ $0 }) {
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
            }
            let hostsLine = "127.0.0.1 localhost \(hosts.joined(separator: " "))\n"
            try Data(hostsLine.utf8).write(to: folder.appendingPathComponent("hosts"))
            let httpsPort = certificates == nil ? nil : try ServerProcess.freePort()
            let configuration = folder.appendingPathComponent("squid.conf")
            server = try ServerProcess("squid", in: folder) { port in
                let text = Self.configuration(port: port, httpsPort: httpsPort, certificates: certificates, folder: folder)
                try? Data(text.utf8).write(to: configuration)
                return ["-N", "-f", configuration.path]
            }
            self.certificates = certificates
            self.httpsPort = httpsPort
        } catch {
            try? FileManager.default.removeItem(at: folder)
            throw error
        }
        let squid = server.process.processIdentifier
        // Without it, stop() still ends Squid (a process never run has no identifier).
        watchdog =
            (try? ProcessRun.start(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "while kill -0 \(getpid()) && kill -0 \(squid); do sleep 1; done 2>/dev/null; kill -9 \(squid) 2>/dev/null"]))
            ?? Process()
        if let httpsPort, !ServerProcess.waitUntilListening(httpsPort, server.process) {
            let text = log
            stop()
            throw ExternalTool.ToolFailure(description: "squid's https_port \(httpsPort) did not open: \(text)")
        }
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`: the proxy's URL.
    var url: URL { URL(string: "http://127.0.0.1:\(server.port)")! }

    /// `https://127.0.0.1:PORT` (TLS to the proxy), when started with TLS.
    var httpsURL: URL? { httpsPort.map { URL(string: "https://127.0.0.1:\($0)")! } }

    /// What Squid wrote to its cache log (and its standard output).
    var log: String {
        let cacheLog = (try? String(contentsOf: folder.appendingPathComponent("cache.log"), encoding: .utf8)) ?? ""
        return server.output + cacheLog
    }

    /// Its access log: a line per request (`TCP_MISS/200`, `TCP_MEM_HIT/200`...).
    var accessLog: String {
        (try? String(contentsOf: folder.appendingPathComponent("access.log"), encoding: .utf8)) ?? ""
    }

    /// Kills Squid and its watchdog, waits for both, and removes the folder.
    func stop() {
        if watchdog.isRunning || watchdog.processIdentifier != 0 { ServerProcess.kill(watchdog) }
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    private static func configuration(port: Int, httpsPort: Int?, certificates: TestCertificates?, folder: URL) -> String {
        var lines = [
            "http_port 127.0.0.1:\(port)",
            "visible_hostname asyncimagekit-squid",
            "pid_filename none",
            "cache_log \(folder.path)/cache.log",
            "access_log stdio:\(folder.path)/access.log",
            "cache_store_log none",
            "netdb_filename none",
            "coredump_dir \(folder.path)",
            "hosts_file \(folder.path)/hosts",
            "dns_nameservers 127.0.0.1",
            // No ICMP pinger (a child process that would outlive a SIGKILL), no digests.
            "pinger_enable off",
            "digest_generation off",
            // A memory cache only: no cache_dir, so no `squid -z` and no unlinkd.
            "cache_mem 16 MB",
            "maximum_object_size_in_memory 1 MB",
            "shutdown_lifetime 0 seconds",
            // In place of Debian's Safe_ports and SSL_ports rules: loopback to loopback only.
            "acl from_loopback src 127.0.0.1/32",
            "acl to_loopback dst 127.0.0.1/32",
            "http_access allow from_loopback to_loopback",
            "http_access deny all",
        ]
        if let httpsPort, let certificates {
            lines.append("https_port 127.0.0.1:\(httpsPort) tls-cert=\(certificates.certificate.path) tls-key=\(certificates.key.path)")
        }
        if getuid() == 0 { lines.append("cache_effective_user proxy") }
        return lines.joined(separator: "\n") + "\n"
    }
}
