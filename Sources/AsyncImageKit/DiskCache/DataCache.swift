import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A disk cache of bytes (image bodies, processed thumbnails), safe against
/// crashes and shared by several processes.
///
/// ```swift
/// let cache = try DataCache(directory: cachesURL.appendingPathComponent("images"),
///                           limits: .init(sizeLimit: 500 << 20))
/// try cache.store(body, for: url.absoluteString, metadata: .init(etag: etag))
/// let hit = cache.data(for: url.absoluteString)
/// ```
///
/// What it guarantees:
///
/// - **Names from a hash, never from the key's text**: an entry lives at
///   `<directory>/AsyncImageKit.v1/ab/cd/<SHA-256 of the key>`; a key is
///   any string, and no path is ever built from a URL.
/// - **Crash-safe writes**: an entry is written to a temporary file in its
///   own folder, then renamed over its name, so a reader sees the old entry
///   or the new one, never half of one; a temporary file that a killed
///   writer left is removed at the next start. Each file carries a header (format
///   version, lengths, CRC-32) and its metadata: a short, corrupt or unknown
///   file reads as a miss and is removed.
/// - **Limits held while writing**: before a write would take the total
///   size or count past a limit, the least recently used entries are
///   removed (under the folder's lock, before the new entry goes in) down
///   to 85% of it, entries past the age limit first; so the folder passes
///   its size limit by at most the entries being written at that moment. Reads
///   mark an entry used by setting its file's modification time, so the
///   order survives restarts and `noatime` mounts, and is shared between processes.
/// - **Several processes, one folder**: writers, removals and trims take an
///   exclusive `flock` on the folder's lock file (and keep the running
///   totals in its ledger under it); readers take no lock.
/// - **Start-up never waits for a scan**: the totals are rebuilt from the
///   folder in the background; lookups work meanwhile.
///
/// Every method may be called from any thread. A loader takes it, or any
/// other ``DataCaching`` store, as its ``AsyncImageLoader/Configuration/diskCache``.
public final class DataCache: DataCaching, @unchecked Sendable {
    /// How much the cache may hold.
    public struct Limits: Sendable, Hashable {
        /// The most bytes of entry files (default 150 MB).
        public var sizeLimit: Int
        /// The most entries (default 10,000).
        public var countLimit: Int
        /// Seconds since its last use after which an entry is removed at the
        /// next trim (default nil: no age limit).
        public var ageLimit: Double?

        /// Limits; see each property for its default.
        public init(sizeLimit: Int = 150 << 20, countLimit: Int = 10_000, ageLimit: Double? = nil) {
            self.sizeLimit = sizeLimit
            self.countLimit = countLimit
            self.ageLimit = ageLimit
        }
    }

    /// What a trim keeps of a limit it enforces.
    static let trimRatio = 0.85

    /// The versioned folder the entries live in.
    public let directory: URL
    /// The limits (enforced at the next write).
    public var limits: Limits {
        get { settings.withLock { $0 } }
        set { settings.withLock { $0 = newValue } }
    }

    private let settings: Locked<Limits>
    private let root: String
    private let lockFD: Int32
    /// `flock` locks belong to an open file, not a thread: threads of this
    /// process take this lock first.
    private let processLock = NSLock()
    /// Under `processLock`: the ledger is known to be off; a rebuild is on its way.
    private var needsRebuild = false
    private var rebuildScheduled = false
    private let maintenance = DispatchQueue(label: "AsyncImageKit.data-cache", qos: .utility)
    /// Writes by this instance since its last scheduled rebuild of the ledger.
    private let writes = Locked<Int>(0)
    static let rebuildEvery = 500

    /// Opens (creating it if needed) a cache in `directory`.
    ///
    /// - Throws: ``AsyncImageError/diskCache(path:message:)`` when the
    ///   folder cannot be created or its lock file opened.
    public init(directory: URL, limits: Limits = Limits()) throws(AsyncImageError) {
        self.directory = directory.appendingPathComponent("AsyncImageKit.v1", isDirectory: true)
        root = self.directory.path
        settings = Locked(limits)
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw .diskCache(path: root, message: "cannot create the folder: \(error.localizedDescription)")
        }
        let fd = open(root + "/lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .diskCache(path: root + "/lock", message: String(cString: strerror(errno))) }
        lockFD = fd
        // The ledger may be missing or behind (a process stopped between a
        // rename and its ledger update): rebuilt from the folder, in the background.
        maintenance.async { [weak self] in self?.trim(force: true) }
    }

    /// Scheduled maintenance holds the cache weakly: after this, it does nothing.
    /// (No wait here: the last release may happen on the maintenance queue.)
    deinit {
        close(lockFD)
    }

