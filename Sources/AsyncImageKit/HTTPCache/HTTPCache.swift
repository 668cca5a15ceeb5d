import Foundation

/// The HTTP cache stage: ``HTTPCachePolicy``'s rules over the disk layout of
/// ``ImageDiskStore``. Both the image path and the data-level API read and
/// write stored responses through it, and nothing else decides what is
/// stored, reused or refreshed.
struct HTTPCache: Sendable {
    let policy: HTTPCachePolicy
    let store: ImageDiskStore

    /// A stored response's head and the generation its parts belong to.
    struct Entry: Sendable {
        var head: StoredHTTPHead
        var generation: String
        /// The metadata of its headers entry (rewritten on a refresh).
        var metadata: DataCacheMetadata
    }

    /// The stored response for `key` if there is one and it is the variant
    /// `requestHeaders` select (`Vary`), or nil.
    func entry(for key: String, requestHeaders: [String: String]) -> Entry? {
        guard let metadata = store.headers(for: key), let head = metadata.http, let generation = metadata.generation,
            policy.matchesVary(head, requestHeaders: requestHeaders)
        else { return nil }
        return Entry(head: head, generation: generation, metadata: metadata)
    }

    /// The head to store for a response, or nil when RFC 9111 does not let
    /// it be stored. (One with no freshness and no validator is stored too:
    /// it is what an offline request may still be served.)
    func headToStore(
        status: Int, responseHeaders: [String: String], requestHeaders: [String: String], requestTime: Double,
        responseTime: Double
    ) -> StoredHTTPHead? {
        guard policy.isStorable(status: status, responseHeaders: responseHeaders, requestHeaders: requestHeaders)
        else { return nil }
        return policy.storedHead(
            status: status, responseHeaders: responseHeaders, requestHeaders: requestHeaders, requestTime: requestTime,
            responseTime: responseTime)
    }

    /// Stores a new response (its head, and its body when given) under a
    /// new generation, which it returns (the parts made from it, processed
    /// images, are stored under it).
    @discardableResult
    func store(_ head: StoredHTTPHead, body: Data?, for key: String, generation: String = ImageDiskStore.newGeneration())
        throws(AsyncImageError) -> String
    {
        try store.storeResponse(metadata(for: head), body: body, for: key, generation: generation)
        return generation
    }

    /// `entry` refreshed by a `304`'s headers, rewritten on disk (its
    /// generation, and so its body and processed images, kept), or nil when
    /// the `304` is not about it (another validator).
    func refresh(
        _ entry: Entry, by notModified: [String: String], requestTime: Double, responseTime: Double, for key: String
    ) -> Entry? {
        guard policy.validates(entry.head, with: notModified) else { return nil }
        var refreshed = entry
        refreshed.head = policy.refreshed(
            entry.head, by: notModified, requestTime: requestTime, responseTime: responseTime)
        refreshed.metadata = metadata(for: refreshed.head)
        refreshed.metadata.generation = entry.generation
        return refreshed
    }

    /// Writes a refreshed entry's headers (not over a newer response that
    /// another writer stored meanwhile).
    func write(_ refreshed: Entry, for key: String) throws(AsyncImageError) {
        try store.refresh(refreshed.metadata, for: key)
    }

    /// The headers entry's metadata for `head`: the head itself, and copies
    /// of its validators, freshness and type for readers of the metadata.
    private func metadata(for head: StoredHTTPHead) -> DataCacheMetadata {
        let expiry = head.responseTime + policy.freshnessLifetime(head) - policy.currentAge(head, now: head.responseTime)
        var metadata = DataCacheMetadata(
            etag: head.headers["etag"], lastModified: head.headers["last-modified"], freshUntil: expiry,
            contentType: head.headers["content-type"])
        metadata.http = head
        return metadata
    }
}
