import Foundation
import Logging

/// What a transfer needs once it leaves the lock: its job and handle, the
/// request, the user's modifier, and where its partial body may be kept.
struct TransferContext: Sendable {
    let job: LoadJob
    var handle: TransferHandle
    let request: DataRequest
    let modifier: (@Sendable (inout DataRequest) -> Void)?
    let writeDisk: HTTPCache?
    /// Where its stale response was read from (nil: the disk is not read).
    let readDisk: HTTPCache?
    /// The HTTP caching rules (what a `304` and a failure mean for a stale response).
    let policy: HTTPCachePolicy
    /// When a stale stored response may be served (offline, while
    /// revalidating, when the server cannot be reached); made offline when
    /// the loader goes offline under it.
    var rules: StaleRules
    /// How previews are decoded, when a request wants them.
    let previews: (options: DecodingOptions, processors: [any ImageProcessing])?
    /// Whether the transfer may end once a progressive JPEG's DC
    /// coefficients are in (every request has a display size; checked again then).
    let watchesDC: Bool
}

/// What the network stage saw of one try of a transfer, beyond its
/// result: what decides whether a failure may be retried (see ``RetryPolicy``).
struct TransferAttempt: Sendable {
    /// Body bytes arrived (the transport showed the response's head, or
    /// kept a partial body): a failure now is resumed, not retried. A
    /// transport that reports neither never sets it.
    var bodyArrived = false
    /// The request as sent may be repeated (no method-override header
    /// naming a method that is not idempotent).
    var isIdempotent = true
}

