import Foundation
import Logging

/// The store stage's disk part, on the way back up: what a decode made is
/// kept on disk (called by the decode stage, which then fills the memory
/// caches). What may be
/// stored is ``HTTPCache``'s to say (RFC 9111); the layout is ``ImageDiskStore``'s.
extension AsyncImageLoader {
    /// What the store stage writes to disk after one decode, decided under
    /// the lock (``diskWrite(for:body:key:_:)``) and run on the disk write
    /// queue (``callAsFunction(_:reusing:)``).
    struct DiskWrite: Sendable {
        let cache: HTTPCache
        let diskKey: String
        let generation: String
        /// A new response to commit: its head, and its body when kept.
        let response: (head: StoredHTTPHead, body: Data?)?
        /// The processing whose image is stored, or nil.
        let processing: String?
        let encoding: ImageEncoding
        let logger: Logger
        let url: URL

        /// Whether it stores the processed image.
        var storesImage: Bool { processing != nil }

        /// The write of `image`, to hand to the disk write queue; `payload`:
        /// the still's bytes if they were made already (for an answer of
        /// ``AsyncImageLoader/encodedImage(for:encoding:)``), used when they
        /// are what `encoding` stores.
        func callAsFunction(_ image: Image, reusing payload: EncodedPayload?) -> @Sendable () -> Void {
            { [self] in
                do {
                    if let response {
                        try cache.store(response.head, body: response.body, for: diskKey, generation: generation)
                    }
                    if let processing {
                        if !image.isAnimated, payload?.kind != encoding.storedKind(opaque: image.isOpaque) {
                            EncodeWatch.note(url)
                        }
                        let bytes = try StoredImage.encode(image, encoding: encoding, reusing: payload)
                        try cache.store.storeProcessed(bytes, for: diskKey, processing: processing, generation: generation)
                    }
                } catch {
                    logger.warning("could not store \(url.absoluteString) on disk: \(error)")
                }
            }
        }
    }

    /// Under the lock, after `job` decoded an image for `key` from `body`:
    /// what to write to disk, or nil. A body from the network is stored
    /// once (its headers, and the body itself when a request keeps
    /// originals) under a new generation; each size's processed image once,
    /// when a request keeps processed images and the disk does not already
    /// hold it. The write runs on ``diskWrites``.
    func diskWrite(for job: LoadJob, body: Data, key: ImageCacheKey, _ state: inout LoaderState) -> DiskWrite? {
        guard let cache = job.disk.cache else { return nil }
        var response: (head: StoredHTTPHead, body: Data?)?
        if !job.disk.bodyFromDisk, job.disk.generation == nil {
            // What HTTP allows to be stored (RFC 9111: no `no-store`, no
            // `Vary: *`, reusable), as a whole response.
            guard
                let head = cache.headToStore(
                    status: job.response.statusCode, responseHeaders: job.response.headers, requestHeaders: job.headers,
                    requestTime: job.response.requestTime, responseTime: job.response.responseTime)
            else {
                job.disk.generation = ""  // not storable: nothing of it is
                return nil
            }
            job.disk.generation = ImageDiskStore.newGeneration()
            // A body that ended at the DC coefficients is a prefix: never the original.
            response = (head, job.disk.storesOriginal && DCEarlyEnd.storesBody(of: job) ? body : nil)
        }
        guard let generation = job.disk.generation, !generation.isEmpty else { return nil }
        let processing = key.processing
        let storesImage =
            !ImageCacheKey.isFullSize(processing) && job.disk.storedProcessings.contains(processing)
            && !job.disk.processingsOnDisk.contains(processing)
        if storesImage { job.disk.processingsOnDisk.insert(processing) }
        guard response != nil || storesImage else { return nil }
        return DiskWrite(
            cache: cache, diskKey: job.diskKey, generation: generation, response: response,
            processing: storesImage ? processing : nil, encoding: state.processedImageEncoding, logger: state.logger,
            url: job.url)
    }
}
