import Foundation
import Logging

/// Retries (see ``RetryPolicy``): between the HTTP cache stage's reading of
/// an answer and the transfer stage. A transient failure that a request
/// still wants tried again does not go up: the job keeps its slot, under a
/// new ``TransferHandle`` (idle: a cancel during the wait is final, as
/// before any transfer), and a timer starts the same request again once
/// the wait is over. Requests whose deadline would pass first leave with
/// the failure; the rest, and any that join meanwhile, share the next try.
extension AsyncImageLoader {
    /// After the lock, from the HTTP cache stage: `error` ended `transfer`'s
    /// try. True when a retry is scheduled (the failure goes no further);
    /// false when the failure goes up as it is: not transient, not
    /// idempotent, no retry left, or no request could wait for one.
    /// `again` starts the next try with the context it is given.
    func retry(
        _ transfer: TransferContext, after error: AsyncImageError, _ attempt: TransferAttempt, responseTime: Double,
        again: @escaping @Sendable (TransferContext) -> Void
    ) -> Bool {
        let job = transfer.job
        let policy = job.retryPolicy
        guard policy.maxRetries > 0, attempt.isIdempotent,
            let failure = TransientFailure(
                error, bodyArrived: attempt.bodyArrived, now: responseTime, retriesTimeouts: policy.retriesTimeouts)
        else { return false }
        return mutate { state, effects -> Bool in
            // Not this transfer's job any more, or nobody waits for it: the
            // transfer stage drops it as for any outcome.
            guard case .loading(let current) = job.phase, current === transfer.handle, !job.requests.isEmpty
            else { return false }
            let retry = job.retries + 1
            guard let asked = policy.wait(beforeRetry: retry, after: failure, random: state.retryRandom()) else {
                return false
            }
            // Within what a `DispatchTime` can count (a `Retry-After` date
            // far ahead, allowed by a huge `maxRetryAfter`, is a wait forever).
            let delay = Self.waitable(asked)
            let start = DispatchTime.now() + .nanoseconds(Int((delay * 1e9).rounded(.up)))
            // A request whose time runs out before the retry starts is not
            // kept waiting for nothing: it fails now, with this failure.
            let late = job.orderedRequests.filter { record in record.deadlineTime.map { $0 <= start } ?? false }
            // Nobody would see the retry: the failure goes up, to all.
            guard late.count < job.requests.count else { return false }
            let (logger, metadata) = (state.logger, job.logMetadata)
            if !late.isEmpty {
                self.report(.transferFailed, late, &state, &effects)
                effects.append {
                    logger.info(
                        "not retrying for \(late.count) of the requests: their deadline passes first: \(error)",
                        metadata: metadata)
                }
                for record in late {
                    job.leave(record)
                    self.deliver(record, from: job, .failure(error), &state, &effects)
                }
            }
            job.retries = retry
            let next = TransferHandle()
            job.phase = .loading(next)
            var context = transfer
            context.handle = next
            // On a global queue, not the timer queue: the next try calls the
            // request modifier (user code) and the transport, which must not
            // hold up the deadlines that fire there.
            let timer = DispatchSource.makeTimerSource(queue: .global(qos: .userInitiated))
            timer.schedule(deadline: start, leeway: .milliseconds(1))
            timer.setEventHandler { [weak self] in self?.retryDue(context, again: again) }
            job.retryTimer = timer
            job.retryContext = context
            self.report(.retrying(attempt: retry, delay: delay), job.orderedRequests, &state, &effects, error: error)
            var lineMetadata = job.logMetadata
            lineMetadata["retry"] = "\(retry)"
            lineMetadata["delay"] = "\(delay)"
            let text = "retrying in \(Self.milliseconds(delay)) ms (retry \(retry) of \(policy.maxRetries)): \(error)"
            effects.append { logger.info("\(text)", metadata: lineMetadata) }
            // Started after the event and the line, so both come before the
            // next try, whatever the wait. A cancel before this only marks
            // it cancelled: this closure keeps it (a suspended source must
            // not be released) until it is resumed here.
            effects.append { timer.resume() }
            return true
        }
    }

    /// On a global queue: the wait before `transfer`'s next try is over.
    /// It starts unless the job finished meanwhile (its handle was cancelled:
    /// the transport is then never called).
    private func retryDue(_ transfer: TransferContext, again: @Sendable (TransferContext) -> Void) {
        let job = transfer.job
        let proceed = mutate { state, effects -> Bool in
            // Its handler holds the transfer, and so the job: let go of it.
            if let timer = job.retryTimer {
                job.retryTimer = nil
                effects.append { timer.cancel() }
            }
            job.retryContext = nil
            guard case .loading(let current) = job.phase, current === transfer.handle else { return false }
            return true
        }
        // A cancel from here on finds the handle idle or starting (see `TransferHandle`).
        if proceed { again(transfer) }
    }

    /// The longest wait before a retry, in seconds (about 31 years: in
    /// nanoseconds, far within an `Int`).
    static let longestRetryWait = 1e9

    /// `delay` (seconds) as a wait a timer can be set for: at most
    /// ``longestRetryWait``, never negative or NaN.
    static func waitable(_ delay: Double) -> Double {
        delay.isNaN ? 0 : min(max(0, delay), longestRetryWait)
    }

    /// `seconds` in whole milliseconds, for a log line.
    private static func milliseconds(_ seconds: Double) -> Int { Int((seconds * 1000).rounded()) }
}
