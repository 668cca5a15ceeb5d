import Foundation

/// A store of bytes with metadata under string keys: what a loader's disk
/// layer needs (``AsyncImageLoader/Configuration/diskCache``), so that
/// something else than a local folder can back it: a store on another
/// machine, a key-value service, memory in a test. ``DataCache`` (files,
/// crash-safe, shared by processes) is the one the library provides.
///
/// ```swift
/// final class ServiceStore: DataCaching { ... }   // see below for what each method must guarantee
/// let loader = AsyncImageLoader(configuration: .init(diskCache: ServiceStore(client)))
/// ```
///
/// A loader keeps a response as several entries (see <doc:DiskCache>): a
/// small *headers entry* under the request's key (the URL), and its body and
/// processed images under keys derived from it and from the response's
/// *generation*, each found through the headers entry. What a conformer
/// must guarantee:
///
/// - **Whole values**: ``entry(for:)`` returns what one write stored, its
///   data and its metadata together, or nil; never part of a value, nor the
///   data of one write with the metadata of another, however reads and
///   writes of the key interleave.
/// - **Metadata kept whole**: the metadata read back equals the metadata
///   stored, every field (the loader keeps the whole HTTP response in it).
///   ``DataCacheMetadata`` is `Codable`: a store that serializes it keeps
///   everything through an encoder's round trip. (``DataCacheMetadata/key``
///   and ``DataCacheMetadata/storedAt`` are set by ``DataCache``; another
///   store may leave them as given.)
/// - **One atomic replacement**: ``store(_:for:metadata:replacing:)`` looks
///   at the entry it would replace and replaces it (or not) in one step for
///   every writer of the store, in every process or machine that shares it.
///   This is how a loader commits a response as one unit and never writes
///   a `304`'s headers over a newer response; see that method.
/// - **A miss, never an error, when a read fails**: reads do not throw; a
///   value that cannot be read (gone, corrupt, a timeout, an unreachable
///   service) is nil. The loader then loads from the network. Keep reads
///   short: a request waits for its disk read.
/// - **Entries may go at any time** (a cache evicts): a loader that finds
///   the headers entry but not the body it names treats the response as a
///   miss, so no eviction order is required.
///
/// Keys are any strings: they contain URLs, newlines and `#`; a store whose
/// backend restricts names hashes them (``DataCache`` names files by SHA-256).
///
/// Every method may be called from any thread, at once. The loader never
/// calls one under its own lock: it reads and writes on its disk queues, and
/// on the caller's thread in ``AsyncImageLoader/hasCachedImage(for:)`` and
/// ``AsyncImageLoader/cachedImage(for:)``. A write that throws is skipped
/// (at most logged): the image or response is still delivered.
///
/// A store is a class (as ``ImageCaching``'s are): the loader keeps a
/// reference to it in every transfer, which then costs a pointer, not a
/// value's inline box.
public protocol DataCaching: AnyObject, Sendable {
    /// The data and metadata stored for `key`, written by one write, or nil
    /// (none, or unreadable: a miss).
    func entry(for key: String) -> (data: Data, metadata: DataCacheMetadata)?

    /// The data stored for `key`, or nil. The default implementation
    /// returns ``entry(for:)``'s data.
    func data(for key: String) -> Data?

    /// Whether an entry exists for `key`, without reading its data if the
    /// store can tell (``AsyncImageLoader/hasCachedImage(for:)`` asks). It
    /// may turn out unreadable later. The default implementation reads the
    /// entry with ``entry(for:)``.
    func contains(_ key: String) -> Bool

    /// Stores `data` and `metadata` for `key`, replacing what was there.
    /// Readers see the old value or the new one, whole.
    ///
    /// The default implementation calls
    /// ``store(_:for:metadata:replacing:)`` with a decision that always
    /// replaces and removes nothing.
    ///
    /// - Throws: ``AsyncImageError/diskCache(path:message:)`` when it cannot
    ///   store (the store is unchanged).
    func store(_ data: Data, for key: String, metadata: DataCacheMetadata) throws(AsyncImageError)

