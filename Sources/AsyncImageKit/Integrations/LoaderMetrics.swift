#if MetricsSupport
    import Foundation
    import Metrics

    /// A loader's work as swift-metrics counters and timers, for a
    /// service's dashboard (package trait `MetricsSupport`).
    ///
    /// ```swift
    /// MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))   // once, at start
    /// let metrics = LoaderMetrics(loader: loader)                              // keep it with the loader
    /// ```
    ///
    /// It listens to the loader's ``LoaderEvent``s (set as its
    /// ``AsyncImageLoader/eventMonitor``; a monitor set before it still gets
    /// every event, first) and records, under `labelPrefix` (default
    /// `asyncimage`):
    ///
    /// | metric | kind | dimensions | what |
    /// |---|---|---|---|
    /// | `_requests_total` | counter | `source` (`memory`, `disk`, `network`, or `none`), `outcome` (`success`, `failure`, `timeout`, `cancelled`) | every request, once, when it ends |
    /// | `_network_bytes_total` | counter | | body bytes received, once per transfer however many requests share it |
    /// | `_retries_total` | counter | | transfers tried again (``LoaderEvent/Kind/retrying(attempt:delay:)``), once per retry however many requests share it |
    /// | `_queue_wait_seconds` | timer | | made until its transfer slot (or shared transfer) |
    /// | `_disk_read_seconds` | timer | `hit` (`true`, `false`) | the disk cache's lookup |
    /// | `_transfer_seconds` | timer | | the network transfer (from the slot, or from a disk miss), its retries and their waits included |
    /// | `_decode_seconds` | timer | | decoding, processing and storing, to the delivery |
    /// | `_request_seconds` | timer | `outcome` | made until it ended |
    ///
    /// A memory-cache hit counts only in `_requests_total` and
    /// `_request_seconds`. The times are those of the events
    /// (``LoaderEvent/time``); per request they cost a small entry from its
    /// first event to its last.
    public final class LoaderMetrics: Sendable {
        /// What is known of one request so far. Events made on two threads
        /// at once can arrive in either order (``LoaderEvent/sequence``), so
        /// each duration is recorded once both of its ends are known, in
        /// whichever order they came.
        private struct Times {
            var start: Double?
            var loading: Double?
            var diskRead: Double?
            var diskHit = false
            var decoding: Double?
            var queueWaitRecorded = false
            var diskReadRecorded = false
            /// The ending, once seen: (time, outcome); the whole request's
            /// time is recorded when its start is known too.
            var ended: (time: Double, outcome: String)?
            /// When the transfer started: after a disk miss, else at the slot.
            var transferStart: Double? { diskRead.map { diskHit ? nil : $0 } ?? loading }
        }

        private struct State {
            var requests: [UInt64: Times] = [:]
            /// The last transfer whose bytes were counted, by URL: its
            /// requests all report it at one time.
            var countedTransfers: [String: Double] = [:]
            /// The last retry counted, by URL (the same way).
            var countedRetries: [String: Double] = [:]
        }

        private let state = Locked(State())
        private let outcomes: [String: Counter]
        private let bytes: Counter
        private let retries: Counter
        private let queueWait: Metrics.Timer
        private let diskRead: [Bool: Metrics.Timer]
        private let transfer: Metrics.Timer
        private let decode: Metrics.Timer
        private let total: [String: Metrics.Timer]

        /// Starts recording `loader`'s events, with the metrics of
        /// `factory` (default: the one `MetricsSystem` was bootstrapped
        /// with). Keep the value as long as the loader: the loader's event
        /// monitor holds it too.
        public init(loader: AsyncImageLoader, labelPrefix: String = "asyncimage", factory: (any MetricsFactory)? = nil) {
            let factory = factory ?? MetricsSystem.factory
            var outcomes: [String: Counter] = [:]
            for (source, outcome) in Self.outcomeKeys {
                outcomes[source + "/" + outcome] = Counter(
                    label: labelPrefix + "_requests_total", dimensions: [("source", source), ("outcome", outcome)],
                    factory: factory)
            }
            self.outcomes = outcomes
            bytes = Counter(label: labelPrefix + "_network_bytes_total", factory: factory)
            retries = Counter(label: labelPrefix + "_retries_total", factory: factory)
            queueWait = Metrics.Timer(label: labelPrefix + "_queue_wait_seconds", factory: factory)
            diskRead = [
                true: Metrics.Timer(label: labelPrefix + "_disk_read_seconds", dimensions: [("hit", "true")], factory: factory),
                false: Metrics.Timer(label: labelPrefix + "_disk_read_seconds", dimensions: [("hit", "false")], factory: factory),
            ]
            transfer = Metrics.Timer(label: labelPrefix + "_transfer_seconds", factory: factory)
            decode = Metrics.Timer(label: labelPrefix + "_decode_seconds", factory: factory)
            var total: [String: Metrics.Timer] = [:]
            for outcome in ["success", "failure", "timeout", "cancelled"] {
                total[outcome] = Metrics.Timer(
                    label: labelPrefix + "_request_seconds", dimensions: [("outcome", outcome)], factory: factory)
            }
            self.total = total
            let previous = loader.eventMonitor
            loader.eventMonitor = { [self] event in
                previous?(event)
                record(event)
            }
        }

        /// Every (source, outcome) pair a request can end with.
        private static let outcomeKeys: [(String, String)] = [
            ("memory", "success"), ("disk", "success"), ("network", "success"),
            ("none", "failure"), ("none", "timeout"), ("none", "cancelled"),
        ]

        /// One event: its request's times move on, and what can be
        /// recorded now is.
        func record(_ event: LoaderEvent) {
            let t = event.time
            var recordings: [() -> Void] = []
            state.withLock { state in
                var times = state.requests[event.requestID] ?? Times()
                switch event.kind {
                case .queued, .cacheHit:
                    times.start = t
                case .loading:
                    if times.loading == nil { times.loading = t }
                case .diskRead(let hit):
                    times.diskRead = t
                    times.diskHit = hit
                case .transferred(let count):
                    // Joined after the transfer was over (or a disk hit): not
                    // its bytes, not its time.
                    if !times.diskHit, let start = times.transferStart, start < t {
                        let key = event.url.absoluteString
                        if state.countedTransfers[key] != t {
                            state.countedTransfers[key] = t
                            recordings.append { self.bytes.increment(by: count) }
                        }
                        recordings.append { self.transfer.recordSeconds(t - start) }
                    }
                case .transferFailed:
                    if let start = times.transferStart { recordings.append { self.transfer.recordSeconds(t - start) } }
                case .retrying:
                    let key = event.url.absoluteString
                    if state.countedRetries[key] != t {
                        state.countedRetries[key] = t
                        recordings.append { self.retries.increment() }
                    }
                case .decoding:
                    times.decoding = t
                case .delivered(let success):
                    let outcome: String
                    let source: String
                    if success {
                        outcome = "success"
                        switch event.source {
                        case .memoryCache: source = "memory"
                        case .diskCache: source = "disk"
                        case .network, nil: source = "network"
                        }
                    } else {
                        if case .timedOut = event.error { outcome = "timeout" } else { outcome = "failure" }
                        source = "none"
                    }
                    if let decoding = times.decoding { recordings.append { self.decode.recordSeconds(t - decoding) } }
                    recordings.append { self.outcomes[source + "/" + outcome]?.increment() }
                    times.ended = (t, outcome)
                case .cancelled:
                    recordings.append { self.outcomes["none/cancelled"]?.increment() }
                    times.ended = (t, "cancelled")
                }
                if !times.queueWaitRecorded, let start = times.start, let loading = times.loading {
                    times.queueWaitRecorded = true
                    recordings.append { self.queueWait.recordSeconds(loading - start) }
                }
                if !times.diskReadRecorded, let loading = times.loading, let read = times.diskRead {
                    times.diskReadRecorded = true
                    let hit = times.diskHit
                    recordings.append { self.diskRead[hit]?.recordSeconds(read - loading) }
                }
                if let (end, outcome) = times.ended, let start = times.start {
                    recordings.append { self.total[outcome]?.recordSeconds(end - start) }
                    state.requests[event.requestID] = nil
                    if state.requests.isEmpty {
                        state.countedTransfers.removeAll()
                        state.countedRetries.removeAll()
                    }
                } else {
                    state.requests[event.requestID] = times
                }
            }
            recordings.forEach { $0() }
        }
    }
#endif
