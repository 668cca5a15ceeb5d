import Foundation

/// Watches a progressive JPEG's body as it arrives, on the transport's
/// thread: a scan is complete when the next one starts (an SOS marker, `FF
/// DA`, which entropy-coded data never contains: a data `FF` is followed by
/// `00` or a restart marker). After the first complete scan it asks for a
/// preview of the body up to a scan's start, at most ``maxPreviews`` times
/// and at least ``minimumInterval`` apart.
final class PreviewWatcher: @unchecked Sendable {
    static let maxPreviews = 3
    static let minimumInterval = 0.15

    /// Transport thread only.
    private var scanned = 0
    private var scans = 0
    private var made = 0
    private var lastTime = -Double.infinity
    private let request: @Sendable (Data) -> Void

    /// `request` is called with the body up to the start of a scan.
    init(request: @escaping @Sendable (Data) -> Void) {
        self.request = request
    }

    /// Looks at the new bytes; returns whether it wants more.
    func look(at body: Data) -> Bool {
        guard made < Self.maxPreviews else { return false }
        body.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var index = max(1, scanned)
            while index < bytes.count {
                if bytes[index] == 0xDA, bytes[index - 1] == 0xFF {
                    scans += 1
                    let now = ProcessInfo.processInfo.systemUptime
                    // The second scan's start: the first is complete.
                    if scans >= 2, made < Self.maxPreviews, now - lastTime >= Self.minimumInterval {
                        made += 1
                        lastTime = now
                        request(Data(bytes[..<(index - 1)]))
                    }
                }
                index += 1
            }
            scanned = bytes.count
        }
        return made < Self.maxPreviews
    }
}

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

    /// On the decode queue: a preview from `prefix`; delivered if the job
    /// is still transferring (never after its body is in).
    func makePreview(_ job: LoadJob, _ prefix: Data, _ plan: (options: DecodingOptions, processors: [any ImageProcessing])) {
        guard let image = try? plan.processors.apply(to: decoders.decode(prefix, options: plan.options)) else { return }
        mutate { state, effects in
            guard case .loading = job.phase else { return }
            let queue = state.deliveryQueue
            for record in job.orderedRequests where record.request.wantsPreviews && !record.previewHandlers.isEmpty {
                // On the delivery queue, checked again there: an outcome
                // scheduled before it wins (the queue is serial).
                effects.append {
                    queue.async {
                        let handlers = self.state.withLock { _ in record.state == .pending ? record.previewHandlers : [] }
                        handlers.forEach { $0(image) }
                    }
                }
            }
        }
    }
}
