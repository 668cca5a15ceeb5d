import CImageCodecs
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a ``MemoryPressureMonitor`` learns that memory is short.
struct MemoryPressureSource: Sendable, Hashable, CustomStringConvertible {
    /// The kinds of source, in the order the monitor looks for a PSI trigger
    /// (the first that opens wins), plus cgroup v2 `memory.events` beside it.
    enum Kind: String, Sendable, Hashable, CaseIterable {
        /// systemd's memory pressure protocol: the path in
        /// `$MEMORY_PRESSURE_WATCH` (a PSI file, a FIFO or an `AF_UNIX`
        /// stream socket), with `$MEMORY_PRESSURE_WRITE` (Base64) written to
        /// it first.
        case systemdWatch = "MEMORY_PRESSURE_WATCH"
        /// The PSI file of this process's own cgroup (v2): `memory.pressure`.
        case cgroupPressure = "cgroup memory.pressure"
        /// The system-wide PSI file, `/proc/pressure/memory`.
        case systemPressure = "system memory pressure"
        /// This process's cgroup v2 `memory.events`: its `high`, `max`,
        /// `oom` or `oom_kill` counter went up.
        case cgroupEvents = "cgroup memory.events"
    }

    /// What kind of source it is.
    let kind: Kind
    /// The file (or socket, or FIFO) watched.
    let path: String

    /// Creates a description of a source.
    init(kind: Kind, path: String) {
        self.kind = kind
        self.path = path
    }

    /// The kind and the path, e.g. `cgroup memory.pressure /sys/fs/cgroup/system.slice/x.service/memory.pressure`.
    var description: String { "\(kind.rawValue) \(path)" }
}

/// Purges every ``ImageCache`` (and ``PixelBufferPool/shared``) when the
/// system runs short of memory, then returns freed heap memory to the kernel
/// (`malloc_trim`).
///
/// Linux has no Dispatch memory-pressure source, so a dedicated thread
/// watches what the system offers, in the order services are expected to
/// look:
///
/// 1. **systemd's protocol**: when `$MEMORY_PRESSURE_WATCH` is set, the path
///    it names, after writing the Base64-decoded `$MEMORY_PRESSURE_WRITE` to
///    it: `POLLPRI` on a PSI file, `POLLIN` on a FIFO or a socket (whose data
///    is read and discarded). `/dev/null` turns pressure handling off.
/// 2. Otherwise the **PSI file of this process's cgroup** (v2,
///    `memory.pressure`), with a trigger (`some 150000 2000000`: tasks stalled
///    on memory for 150 ms within 2 s) and `poll()` for `POLLPRI`;
/// 3. otherwise the **system-wide PSI** file, `/proc/pressure/memory`, the same way.
/// 4. Beside the PSI source, cgroup v2 **`memory.events`** of this process's
///    cgroup (inotify `IN_MODIFY`): a rise of its `high`, `max`, `oom` or
///    `oom_kill` counter.
///
/// Any of them may be missing (cgroup v1 machines, old kernels, no
/// permission); the monitor then watches what is there (see ``watchedSources``),
/// and ``purge()`` still works.
///
/// A purge keeps thumbnails (see ``ImageCache``) and whatever is still in
/// use: an image a target or a model holds is found again by its cache.
public final class MemoryPressureMonitor: Sendable {
    /// The process-wide monitor. Caches register with it as they are made.
    public static let shared = MemoryPressureMonitor(sources: MemoryPressureMonitor.systemSources())

    /// A descriptor the watcher polls, and what readiness on it means.
    struct Source: Sendable {
        enum Signal: Sendable {
            /// A PSI trigger: `POLLPRI` when it fires (nothing to read).
            case priority
            /// A FIFO or a socket: `POLLIN`, data read and discarded; end of file stops it.
            case readable
            /// An inotify descriptor watching `memory.events`: `POLLIN`,
            /// drained, then the counters read again.
            case events(baseline: [String: Int])
        }

        let descriptor: Int32
        let signal: Signal
        let info: MemoryPressureSource

        /// A PSI-style descriptor (tests: any descriptor that can raise `POLLPRI`).
        static func psi(_ descriptor: Int32, kind: MemoryPressureSource.Kind = .systemPressure, path: String = "") -> Source {
            Source(descriptor: descriptor, signal: .priority, info: MemoryPressureSource(kind: kind, path: path))
        }

