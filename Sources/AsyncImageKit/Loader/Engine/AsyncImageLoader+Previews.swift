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
package final class PreviewWatcher: @unchecked Sendable {
    static let maxPreviews = 3
    static let minimumInterval = 0.15

    /// Transport thread only.
    /// Bytes looked at so far; 0 until the first scan was found by walking
    /// the segments before it (their payloads, EXIF thumbnails among them,
    /// may hold any bytes).
    private var scanned = 0
    private var scans = 0
    private var made = 0
    private var lastTime = -Double.infinity
    private let preview: (@Sendable (Data) -> Void)?
    private let dcComplete: (@Sendable (Data) -> Void)?
    /// The frame's component ids (from its SOF).
    private var componentIDs: Set<UInt8> = []
    private var dcDone: Set<UInt8> = []
    /// The DC became complete with a scan (the next scan's start ends it).
    private var dcCompleted = false
    private var reportedDC = false

    /// `preview` is called with the body up to the start of a scan; `dcComplete`
    /// with the body up to the end of the scan that completed the DC.
    package init(preview: (@Sendable (Data) -> Void)?, dcComplete: (@Sendable (Data) -> Void)?) {
        self.preview = preview
        self.dcComplete = dcComplete
    }

    private var wantsMore: Bool {
        (preview != nil && made < Self.maxPreviews) || (dcComplete != nil && !reportedDC)
    }

    /// Looks at the new bytes; returns whether it wants more.
    package func look(at body: Data) -> Bool {
        guard wantsMore else { return false }
        body.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            if scanned == 0 {
                guard let first = firstScan(in: bytes) else { return }
                scanned = first + 1
            }
            var index = scanned
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

    /// Walks the segments from the start of the file to the first SOS (its
    /// offset), reading the frame's component ids on the way; nil while
    /// they have not all arrived.
    private func firstScan(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { return nil }
            let marker = bytes[offset + 1]
            if marker == 0xFF { offset += 1; continue }
            if marker == 0xDA { return offset }
            if marker == 0x01 || (0xD0...0xD9).contains(marker) { offset += 2; continue }
            var length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if length < 2, JPEGHeader.isSkippedWhenShort(marker) { length = 2 }  // as libjpeg reads it
            guard length >= 2, offset + 2 + length <= bytes.count else { return nil }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC, length >= 8 {
                let count = Int(bytes[offset + 9])
                for component in 0..<count where offset + 10 + 3 * component < offset + 2 + length {
                    componentIDs.insert(bytes[offset + 10 + 3 * component])
                }
            }
            offset += 2 + length
        }
        return nil
    }

    /// A scan starts at `start` (its `FF DA`); false when its header is not all in.
    private func scanStarted(at start: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard start + 4 < bytes.count else { return false }
        let length = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        guard length >= 6 else { return true }  // not a scan header: skipped
        guard start + 2 + length <= bytes.count else { return false }
        scans += 1
        let prefix = { Data(bytes[..<start]) }
        // What completes here: the scans before this one.
        if let dcComplete, !reportedDC, dcCompleted {
            reportedDC = true
            dcComplete(prefix())
        }
        let now = ProcessInfo.processInfo.systemUptime
        if let preview, scans >= 2, made < Self.maxPreviews, now - lastTime >= Self.minimumInterval {
            made += 1
            lastTime = now
            preview(prefix())
        }
        // This scan: does it bring the DC of its components to within a bit?
        let count = Int(bytes[start + 4])
        guard count >= 1, 5 + 2 * count + 3 <= length + 2 else { return true }
        let spectral = start + 5 + 2 * count
        let (ss, se, approximation) = (bytes[spectral], bytes[spectral + 1], bytes[spectral + 2])
        if ss == 0, se == 0, approximation & 0x0F <= 1 {
            for component in 0..<count where componentIDs.contains(bytes[start + 5 + 2 * component]) {
                dcDone.insert(bytes[start + 5 + 2 * component])
            }
            if !componentIDs.isEmpty, dcDone == componentIDs { dcCompleted = true }
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
        // Optional work: skipped while every decoder is busy with final images.
        guard state.withLock({ $0.decoding < $0.decoders }) else { return }
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

/// The early end of a progressive JPEG's transfer at its DC coefficients.
extension AsyncImageLoader {
    /// Whether every request of `job` is decoded at libjpeg's 1/8 scale
    /// (the DC alone) from a source of `source` (upright) pixels: each
    /// one's natural size fits within the source's size divided by 8,
    /// rounded up, on both sides (the decoder picks the smallest scale whose
    /// output still covers it).
    static func decodesFromDCAlone(_ job: LoadJob, source: PixelSize) -> Bool {
        !job.requests.isEmpty && job.orderedRequests.allSatisfy { decodesFromDCAlone($0.request, source: source) }
    }

    /// Whether `request` is decoded at 1/8 scale from a source of `source` pixels.
    static func decodesFromDCAlone(_ request: ImageRequest, source: PixelSize) -> Bool {
        guard request.options.targetSize != nil else { return false }
        let eighth = PixelSize(width: (source.width + 7) / 8, height: (source.height + 7) / 8)
        let natural = request.options.naturalSize(for: source)
        return natural.width <= eighth.width && natural.height <= eighth.height
    }

    /// The DC coefficients of `job`'s progressive JPEG are all in `prefix`:
    /// if every request still decodes at 1/8 scale, the transfer ends here
    /// (cancelled; what arrived is kept to resume) and the decode reads the
    /// prefix. On the timer queue.
    func endAtDC(_ job: LoadJob, _ handle: TransferHandle, _ prefix: Data, total: Int?, head: ResponseHead?) {
        let proceed = mutate { state, effects -> Bool in
            // Set under the lock: from here a request that needs more than the
            // DC goes to a job of its own (`LoadJob.canServe`).
            guard case .loading(let current) = job.phase, current === handle, let head, head.statusCode == 200,
                let source = job.fileProperties?.uprightPixelSize,
                Self.decodesFromDCAlone(job, source: source)
            else { return false }
            job.earlyEnd = ImageResponse.EarlyEnd(receivedBytes: prefix.count, totalBytes: total)
            return true
        }
        guard proceed else { return }
        // The task's completion, if it comes anyway, finds the job decoding and is dropped.
        handle.cancel()
        // The response's own status, headers and final URL: what may be
        // stored (no-store, Vary) and its validators are the server's.
        guard let head else { return }
        let response = DataResponse(
            url: job.url, finalURL: head.finalURL, statusCode: head.statusCode, contentType: head.headers["content-type"],
            data: prefix, headers: head.headers)
        transferFinished(job, handle, .success(response), endedEarly: true)
    }
}
