import Foundation
import Synchronization

/// A thread-safe in-memory cache of decoded images with strict LRU eviction
/// within priority classes.
///
/// Each image costs its ``Image/cost`` (bytes of pixels) and carries an
/// ``ImageCacheClass``. When adding an image would pass ``totalCostLimit`` or
/// ``countLimit``, the lowest class goes first (originals before normal images
/// before thumbnails), the least recently used first within a class; a read
/// counts as a use, and the image being stored goes only when nothing else is
/// left. An image bigger than the whole limit is not stored.
///
/// Under memory pressure (see ``MemoryPressureMonitor``) every cache drops
/// its images below ``ImageCacheClass/thumbnail``; if pressure comes again
/// before any image is stored, the thumbnails go too.
///
/// An image that leaves the cache (evicted, purged, or ``removeAll()``) while
/// something else still holds it (a target, a model, a view) is found again:
/// the cache keeps a weak reference to it beside its entries, and a lookup
/// that misses puts a living image back instead of leaving it to be decoded
/// again. Only ``removeImage(for:)`` (and storing another image for the key)
/// forgets it for good.
///
/// ```swift
/// let cache = ImageCache(totalCostLimit: 256 << 20)
/// cache[ImageCacheKey(url: url)] = image
/// cache.setImage(thumbnail, for: key, cacheClass: .thumbnail)
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
        /// Towards the most recently used of its class; -1 at the newest end.
        var newer: Int32
        /// Towards the least recently used of its class; -1 at the oldest end.
        var older: Int32
        /// Which list the entry is on.
        var cacheClass: ImageCacheClass
    }

    /// The newest and oldest slot of each class's list (-1 when empty), in
    /// plain fields: no array (no uniqueness or bounds checks on a hit), and
    /// a hit writes back only the two it changed.
    private struct Ends {
        private var newestOriginal: Int32 = -1
        private var oldestOriginal: Int32 = -1
        private var newestNormal: Int32 = -1
        private var oldestNormal: Int32 = -1
        private var newestThumbnail: Int32 = -1
        private var oldestThumbnail: Int32 = -1

        subscript(cacheClass: ImageCacheClass) -> (newest: Int32, oldest: Int32) {
            get {
                switch cacheClass {
                case .original: return (newestOriginal, oldestOriginal)
                case .normal: return (newestNormal, oldestNormal)
                case .thumbnail: return (newestThumbnail, oldestThumbnail)
                }
            }
            set {
                switch cacheClass {
                case .original: (newestOriginal, oldestOriginal) = newValue
                case .normal: (newestNormal, oldestNormal) = newValue
                case .thumbnail: (newestThumbnail, oldestThumbnail) = newValue
                }
            }
        }
    }

    /// An image that left the cache, held weakly: alive while something else holds it.
    private struct WeakImage {
        weak var object: AnyObject?
        var cacheClass: ImageCacheClass
    }

    private struct State {
        var index = SlotIndex()
        var entries: [Entry] = []
        var free: [Int32] = []
        var ends = Ends()
        var totalCost = 0
        var totalCostLimit: Int
        var countLimit: Int
        /// Images that left while perhaps still in use elsewhere (see ``revive(_:)``).
        var departed: [ImageCacheKey: WeakImage] = [:]
        /// Dead entries of `departed` are pruned when it grows to this size.
        var pruneAt = State.minimumPruneAt
        /// Whether an image was stored since the last memory-pressure purge.
        var storedSincePressure = true

        static let minimumPruneAt = 64

        init(totalCostLimit: Int, countLimit: Int) {
            self.totalCostLimit = totalCostLimit
            self.countLimit = countLimit
        }

        mutating func unlink(_ slot: Int32) {
            let cacheClass = entries[Int(slot)].cacheClass
            var (newest, oldest) = ends[cacheClass]
            entries.withUnsafeMutableBufferPointer { Self.unlink(slot, in: $0, newest: &newest, oldest: &oldest) }
            ends[cacheClass] = (newest, oldest)
        }

        mutating func pushNewest(_ slot: Int32) {
            let cacheClass = entries[Int(slot)].cacheClass
            var (newest, oldest) = ends[cacheClass]
            entries.withUnsafeMutableBufferPointer { Self.pushNewest(slot, in: $0, newest: &newest, oldest: &oldest) }
            ends[cacheClass] = (newest, oldest)
        }

        /// The hit path: finds `key` and makes it the most recently used of
        /// its class, all on one buffer pointer (no per-write uniqueness or
        /// bounds checks).
        @inline(__always)
        mutating func hit(_ key: ImageCacheKey) -> Image? {
            let index = self.index
            let ends = self.ends
            var moved: (cacheClass: ImageCacheClass, newest: Int32, oldest: Int32)?
            let image = entries.withUnsafeMutableBufferPointer { entries -> Image? in
                let slot = index.find(key, in: UnsafeBufferPointer(entries))
                guard slot >= 0 else { return nil }
                let cacheClass = entries[Int(slot)].cacheClass
                var (newest, oldest) = ends[cacheClass]
                if newest != slot {
                    Self.unlink(slot, in: entries, newest: &newest, oldest: &oldest)
                    Self.pushNewest(slot, in: entries, newest: &newest, oldest: &oldest)
                    moved = (cacheClass, newest, oldest)
                }
                return entries[Int(slot)].box?.image
            }
            if let moved { self.ends[moved.cacheClass] = (moved.newest, moved.oldest) }
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

        /// Stores a new entry (the key must not be in the index) and returns its slot.
        @discardableResult
        mutating func insert(_ key: ImageCacheKey, _ image: Image, cost: Int, cacheClass: ImageCacheClass) -> Int32 {
            let entry = Entry(key: key, box: Box(image), cost: cost, newer: -1, older: -1, cacheClass: cacheClass)
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
            return slot
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

        /// Removes an entry but remembers its image weakly (see ``remove(_:)``).
        mutating func evict(_ slot: Int32) -> Box? {
            let (key, cacheClass) = (entries[Int(slot)].key, entries[Int(slot)].cacheClass)
            let box = remove(slot)
            if let box { depart(key, box.image, cacheClass) }
            return box
        }

        /// Remembers an image that left weakly, pruning dead ones now and then
        /// (amortized: only when the table has doubled since the last prune).
        mutating func depart(_ key: ImageCacheKey, _ image: Image, _ cacheClass: ImageCacheClass) {
            departed[key] = WeakImage(object: image.storageObject, cacheClass: cacheClass)
            if departed.count >= pruneAt {
                departed = departed.filter { $0.value.object != nil }
                pruneAt = max(Self.minimumPruneAt, departed.count * 2)
            }
        }

        /// A departed image still alive elsewhere, put back as the most
        /// recently used of its class (if it fits), with what that evicted.
        mutating func revive(_ key: ImageCacheKey) -> (Image?, [Box]) {
            guard !departed.isEmpty, let departure = departed[key] else { return (nil, []) }
            guard let object = departure.object, let image = Image(storageObject: object) else {
                departed[key] = nil
                return (nil, [])
            }
            let cost = image.cost
            guard cost <= totalCostLimit else { return (image, []) }
            departed[key] = nil
            let slot = insert(key, image, cost: cost, cacheClass: departure.cacheClass)
            return (image, trim(keeping: slot))
        }

        /// The live and dead weak entries (for tests).
        var departedCount: (live: Int, total: Int) {
            (departed.values.reduce(0) { $0 + ($1.object != nil ? 1 : 0) }, departed.count)
        }

        /// Evicts past the limits: the lowest class first, least recently
        /// used first within it; `kept` (the entry just stored) last. Returns
        /// the boxes (see ``remove(_:)``).
        mutating func trim(keeping kept: Int32 = -1) -> [Box] {
            var evicted: [Box] = []
            func over() -> Bool { totalCost > totalCostLimit || index.count > countLimit }
            for cacheClass in ImageCacheClass.allCases {
                while over() {
                    let oldest = ends[cacheClass].oldest
                    guard oldest >= 0, oldest != kept else { break }
                    if let box = evict(oldest) { evicted.append(box) }
                }
            }
            if over(), kept >= 0, let box = evict(kept) { evicted.append(box) }
            return evicted
        }

        /// Evicts every entry of a class below `cacheClass`.
        mutating func evictAll(below cacheClass: ImageCacheClass) -> [Box] {
            var evicted: [Box] = []
            for lower in ImageCacheClass.allCases where lower < cacheClass {
                while case let oldest = ends[lower].oldest, oldest >= 0 {
                    if let box = evict(oldest) { evicted.append(box) }
                }
            }
            return evicted
        }

        /// Evicts every entry; the storage starts afresh.
        mutating func evictAll() -> [Box] {
            var evicted: [Box] = []
            evicted.reserveCapacity(index.count)
            for entry in entries {
                guard let box = entry.box else { continue }
                depart(entry.key, box.image, entry.cacheClass)
                evicted.append(box)
            }
            index = SlotIndex()
            entries = []
            free = []
            ends = Ends()
            totalCost = 0
            return evicted
        }

        /// The keys from the last to be evicted to the first.
        var keysByRecency: [ImageCacheKey] {
            var keys: [ImageCacheKey] = []
            for cacheClass in ImageCacheClass.allCases.reversed() {
                var slot = ends[cacheClass].newest
                while slot >= 0 {
                    keys.append(entries[Int(slot)].key)
                    slot = entries[Int(slot)].older
                }
            }
            return keys
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
    ///
    /// An image that left the cache but is still held elsewhere is found and
    /// put back (see the overview).
    public func image(for key: ImageCacheKey) -> Image? {
        if let image = state.withLock({ $0.hit(key) }) { return image }
        return revive(key)
    }

    /// The miss path: a departed image still alive, put back.
    private func revive(_ key: ImageCacheKey) -> Image? {
        let (image, released) = state.withLock { state -> (Image?, [Box]) in
            if let image = state.hit(key) { return (image, []) }  // stored meanwhile
            return state.revive(key)
        }
        withExtendedLifetime(released) {}
        return image
    }

    /// Stores `image` for `key` as the most recently used of the
    /// ``ImageCacheClass/normal`` class, evicting as needed.
    public func setImage(_ image: Image, for key: ImageCacheKey) {
        setImage(image, for: key, cacheClass: .normal)
    }

    /// Stores `image` for `key` as the most recently used of `cacheClass`,
    /// evicting as needed: the lowest class first, this image last.
    public func setImage(_ image: Image, for key: ImageCacheKey, cacheClass: ImageCacheClass) {
        let cost = image.cost
        let released = state.withLock { state -> (Box?, [Box]) in
            state.storedSincePressure = true
            let old = state.index.find(key, in: state.entries)
            let replaced = old >= 0 ? state.remove(old) : nil
            if !state.departed.isEmpty { state.departed[key] = nil }
            guard cost <= state.totalCostLimit else { return (replaced, []) }
            let slot = state.insert(key, image, cost: cost, cacheClass: cacheClass)
            return (replaced, state.trim(keeping: slot))
        }
        withExtendedLifetime(released) {}
    }

    /// Removes the image for `key`, for good: it is not found again even
    /// while something else holds it.
    public func removeImage(for key: ImageCacheKey) {
        let removed = state.withLock { state -> Box? in
            if !state.departed.isEmpty { state.departed[key] = nil }
            let slot = state.index.find(key, in: state.entries)
            return slot >= 0 ? state.remove(slot) : nil
        }
        withExtendedLifetime(removed) {}
    }

    /// Reads or writes (nil removes) the image for `key`; a write stores it
    /// in the ``ImageCacheClass/normal`` class.
    public subscript(key: ImageCacheKey) -> Image? {
        get { image(for: key) }
        set {
            if let newValue { setImage(newValue, for: key) } else { removeImage(for: key) }
        }
    }

    /// Empties the cache. Images still held elsewhere are found again by
    /// ``image(for:)`` (see the overview); the rest are gone.
    public func removeAll() {
        // The old entries are released after the lock (see `State.remove`).
        let released = state.withLock { $0.evictAll() }
        withExtendedLifetime(released) {}
    }

    /// Removes every image of a class below `cacheClass` (images still held
    /// elsewhere stay findable, as after ``removeAll()``):
    /// `removeImages(below: .thumbnail)` keeps only the thumbnails.
    public func removeImages(below cacheClass: ImageCacheClass) {
        let released = state.withLock { $0.evictAll(below: cacheClass) }
        withExtendedLifetime(released) {}
    }

    /// What a memory-pressure purge does to this cache: the images below
    /// ``ImageCacheClass/thumbnail`` go; if nothing was stored since the
    /// last purge (pressure came again), the thumbnails go too.
    func purgeForMemoryPressure() {
        let released = state.withLock { state -> [Box] in
            defer { state.storedSincePressure = false }
            return state.storedSincePressure ? state.evictAll(below: .thumbnail) : state.evictAll()
        }
        withExtendedLifetime(released) {}
    }

    /// The keys from the last to be evicted to the first: classes from
    /// ``ImageCacheClass/thumbnail`` down, within a class from the most to
    /// the least recently used (for tests and diagnostics).
    public var keysByRecency: [ImageCacheKey] {
        state.withLock { $0.keysByRecency }
    }

    /// How many images left the cache but are still held elsewhere, and how
    /// many weak entries there are in all, dead ones not yet pruned (tests).
    var departedCounts: (live: Int, total: Int) {
        state.withLock { $0.departedCount }
    }
}
