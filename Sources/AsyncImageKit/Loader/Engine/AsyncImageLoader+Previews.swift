import Foundation

/// The preview stage: a progressive JPEG's previews while it downloads, for
/// requests that want them (``ImageRequest/wantsPreviews``).
extension AsyncImageLoader {
    /// What a job's previews are decoded with, if any request wants them:
    /// the newest such request's options and processors (under the lock).
    func previewPlan(_ job: LoadJob) -> (options: DecodingOptions, processors: [any ImageProcessing])? {
        guard let newest = job.orderedRequests.last(where: { $0.request.wantsPreviews }) else { return nil }
        var options = newest.request.options
        options.isProgressivePreview = true
        return (options, newest.request.processors)
    }

    /// On the preview queue: a preview from `prefix`; delivered if the job
    /// is still transferring (never after its body is in).
    func makePreview(_ job: LoadJob, _ prefix: Data, _ plan: (options: DecodingOptions, processors: [any ImageProcessing])) {
        // Optional work: skipped while every decoder is busy with final images.
        guard state.withLock({ $0.decodes.hasFreeDecoder }) else { return }
        guard let image = try? plan.processors.apply(to: decoders.decode(prefix, options: plan.options)) else { return }
        mutate { state, effects in
            guard case .loading = job.phase else { return }
            let queue = state.deliveryQueue
            for record in job.orderedRequests where record.request.wantsPreviews {
                // No handler yet: kept for the first one (ImageTask.onPreview).
                guard !record.previewHandlers.isEmpty else {
                    record.unclaimedPreview = image
                    continue
                }
                effects.append { self.deliverPreview(image, to: record, on: queue) }
            }
        }
    }
}

extension AsyncImageLoader {
    /// Calls `record`'s preview handlers with `image` on the delivery queue,
    /// checked again there: an outcome scheduled before it wins (the queue is
    /// serial). (A request of the async API, whose outcome does not pass that
    /// queue, may still see a preview after it: ImageModel, the only one that
    /// asks, drops a preview once it has its image.)
    func deliverPreview(_ image: Image, to record: LoadRequest, on queue: DispatchQueue) {
        queue.async {
            let handlers = self.state.withLock { _ in record.state == .pending ? record.previewHandlers : [] }
            handlers.forEach { $0(image) }
        }
    }
}
