import Foundation

/// The store stage's disk part, on the way back up: what a decode made is
/// kept on disk (called by the decode stage, which then fills the memory
/// caches). What may be
/// stored is ``HTTPCache``'s to say (RFC 9111); the layout is ``ImageDiskStore``'s.
extension AsyncImageLoader {
    /// Under the lock, after `job` decoded `image` for `key` from `body`:
    /// the disk write to hand to ``diskWrites``, or nil. A body from the
    /// network is stored once (its headers, and the body itself when a
    /// request keeps originals) under a new generation; each size's
    /// processed image once, when a request keeps processed images and the
    /// disk does not already hold it.
    func diskWrite(for job: LoadJob, body: Data, key: ImageCacheKey, image: Image, _ state: inout LoaderState)
        -> (@Sendable () -> Void)?
    {
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
            !processing.isEmpty && job.disk.storedProcessings.contains(processing)
            && !job.disk.processingsOnDisk.contains(processing)
        if storesImage { job.disk.processingsOnDisk.insert(processing) }
        guard response != nil || storesImage else { return nil }
        let newResponse = response
        let (diskKey, encoding, logger, url) = (job.diskKey, state.processedImageEncoding, state.logger, job.url)
        return { [diskWrites] in
            diskWrites.async {
                do {
                    if let response = newResponse {
                        try cache.store(response.head, body: response.body, for: diskKey, generation: generation)
                    }
                    if storesImage {
                        let bytes = try StoredImage.encode(image, encoding: encoding)
                        try cache.store.storeProcessed(
                            bytes, for: diskKey, processing: processing, generation: generation)
                    }
                } catch {
                    logger.warning("could not store \(url.absoluteString) on disk: \(error)")
                }
            }
        }
    }
}
