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

    private final class Node {
        let key: ImageCacheKey
        var image: Image
        var cost: Int
        var newer: Node?
        unowned(unsafe) var older: Node?

        init(key: ImageCacheKey, image: Image) {
            self.key = key
            self.image = image
            self.cost = image.cost
        }
    }

    private struct State {
        var nodes: [ImageCacheKey: Node] = [:]
        /// Most recently used.
        var newest: Node?
        /// Least recently used: evicted first.
        var oldest: Node?
        var totalCost = 0
        var totalCostLimit: Int
        var countLimit: Int

        mutating func unlink(_ node: Node) {
            if let newer = node.newer { newer.older = node.older } else { newest = node.older }
            if let older = node.older { older.newer = node.newer } else { oldest = node.newer }
            node.newer = nil
            node.older = nil
        }

        mutating func pushNewest(_ node: Node) {
            node.older = newest
            node.newer = nil
            newest?.newer = node
            newest = node
            if oldest == nil { oldest = node }
        }

        mutating func remove(_ node: Node) {
            unlink(node)
            nodes[node.key] = nil
            totalCost -= node.cost
        }

        mutating func trim() {
            while totalCost > totalCostLimit || nodes.count > countLimit, let victim = oldest {
                remove(victim)
            }
        }
    }

    private let state: Locked<State>

    /// Creates a cache and registers it for memory-pressure purges.
    public init(totalCostLimit: Int = ImageCache.defaultTotalCostLimit, countLimit: Int = Int.max) {
        state = Locked(State(totalCostLimit: totalCostLimit, countLimit: countLimit))
        MemoryPressureMonitor.shared.register(self)
    }

    /// The most pixel bytes kept. Lowering it evicts at once.
    public var totalCostLimit: Int {
        get { state.withLock { $0.totalCostLimit } }
        set { state.withLock { $0.totalCostLimit = max(0, newValue); $0.trim() } }
    }

    /// The most images kept. Lowering it evicts at once.
    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set { state.withLock { $0.countLimit = max(0, newValue); $0.trim() } }
    }

    /// The pixel bytes held now.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    /// The number of images held now.
    public var count: Int { state.withLock { $0.nodes.count } }

    /// The image for `key` (marking it most recently used), or nil.
    public func image(for key: ImageCacheKey) -> Image? {
        state.withLock { state in
            guard let node = state.nodes[key] else { return nil }
            if state.newest !== node {
                state.unlink(node)
                state.pushNewest(node)
            }
            return node.image
        }
    }

    /// Stores `image` for `key` as the most recently used, evicting as needed.
    public func setImage(_ image: Image, for key: ImageCacheKey) {
        state.withLock { state in
            if let old = state.nodes[key] { state.remove(old) }
            let node = Node(key: key, image: image)
            guard node.cost <= state.totalCostLimit else { return }
            state.nodes[key] = node
            state.pushNewest(node)
            state.totalCost += node.cost
            state.trim()
        }
    }

    /// Removes the image for `key`.
    public func removeImage(for key: ImageCacheKey) {
        state.withLock { state in
            if let node = state.nodes[key] { state.remove(node) }
        }
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
        state.withLock { state in
            // Break the links so nodes free without deep recursion.
            var node = state.newest
            while let current = node {
                node = current.older
                current.newer = nil
                current.older = nil
            }
            state = State(totalCostLimit: state.totalCostLimit, countLimit: state.countLimit)
        }
    }

    /// The keys from most to least recently used (for tests and diagnostics).
    public var keysByRecency: [ImageCacheKey] {
        state.withLock { state in
            var keys: [ImageCacheKey] = []
            var node = state.newest
            while let current = node {
                keys.append(current.key)
                node = current.older
            }
            return keys
        }
    }
}
