import Foundation

/// Watches a progressive JPEG's body as it arrives, on the transport's
/// thread: a scan is complete when the next one starts (an SOS marker, `FF
/// DA`, which entropy-coded data never contains: a data `FF` is followed by
/// `00` or a restart marker).
///
/// - Previews (when asked for): after the first complete scan, the body up
///   to a scan's start, at most ``maxPreviews`` times, at least
///   ``minimumInterval`` apart.
/// - The DC coefficients (when asked for): a scan with `Ss = Se = 0` and
///   `Al <= 1` brings the DC of its components to within one bit; once every
///   component's DC is there, the body up to the next scan's start decodes
///   at 1/8 scale as the whole file does to within about 50 dB PSNR (libjpeg's
///   1/8 scale reads the luma's DC alone, and 4:2:0 chroma's lowest four
///   coefficients). Measured on libjpeg's default progressive script
///   (`ProgressivePreviewTests.testWhereTheDCCoefficientsEnd`): after its
///   first scan (DC, `Al = 1`), 5% of a 1600x1200 photo's bytes, 50 dB;
///   after the DC refinement (scan 7, `Al = 0`), 37% of the bytes, 53 dB;
///   exact only after the chroma AC refinements (39%). The first is
///   visually identical (a difference of one level at most, here and
///   there), so the transfer stops there.
final class PreviewWatcher: @unchecked Sendable {
    static let maxPreviews = 3
    static let minimumInterval = 0.15

    /// Transport thread only.
    private var scanned = 0
    private var scans = 0
    private var made = 0
    private var lastTime = -Double.infinity
    private let preview: (@Sendable (Data) -> Void)?
    private let dcComplete: (@Sendable (Data) -> Void)?
    /// The frame's component count (from the header probe); 0 until known.
    var componentCount = 0
    private var dcDone: Set<UInt8> = []
    /// The DC became complete with the scan that started here (the next
    /// scan's start ends it).
    private var dcCompletedByScanAt: Int?
    private var reportedDC = false

    /// `preview` is called with the body up to the start of a scan; `dcComplete`
    /// with the body up to the end of the scan that completed the DC.
    init(preview: (@Sendable (Data) -> Void)?, dcComplete: (@Sendable (Data) -> Void)?) {
        self.preview = preview
        self.dcComplete = dcComplete
    }

    private var wantsMore: Bool {
        (preview != nil && made < Self.maxPreviews) || (dcComplete != nil && !reportedDC)
    }

    /// Looks at the new bytes; returns whether it wants more.
    func look(at body: Data) -> Bool {
        guard wantsMore else { return false }
        body.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var index = max(1, scanned)
            while index < bytes.count {
                if bytes[index] == 0xDA, bytes[index - 1] == 0xFF {
                    // A scan's header may not be all here yet: look again next time.
                    guard scanStarted(at: index - 1, in: bytes) else { break }
                }
                index += 1
            }
            scanned = index
        }
        return wantsMore
    }

    /// A scan starts at `start` (its `FF DA`); false when its header is not all in.
    private func scanStarted(at start: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard start + 4 < bytes.count else { return false }
        let length = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        guard length >= 6, start + 2 + length <= bytes.count else { return false }
        scans += 1
        let prefix = { Data(bytes[..<start]) }
        // What completes here: the scans before this one.
        if let dcComplete, !reportedDC, dcCompletedByScanAt != nil {
            reportedDC = true
            dcComplete(prefix())
        }
        let now = ProcessInfo.processInfo.systemUptime
        if let preview, scans >= 2, made < Self.maxPreviews, now - lastTime >= Self.minimumInterval {
            made += 1
            lastTime = now
            preview(prefix())
        }
        // This scan: does it complete the DC of its components?
        let count = Int(bytes[start + 4])
        guard count >= 1, 5 + 2 * count + 3 <= length + 2 else { return true }
        let spectral = start + 5 + 2 * count
        let (ss, se, approximation) = (bytes[spectral], bytes[spectral + 1], bytes[spectral + 2])
        if ss == 0, se == 0, approximation & 0x0F <= 1 {
            for component in 0..<count { dcDone.insert(bytes[start + 5 + 2 * component]) }
            if componentCount > 0, dcDone.count >= componentCount, dcCompletedByScanAt == nil {
                dcCompletedByScanAt = start
            }
        }
        return true
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

/// The early end of a progressive JPEG's transfer at its DC coefficients.
extension AsyncImageLoader {
    /// Whether every request of `job` is decoded at libjpeg's 1/8 scale
    /// (the DC alone) from a source of `source` (upright) pixels: each
    /// one's natural size fits within the source's size divided by 8,
    /// rounded up, on both sides (the decoder picks the smallest scale whose
    /// output still covers it).
    static func decodesFromDCAlone(_ job: LoadJob, source: PixelSize) -> Bool {
        let eighth = PixelSize(width: (source.width + 7) / 8, height: (source.height + 7) / 8)
        return !job.requests.isEmpty && job.orderedRequests.allSatisfy { record in
            guard record.request.options.targetSize != nil else { return false }
            let natural = record.request.options.naturalSize(for: source)
            return natural.width <= eighth.width && natural.height <= eighth.height
        }
    }

    /// The DC coefficients of `job`'s progressive JPEG are all in `prefix`:
    /// if every request still decodes at 1/8 scale, the transfer ends here
    /// (cancelled; what arrived is kept to resume) and the decode reads the
    /// prefix. On the timer queue.
    func endAtDC(_ job: LoadJob, _ handle: TransferHandle, _ prefix: Data, total: Int?) {
        let proceed = mutate { state, effects -> Bool in
            guard case .loading(let current) = job.phase, current === handle,
                let source = job.fileProperties?.uprightPixelSize,
                Self.decodesFromDCAlone(job, source: source)
            else { return false }
            job.earlyEnd = ImageResponse.EarlyEnd(receivedBytes: prefix.count, totalBytes: total)
            return true
        }
        guard proceed else { return }
        // The task's completion, if it comes anyway, finds the job decoding and is dropped.
        handle.cancel()
        transferFinished(
            job, handle, .success(DataResponse(url: job.url, statusCode: 200, contentType: "image/jpeg", data: prefix)),
            endedEarly: true)
    }
}