    // MARK: Reading

    /// The body stored for `key`, or nil (a miss, or an unreadable entry, which is removed).
    public func data(for key: String) -> Data? {
        entry(for: key)?.data
    }

    /// The body and metadata stored for `key`, or nil; a hit marks the entry used.
    public func entry(for key: String) -> (data: Data, metadata: DataCacheMetadata)? {
        let path = self.path(for: key)
        guard let (file, inode) = Self.read(path, limit: max(limits.sizeLimit, 1 << 20)) else { return nil }
        switch DataCacheEntry.decode(file) {
        case .success(let entry) where entry.metadata.key == key:
            utimensat(AT_FDCWD, path, nil, 0)  // used now (the LRU order)
            return (entry.body, entry.metadata)
        case .failure(.newerVersion):
            return nil  // a newer library's entry: a miss here, left for it
        default:
            remove(path: path, ifInodeIs: inode)
            return nil
        }
    }

    /// The file at `path` and its inode (which identifies this version of it).
    private static func read(_ path: String, limit: Int) -> (Data, ino_t)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_size >= 0 else { return nil }
        // A file larger than the whole cache may hold is no entry of ours:
        // never read into memory (it reads as empty, a miss, and is removed).
        guard info.st_size <= limit else { return (Data(), info.st_ino) }
        var data = Data(count: Int(info.st_size))
        let complete = data.withUnsafeMutableBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let got = Glibc.read(fd, raw.baseAddress! + offset, raw.count - offset)
                if got > 0 {
                    offset += got
                } else if got == 0 || errno != EINTR {
                    return false
                }
            }
            return true
        }
        // A short read is returned as it is: the header check makes it a miss.
        return (complete ? data : data.prefix(0), info.st_ino)
    }

    /// Whether an entry file exists for `key` (not read: it may still turn out unreadable).
    public func contains(_ key: String) -> Bool {
        access(path(for: key), F_OK) == 0
    }

    // MARK: Writing

    /// Stores `data` for `key`, replacing what was there, within the limits.
    ///
    /// - Throws: ``AsyncImageError/diskCache(path:message:)`` when the entry
    ///   cannot be written (the cache is unchanged).
    public func store(_ data: Data, for key: String, metadata: DataCacheMetadata = DataCacheMetadata()) throws(AsyncImageError) {
        _ = try write(data, for: key, metadata: metadata, readsReplaced: false) { _ in .replace() }
    }

    /// Stores `data` for `key` if `decide`, shown the metadata of the entry
    /// it would replace (nil: none), says so; then removes the entries whose
    /// keys the decision names. The look, the replacement and the removals
    /// happen under the folder's lock, as one step for every writer of every
    /// process: how a loader makes a response's parts visible together and
    /// never over a newer response (see <doc:DiskCache>). Returns whether
    /// it was stored. (The contract: ``DataCaching/store(_:for:metadata:replacing:)``.)
    ///
    /// Limits are held while writing: before the entry goes in, the least
    /// recently used entries go until it fits (down to 85% of each limit), so
    /// the folder passes its size limit by at most the entries being written
    /// at that moment (their temporary files).
    ///
    /// - Throws: ``AsyncImageError/diskCache(path:message:)`` when the entry
    ///   cannot be written (the cache is unchanged).
    @discardableResult
    public func store(
        _ data: Data, for key: String, metadata: DataCacheMetadata,
        replacing decide: (_ replaced: DataCacheMetadata?) -> DataCacheReplacement
    ) throws(AsyncImageError) -> Bool {
        try write(data, for: key, metadata: metadata, readsReplaced: true, commit: decide)
    }

    /// Stores `data` for `key` as ``store(_:for:metadata:replacing:)`` does;
    /// `readsReplaced` false: `commit` is shown nil, and the replaced entry
    /// is not read (a plain store).
    private func write(
        _ data: Data, for key: String, metadata: DataCacheMetadata, readsReplaced: Bool,
        commit: (_ replaced: DataCacheMetadata?) -> DataCacheReplacement
    ) throws(AsyncImageError) -> Bool {
        var metadata = metadata
        metadata.key = key
        metadata.storedAt = Date().timeIntervalSince1970
        let bytes = DataCacheEntry.encode(data, metadata: metadata)
        let path = self.path(for: key)
        let folder = (path as NSString).deletingLastPathComponent
        // Unique across instances and processes (containers may share PIDs);
        // named after its process, so that one a killed writer left is
        // removed at the next start (see `scan`).
        let temporary = folder + "/\(Self.temporaryPrefix)\(getpid())-\(UUID().uuidString)"
        var opened = false
        do {
            if access(folder, F_OK) != 0 {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            }
            let fd = try Syscall.retrying("open") { open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644) }
            opened = true
            defer { close(fd) }
            try Syscall.writeAll(fd, bytes)
        } catch {
            if opened { unlink(temporary) }
            throw .diskCache(path: temporary, message: "\(error)")
        }
        let outcome = exclusively { ledger -> (stored: Bool, count: Int, renameError: Int32?) in
            // The replaced entry is read only for a caller that decides on it
            // (a headers entry: small).
            let decision = commit(readsReplaced ? Self.metadata(at: path, key: key) : nil)
            guard decision.replaces else {
                unlink(temporary)
                return (false, ledger.count, nil)
            }
            let old = fileSize(path)
            let limits = self.limits
            if ledger.size - (old ?? 0) + bytes.count > limits.sizeLimit
                || ledger.count + (old == nil ? 1 : 0) > limits.countLimit
            {
                trimLocked(&ledger, making: bytes.count, keeping: path)
            }
            guard rename(temporary, path) == 0 else {
                let code = errno
                unlink(temporary)
                return (false, ledger.count, code)
            }
            ledger.size += bytes.count - (old ?? 0)
            ledger.count += old == nil ? 1 : 0
            for other in decision.removing where other != key {
                let otherPath = self.path(for: other)
                if let size = fileSize(otherPath), unlink(otherPath) == 0 {
                    ledger.size -= size
                    ledger.count -= 1
                }
            }
            return (true, ledger.count, nil)
        }
        if let code = outcome.renameError {
            throw .diskCache(path: path, message: "rename failed: \(String(cString: strerror(code)))")
        }
        // A ledger can only fall behind the folder (a process stopped between
        // a rename and its update): rebuilt now and then, not only at
        // start-up; after as many writes as there are entries (at least
        // `rebuildEvery`), so the scans cost O(1) a write, amortized.
        let rebuild = writes.withLock { count -> Bool in
            count += 1
            guard count >= max(Self.rebuildEvery, outcome.count) else { return false }
            count = 0
            return true
        }
        if rebuild { maintenance.async { [weak self] in self?.trim(force: true) } }
        return outcome.stored
    }

    /// The metadata of the entry file at `path`, if it is `key`'s and reads
    /// (under the lock: what a commit replaces).
    private static func metadata(at path: String, key: String) -> DataCacheMetadata? {
        guard let (file, _) = read(path, limit: 1 << 30),
            case .success(let entry) = DataCacheEntry.decode(file), entry.metadata.key == key
        else { return nil }
        return entry.metadata
    }

    /// Removes the entry for `key`.
    public func removeData(for key: String) {
        let path = self.path(for: key)
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        remove(path: path, ifInodeIs: info.st_ino)
    }

    /// Removes every entry.
    public func removeAll() {
        exclusively { ledger in
            for (path, _, _) in scan() { unlink(path) }
            ledger = Ledger()
        }
    }

    /// Waits until the trims and the start-up rebuild scheduled so far have run.
    public func flush() {
        maintenance.sync {}
    }

    /// The bytes of entry files, as the ledger counts them (shared by every
    /// process using the folder; exact once ``flush()`` returned and no
    /// other process is writing).
    public var totalSize: Int { exclusively { $0.size } }

    /// The number of entries, as the ledger counts them.
    public var count: Int { exclusively { $0.count } }

    // MARK: Internals

    /// The file for `key`: two levels of folders from its hash.
    func path(for key: String) -> String {
        let name = SHA256.hex(Array(key.utf8))
        let a = name.prefix(2)
        let b = name.dropFirst(2).prefix(2)
        return "\(root)/\(a)/\(b)/\(name)"
    }

    /// Removes `path` if it is still the file that was read (another
    /// process may have renamed a new entry over it since).
    private func remove(path: String, ifInodeIs inode: ino_t) {
        exclusively { ledger in
            var info = stat()
            guard stat(path, &info) == 0, info.st_ino == inode, unlink(path) == 0 else { return }
            ledger.size -= Int(info.st_size)
            ledger.count -= 1
        }
    }

    /// Removes entries past the age limit, then the least recently used ones
    /// down to 85% of each limit, and writes the true totals to the ledger.
    /// `force`: rebuild the ledger even when it says no limit is passed.
    private func trim(force: Bool) {
        exclusively { ledger in
            let limits = self.limits
            guard force || ledger.size > limits.sizeLimit || ledger.count > limits.countLimit else { return }
            trimLocked(&ledger, making: 0, keeping: nil)
            if force { (needsRebuild, rebuildScheduled) = (false, false) }
        }
    }

    /// Under the lock: the true totals from the folder; entries past the age
    /// limit removed; then, if the totals plus `incoming` bytes (one entry)
    /// pass a limit, the least recently used entries (never `kept`, the file
    /// about to be replaced) down to 85% of it.
    private func trimLocked(_ ledger: inout Ledger, making incoming: Int, keeping kept: String?) {
        let limits = self.limits
        let now = Date().timeIntervalSince1970
        var entries = scan()
        if let age = limits.ageLimit {
            for entry in entries where now - entry.used > age && entry.path != kept { unlink(entry.path) }
            entries.removeAll { now - $0.used > age && $0.path != kept }
        }
        var size = entries.reduce(0) { $0 + $1.size }
        var count = entries.count
        let extra = incoming > 0 ? 1 : 0
        if size + incoming > limits.sizeLimit || count + extra > limits.countLimit {
            let sizeTarget = Int(Double(limits.sizeLimit) * Self.trimRatio) - incoming
            let countTarget = Int(Double(limits.countLimit) * Self.trimRatio) - extra
            for entry in entries.sorted(by: { $0.used < $1.used }) where entry.path != kept {
                guard size > sizeTarget || count > countTarget else { break }
                if unlink(entry.path) == 0 {
                    size -= entry.size
                    count -= 1
                }
            }
        }
        ledger = Ledger(size: size, count: count)
    }

    /// Every entry file: its path, size and last use. Temporary files left
    /// by a writer that stopped are removed once an hour old.
    private func scan() -> [(path: String, size: Int, used: Double)] {
        var found: [(path: String, size: Int, used: Double)] = []
        let now = Date().timeIntervalSince1970
        let files = FileManager.default
        for first in (try? files.contentsOfDirectory(atPath: root)) ?? [] where first.count == 2 {
            for second in (try? files.contentsOfDirectory(atPath: "\(root)/\(first)")) ?? [] {
                let folder = "\(root)/\(first)/\(second)"
                for name in (try? files.contentsOfDirectory(atPath: folder)) ?? [] {
                    let path = "\(folder)/\(name)"
                    var info = stat()
                    guard stat(path, &info) == 0 else { continue }
                    let used = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
                    if name.hasPrefix(".tmp-") {
                        // Its writer's, until that process is gone (killed
                        // mid-write) or an hour has passed.
                        if now - used > 3600 || !Self.writerIsAlive(name) { unlink(path) }
                        continue
                    }
                    found.append((path, Int(info.st_size), used))
                }
            }
        }
        return found
    }

    /// How temporary files start: `.tmp-<pid>-<uuid>`.
    static let temporaryPrefix = ".tmp-"

    /// Whether the process that named temporary file `name` still runs (a
    /// name without a pid, from an older version, counts as alive).
    private static func writerIsAlive(_ name: String) -> Bool {
        let rest = name.dropFirst(temporaryPrefix.count)
        guard let dash = rest.firstIndex(of: "-"), let pid = pid_t(rest[..<dash]) else { return true }
        return pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH
    }

    private func fileSize(_ path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_size) : nil
    }

    /// The running totals, kept in the lock file under the lock.
    struct Ledger {
        var size = 0
        var count = 0
    }

    /// Runs `body` holding the folder's lock (this process's, then `flock`),
    /// with the ledger read before and written after if it changed.
    @discardableResult
    private func exclusively<T>(_ body: (inout Ledger) -> T) -> T {
        processLock.lock()
        defer { processLock.unlock() }
        // Without the lock (ENOLCK on some network file systems), the body
        // still runs but the shared ledger is left alone and rebuilt later.
        let locked = (try? Syscall.retrying("flock") { flock(lockFD, LOCK_EX) }) != nil
        defer { if locked { flock(lockFD, LOCK_UN) } }
        var raw = [Int64](repeating: 0, count: 2)
        let read = locked ? raw.withUnsafeMutableBytes { pread(lockFD, $0.baseAddress, 16, 0) } : -1
        var ledger = read == 16 ? Ledger(size: Int(raw[0]), count: Int(raw[1])) : Ledger()
        let before = (ledger.size, ledger.count)
        let result = body(&ledger)
        if locked, (ledger.size, ledger.count) != before || read != 16 {
            raw = [Int64(max(0, ledger.size)), Int64(max(0, ledger.count))]
            let written = raw.withUnsafeBytes { pwrite(lockFD, $0.baseAddress, 16, 0) }
            if written != 16 { needsRebuild = true }
        }
        // A ledger that went negative was behind the folder: rebuilt from it.
        if !locked || ledger.size < 0 || ledger.count < 0 { needsRebuild = true }
        if needsRebuild, !rebuildScheduled {
            rebuildScheduled = true
            maintenance.async { [weak self] in self?.trim(force: true) }
        }
        return result
    }
}