        var events: Int16 {
            switch signal {
            case .priority: return Int16(POLLPRI)
            case .readable, .events: return Int16(POLLIN)
            }
        }

        /// The short name of ``MemoryPressureMonitor/watchedSources``.
        var name: String {
            switch info.kind {
            case .systemdWatch: return "systemd"
            case .cgroupPressure, .systemPressure: return "psi"
            case .cgroupEvents: return "cgroup2"
            }
        }
    }

    /// Where ``systemSources(_:)`` looks: the real system, or a test's stand-ins.
    struct System {
        /// The environment (`MEMORY_PRESSURE_WATCH`, `MEMORY_PRESSURE_WRITE`).
        var environment: [String: String]
        /// The text of `/proc/self/cgroup`, nil when unreadable.
        var membership: String?
        /// Where cgroup v2 is mounted.
        var cgroupRoot = "/sys/fs/cgroup"
        /// The system-wide PSI file.
        var systemPressure = "/proc/pressure/memory"

        static var live: System {
            System(
                environment: ProcessInfo.processInfo.environment,
                membership: try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))
        }

        /// This process's cgroup v2 directory (`0::/path`), if the membership names one.
        var cgroup2Directory: String? {
            guard let membership else { return nil }
            for line in membership.split(separator: "\n") where line.hasPrefix("0::/") {
                let path = line.dropFirst(3).split(separator: "/").joined(separator: "/")
                return path.isEmpty ? cgroupRoot : cgroupRoot + "/" + path
            }
            return nil
        }
    }

    /// The PSI trigger written to a cgroup's or the system's pressure file
    /// (NUL-terminated, as the kernel's documentation writes it).
    static let trigger = Array("some 150000 2000000".utf8) + [0]

    /// The `memory.events` counters whose rise means pressure.
    static let pressureCounters = ["high", "max", "oom", "oom_kill"]

    private final class WeakCache: @unchecked Sendable {
        weak var cache: ImageCache?
        init(_ cache: ImageCache) { self.cache = cache }
    }

    private let caches = Locked<[WeakCache]>([])
    private let purges = Atomic<Int>(0)
    private let watched: [MemoryPressureSource]
    private let names: [String]
    /// The write end of the pipe that stops the watcher (-1 when nothing is watched).
    private let stopWriter: Int32
    private let stopped = Atomic<Bool>(false)
    /// Called after every purge, on the thread that purged (tests).
    private let didPurge: (@Sendable () -> Void)?

    /// Watches `sources` (taking ownership of their descriptors) on a thread
    /// of its own, until ``stop()``.
    init(sources: [Source], didPurge: (@Sendable () -> Void)? = nil) {
        self.watched = sources.map(\.info)
        self.names = sources.map(\.name)
        self.didPurge = didPurge
        var pipeEnds: [Int32] = [-1, -1]
        guard !sources.isEmpty, pipe(&pipeEnds) == 0 else {
            stopWriter = -1
            sources.forEach { close($0.descriptor) }
            return
        }
        pipeEnds.forEach { _ = fcntl($0, F_SETFD, FD_CLOEXEC) }
        stopWriter = pipeEnds[1]
        let stopReader = pipeEnds[0]
        let thread = Thread { [self] in self.watch(sources, stopReader: stopReader) }
        thread.name = "AsyncImageKit.memory-pressure"
        thread.start()
    }

    /// What the monitor watches, in the order it chose them: at most one PSI
    /// source (systemd's, the cgroup's or the system's) and `memory.events`.
    var sources: [MemoryPressureSource] { watched }

    /// Short names of the sources watched: `"systemd"` (`$MEMORY_PRESSURE_WATCH`),
    /// `"psi"` (a cgroup's or the system's PSI file), `"cgroup2"`
    /// (`memory.events`).
    public var watchedSources: [String] { names }

    /// How many purges have happened (from pressure or ``purge()``).
    public var purgeCount: Int { purges.load(ordering: .relaxed) }

    /// Does now what memory pressure does: every registered cache drops its
    /// images below ``ImageCacheClass/thumbnail`` (or, when pressure comes
    /// again before any image is stored, all of them; images still in use
    /// stay findable), the pixel-buffer pool gives its buffers back, and
    /// `malloc_trim(0)` returns the heap's free memory to the kernel.
    public func purge() {
        purges.add(1, ordering: .relaxed)
        let live = caches.withLock { list -> [ImageCache] in
            list.removeAll { $0.cache == nil }
            return list.compactMap(\.cache)
        }
        for cache in live { cache.purgeForMemoryPressure() }
        PixelBufferPool.shared.removeAll()
        _ = aiv_trim_heap()  // malloc_trim(0) on glibc
        didPurge?()
    }

    func register(_ cache: ImageCache) {
        caches.withLock { list in
            list.removeAll { $0.cache == nil }
            list.append(WeakCache(cache))
        }
    }

    /// Stops watching and closes the descriptors (the shared monitor never stops).
    func stop() {
        // Once: a second close could hit a descriptor reused by then.
        guard stopWriter >= 0, !stopped.exchange(true, ordering: .relaxed) else { return }
        close(stopWriter)  // the watcher sees POLLHUP on the read end
    }

    /// The memory limit of this process's cgroup, if one is set: the smallest
    /// v2 `memory.max` or v1 `memory.limit_in_bytes` of its own cgroup and
    /// every ancestor (a parent's limit binds its children too).
    static var cgroupMemoryLimit: Int? {
        guard let membership = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        return cgroupMemoryLimit(membership: membership, root: "/sys/fs/cgroup")
    }

    /// ``cgroupMemoryLimit`` for a `/proc/self/cgroup` text and a cgroup mount root.
    static func cgroupMemoryLimit(membership: String, root: String) -> Int? {
        var limit: Int?
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3, fields[2].hasPrefix("/") else { continue }
            let (base, file): (String, String)
            if fields[0] == "0" && fields[1].isEmpty {
                (base, file) = (root, "memory.max")
            } else if fields[1].split(separator: ",").contains("memory") {
                (base, file) = (root + "/memory", "memory.limit_in_bytes")
            } else {
                continue
            }
            var path = fields[2].split(separator: "/").map(String.init)
            while true {
                let directory = ([base] + path).joined(separator: "/")
                if let text = try? String(contentsOfFile: directory + "/" + file, encoding: .utf8),
                    let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0, value < (1 << 60)
                {
                    limit = min(limit ?? .max, value)
                }
                if path.isEmpty { break }
                path.removeLast()
            }
        }
        return limit
    }

    /// What this process may watch, in order (see the overview): systemd's
    /// `$MEMORY_PRESSURE_WATCH`, else its cgroup's `memory.pressure`, else
    /// the system's; and its cgroup v2 `memory.events`.
    static func systemSources(_ system: System = .live) -> [Source] {
        let watch = system.environment["MEMORY_PRESSURE_WATCH"]
        if watch == "/dev/null" { return [] }  // the service manager turned it off
        var sources: [Source] = []
        var pressure: Source?
        if let watch, watch.hasPrefix("/") {
            let write = system.environment["MEMORY_PRESSURE_WRITE"]
            if let write, Data(base64Encoded: write) == nil {
                pressure = nil  // unreadable instructions: fall back to the kernel's files
            } else {
                pressure = watchSource(path: watch, write: write.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) })
            }
        }
        let cgroup = system.cgroup2Directory
        if pressure == nil, let cgroup {
            pressure = psiSource(path: cgroup + "/memory.pressure", kind: .cgroupPressure)
        }
        if pressure == nil {
            pressure = psiSource(path: system.systemPressure, kind: .systemPressure)
        }
        if let pressure { sources.append(pressure) }
        if let cgroup, let events = inotifySource(watching: cgroup + "/memory.events") {
            sources.append(events)
        }
        return sources
    }

    /// A PSI file opened for a trigger: `POLLPRI` when it fires.
    static func psiSource(path: String, kind: MemoryPressureSource.Kind, trigger: [UInt8] = trigger) -> Source? {
        let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard writeAll(fd, trigger) else {
            close(fd)
            return nil
        }
        return .psi(fd, kind: kind, path: path)
    }

    /// systemd's memory pressure protocol: `path` is a PSI (regular) file
    /// (`POLLPRI`), a FIFO or an `AF_UNIX` stream socket (`POLLIN`); `write`
    /// goes to it right after opening. (On a FIFO this process may read its
    /// own `write` back: one purge at start.)
    static func watchSource(path: String, write: [UInt8]?) -> Source? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let type = status.st_mode & S_IFMT
        let fd: Int32
        let signal: Source.Signal
        if type == S_IFSOCK {
            fd = connectedSocket(path)
            signal = .readable
        } else {
            fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
            signal = type == S_IFIFO ? .readable : .priority
        }
        guard fd >= 0 else { return nil }
        if let write, !write.isEmpty, !writeAll(fd, write) {
            close(fd)
            return nil
        }
        return Source(descriptor: fd, signal: signal, info: MemoryPressureSource(kind: .systemdWatch, path: path))
    }

    /// A non-blocking stream socket connected to the `AF_UNIX` socket at `path`, or -1.
    private static func connectedSocket(_ path: String) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return -1 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        // Non-blocking from the start: a peer whose backlog is full fails the
        // connect (EAGAIN) instead of stalling whoever made the first cache.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return -1 }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Writes every byte (retrying short writes); false on an error.
    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// An inotify descriptor watching `path` (a cgroup's `memory.events`)
    /// for modifications, with the counters it holds now.
    static func inotifySource(watching path: String) -> Source? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let notify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard notify >= 0 else { return nil }
        guard inotify_add_watch(notify, path, UInt32(IN_MODIFY)) >= 0 else {
            close(notify)
            return nil
        }
        return Source(
            descriptor: notify, signal: .events(baseline: eventCounters(text)),
            info: MemoryPressureSource(kind: .cgroupEvents, path: path))
    }

    /// The `name value` lines of a `memory.events` text.
    static func eventCounters(_ text: String) -> [String: Int] {
        var counters: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, let value = Int(fields[1]) { counters[String(fields[0])] = value }
        }
        return counters
    }

    /// Whether a pressure counter rose from `baseline` to `now`; updates
    /// `baseline` with what `now` has (a counter missing from a half-written
    /// file is left as it was).
    static func countersRose(from baseline: inout [String: Int], to now: [String: Int]) -> Bool {
        var rose = false
        for name in pressureCounters {
            guard let value = now[name] else { continue }
            if value > baseline[name, default: 0] { rose = true }
            baseline[name] = value
        }
        return rose
    }

    private func watch(_ sources: [Source], stopReader: Int32) {
        var descriptors = sources.map { pollfd(fd: $0.descriptor, events: $0.events, revents: 0) }
        descriptors.append(pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0))
        var baselines = sources.map { source -> [String: Int] in
            if case .events(let baseline) = source.signal { return baseline }
            return [:]
        }
        defer {
            for descriptor in descriptors where descriptor.fd >= 0 { close(descriptor.fd) }
        }
        var scratch = [UInt8](repeating: 0, count: 4096)
        /// Reads until nothing is left; false at end of file (the peer is gone).
        func drain(_ fd: Int32) -> (read: Bool, open: Bool) {
            var any = false
            while true {
                let count = read(fd, &scratch, scratch.count)
                if count > 0 {
                    any = true
                } else if count == 0 {
                    return (any, false)
                } else {
                    return (any, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                }
            }
        }
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[descriptors.count - 1].revents != 0 { return }  // stopped
            var pressure = false
            for index in sources.indices where descriptors[index].revents != 0 {
                let revents = descriptors[index].revents
                descriptors[index].revents = 0
                var broken = revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0
                switch sources[index].signal {
                case .priority:
                    if revents & Int16(POLLPRI) != 0 { pressure = true }
                case .readable:
                    if revents & Int16(POLLIN) != 0 {
                        let (read, open) = drain(descriptors[index].fd)
                        if read { pressure = true }
                        if !open { broken = true }
                    }
                case .events:
                    if revents & Int16(POLLIN) != 0 {
                        _ = drain(descriptors[index].fd)
                        if let text = try? String(contentsOfFile: sources[index].info.path, encoding: .utf8),
                            Self.countersRose(from: &baselines[index], to: Self.eventCounters(text))
                        {
                            pressure = true
                        }
                    }
                }
                if broken {
                    // A broken source: poll() would report it again at once, for
                    // good, whatever its events. Stop watching it (poll skips fd -1).
                    if revents & Int16(POLLNVAL) == 0 { close(descriptors[index].fd) }
                    descriptors[index].fd = -1
                }
            }
            if pressure { purge() }
            if descriptors.dropLast().allSatisfy({ $0.fd < 0 }) { return }
        }
    }
}
