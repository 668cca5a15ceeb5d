import AsyncImageKit
import Foundation

/// A ``DataCaching`` store in memory: one locked dictionary, the simplest
/// conformer of the seam (a store on another machine would put a network
/// call where the dictionary is). The metadata is kept encoded (JSON), as a
/// remote store would send it, so what the loader reads back has been
/// through `Codable`.
///
/// It records the keys read and written, and can be made to fail: every
/// read a miss (``failsReads``), every write an error (``failsWrites``), or
/// one key dropped as an eviction would (``evict(_:)``).
public final class MemoryDataStore: DataCaching, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: (data: Data, metadata: Data)] = [:]
    private var readKeys: [String] = []
    private var writtenKeys: [String] = []
    private var removedKeys: [String] = []
    private var failingReads = false
    private var failingWrites = false
    private var flushes = 0

    public init() {}

    /// While on, every read is a miss (as an unreachable service is).
    public var failsReads: Bool {
        get { lock.withLock { failingReads } }
        set { lock.withLock { failingReads = newValue } }
    }

    /// While on, every write throws (the store is unchanged).
    public var failsWrites: Bool {
        get { lock.withLock { failingWrites } }
        set { lock.withLock { failingWrites = newValue } }
    }

    /// Every key stored now.
    public var keys: Set<String> { lock.withLock { Set(values.keys) } }
    /// The keys of ``entry(for:)`` and ``contains(_:)`` calls, in order (failed reads too).
    public var reads: [String] { lock.withLock { readKeys } }
    /// The keys written, in order (only writes that stored).
    public var writes: [String] { lock.withLock { writtenKeys } }
    /// The keys removed by ``removeData(for:)`` or a replacement, in order.
    public var removals: [String] { lock.withLock { removedKeys } }
    /// How many times ``flush()`` was called.
    public var flushCount: Int { lock.withLock { flushes } }

    /// Forgets what was read and written so far (not the entries).
    public func resetRecords() {
        lock.withLock {
            readKeys = []
            writtenKeys = []
            removedKeys = []
        }
    }

    /// Drops `key`'s entry, as an eviction would (not recorded as a removal).
    public func evict(_ key: String) {
        _ = lock.withLock { values.removeValue(forKey: key) }
    }

    /// The metadata stored for `key`, decoded (not recorded as a read).
    public func metadata(for key: String) -> DataCacheMetadata? {
        lock.withLock { values[key] }.flatMap { try? JSONDecoder().decode(DataCacheMetadata.self, from: $0.metadata) }
    }

    // MARK: DataCaching

    public func entry(for key: String) -> (data: Data, metadata: DataCacheMetadata)? {
        let found = lock.withLock { () -> (data: Data, metadata: Data)? in
            readKeys.append(key)
            return failingReads ? nil : values[key]
        }
        guard let found, let metadata = try? JSONDecoder().decode(DataCacheMetadata.self, from: found.metadata)
        else { return nil }
        return (found.data, metadata)
    }

    public func contains(_ key: String) -> Bool {
        lock.withLock {
            readKeys.append(key)
            return !failingReads && values[key] != nil
        }
    }

    public func store(
        _ data: Data, for key: String, metadata: DataCacheMetadata,
        replacing decide: (_ replaced: DataCacheMetadata?) -> DataCacheReplacement
    ) throws(AsyncImageError) -> Bool {
        let encoded: Data
        do {
            encoded = try JSONEncoder().encode(metadata)
        } catch {
            throw .diskCache(path: key, message: "metadata: \(error)")
        }
        // The look, the replacement and the removals under one lock: one step.
        let outcome = lock.withLock { () -> Bool? in
            guard !failingWrites else { return nil }
            let replaced = values[key].flatMap { try? JSONDecoder().decode(DataCacheMetadata.self, from: $0.metadata) }
            let decision = decide(replaced)
            guard decision.replaces else { return false }
            values[key] = (data, encoded)
            writtenKeys.append(key)
            for other in decision.removing where other != key && values.removeValue(forKey: other) != nil {
                removedKeys.append(other)
            }
            return true
        }
        guard let outcome else { throw .diskCache(path: key, message: "the store is failing writes") }
        return outcome
    }

    public func removeData(for key: String) {
        lock.withLock {
            if values.removeValue(forKey: key) != nil { removedKeys.append(key) }
        }
    }

    public func removeAll() {
        lock.withLock { values = [:] }
    }

    public func flush() {
        lock.withLock { flushes += 1 }
    }
}
