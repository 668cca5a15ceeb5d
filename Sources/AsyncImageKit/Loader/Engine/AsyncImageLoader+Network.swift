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
    /// revalidating, when the server cannot be reached).
    let rules: StaleRules
    /// How previews are decoded, when a request wants them.
    let previews: (options: DecodingOptions, processors: [any ImageProcessing])?
    /// Whether the transfer may end once a progressive JPEG's DC
    /// coefficients are in (every request has a display size; checked again then).
    let watchesDC: Bool
}

/// The network stage: one transfer, with validators when a stale response
/// is revalidated (a `304` serves what is stored, its headers refreshed; a
/// `200` replaces it; an unreachable server serves it stale), and with a
/// `Range` when an earlier transfer was cut off (a `206` is appended to
/// what was kept; a `200` starts over). A transfer cut off or cancelled
/// mid-body keeps what it received on disk for the next one.
extension AsyncImageLoader {
    /// Calls the request modifier and the transport (after the lock).
    func startTransfer(_ transfer: TransferContext, stale: StoredResponse?, partial: StoredPartial?) {
        let (job, handle) = (transfer.job, transfer.handle)
        // From here until the task is attached, a cancel waits for it (see `TransferHandle`).
        guard handle.beginStarting() else { return }
        var request = transfer.request
        if let stale { request.headers.merge(transfer.policy.conditionalHeaders(stale.entry.head)) { $1 } }
        if let partial {
            request.headers["Range"] = "bytes=\(partial.data.count)-"
            request.headers["If-Range"] = partial.validator
        }
        transfer.modifier?(&request)
        // The modifier may change the URL, and may tighten the policy but
        // not loosen it: the policy applies to the URL loaded, whatever the transport.
        request.policy = transfer.request.policy.restricted(by: request.policy)
        if let reason = request.policy.refusal(for: request.url) {
            _ = handle.attach(RefusedTask())
            return transferFinished(job, handle, .failure(.refused(request.url, reason: reason)))
        }
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
                self.decodeQueue.async { [weak self] in self?.makePreview(job, prefix, plan) }
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
        if watcher != nil {
            observer.progress = { _, total in expected.withLock { $0 = total } }
            observer.responseHead = { received in head.withLock { $0 = received } }
        }
        let probed = Locked(false)  // transport thread only; a lock for Sendable
        observer.bodyStartLimit = watcher == nil ? DataTransferObserver().bodyStartLimit : Int.max
        // Not for a resumed transfer: its bytes do not start at the file's start.
        if partial == nil {
            observer.bodyStart = { [weak self] start in
                guard let self else { return false }
                var wantsMore = false
                if !probed.withLock({ $0 }) {
                    // Not an image format at all: nothing to probe or watch.
                    if start.count >= 16, ImageFormat.sniff(start) == nil { return false }
                    // Only once they are the whole file's (a JPEG's at its first scan).
                    if let properties = ImageFileProperties(prefix: start) {
                        probed.withLock { $0 = true }
                        self.timerQueue.async { self.propertiesKnown(job, properties) }
                        // Scans only for a progressive JPEG.
                        guard let coding = properties.jpeg, coding.process == .progressive else { return false }
                    } else {
                        wantsMore = true
                    }
                }
                if let watcher, probed.withLock({ $0 }) { wantsMore = watcher.look(at: start) || wantsMore }
                return wantsMore
            }
        }
        if let store = transfer.writeDisk?.store {
            observer.partial = { [weak self] received in self?.keep(received, resuming: partial, in: store, job) }
        }
        let requestTime = Date().timeIntervalSince1970
        let task = dataLoader.loadData(request, observer: observer) { [weak self] result in
            handle.finished()  // before anything else: the handle must not keep this task (see there)
            guard let self else { return }
            let responseTime = Date().timeIntervalSince1970
            self.state.withLock { _ in (job.response.requestTime, job.response.responseTime) = (requestTime, responseTime) }
            var result = result
            if let partial {
                switch result {
                case .success(let response) where response.statusCode == 206:
                    guard let whole = Self.appending(response, to: partial) else {
                        return self.restart(transfer, stale: stale, dropping: "a 206 that does not continue the stored part")
                    }
                    result = .success(whole)
                case .failure(.httpStatus(_, code: 416, _)):
                    return self.restart(transfer, stale: stale, dropping: "416: the stored part no longer fits")
                default:
                    break
                }
                if case .success = result, let store = transfer.writeDisk?.store {
                    diskWrites.async { store.removePartial(for: job.diskKey) }
                }
            }
            if let stale, case .success(let response) = result, response.statusCode == 304 {
                // Refreshed by the 304's headers (RFC 9111 §4.3.4): only the
                // small headers entry is rewritten (the body and processed
                // images keep their generation), on the disk write queue,
                // handed over before the deliveries. A 304 about another
                // response (its validator differs) confirms nothing: loaded again.
                guard let cache = transfer.readDisk ?? transfer.writeDisk,
                    let refreshedEntry = cache.refresh(
                        stale.entry, by: response.headers, requestTime: requestTime, responseTime: responseTime,
                        for: job.diskKey)
                else {
                    return self.restart(transfer, stale: nil, dropping: "a 304 for another validator")
                }
                var refreshed = stale
                refreshed.entry = refreshedEntry
                if let store = transfer.writeDisk {
                    diskWrites.async { try? store.write(refreshedEntry, for: job.diskKey) }
                }
                state.withLock { _ in job.response.revalidated = true }
                transferFinished(
                    job, handle,
                    .success(refreshed.response(for: response.url, policy: transfer.policy, confirmedBy: response)),
                    stored: refreshed)
                return
            }
            // The server could not be reached to revalidate: the stale
            // response, marked stale, where the loader's policy and the
            // response allow it (never past `must-revalidate` or `no-cache`).
            if let stale, case .failure(let error) = result,
                transfer.rules.servesStale(
                    stale, after: error, policy: transfer.policy, requestHeaders: transfer.request.headers,
                    now: responseTime)
            {
                let logger = state.withLock { $0.logger }
                logger.info(
                    "serving a stale image: revalidation failed: \(error)", metadata: ["url": "\(job.url.absoluteString)"])
                transferFinished(
                    job, handle, .success(stale.response(for: job.url, policy: transfer.policy)), stored: stale,
                    stale: .servedOnError)
                return
            }
            transferFinished(job, handle, result)
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

    /// Under the lock: `job`'s file properties are known; its requests (and
    /// those that join later) have them, and their handlers run after the lock.
    func propertiesKnown(_ job: LoadJob, _ properties: ImageFileProperties) {
        mutate { state, effects in
            guard job.fileProperties == nil else { return }
            job.fileProperties = properties
            for record in job.orderedRequests where record.fileProperties == nil {
                record.fileProperties = properties
                let handlers = record.propertyHandlers
                record.propertyHandlers = []
                effects.append { handlers.forEach { $0(properties) } }
            }
        }
    }

    /// From the completion of a resumed transfer whose range did not fit (a
    /// `416`, or a `206` that does not continue the stored part): drops the
    /// stored part and starts the transfer again, whole, under a new handle
    /// in the same slot (the old task may not even be attached yet), unless
    /// nobody needs it any more.
    private func restart(_ transfer: TransferContext, stale: StoredResponse?, dropping reason: String) {
        let job = transfer.job
        if let store = transfer.writeDisk?.store { diskWrites.async { store.removePartial(for: job.diskKey) } }
        let (logger, next) = state.withLock { state -> (Logger, TransferHandle?) in
            guard case .loading(let current) = job.phase, current === transfer.handle, !job.requests.isEmpty else {
                return (state.logger, nil)
            }
            let handle = TransferHandle()
            job.phase = .loading(handle)
            return (state.logger, handle)
        }
        logger.debug("resuming \(job.url.absoluteString) failed (\(reason)): loading it whole")
        guard let next else {
            return transferFinished(job, transfer.handle, .failure(.transport(job.url, code: 0, message: "cancelled")))
        }
        var again = transfer
        again.handle = next
        startTransfer(again, stale: stale, partial: nil)
    }

    /// The whole body: `partial`'s bytes, then the `206`'s, or nil when the
    /// part does not start where the stored bytes end (or is encoded).
    static func appending(_ response: DataResponse, to partial: StoredPartial) -> DataResponse? {
        let encoding = response.headers["content-encoding"]?.lowercased() ?? "identity"
        guard encoding == "identity", let range = response.headers["content-range"].flatMap(ContentRange.init),
            range.first == partial.data.count, range.count == response.data.count,
            range.total.map({ $0 == range.last + 1 }) ?? true
        else { return nil }
        var headers = response.headers
        headers["content-range"] = nil
        headers["content-length"] = String(range.last + 1)
        return DataResponse(
            url: response.url, finalURL: response.finalURL, statusCode: 200, contentType: response.contentType,
            data: partial.data + response.data, headers: headers)
    }

    /// From the transport's thread: keeps what a cut-off or cancelled
    /// transfer received (after the stored part it resumed, for a `206`),
    /// when it can be resumed (a strong ETag or a Last-Modified) and is not
    /// in fact the whole body. Written on the disk write queue.
    private func keep(_ received: PartialBody, resuming previous: StoredPartial?, in store: ImageDiskStore, _ job: LoadJob) {
        guard let validator = received.ifRangeValidator else { return }
        let data: Data
        switch received.statusCode {
        case 200:
            data = received.data
        case 206:
            guard let previous, previous.validator == validator, received.firstByteOffset == previous.data.count else { return }
            data = previous.data + received.data
        default:
            return
        }
        let total = received.contentRange?.total ?? received.headers["content-length"].flatMap { Int($0) }
        guard total.map({ data.count < $0 }) ?? true else { return }  // all of it: nothing to resume
        let (logger, url) = (state.withLock { $0.logger }, job.url.absoluteString)
        let partial = StoredPartial(data: data, validator: validator, contentType: received.headers["content-type"])
        diskWrites.async {
            do {
                try store.storePartial(partial, for: job.diskKey)
                logger.debug("kept \(data.count) bytes of \(url) to resume")
            } catch {
                logger.warning("could not keep the partial body of \(url): \(error)")
            }
        }
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
        transferFinished(job, handle, .success(response), endedEarly: true)
    }
}
