import Foundation

/// One step in the life of a request, for monitoring (progress displays,
/// timelines, metrics). See ``AsyncImageLoader/eventMonitor``.
public struct LoaderEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The request was made and waits for a transfer slot (or joined a transfer already queued).
        case queued
        /// The request was answered from the memory cache; ``delivered(success:)`` follows.
        case cacheHit
        /// Its transfer started (or it joined one already running).
        case loading
        /// The disk cache was read for it (after ``loading``; for a
        /// thumbnail ``AsyncImageLoader/encodedImage(for:encoding:)`` serves
        /// as it is stored, after ``queued``, with no slot taken): `hit` when
        /// what is stored answers it (no network), false when the network
        /// is asked next (a miss, or a stale entry to revalidate).
        case diskRead(hit: Bool)
        /// Its transfer finished with this many body bytes.
        case transferred(bytes: Int)
        /// Its transfer failed (its slot is free from here); ``delivered(success:)``
        /// with `false` follows.
        case transferFailed
        /// Its transfer failed for a passing reason and is tried again
        /// (see ``RetryPolicy``): `attempt` is the retry's number (1 for the
        /// first retry, the transfer's second try), after a wait of `delay`
        /// seconds, during which the transfer keeps its slot. The failure
        /// is in ``LoaderEvent/error``. Reported for every request waiting
        /// for the retry (a request that joins during the wait sees only
        /// ``loading``); then ``transferred(bytes:)``, another
        /// ``retrying(attempt:delay:)``, or ``transferFailed``.
        case retrying(attempt: Int, delay: Double)
        /// Its body is being decoded.
        case decoding
        /// Its outcome was delivered (notification and action).
        case delivered(success: Bool)
        /// It was cancelled: explicitly, superseded on its target, or its target went away.
        case cancelled
    }

    /// The request's number: increasing in the order `loadImage` was called, unique per loader.
    public let requestID: UInt64
    /// The requested URL.
    public let url: URL
    /// The identity of the request's target, if it had one.
    public let target: ObjectIdentifier?
    /// What happened.
    public let kind: Kind
    /// When, in seconds of `ProcessInfo.systemUptime`.
    public let time: Double
    /// The event's place in the loader's order of events: increasing, unique
    /// per loader, assigned under the loader's lock. The monitor runs on the
    /// thread that made the step, so events made on two threads at once can
    /// reach it in either order; sort by this to see the true one.
    public let sequence: UInt64
    /// Where the image came from, for a successful ``Kind/delivered(success:)``
    /// (nil for every other event).
    public internal(set) var source: ImageResponse.Source? = nil
    /// Why it failed, for an unsuccessful ``Kind/delivered(success:)``; the
    /// failure that is tried again, for ``Kind/retrying(attempt:delay:)``
    /// (nil for every other event).
    public internal(set) var error: AsyncImageError? = nil
}
