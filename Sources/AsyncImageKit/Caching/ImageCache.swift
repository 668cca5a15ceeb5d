import Foundation
import Synchronization

/// A thread-safe in-memory cache of decoded images with strict LRU eviction.
///
/// Each image costs its ``Image/cost`` (bytes of pixels). When adding an
/// image would pass ``totalCostLimit`` or ``countLimit``, the least recently
/// used images are evicted first; a read counts as a use. An image bigger than
/// the whole limit is not stored. Under memory pressure (see
/// ``MemoryPressureMonitor``) every cache empties itself.
///
/// ```swift
/// let cache = ImageCache(totalCostLimit: 256 << 20)
/// cache[ImageCacheKey(url: url)] = image
/// ```
public final class ImageCache: Sendable {
    /// The default cost limit: a tenth of the memory this process may use
    /// (physical memory, or a smaller cgroup limit), at most 1 GiB.
    public static var defaultTotalCostLimit: Int {
        let available = min(Int(clamping: ProcessInfo.processInfo.physicalMemory), MemoryPressureMonitor.cgroupMemoryLimit ?? Int.max)
        return min(available / 10, 1 << 30)
    }

    /// One cached image. Entries live in an array and link to each other by
    /// index, so a hit moves integers around instead of retaining and
    /// releasing list nodes (which dominated the cost of a hit).
    /// The image behind one reference, so an entry holds a plain pointer.
    private final class Box {
        let image: Image
        init(_ image: Image) { self.image = image }
    }

    private struct Entry {
        var key: ImageCacheKey
        var box: Box?
        var cost: Int
        /// Towards the most recently used; -1 at the newest end.
        var newer: Int32
        /// Towards the least recently used; -1 at the oldest end.
        var older: Int32
    }

    private struct State {
        var index = SlotIndex()
        var entries: [Entry] = []
        var free: [Int32] = []
        /// Most recently used.
        var newest: Int32 = -1
        /// Least recently used: evicted first.
        var oldest: Int32 = -1
        var totalCost = 0
        var totalCostLimit: Int
        var countLimit: Int

        init(totalCostLimit: Int, countLimit: Int) {
            self.totalCostLimit = totalCostLimit
            self.countLimit = countLimit
        }

        mutating func unlink(_ slot: Int32) {
            var (newest, oldest) = (self.newest, self.oldest)
            entries.withUnsafeMutableBufferPointer { Self.unlink(slot, in: $0, newest: &newest, oldest: &oldest) }
            (self.newest, self.oldest) = (newest, oldest)
        }

        mutating func pushNewest(_ slot: Int32) {
            var (newest, oldest) = (self.newest, self.oldest)
            entries.withUnsafeMutableBufferPointer { Self.pushNewest(slot, in: $0, newest: &newest, oldest: &oldest) }
            (self.newest, self.oldest) = (newest, oldest)
        }

        /// The hit path: finds `key` and makes it the most recently used, all
        /// on one buffer pointer (no per-write uniqueness or bounds checks).
        mutating func hit(_ key: ImageCacheKey) -> Image? {
            var (newest, oldest) = (self.newest, self.oldest)
            let index = self.index
            let image = entries.withUnsafeMutableBufferPointer { entries -> Image? in
                let slot = index.find(key, in: UnsafeBufferPointer(entries))
                guard slot >= 0 else { return nil }
                if newest != slot {
                    Self.unlink(slot, in: entries, newest: &newest, oldest: &oldest)
                    Self.pushNewest(slot, in: entries, newest: &newest, oldest: &oldest)
                }
                return entries[Int(slot)].box?.image
            }
            (self.newest, self.oldest) = (newest, oldest)
            return image
        }

        private static func unlink(
            _ slot: Int32, in entries: UnsafeMutableBufferPointer<Entry>, newest: inout Int32, oldest: inout Int32
        ) {
            let (newer, older) = (entries[Int(slot)].newer, entries[Int(slot)].older)
            if newer >= 0 { entries[Int(newer)].older = older } else { newest = older }
            if older >= 0 { entries[Int(older)].newer = newer } else { oldest = newer }
            entries[Int(slot)].newer = -1
            entries[Int(slot)].older = -1
        }

        private static func pushNewest(
            _ slot: Int32, in entries: UnsafeMutableBufferPointer<Entry>, newest: inout Int32, oldest: inout Int32
        ) {
            entries[Int(slot)].older = newest
            entries[Int(slot)].newer = -1
            if newest >= 0 { entries[Int(newest)].newer = slot }
            newest = slot
            if oldest < 0 { oldest = slot }
        }

        mutating func insert(_ key: ImageCacheKey, _ image: Image, cost: Int) {
            let entry = Entry(key: key, box: Box(image), cost: cost, newer: -1, older: -1)
            let slot: Int32
            if let reused = free.popLast() {
                slot = reused
                entries[Int(slot)] = entry
            } else {
                slot = Int32(entries.count)
                entries.append(entry)
            }
            index.insert(slot, for: key, in: entries)
            pushNewest(slot)
            totalCost += cost
        }

        /// Removes an entry and returns its image box, for the caller to
        /// release after the lock: the last release of an image gives its
        /// pixel buffer back to the pool, which is no work for a spin lock.
        @discardableResult
        mutating func remove(_ slot: Int32) -> Box? {
            unlink(slot)
            index.remove(slot, for: entries[Int(slot)].key, in: entries)
            totalCost -= entries[Int(slot)].cost
            let box = entries[Int(slot)].box
            entries[Int(slot)].box = nil
            entries[Int(slot)].cost = 0
            free.append(slot)
            return box
        }

