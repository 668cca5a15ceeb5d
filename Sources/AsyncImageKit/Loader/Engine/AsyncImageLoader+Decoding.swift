import Foundation

/// The decode stage (its state: ``DecodeScheduler``), on the way up: at most
/// ``AsyncImageLoader/Configuration/concurrentDecodes`` decoders, the waiting bodies in the transfer queue's order; each
/// body decoded once per display size its requests ask for and processed.
/// Then the store stage (the disk writes handed to their queue, the image
/// put in its requests' memory caches) and the job's requests of that size,
/// each handed to delivery.
extension AsyncImageLoader {
    /// Starts decodes while decoders are free, in the ``DecodeScheduler``'s
    /// order. Each start frees that job's transfer slot.
    func startDecodes(_ state: inout LoaderState, _ effects: inout Effects) {
        while let job = state.decodes.next() {
            guard case .awaitingDecoder(let data) = job.phase else {
                state.decodes.finished(job)
                continue
            }
            state.slots.release(of: job)
            guard var next = job.nextDecode() else {
                job.phase = .decoding(data, key: nil)
                state.decodes.finished(job)
                finish(job, &state, &effects)
                continue
            }
            job.phase = .decoding(data, key: next.key)
            next.options.stop = state.decodes.begin(job)
            report(.decoding, job.requests(for: next.key), &state, &effects)
            let (key, options) = (next.key, next.options)
            effects.append { DecodeScheduler.queue().async { self.decode(job, data, key, options) } }
        }
    }

