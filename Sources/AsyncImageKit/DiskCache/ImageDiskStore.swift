import Foundation

/// How a loader lays out one URL's response in a ``DataCaching`` store (a
/// ``DataCache``, or another): the one owner of that layout and of the rule
/// that ties its parts together.
///
/// A response is kept as up to three kinds of entry, under keys derived from
/// the request's disk key (its URL, see `LoadRequest.diskKey(for:)`) and the
/// response's *generation* (64 random bits, new for every response stored):
///
/// | entry     | key                                           | body                      |
/// |-----------|-----------------------------------------------|---------------------------|
/// | headers   | `diskKey`                                     | none: the stored HTTP response but its body, and its generation |
/// | original  | `diskKey` + `\n#original\n` + generation      | the response body         |
/// | processed | `diskKey` + `\n#image:` + processing + `\n` + generation | a ``StoredImage`` |
/// | partial   | `diskKey` + `\n#partial`                      | the start of a body whose transfer was cut off |
///
/// (Encoded request headers start `\n` and a digit, so no suffix can be
/// mistaken for them.)
///
/// The headers entry is the one source of HTTP truth, and it is small, so
/// checking freshness never reads a large body. What it guarantees:
///
/// - **One unit**: a response's body is written first, under its
///   generation's own name, and its headers entry last; a reader finds the
///   body through the headers entry's generation, so it sees the new
///   response whole or the old one, never headers of one and a body of
///   another.
/// - **One writer wins**: the headers entry replaces the old one in one
///   atomic step of the store (``DataCaching/store(_:for:metadata:replacing:)``;
///   ``DataCache`` holds its folder's lock), and in that step the replaced
///   generation's body is removed. Two writers of one key, in one process
///   or several, end with the last one's complete response; the other's
///   body is removed with it.
/// - **A `304` keeps every part**: it rewrites the headers entry alone,
///   keeping its generation, and only while the stored generation is still
///   the one it refreshed (never over a newer response).
/// - **Thumbnails are tied to their generation by name**: a new response
///   orphans every processed image of the old one, whatever its size; they
///   are never read again, and go as the least recently used.
package struct ImageDiskStore: Sendable {
    package let cache: any DataCaching

    package init(cache: any DataCaching) {
        self.cache = cache
    }

    package static func originalKey(_ diskKey: String, generation: String) -> String {
        diskKey + "\n#original\n" + generation
    }
    static func partialKey(_ diskKey: String) -> String { diskKey + "\n#partial" }
    package static func processedKey(_ diskKey: String, _ processing: String, generation: String) -> String {
        diskKey + "\n#image:" + processing + "\n" + generation
    }

    /// A new generation: 64 random bits.
    static func newGeneration() -> String {
        String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// The stored response's metadata (its headers entry), if any. Whether
    /// it may be used is ``HTTPCache``'s to say.
    package func headers(for diskKey: String) -> DataCacheMetadata? {
        guard let entry = cache.entry(for: diskKey), entry.metadata.generation != nil else { return nil }
        return entry.metadata
    }

    /// The stored body of generation `generation`, or nil.
    func original(for diskKey: String, generation: String) -> Data? {
        cache.entry(for: Self.originalKey(diskKey, generation: generation))?.data
    }

    /// The stored processed image `processing` of generation `generation`, or nil.
    func processed(for diskKey: String, processing: String, generation: String) -> Data? {
        cache.entry(for: Self.processedKey(diskKey, processing, generation: generation))?.data
    }

    /// Stores a new response: its body first (when given), under
    /// `generation`, then its headers entry, which replaces the old one and
    /// removes the old one's body in the same step. The caller passes
    /// `generation` on to ``storeProcessed(_:for:processing:generation:)``.
    func storeResponse(
        _ metadata: DataCacheMetadata, body: Data?, for diskKey: String, generation: String
    ) throws(AsyncImageError) {
        var metadata = metadata
        metadata.generation = generation
        if let body {
            var part = DataCacheMetadata(contentType: metadata.contentType)
            part.generation = generation
            try cache.store(body, for: Self.originalKey(diskKey, generation: generation), metadata: part)
        }
        try cache.store(Data(), for: diskKey, metadata: metadata) { replaced in
            guard let old = replaced?.generation, old != generation else { return .replace() }
            return .replace(removing: [Self.originalKey(diskKey, generation: old)])
        }
    }

    /// Stores a processed image made from the response of `generation`.
    func storeProcessed(_ image: Data, for diskKey: String, processing: String, generation: String) throws(AsyncImageError) {
        var part = DataCacheMetadata()
        part.generation = generation
        try cache.store(image, for: Self.processedKey(diskKey, processing, generation: generation), metadata: part)
    }

    /// Rewrites the headers entry after a `304` (its generation, and so
    /// every part, kept), unless another writer stored a newer response
    /// meanwhile. Returns whether it did.
    @discardableResult
    func refresh(_ metadata: DataCacheMetadata, for diskKey: String) throws(AsyncImageError) -> Bool {
        try cache.store(Data(), for: diskKey, metadata: metadata) { replaced in
            replaced?.generation != nil && replaced?.generation == metadata.generation ? .replace() : .keep
        }
    }

    /// The start of a body an earlier transfer received before it was cut
    /// off, with the validator to resume it with (`If-Range`), or nil.
    func partial(for diskKey: String) -> StoredPartial? {
        guard let entry = cache.entry(for: Self.partialKey(diskKey)), !entry.data.isEmpty,
            let validator = entry.metadata.etag ?? entry.metadata.lastModified
        else { return nil }
        return StoredPartial(data: entry.data, validator: validator, contentType: entry.metadata.contentType)
    }

    /// Keeps the start of a body to resume later (replacing an older one).
    func storePartial(_ partial: StoredPartial, for diskKey: String) throws(AsyncImageError) {
        let isTag = partial.validator.hasPrefix("\"")
        let metadata = DataCacheMetadata(
            etag: isTag ? partial.validator : nil, lastModified: isTag ? nil : partial.validator,
            contentType: partial.contentType)
        try cache.store(partial.data, for: Self.partialKey(diskKey), metadata: metadata)
    }

    /// Forgets the start of a body (resumed, or no longer resumable).
    func removePartial(for diskKey: String) {
        cache.removeData(for: Self.partialKey(diskKey))
    }

    /// Whether a request for `processing` could be answered from disk without
    /// reading anything large: the headers entry (read: it is small) and a
    /// part of its generation exist (not read).
    func contains(_ diskKey: String, processing: String) -> Bool {
        guard let generation = headers(for: diskKey)?.generation else { return false }
        return cache.contains(Self.processedKey(diskKey, processing, generation: generation))
            || cache.contains(Self.originalKey(diskKey, generation: generation))
    }
}

/// The start of a body kept to resume its transfer: the bytes, and the
/// strong ETag or Last-Modified they belong to (sent as `If-Range`).
struct StoredPartial: Sendable {
    let data: Data
    let validator: String
    let contentType: String?
}

/// What a loader keeps on disk for a request (see
/// ``AsyncImageLoader/Configuration/diskStorage`` and
/// ``ImageRequest/diskStorage``).
public struct DiskStorage: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    /// Storage from its raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The response body as it came (any size can be made from it again).
    public static let originals = DiskStorage(rawValue: 1 << 0)
    /// The processed image a display-size request made (a thumbnail is read
    /// back instead of decoding the original again). A request with no
    /// processing (full size) stores its original under either choice.
    public static let processedImages = DiskStorage(rawValue: 1 << 1)
    /// Both (the default).
    public static let both: DiskStorage = [.originals, .processedImages]
}