        /// Evicts least recently used entries past the limits; returns their boxes (see ``remove(_:)``).
        mutating func trim() -> [Box] {
            var evicted: [Box] = []
            while totalCost > totalCostLimit || index.count > countLimit, oldest >= 0 {
                if let box = remove(oldest) { evicted.append(box) }
            }
            return evicted
        }
    }

    /// An open-addressing hash index from key to entry slot, probing by the
    /// hash each key computed once: a lookup hashes nothing.
    private struct SlotIndex {
        private static let empty: Int32 = -1
        private static let deleted: Int32 = -2
        private var table = [Int32](repeating: SlotIndex.empty, count: 16)
        private var used = 0  // live plus deleted marks
        private(set) var count = 0

        func find(_ key: ImageCacheKey, in entries: [Entry]) -> Int32 {
            entries.withUnsafeBufferPointer { find(key, in: $0) }
        }

        func find(_ key: ImageCacheKey, in entries: UnsafeBufferPointer<Entry>) -> Int32 {
            table.withUnsafeBufferPointer { table in
                let mask = table.count - 1
                var i = key.precomputedHash & mask
                while true {
                    let slot = table[i]
                    if slot == Self.empty { return -1 }
                    if slot >= 0 && entries[Int(slot)].key == key { return slot }
                    i = (i + 1) & mask
                }
            }
        }

        mutating func insert(_ slot: Int32, for key: ImageCacheKey, in entries: [Entry]) {
            if (used + 1) * 2 > table.count { rebuild(entries, capacity: max(16, (count + 1) * 4)) }
            let mask = table.count - 1
            var i = key.precomputedHash & mask
            while table[i] >= 0 { i = (i + 1) & mask }
            if table[i] == Self.empty { used += 1 }
            table[i] = slot
            count += 1
        }

        mutating func remove(_ slot: Int32, for key: ImageCacheKey, in entries: [Entry]) {
            let mask = table.count - 1
            var i = key.precomputedHash & mask
            while table[i] != Self.empty {
                if table[i] == slot {
                    table[i] = Self.deleted
                    count -= 1
                    return
                }
                i = (i + 1) & mask
            }
        }

        private mutating func rebuild(_ entries: [Entry], capacity: Int) {
            let old = table
            var size = 16
            while size < capacity { size <<= 1 }
            table = [Int32](repeating: Self.empty, count: size)
            used = 0
            count = 0
            for slot in old where slot >= 0 {
                insert(slot, for: entries[Int(slot)].key, in: entries)
            }
        }
    }

    private let state: SpinLocked<State>

    /// Creates a cache and registers it for memory-pressure purges.
    public init(totalCostLimit: Int = ImageCache.defaultTotalCostLimit, countLimit: Int = Int.max) {
        state = SpinLocked(State(totalCostLimit: totalCostLimit, countLimit: countLimit))
        MemoryPressureMonitor.shared.register(self)
    }

    /// The most pixel bytes kept. Lowering it evicts at once.
    public var totalCostLimit: Int {
        get { state.withLock { $0.totalCostLimit } }
        set {
            let evicted = state.withLock { $0.totalCostLimit = max(0, newValue); return $0.trim() }
            withExtendedLifetime(evicted) {}
        }
    }

    /// The most images kept. Lowering it evicts at once.
    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set {
            let evicted = state.withLock { $0.countLimit = max(0, newValue); return $0.trim() }
            withExtendedLifetime(evicted) {}
        }
    }

    /// The pixel bytes held now.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// The number of images held now.
    public var count: Int { state.withLock { $0.index.count } }

    /// The image for `key` (marking it most recently used), or nil.
    public func image(for key: ImageCacheKey) -> Image? {
        state.withLock { $0.hit(key) }
    }

    /// Stores `image` for `key` as the most recently used, evicting as needed.
    public func setImage(_ image: Image, for key: ImageCacheKey) {
        let cost = image.cost
        let released = state.withLock { state -> (Box?, [Box]) in
            let old = state.index.find(key, in: state.entries)
            let replaced = old >= 0 ? state.remove(old) : nil
            guard cost <= state.totalCostLimit else { return (replaced, []) }
            state.insert(key, image, cost: cost)
            return (replaced, state.trim())
        }
        withExtendedLifetime(released) {}
    }

    /// Removes the image for `key`.
    public func removeImage(for key: ImageCacheKey) {
        let removed = state.withLock { state -> Box? in
            let slot = state.index.find(key, in: state.entries)
            return slot >= 0 ? state.remove(slot) : nil
        }
        withExtendedLifetime(removed) {}
    }

    /// Reads or writes (nil removes) the image for `key`.
    public subscript(key: ImageCacheKey) -> Image? {
        get { image(for: key) }
        set {
            if let newValue { setImage(newValue, for: key) } else { removeImage(for: key) }
        }
    }

    /// Empties the cache.
    public func removeAll() {
        // The old entries are released after the lock (see `State.remove`).
        let old = state.withLock { state -> State in
            defer { state = State(totalCostLimit: state.totalCostLimit, countLimit: state.countLimit) }
            return state
        }
        withExtendedLifetime(old) {}
    }

    /// The keys from most to least recently used (for tests and diagnostics).
    public var keysByRecency: [ImageCacheKey] {
        state.withLock { state in
            var keys: [ImageCacheKey] = []
            var slot = state.newest
            while slot >= 0 {
                keys.append(state.entries[Int(slot)].key)
                slot = state.entries[Int(slot)].older
            }
            return keys
        }
    }
}