/// The network stage: one transfer of `request` (the HTTP cache stage has
/// added its validators or `Range`), through the user's request modifier and
/// the URL policy, to the transport; the body watched as it arrives (the
/// header probe, progressive previews, the DC's end). Its answer goes back
/// up to the HTTP cache stage (`answered`).
extension AsyncImageLoader {
    /// Calls the request modifier and the transport (after the lock).
    /// `resumes`: the request asks for the rest of a kept part (its bytes
    /// do not start at the file's start). `storePartial`: told what a transfer cut
    /// off mid-body received. `answered`: the transport's result, with when
    /// it was asked for and when it came, and what was seen of the try.
    func startTransfer(
        _ transfer: TransferContext, _ prepared: DataRequest, resumes: Bool,
        storePartial: (@Sendable (PartialBody) -> Void)?,
        answered: @escaping @Sendable (
            Result<DataResponse, AsyncImageError>, _ requestTime: Double, _ responseTime: Double, TransferAttempt
        ) -> Void
    ) {
        let (job, handle) = (transfer.job, transfer.handle)
        // From here until the task is attached, a cancel waits for it (see `TransferHandle`).
        guard handle.beginStarting() else { return }
        StageWalk.note(.network, .down, job.url)
        var request = prepared
        transfer.modifier?(&request)
        // The modifier may change the URL, and may tighten the policy but
        // not loosen it: the policy applies to the URL loaded, whatever the transport.
        request.policy = transfer.request.policy.restricted(by: request.policy)
        if let reason = request.policy.refusal(for: request.url) {
            _ = handle.attach(RefusedTask())
            let now = Date().timeIntervalSince1970
            return answered(.failure(.refused(request.url, reason: reason)), now, now, TransferAttempt())
        }
        // Read after the modifier: it may have added a method override.
        let isIdempotent = TransientFailure.isIdempotent(request)
        var observer = DataTransferObserver()
        // The header probe: the file's properties (its size above all) from
        // the body's first bytes (`ImageFileProperties(prefix:)`: a JPEG's
        // long before its pixels; a PNG's or GIF's once its last header is
        // in, the file's end; a WebP's from the whole body). Told on the
        // loader's timer queue: this runs on the transport's thread, which a
        // cancel under the loader's lock may be waiting for.
        // A progressive JPEG's scans, watched for previews and for the end
        // of its DC coefficients (all a 1/8-scale decode reads).
        let expected = Locked<Int?>(nil)
        let head = Locked<ResponseHead?>(nil)
        var onPreview: (@Sendable (Data) -> Void)?
        if let plan = transfer.previews {
            onPreview = { [weak self] prefix in
                guard let self else { return }
                self.previewQueue.async { [weak self] in self?.makePreview(job, prefix, plan) }
            }
        }
        var onDC: (@Sendable (Data) -> Void)?
        if transfer.watchesDC {
            onDC = { [weak self] prefix in
                guard let self else { return }
                let (total, responseHead) = (expected.withLock { $0 }, head.withLock { $0 })
                self.timerQueue.async { self.endAtDC(job, handle, prefix, total: total, head: responseHead) }
            }
        }
        let watcher: PreviewWatcher? =
            onPreview == nil && onDC == nil ? nil : PreviewWatcher(preview: onPreview, dcComplete: onDC)
        // Whether body bytes arrived, for the retry rule: the head is
        // reported with the first of them (transport thread; a lock for Sendable).
        let bodyArrived = Locked(false)
        // The body's length when announced: for the DC's early end, and
        // for the probe (a format read at the body's end tries there).
        observer.progress = { _, total in expected.withLock { $0 = total } }
        let watchesHead = watcher != nil
        observer.responseHead = { received in
            bodyArrived.withLock { $0 = true }
            if watchesHead { head.withLock { $0 = received } }
        }
        let probed = Locked(false)  // transport thread only; a lock for Sendable
        // The probe reads at most its limit (1 MiB), watcher or not (see
        // `HeaderProbe`: linear in what it is shown); only the watcher of a
        // progressive JPEG's scans, once the probe found one, sees the rest.
        let probe = HeaderProbe()
        observer.bodyStartLimit = watcher == nil ? probe.limit : Int.max
        // Not for a resumed transfer: its bytes do not start at the file's start.
        if !resumes {
            observer.bodyStart = { [weak self] start in
                guard let self else { return false }
                var wantsMore = false
                if !probed.withLock({ $0 }) {
                    // Only once they are the whole file's (a JPEG's at its first
                    // scan). Not an image, malformed, or past the limit: nothing
                    // to probe or watch (the properties are read from the whole
                    // body, before its decode).
                    switch probe.look(at: start, expectedLength: expected.withLock { $0 }) {
                    case .ended:
                        return false
                    case .needsMore:
                        wantsMore = true
                    case .found(let properties):
                        probed.withLock { $0 = true }
                        // Read again off this thread with the colour profile judged
                        // (see `ImageFileProperties(prefix:readsColorProfile:)`).
                        self.timerQueue.async {
                            self.propertiesKnown(job, ImageFileProperties(prefix: start) ?? properties)
                        }
                        // Scans only for a progressive JPEG.
                        guard let coding = properties.jpeg, coding.process == .progressive else { return false }
                    }
                }
                if let watcher, probed.withLock({ $0 }) { wantsMore = watcher.look(at: start) || wantsMore }
                return wantsMore
            }
        }
        // A partial body comes before the completion (``DataTransferObserver``):
        // a transport that keeps one without showing the head still counts.
        // (Only when it is kept: a partial handler makes the transport build one.)
        if let storePartial {
            observer.partial = { received in
                bodyArrived.withLock { $0 = true }
                storePartial(received)
            }
        }
        let requestTime = Date().timeIntervalSince1970
        let task = dataLoader.loadData(request, observer: observer) { result in
            handle.finished()  // before anything else: the handle must not keep this task (see there)
            StageWalk.note(.network, .up, job.url)
            let attempt = TransferAttempt(bodyArrived: bodyArrived.withLock { $0 }, isIdempotent: isIdempotent)
            answered(result, requestTime, Date().timeIntervalSince1970, attempt)
        }
        // Cancelled while starting, and the task will never complete:
        // the slot is freed as for a transfer nobody needs any more.
        if handle.attach(task) {
            transferFinished(job, handle, .failure(.transport(request.url, code: 0, message: "cancelled")))
        }
    }

    /// The task of a transfer refused before it reached the transport.
    private struct RefusedTask: DataLoadingTask {
        func cancel() -> Bool { false }
    }
}

/// The early end of a progressive JPEG's transfer at its DC coefficients (see ``DCEarlyEnd``).
extension AsyncImageLoader {
    /// The DC coefficients of `job`'s progressive JPEG are all in `prefix`:
    /// if every request still decodes at 1/8 scale, the transfer ends here
    /// (cancelled; what arrived is kept to resume) and the decode reads the
    /// prefix. On the timer queue.
    func endAtDC(_ job: LoadJob, _ handle: TransferHandle, _ prefix: Data, total: Int?, head: ResponseHead?) {
        let proceed = mutate { state, effects -> Bool in
            // Set under the lock: from here a request that needs more than the
            // DC goes to a job of its own (`LoadJob.canServe`).
            guard case .loading(let current) = job.phase, current === handle, DCEarlyEnd.mayEnd(job, head: head)
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
        // A server answered (the HTTP cache stage never sees this answer:
        // the transfer was cut short here), which a probe waits for.
        _ = networkAnswered(job, .success(response))
        transferFinished(job, handle, .success(response), endedEarly: true)
    }
}