    /// Stores `data` and `metadata` for `key` if `decide`, shown the
    /// metadata of the entry it would replace, says so, and then removes the
    /// entries whose keys the decision names; returns whether it stored.
    ///
    /// The loader commits a response with it: the new headers entry replaces
    /// the old one and, in the same step, the old response's body (another
    /// generation) is removed; and a `304` rewrites the headers entry only
    /// while its generation is still the one it refreshed. What a conformer
    /// must guarantee:
    ///
    /// - `decide` is shown the metadata of the entry stored for `key` at that
    ///   moment (nil: none, or unreadable), and between that look and the
    ///   replacement no other write or removal of `key` takes effect, from
    ///   any writer of the store (a lock held over both, a transaction, or a
    ///   compare-and-set on a version of the entry, retried when it fails:
    ///   `decide` may be called more than once, is cheap and calls nothing of
    ///   the store).
    /// - When the decision does not replace, nothing changes: no write, no removal.
    /// - When it does, readers see the old value or the new one, whole (as
    ///   for ``store(_:for:metadata:)``), and each key of
    ///   ``DataCacheReplacement/removing`` but `key` is removed: in the same
    ///   step, or right after it (the loader never writes those keys again,
    ///   so a late removal is never wrong; a removal left undone only leaves
    ///   an entry nobody reads until it is evicted).
    ///
    /// ``DataCache`` does the look, the replacement and the removals under
    /// its folder's lock, as one step for every process using the folder. A
    /// store in one process can hold one lock over its dictionary.
    ///
    /// - Throws: ``AsyncImageError/diskCache(path:message:)`` when it cannot
    ///   store (the store is unchanged).
    @discardableResult
    func store(
        _ data: Data, for key: String, metadata: DataCacheMetadata,
        replacing decide: (_ replaced: DataCacheMetadata?) -> DataCacheReplacement
    ) throws(AsyncImageError) -> Bool

    /// Removes the entry for `key` (nothing when there is none).
    func removeData(for key: String)

    /// Removes every entry.
    func removeAll()

    /// Waits until the work the store has scheduled in the background so far
    /// is done (``AsyncImageLoader/flushDiskWrites()-3jyjs`` calls it after the
    /// loader's own writes). The default implementation returns at once.
    func flush()
}

extension DataCaching {
    /// ``entry(for:)``'s data.
    public func data(for key: String) -> Data? {
        entry(for: key)?.data
    }

    /// Whether ``entry(for:)`` finds an entry (it reads it).
    public func contains(_ key: String) -> Bool {
        entry(for: key) != nil
    }

    /// Replaces the entry with ``store(_:for:metadata:replacing:)``, removing nothing.
    public func store(_ data: Data, for key: String, metadata: DataCacheMetadata) throws(AsyncImageError) {
        try store(data, for: key, metadata: metadata) { _ in .replace() }
    }

    /// Nothing to wait for.
    public func flush() {}
}

/// What ``DataCaching/store(_:for:metadata:replacing:)`` does, decided from
/// the entry it would replace: replace it (and remove other entries in the
/// same step), or leave the store as it is.
public struct DataCacheReplacement: Sendable, Hashable {
    /// Whether the new value replaces the stored one. When false, nothing
    /// is written and nothing removed.
    public var replaces: Bool
    /// The keys of other entries to remove with the replacement (the key
    /// being stored is never removed).
    public var removing: [String]

    /// A decision; see each property.
    public init(replaces: Bool, removing: [String] = []) {
        self.replaces = replaces
        self.removing = replaces ? removing : []
    }

    /// Replace the entry, removing the entries of `keys` with it.
    public static func replace(removing keys: [String] = []) -> DataCacheReplacement {
        DataCacheReplacement(replaces: true, removing: keys)
    }

    /// Leave the store as it is.
    public static let keep = DataCacheReplacement(replaces: false)
}
