import Foundation

/// The one home of a request's deadline (``ImageRequest/timeout``, else
/// ``AsyncImageLoader/Configuration/requestTimeout``): armed when the
/// request joins a job (a memory hit or a refusal never has one), cancelled
/// when the request ends (`AsyncImageLoader.end`), and, when it fires
/// first, the request's one outcome: ``AsyncImageError/timedOut(_:seconds:stage:)``
/// naming the stage its job is in (``LoadJob/stage``).
///
/// The transfer's own timeout (``AsyncImageLoader/loadingTimeout``) is not
/// touched: it bounds one transfer, the deadline one request, and whichever
/// passes first ends the request (the rule, documented once, on
/// ``ImageRequest/timeout``).
///
/// One timer per request that has a limit (a `DispatchSourceTimer` on the
/// loader's timer queue, cancelled when the request ends); a request
/// without one costs a comparison.
enum RequestDeadline {
    /// `timeout` in seconds, for the error.
    static func seconds(_ timeout: Duration) -> Double {
        let (seconds, attoseconds) = timeout.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// When `timeout` from now passes: nil when it is too far away to
    /// matter (over a century), the same as none.
    static func deadline(after timeout: Duration, from now: DispatchTime = .now()) -> DispatchTime? {
        guard timeout > .zero else { return now }  // passed already
        let (seconds, attoseconds) = timeout.components
        guard seconds < 3_153_600_000 else { return nil }
        return now + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
    }
}

extension AsyncImageLoader {
    /// Under the lock, as `record` is made (not a memory hit): its failure
    /// when its time limit is zero or less, passed before it could queue.
    func expiredDeadline(of record: LoadRequest, loaderTimeout: Duration?) -> AsyncImageError? {
        guard let timeout = record.request.timeout ?? loaderTimeout, timeout <= .zero else { return nil }
        return .timedOut(record.request.url, seconds: RequestDeadline.seconds(timeout), stage: .queued)
    }

    /// Under the lock, as `record` joins its job: arms its deadline, if it
    /// has a time limit (its own, else the loader's).
    func armDeadline(_ record: LoadRequest, _ state: inout LoaderState) {
        guard let timeout = record.request.timeout ?? state.requestTimeout,
            let deadline = RequestDeadline.deadline(after: timeout)
        else { return }
        let seconds = RequestDeadline.seconds(timeout)
        let timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.schedule(deadline: deadline, leeway: .milliseconds(1))
        // Weak: the request holds the timer, and the loader must not be kept by it.
        timer.setEventHandler { [weak self, weak record] in
            guard let self, let record else { return }
            self.deadlinePassed(record, seconds: seconds)
        }
        timer.resume()
        record.deadline = timer
        record.deadlineTime = deadline
    }

    /// Under the lock, as `record` ends (delivered or cancelled): its timer
    /// is cancelled, after the lock.
    func disarmDeadline(_ record: LoadRequest, _ effects: inout Effects) {
        guard let timer = record.deadline else { return }
        record.deadline = nil
        record.deadlineTime = nil
        effects.append { timer.cancel() }
    }

    /// On the timer queue: `record`'s time is up. Unless its outcome is
    /// decided already (it left its job for delivery, or ended), it leaves
    /// its job and fails alone, through the usual delivery; a job it leaves
    /// empty is dropped as for a cancel (its queued entry removed, its
    /// transfer cancelled, a running decode stopped), and a decode it leaves
    /// with no request for its size is stopped.
    func deadlinePassed(_ record: LoadRequest, seconds: Double) {
        mutate { state, effects in
            // Decided and ended under this lock: one outcome, whichever came first.
            guard record.state == .pending, let job = record.job else { return }
            let stage = job.stage
            // Its lane no longer counts it as waiting for a slot.
            if record.isQueued, let lane = record.lane {
                lane.leaveQueue(record.priority)
                state.slots.refile(lane)
            }
            job.leave(record)
            let error = AsyncImageError.timedOut(record.request.url, seconds: seconds, stage: stage)
            let (logger, metadata) = (state.logger, record.logMetadata)
            effects.append { logger.info("request timed out: \(error)", metadata: metadata) }
            self.deliver(record, from: job, .failure(error), &state, &effects)
            self.left(job, &state, &effects)
            self.pump(&state, &effects)
        }
    }
}
