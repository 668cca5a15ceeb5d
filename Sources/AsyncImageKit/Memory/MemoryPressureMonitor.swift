import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Empties every ``ImageCache`` (and ``PixelBufferPool/shared``) when the
/// system runs short of memory.
///
/// Linux has no Dispatch memory-pressure source, so a dedicated thread
/// watches what the kernel offers:
///
/// - **PSI** (`/proc/pressure/memory`): a trigger (`some 150000 2000000`, i.e.
///   tasks stalled on memory for 150 ms within 2 s) and `poll()` for `POLLPRI`.
/// - **cgroup v2** `memory.events` of this process's cgroup: any change
///   (inotify `IN_MODIFY`), i.e. one of its `low`, `high`, `max`, `oom` or
///   `oom_kill` counters went up: each means the cgroup is short of memory.
///
/// Either one may be missing (cgroup v1 machines, old kernels, no permission);
/// the monitor then watches what is there, and ``purge()`` still works.
public final class MemoryPressureMonitor: Sendable {
    /// The process-wide monitor. Caches register with it as they are made.
    public static let shared = MemoryPressureMonitor(sources: MemoryPressureMonitor.systemSources())

    /// A descriptor the watcher polls, and what readiness on it means.
    enum Source {
        /// A PSI trigger: `POLLPRI` when it fires (nothing to read).
        case psi(Int32)
        /// An inotify descriptor watching `memory.events`: `POLLIN`, drained on each wake.
        case inotify(Int32)

        var descriptor: Int32 {
            switch self {
            case .psi(let fd), .inotify(let fd): return fd
            }
        }

        var name: String {
            switch self {
            case .psi: return "psi"
            case .inotify: return "cgroup2"
            }
        }
    }

    private final class WeakCache: @unchecked Sendable {
        weak var cache: ImageCache?
        init(_ cache: ImageCache) { self.cache = cache }
    }

    private let caches = Locked<[WeakCache]>([])
    private let purges = Atomic<Int>(0)
    private let sources: [String]
    /// The write end of the pipe that stops the watcher (-1 when nothing is watched).
    private let stopWriter: Int32
    private let stopped = Atomic<Bool>(false)
    /// Called after every purge, on the thread that purged (tests).
    private let didPurge: (@Sendable () -> Void)?

    /// Watches `sources` (taking ownership of their descriptors) on a thread
    /// of its own, until ``stop()``.
    init(sources: [Source], didPurge: (@Sendable () -> Void)? = nil) {
        self.sources = sources.map(\.name)
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

    /// What the monitor watches: `"psi"`, `"cgroup2"`, both, or neither.
    public var watchedSources: [String] { sources }

    /// How many purges have happened (from pressure or ``purge()``).
    public var purgeCount: Int { purges.load(ordering: .relaxed) }

    /// Empties every registered cache and the pixel-buffer pool now, as memory pressure would.
    public func purge() {
        purges.add(1, ordering: .relaxed)
        let live = caches.withLock { list -> [ImageCache] in
            list.removeAll { $0.cache == nil }
            return list.compactMap(\.cache)
        }
        for cache in live { cache.removeAll() }
        PixelBufferPool.shared.removeAll()
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

    /// What the kernel offers this process: a PSI trigger, and inotify on its
    /// cgroup v2 `memory.events`.
    static func systemSources() -> [Source] {
        var sources: [Source] = []
        let psi = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK | O_CLOEXEC)
        if psi >= 0 {
            let trigger = "some 150000 2000000"
            if write(psi, trigger, trigger.utf8.count + 1) > 0 {
                sources.append(.psi(psi))
            } else {
                close(psi)
            }
        }
        if let events = cgroup2EventsPath(), let notify = inotifySource(watching: events) {
            sources.append(notify)
        }
        return sources
    }

    /// An inotify descriptor watching `path` for modifications.
    static func inotifySource(watching path: String) -> Source? {
        let notify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard notify >= 0 else { return nil }
        guard inotify_add_watch(notify, path, UInt32(IN_MODIFY)) >= 0 else {
            close(notify)
            return nil
        }
        return .inotify(notify)
    }

    private func watch(_ sources: [Source], stopReader: Int32) {
        var descriptors = sources.map { source -> pollfd in
            switch source {
            case .psi(let fd): return pollfd(fd: fd, events: Int16(POLLPRI), revents: 0)
            case .inotify(let fd): return pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            }
        }
        descriptors.append(pollfd(fd: stopReader, events: Int16(POLLIN), revents: 0))
        defer {
            for descriptor in descriptors where descriptor.fd >= 0 { close(descriptor.fd) }
        }
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if descriptors[descriptors.count - 1].revents != 0 { return }  // stopped
            var pressure = false
            for index in descriptors.indices.dropLast() where descriptors[index].revents != 0 {
                let revents = descriptors[index].revents
                descriptors[index].revents = 0
                if revents & Int16(POLLPRI) != 0 { pressure = true }
                if revents & Int16(POLLIN) != 0 {
                    // inotify: drain the events; any change to memory.events counts.
                    while read(descriptors[index].fd, &scratch, scratch.count) > 0 {}
                    pressure = true
                }
                if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
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

    /// `/sys/fs/cgroup/<this cgroup>/memory.events` when cgroup v2 is mounted.
    private static func cgroup2EventsPath() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("0::") {
            let path = "/sys/fs/cgroup" + line.dropFirst(3) + "/memory.events"
            if FileManager.default.fileExists(atPath: path) { return String(path) }
        }
        return nil
    }
}
