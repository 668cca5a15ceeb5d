import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What this process holds and uses, read from `/proc/self` and `getrusage`:
/// the load test's and the soak's resource accounting.
public enum ProcessResources {
    /// Open file descriptors: the entries of `/proc/self/fd`, less the one
    /// the listing itself opens.
    public static var openDescriptors: Int {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return -1 }
        return names.count - 1
    }

    /// Resident memory in bytes (`/proc/self/statm`, second field, in pages).
    public static var residentBytes: Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// CPU seconds (user and system, every thread) used so far.
    public static var cpuSeconds: Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Gives the heap's free memory back to the kernel (glibc's
    /// `malloc_trim(0)`, found at run time: Swift's Glibc module does not
    /// declare it), so that RSS shows what is in use rather than what was
    /// once used.
    public static func trimHeap() {
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }

    /// Whether this process runs under ThreadSanitizer (its runtime is linked in).
    public static var isThreadSanitized: Bool {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil
    }

    /// Whether this process runs under AddressSanitizer, whose quarantine
    /// holds freed memory (up to 256 MB) and so grows the RSS by itself:
    /// there LeakSanitizer, not the RSS, says whether memory leaks.
    public static var isAddressSanitized: Bool {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__asan_init") != nil
    }

    /// A snapshot of descriptors and RSS.
    public static func snapshot() -> Snapshot {
        Snapshot(descriptors: openDescriptors, residentBytes: residentBytes)
    }

    /// Descriptors and RSS at one moment.
    public struct Snapshot: Sendable, Hashable, CustomStringConvertible {
        /// Open file descriptors.
        public let descriptors: Int
        /// Resident memory in bytes.
        public let residentBytes: Int

        /// `fds N, RSS X MB`.
        public var description: String {
            String(format: "fds %d, RSS %.1f MB", descriptors, Double(residentBytes) / 1_048_576)
        }
    }
}
