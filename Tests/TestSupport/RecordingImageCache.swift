import AsyncImageKit
import Foundation

/// An ``ImageCaching`` test double: records every call the loader makes of
/// it, with its key and cache class, and answers lookups only with the
/// images a test gave it (``answer(_:for:)``): what it is asked to store is
/// recorded, not kept, so every request is a miss unless told otherwise.
public final class RecordingImageCache: ImageCaching, @unchecked Sendable {
    public enum Call: Equatable, CustomStringConvertible {
        case lookUp(ImageCacheKey)
        /// `cacheClass` nil: ``ImageCaching/setImage(_:for:)``, without a class.
        case store(ImageCacheKey, cacheClass: ImageCacheClass?)
        case remove(ImageCacheKey)
        case removeAll

        public var description: String {
            switch self {
            case .lookUp(let key): return "image(for: \(key))"
            case .store(let key, let cacheClass): return "setImage(for: \(key), cacheClass: \(cacheClass.map { "\($0)" } ?? "none"))"
            case .remove(let key): return "removeImage(for: \(key))"
            case .removeAll: return "removeAll()"
            }
        }
    }

    private let lock = NSLock()
    private var recorded: [Call] = []
    private var answers: [ImageCacheKey: Image] = [:]

    public init() {}
    private var storedImages: [ImageCacheKey: Image] = [:]

    /// Every call so far, in order.
    public var calls: [Call] { lock.withLock { recorded } }
    /// The keys of the `image(for:)` calls, in order.
    public var lookUps: [ImageCacheKey] {
        calls.compactMap { if case .lookUp(let key) = $0 { return key } else { return nil } }
    }
    /// The `setImage` calls, in order: key and class (nil: without one).
    public var stores: [(key: ImageCacheKey, cacheClass: ImageCacheClass?)] {
        calls.compactMap { if case .store(let key, let cacheClass) = $0 { return (key, cacheClass) } else { return nil } }
    }
    /// The `removeImage(for:)` and `removeAll()` calls.
    public var removals: [Call] {
        calls.filter {
            switch $0 {
            case .remove, .removeAll: return true
            case .lookUp, .store: return false
            }
        }
    }

    /// The last image stored for `key`, if any.
    public func storedImage(for key: ImageCacheKey) -> Image? { lock.withLock { storedImages[key] } }

    /// From now on, `image(for: key)` returns `image` (nil: a miss again).
    public func answer(_ image: Image?, for key: ImageCacheKey) { lock.withLock { answers[key] = image } }

    /// Forgets the calls so far (not the answers).
    public func resetCalls() { lock.withLock { recorded = [] } }

    // MARK: ImageCaching

    public func image(for key: ImageCacheKey) -> Image? {
        lock.withLock {
            recorded.append(.lookUp(key))
            return answers[key]
        }
    }

    public func setImage(_ image: Image, for key: ImageCacheKey) {
        lock.withLock {
            recorded.append(.store(key, cacheClass: nil))
            storedImages[key] = image
        }
    }

    public func setImage(_ image: Image, for key: ImageCacheKey, cacheClass: ImageCacheClass) {
        lock.withLock {
            recorded.append(.store(key, cacheClass: cacheClass))
            storedImages[key] = image
        }
    }

    public func removeImage(for key: ImageCacheKey) {
        lock.withLock { recorded.append(.remove(key)) }
    }

    public func removeAll() {
        lock.withLock { recorded.append(.removeAll) }
    }
}