    /// On the decode queue: decode one size of the job's body (or read its
    /// stored processed image back), cache it, and schedule the deliveries
    /// of the requests for that size; then the next size, while requests
    /// for other sizes remain (they may join meanwhile).
    private func decode(_ job: LoadJob, _ data: Data, _ key: ImageCacheKey, _ options: DecodingOptions) {
        var key = key
        var options = options
        // The last decode: sizes that differ only by their processors share it.
        var decoded: (options: DecodingOptions, image: Image)?
        // What the file says about itself: the header probe's (or the
        // transfer stage's) reading, else read from the body here, once.
        var properties: ImageFileProperties?? = state.withLock { _ in job.fileProperties.map { .some($0) } }
        while true {
            let url = job.url
            StageWalk.note(.decode, .up, url)
            let (storedImage, hasBody, processors, encodings) = state.withLock { _ in
                options = DCEarlyEnd.decodingOptions(options, for: job)
                return (
                    job.disk.storedImages[key.processing], job.disk.hasBody, job.processors[key] ?? [],
                    job.encodings(for: key)
                )
            }
            // A stored processed image is read back instead of decoding the
            // body; one that does not read (a damaged payload) falls back to
            // the body, or, with none, sends its requests to a job that loads it.
            let restored = storedImage.flatMap { StoredImage.decode($0, decoders: decoders) }
            let unreadable = storedImage != nil && restored == nil
            let outcome: Result<Image, AsyncImageError>
            if let restored {
                outcome = .success(restored)
                // A stored thumbnail knows the original file's properties.
                if let properties = restored.fileProperties { propertiesKnown(job, properties) }
            } else if unreadable, !hasBody {
                outcome = .failure(.diskCache(path: "", message: "unreadable processed image"))
            } else {
                // Decoded (or the last decode reused), then processed, here on
                // the decode queue.
                outcome = Result { () throws(AsyncImageError) -> Image in
                    let image: Image
                    if let decoded, decoded.options == options {
                        image = decoded.image
                    } else {
                        image = try decoders.decode(data, options: options)
                        decoded = (options, image)
                    }
                    if properties == nil { properties = .some(ImageFileProperties(data: data)) }
                    return try processors.apply(to: image).with(fileProperties: properties ?? nil)
                }.mapError { $0.with(url: url) }
            }
            // The store stage: the disk (its writes handed to their queue
            // below), then the memory cache.
            StageWalk.note(.stores, .up, url)
            // What decoded goes to the disk cache (never a body that failed
            // to decode, nor one cut short: that is a transport failure), on
            // the disk write queue: a disk that waits for another process's
            // lock delays no image.
            var storeOnDisk: (@Sendable () -> Void)?
            // The still's bytes for the requests that want them
            // (``encodedImage(for:encoding:)``): a stored thumbnail's own,
            // or, when the disk stores what they want, made here once for
            // both (a first fetch encodes once, not once for the disk and
            // once for the answer).
            var encoded: EncodedPayload?
            if restored != nil, !encodings.isEmpty { encoded = storedImage.flatMap { StoredImage.stored($0)?.encoded } }
            if case .success(let image) = outcome, restored == nil {
                let write = state.withLock { state in self.diskWrite(for: job, body: data, key: key, &state) }
                if let write {
                    let kind = write.encoding.storedKind(opaque: image.isOpaque)
                    if write.storesImage, !image.isAnimated,
                        encodings.contains(where: { $0.answerKind(opaque: image.isOpaque) == kind })
                    {
                        EncodeWatch.note(url)
                        encoded = try? EncodedPayload(image, as: kind)
                    }
                    let run = write(image, reusing: encoded)
                    storeOnDisk = { [diskWrites] in diskWrites.async(execute: run) }
                }
            }
            if unreadable, let (store, generation) = state.withLock({ _ in job.disk.cache.map { ($0.store, job.disk.generation) } }),
                let generation
            {
                let (diskKey, processing) = (job.diskKey, key.processing)
                diskWrites.async {
                    store.cache.removeData(for: ImageDiskStore.processedKey(diskKey, processing, generation: generation))
                }
            }
            // Stored before the deliveries are scheduled, and outside the
            // loader's lock (an eviction may release a large image).
            // A `no-store` response is kept in no cache, the memory cache
            // included (RFC 9111 §5.2.2.5).
            var (stored, cacheClass) = state.withLock { _ in
                (
                    job.response.forbidsStorage ? [] : job.caches[key] ?? [],
                    job.requests(for: key).map(\.request.cacheClass).max() ?? .normal
                )
            }
            if case .success(let image) = outcome { stored.forEach { $0.setImage(image, for: key, cacheClass: cacheClass) } }
            let next = mutate { state, effects -> (key: ImageCacheKey, options: DecodingOptions)? in
                var late: [any ImageCaching] = []
                if case .success = outcome, !job.response.forbidsStorage {
                    // A request that joined during the store brought another cache.
                    for cache in job.caches[key] ?? [] where !stored.contains(where: { $0 === cache }) {
                        stored.append(cache)
                        late.append(cache)
                    }
                }
                // A request that joined with a higher pixel or frame limit than
                // this decode had is decoded again rather than failed by a
                // lower one; so is one that joined after the decode was
                // stopped (nobody waited for it then).
                func decodeAgain(_ record: LoadRequest) -> Bool {
                    guard case .failure(.decoding(let failure, _)) = outcome else { return false }
                    if failure.isStopped { return true }
                    guard failure.isPixelLimit else { return false }
                    return record.request.options.maxPixels > options.maxPixels
                        || record.request.options.maxFrames > options.maxFrames
                }
                if unreadable, !hasBody {
                    job.disk.storedImages[key.processing] = nil
                    self.moveUnservable(of: job, &state, &effects)
                    self.pump(&state, &effects)
                }
                // Stored before any delivery below runs.
                if case .success(let image) = outcome, !late.isEmpty {
                    effects.append { late.forEach { $0.setImage(image, for: key, cacheClass: cacheClass) } }
                }
                // Handed to the disk queue before any delivery is scheduled (it
                // runs there, never holding up this thread): once a caller has
                // its image, `flushDiskWrites()` waits for the store.
                if let storeOnDisk { effects.append(storeOnDisk) }
                StageWalk.note(.jobs, .up, url)
                for record in job.requests(for: key) where !decodeAgain(record) {
                    job.leave(record)
                    if let encoded, case .success(let image) = outcome,
                        record.encoding?.answerKind(opaque: image.isOpaque) == encoded.kind
                    {
                        record.encoded = encoded
                    }
                    let result = outcome.flatMap { Self.checked($0, for: record) }
                    self.deliver(record, from: job, result, &state, &effects)
                }
                if var next = job.nextDecode() {
                    next.options.stop = state.decodes.begin(job)
                    if next.key == key, !outcome.isStopped {
                        let (logger, limit) = (state.logger, next.options.maxPixels)
                        effects.append {
                            logger.debug("decoding \(url.absoluteString) again with a higher pixel limit (\(limit))")
                        }
                    }
                    job.phase = .decoding(data, key: next.key)
                    self.report(.decoding, job.requests(for: next.key), &state, &effects)
                    return next
                }
                state.decodes.finished(job)
                self.finish(job, &state, &effects)
                self.startDecodes(&state, &effects)
                self.pump(&state, &effects)
                return nil
            }
            guard let next else { return }
            (key, options) = next
        }
    }

    /// Delivers `outcome` to every request of `job` (a transfer failure).
    func deliverAll(
        _ job: LoadJob, _ outcome: Result<Image, AsyncImageError>, _ state: inout LoaderState, _ effects: inout Effects
    ) {
        for record in job.orderedRequests {
            job.leave(record)
            deliver(record, from: job, outcome, &state, &effects)
        }
    }
}

extension Result<Image, AsyncImageError> {
    /// A decode stopped because nobody waited for it (``DecodeStop``).
    fileprivate var isStopped: Bool {
        if case .failure(.decoding(let failure, _)) = self { return failure.isStopped }
        return false
    }
}
