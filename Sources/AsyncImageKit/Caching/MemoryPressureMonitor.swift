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
/// - **cgroup v2** `memory.events`: a change (inotify `IN_MODIFY`) in the
///   `high`, `max` or `oom` counters of this process's cgroup.
///
/// Either one may be missing (cgroup v1 machines, old kernels, no permission);
/// the monitor then watches what is there, and ``purge()`` still works.
public final class MemoryPressureMonitor: Sendable {
    /// The process-wide monitor. Caches register with it as they are made.
    public static let shared = MemoryPressureMonitor()

    private final class WeakCache: @unchecked Sendable {
        weak var cache: ImageCache?
        init(_ cache: ImageCache) { self.cache = cache }
    }

    private let caches = Locked<[WeakCache]>([])
    private let purges = Atomic<Int>(0)
    private let sources = Locked<[String]>([])

    private init() {
        startWatching()
    }

    /// What the monitor watches: `"psi"`, `"cgroup2"`, both, or neither.
    public var watchedSources: [String] { sources.withLock { $0 } }

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
    }

    func register(_ cache: ImageCache) {
        caches.withLock { list in
            list.removeAll { $0.cache == nil }
            list.append(WeakCache(cache))
        }
    }

    /// The memory limit of this process's cgroup (v2 `memory.max` or v1
    /// `memory.limit_in_bytes`), if one is set.
    static var cgroupMemoryLimit: Int? {
        for path in ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"] {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
                let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)), value > 0, value < (1 << 60)
            {
                return value
            }
        }
        return nil
    }

    private func startWatching() {
        var descriptors: [pollfd] = []
        var names: [String] = []

        let psi = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK | O_CLOEXEC)
        if psi >= 0 {
            let trigger = "some 150000 2000000"
            if write(psi, trigger, trigger.utf8.count + 1) > 0 {
                descriptors.append(pollfd(fd: psi, events: Int16(POLLPRI), revents: 0))
                names.append("psi")
            } else {
                close(psi)
            }
        }

        if let events = Self.cgroup2EventsPath() {
            let notify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
            if notify >= 0, inotify_add_watch(notify, events, UInt32(IN_MODIFY)) >= 0 {
                descriptors.append(pollfd(fd: notify, events: Int16(POLLIN), revents: 0))
                names.append("cgroup2")
            } else if notify >= 0 {
                close(notify)
            }
        }

        sources.withLock { $0 = names }
        guard !descriptors.isEmpty else { return }
        let watched = descriptors
        let thread = Thread { [self] in self.watch(watched) }
        thread.name = "AsyncImageKit.memory-pressure"
        thread.start()
    }

    private func watch(_ initial: [pollfd]) {
        var descriptors = initial
        var scratch = [UInt8](repeating: 0, count: 4096)
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            var pressure = false
            for index in descriptors.indices where descriptors[index].revents != 0 {
                if descriptors[index].revents & Int16(POLLPRI) != 0 { pressure = true }
                if descriptors[index].revents & Int16(POLLIN) != 0 {
                    // inotify: drain the events; any change to memory.events counts.
                    while read(descriptors[index].fd, &scratch, scratch.count) > 0 {}
                    pressure = true
                }
                if descriptors[index].revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                    // A broken source: poll() would report it again at once, for
                    // good, whatever its events. Stop watching it (poll skips fd -1).
                    if descriptors[index].revents & Int16(POLLNVAL) == 0 { close(descriptors[index].fd) }
                    descriptors[index].fd = -1
                }
                descriptors[index].revents = 0
            }
            if pressure { purge() }
            if descriptors.allSatisfy({ $0.fd < 0 }) { return }
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
