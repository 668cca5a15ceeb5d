import Foundation

/// How a loader lays out one URL's response in a ``DataCache``: the one
/// owner of that layout and of the rule that ties its parts together.
///
/// A response is kept as up to three kinds of entry, under keys derived from
/// the request's disk key (its URL and headers):
///
/// | entry     | key                          | body                      |
/// |-----------|------------------------------|---------------------------|
/// | headers   | `diskKey`                    | none: HTTP metadata only  |
/// | original  | `diskKey` + `\n#original`    | the response body         |
/// | processed | `diskKey` + `\n#image:` + processing | a ``StoredImage`` |
/// | partial   | `diskKey` + `\n#partial`    | the start of a body whose transfer was cut off |
///
/// (Encoded request headers start `\n` and a digit, so no suffix can be
/// mistaken for them.)
///
/// The headers entry is the one source of HTTP truth: freshness, validators
/// and `Vary` are read, and refreshed by a `304`, there alone, and it is
/// small, so checking freshness never reads a large body. Each `200` stored
/// gets a new random *generation*, written into every entry made from it.
/// A body or processed image is used only while its generation equals the
/// headers entry's; one that does not match (the response was replaced by a
/// newer `200`, or a write of another process came between) is a miss and
/// is removed. So a `304` keeps every processed image (only the small
/// headers entry is rewritten), and a `200` drops them all, lazily, without
/// knowing which sizes exist.
///
/// Writes go headers first, then the parts: a reader between the two sees
/// the new generation and an old or missing part, which is a miss, never a
/// mismatched pair.
struct ImageDiskStore: Sendable {
    let cache: DataCache

    static func originalKey(_ diskKey: String) -> String { diskKey + "\n#original" }
    static func partialKey(_ diskKey: String) -> String { diskKey + "\n#partial" }
    static func processedKey(_ diskKey: String, _ processing: String) -> String { diskKey + "\n#image:" + processing }

    /// A new generation: 64 random bits.
    static func newGeneration() -> String {
        String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// The stored response's metadata (its headers entry), if any. Whether
    /// it may be used is ``HTTPCache``'s to say.
    func headers(for diskKey: String) -> DataCacheMetadata? {
        guard let entry = cache.entry(for: diskKey), entry.metadata.generation != nil else { return nil }
        return entry.metadata
    }

    /// The stored body of generation `generation`, or nil.
    func original(for diskKey: String, generation: String) -> Data? {
        part(Self.originalKey(diskKey), generation: generation, of: diskKey)
    }

    /// The stored processed image `processing` of generation `generation`, or nil.
    func processed(for diskKey: String, processing: String, generation: String) -> Data? {
        part(Self.processedKey(diskKey, processing), generation: generation, of: diskKey)
    }

    private func part(_ key: String, generation: String, of diskKey: String) -> Data? {
        guard let entry = cache.entry(for: key) else { return nil }
        guard entry.metadata.generation == generation else {
            // Made from another response: never used again, unless it is
            // newer than what this reader saw (another writer's, just in).
            if cache.entry(for: diskKey)?.metadata.generation != entry.metadata.generation {
                cache.removeData(for: key)
            }
            return nil
        }
        return entry.data
    }

    /// Stores a new response (its headers, and its body when `body` is
    /// given) under a new generation, which the caller passes on to
    /// ``storeProcessed(_:for:processing:generation:)``.
    func storeResponse(
        _ metadata: DataCacheMetadata, body: Data?, for diskKey: String, generation: String
    ) throws(AsyncImageError) {
        var metadata = metadata
        metadata.generation = generation
        try cache.store(Data(), for: diskKey, metadata: metadata)
        if let body {
            var part = DataCacheMetadata(contentType: metadata.contentType)
            part.generation = generation
            try cache.store(body, for: Self.originalKey(diskKey), metadata: part)
        }
    }

    /// Stores a processed image made from the response of `generation`.
    func storeProcessed(_ image: Data, for diskKey: String, processing: String, generation: String) throws(AsyncImageError) {
        var part = DataCacheMetadata()
        part.generation = generation
        try cache.store(image, for: Self.processedKey(diskKey, processing), metadata: part)
    }

    /// Rewrites the headers entry after a `304` (its generation, and so
    /// every part, kept).
    func refresh(_ metadata: DataCacheMetadata, for diskKey: String) throws(AsyncImageError) {
        // Not over a newer response another writer stored meanwhile.
        guard cache.entry(for: diskKey)?.metadata.generation == metadata.generation else { return }
        try cache.store(Data(), for: diskKey, metadata: metadata)
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
    /// reading anything large: the headers entry and the part exist (not read).
    func contains(_ diskKey: String, processing: String) -> Bool {
        guard cache.contains(diskKey) else { return false }
        return cache.contains(Self.processedKey(diskKey, processing)) || cache.contains(Self.originalKey(diskKey))
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
