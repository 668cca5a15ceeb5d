import Foundation

/// nginx (Debian's `nginx` package, /usr/sbin/nginx) serving a folder on
/// 127.0.0.1, started as this process's child with a configuration of its
/// own in a temporary folder: no root needed, nothing outside that folder
/// written (pid file, error and access logs, temp paths), never any address
/// but 127.0.0.1.
///
/// - One worker per core, `sendfile`, keep-alive (100,000 requests per
///   connection), an open-file cache, Content-Type by extension.
/// - The port is picked free (bound to port 0 first); if another process
///   takes it before nginx binds it, the start is retried on another.
/// - Stopped by `stop()` or on deinit (SIGQUIT, then SIGTERM and SIGKILL if
///   it lingers), and on every other exit path (see `ChildProcessCleanup`).
final class NginxServer {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static let defaultExecutable = "/usr/sbin/nginx"

    /// Whether nginx is installed (apt-get install nginx).
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: defaultExecutable) }

    /// TLS on the port: the certificate and key files, and whether HTTP/2
    /// is offered (ALPN) or only HTTP/1.1.
    struct TLS {
        var certificate: String
        var key: String
        var http2: Bool
    }

    let port: Int
    let root: String
    let workers: Int
    let tls: TLS?
    /// The temporary folder with nginx.conf, the logs and nginx's temp paths.
    let prefix: URL
    private var pid: pid_t

    /// Starts nginx serving the files under `root` at `http://127.0.0.1:port/NAME`;
    /// returns once it accepts connections (at most 10 s).
    init(
        root: String, workers: Int = ProcessInfo.processInfo.activeProcessorCount,
        executable: String = NginxServer.defaultExecutable, tls: TLS? = nil
    ) throws {
        self.tls = tls
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw Failure(description: "\(executable) not found (apt-get install nginx)")
        }
        Self.removeStaleFolders()
        self.root = URL(fileURLWithPath: root).standardizedFileURL.path
        self.workers = max(1, workers)
        prefix = FileManager.default.temporaryDirectory.appendingPathComponent(
            "asyncimage-bench-nginx-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        for folder in ["", "temp"] {
            try FileManager.default.createDirectory(
                at: prefix.appendingPathComponent(folder), withIntermediateDirectories: true)
        }
        var lastError = ""
        for _ in 0..<5 {
            let port = try Self.freePort()
            let conf = prefix.appendingPathComponent("nginx.conf")
            try Self.configuration(root: self.root, port: port, workers: self.workers, prefix: prefix.path, tls: tls)
                .write(to: conf, atomically: true, encoding: .utf8)
            let pid = try Self.spawn(executable, prefix: prefix.path, conf: conf.path)
            switch Self.waitUntilListening(pid: pid, port: port) {
            case .listening:
                self.port = port
                self.pid = pid
                return
            case .exited:
                ChildProcessCleanup.forget(pid)
                lastError = (try? String(contentsOf: prefix.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
                // Someone took the port between our probe and nginx's bind: again.
                if lastError.contains("Address already in use") { continue }
            case .timedOut:
                kill(pid, SIGKILL)
                ChildProcessCleanup.reap(pid, within: 5)
                ChildProcessCleanup.forget(pid)
                lastError = "nginx did not accept connections within 10 s"
            }
            break
        }
        try? FileManager.default.removeItem(at: prefix)
        throw Failure(description: "nginx failed to start: \(lastError.suffix(2000))")
    }

    deinit { stop() }

    /// Stops nginx (SIGQUIT: a graceful stop; SIGTERM, then SIGKILL, if it
    /// takes over 5 s) and removes its temporary folder. Idempotent.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGQUIT)
        if !ChildProcessCleanup.reap(pid, within: 5) {
            FileHandle.standardError.write(Data("nginx \(pid) did not stop on SIGQUIT: killed\n".utf8))
        }
        ChildProcessCleanup.forget(pid)
        pid = 0
        try? FileManager.default.removeItem(at: prefix)
    }

    /// Removes the temporary folders of benchmarks that were killed (their
    /// pid, in the folder's name, no longer runs): a signal stops nginx but
    /// leaves its folder.
    static func removeStaleFolders() {
        let temporary = FileManager.default.temporaryDirectory
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary.path)) ?? [] {
            let parts = name.split(separator: "-")
            guard name.hasPrefix("asyncimage-bench-nginx-"), parts.count == 5, let owner = pid_t(parts[3]) else { continue }
            if kill(owner, 0) != 0 && errno == ESRCH { try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name)) }
        }
    }

    /// A base URL for `name`.
    func url(_ name: String) -> URL { URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/\(name)")! }

    /// The configuration: everything nginx writes goes under `prefix`.
    static func configuration(root: String, port: Int, workers: Int, prefix: String, tls: TLS? = nil) -> String {
        // A master running as root would switch its workers to `nobody`,
        // who may not read a checkout under /root: keep root's identity.
        let user = geteuid() == 0 ? "user root root;\n" : ""
        // With TLS: TLS 1.3 (one round trip), session tickets and a session
        // cache (resumption), HTTP/2 when asked for; a small send buffer so
        // that a cancelled stream's bytes stop soon (not megabytes queued in
        // the kernel ahead of the emulated link).
        var listen = "listen 127.0.0.1:\(port) backlog=1024"
        var tlsLines = ""
        if let tls {
            listen += " ssl sndbuf=128k" + (tls.http2 ? " http2" : "")
            tlsLines = """
                        ssl_certificate "\(tls.certificate)";
                        ssl_certificate_key "\(tls.key)";
                        ssl_protocols TLSv1.2 TLSv1.3;
                        ssl_session_cache shared:SSL:1m;
                        ssl_session_tickets on;
                        http2_max_concurrent_streams 128;
                """
        }
        return """
            \(user)daemon off;
            master_process on;
            worker_processes \(workers);
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 1024; }
            http {
                access_log \(prefix)/access.log combined buffer=64k flush=1s;
                client_body_temp_path \(prefix)/temp/body;
                proxy_temp_path \(prefix)/temp/proxy;
                fastcgi_temp_path \(prefix)/temp/fastcgi;
                uwsgi_temp_path \(prefix)/temp/uwsgi;
                scgi_temp_path \(prefix)/temp/scgi;
                types {
                    image/jpeg jpg jpeg;
                    image/png png;
                    image/gif gif;
                    image/webp webp;
                }
                default_type application/octet-stream;
                sendfile on;
                tcp_nopush on;
                tcp_nodelay on;
                keepalive_timeout 65;
                keepalive_requests 100000;
                open_file_cache max=10000 inactive=60s;
                server {
                    \(listen);
                    server_name localhost;
            \(tlsLines)
                    root "\(root)";
                    location / { }
                }
            }

            """
    }

    /// A port nothing listens on now: bound on 127.0.0.1 with port 0, then released.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = loopbackAddress(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        return address
    }

    /// Starts nginx in the foreground as a child, its output in `prefix`.
    /// From the main thread it runs under `setpriv --pdeathsig TERM`: the
    /// kernel stops it if this process is killed outright. (pdeathsig
    /// follows the thread that spawned the child, and only the main thread
    /// lives as long as the process.)
    private static func spawn(_ executable: String, prefix: String, conf: String) throws -> pid_t {
        var argv = [executable, "-p", prefix + "/", "-c", conf, "-e", prefix + "/error.log"]
        if Thread.isMainThread, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") {
            argv = ["/usr/bin/setpriv", "--pdeathsig", "TERM", "--"] + argv
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, prefix + "/stdout.log", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, prefix + "/stderr.log", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard status == 0 else { throw Failure(description: "posix_spawn \(argv[0]): \(String(cString: strerror(status)))") }
        ChildProcessCleanup.register(pid, signal: SIGTERM)
        return pid
    }

    private enum StartOutcome { case listening, exited, timedOut }

    /// Polls until a connection to the port succeeds or nginx exits.
    private static func waitUntilListening(pid: pid_t, port: Int) -> StartOutcome {
        let deadline = now() + 10
        while now() < deadline {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return .exited }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = loopbackAddress(port: port)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return .listening }
            usleep(20_000)
        }
        return .timedOut
    }
}
