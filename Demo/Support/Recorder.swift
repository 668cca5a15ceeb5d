import AsyncImageKit
import Foundation

/// Collects what the loader did: per-request timings from its event monitor,
/// and loaded/failed/cache-hit counts from its notifications.
///
/// A cache hit is an image delivered from a cache, as the loader's response
/// says (`ImageResponse.source` in the notification's
/// `AsyncImageResponseKey`): ``memoryHits`` from the memory cache, ``diskHits``
/// from the disk cache (fresh, or confirmed by the server with a `304`).
/// Images loaded from the network are not hits, though every loaded image
/// is then held in the memory cache (which the notification's
/// `AsyncImageCacheKey` names for every one of them).
package final class Recorder: @unchecked Sendable {
    /// One request's life, in seconds since the run started.
    package struct Request: Codable {
        package var id: UInt64
        package var url: String
        package var cell: Int?
        package var item: Int?
        package var role: String?
        package var queued: Double?
        package var loading: Double?
        package var decoding: Double?
        /// When its body arrived (`.transferred`).
        package var transferred: Double?
        /// When its transfer failed (`.transferFailed`), freeing its slot.
        package var transferFailed: Double?
        package var finished: Double?
        package var bytes: Int?
        package var outcome: String = "pending"
        package var error: String?
    }

    private let lock = NSLock()
    private var requests: [UInt64: Request] = [:]
    package private(set) var loaded = 0
    package private(set) var failed = 0
    package private(set) var memoryHits = 0
    package private(set) var diskHits = 0
    package private(set) var cancelled = 0
    package private(set) var bytes = 0
    package let start: Double
    /// Which cell each target is, by identity.
    private var cells: [ObjectIdentifier: Int] = [:]
    /// What each URL is: (item, "thumbnail" or "full").
    private var roles: [String: (Int, String)] = [:]
    private var observers: [NSObjectProtocol] = []

    package init(start: Double) {
        self.start = start
    }

    package func register(cell: AnyObject, index: Int) {
        lock.withLock { cells[ObjectIdentifier(cell)] = index }
    }

    package func register(_ items: [GalleryItem]) {
        lock.withLock {
            for item in items {
                roles[item.full.absoluteString] = (item.index, "full")
                if let thumbnail = item.thumbnail { roles[thumbnail.absoluteString] = (item.index, "thumbnail") }
            }
        }
    }

    /// The loader's event monitor.
    package func record(_ event: LoaderEvent) {
        lock.withLock {
            var request = requests[event.requestID] ?? Request(id: event.requestID, url: event.url.absoluteString)
            if request.cell == nil, let target = event.target { request.cell = cells[target] }
            if let (item, role) = roles[event.url.absoluteString] {
                request.item = item
                request.role = role
            }
            let t = event.time - start
            switch event.kind {
            case .queued: request.queued = t
            case .cacheHit:
                request.queued = t
                request.outcome = "cache"
            case .loading: request.loading = request.loading ?? t
            case .diskRead: break  // the demo has no disk cache
            case .transferred(let count):
                request.transferred = t
                request.bytes = count
                bytes += count
            case .transferFailed: request.transferFailed = t
            case .retrying: break  // its outcome comes later
            case .decoding: request.decoding = t
            case .delivered(let success):
                request.finished = t
                // A cache hit stays "cache" when delivered; one over the request's pixel limit fails.
                if !success || request.outcome != "cache" { request.outcome = success ? "loaded" : "failed" }
            case .cancelled:
                request.finished = t
                request.outcome = "cancelled"
                cancelled += 1
            }
            requests[event.requestID] = request
        }
    }

    /// Records what `loader` does: its events (its monitor is set to
    /// ``record(_:)``) and its notifications (see ``observe(_:)``).
    package func attach(to loader: AsyncImageLoader) {
        if let center = loader.notificationCenter { observe(center) }
        loader.eventMonitor = { [self] in record($0) }
    }

    /// Counts the loader's notifications (posted on its delivery queue):
    /// every image delivered, and where it came from.
    package func observe(_ center: NotificationCenter) {
        observers.append(
            center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { [self] note in
                let source = (note.userInfo?[AsyncImageResponseKey] as? ImageResponse)?.source
                lock.withLock {
                    loaded += 1
                    switch source {
                    case .memoryCache: memoryHits += 1
                    case .diskCache: diskHits += 1
                    case .network, nil: break
                    }
                }
            })
        observers.append(
            center.addObserver(forName: .asyncImageLoadDidFail, object: nil, queue: nil) { [self] note in
                let error = note.userInfo?[AsyncImageErrorKey] as? AsyncImageError
                let url = (note.userInfo?[AsyncImageURLKey] as? URL)?.absoluteString
                lock.withLock {
                    failed += 1
                    if let url, let error, let id = requests.values.filter({ $0.url == url && $0.error == nil }).map(\.id).max() {
                        requests[id]?.error = error.description
                    }
                }
            })
    }

    package var snapshot: (loaded: Int, failed: Int, cancelled: Int, memoryHits: Int, diskHits: Int, bytes: Int) {
        lock.withLock { (loaded, failed, cancelled, memoryHits, diskHits, bytes) }
    }

    package var all: [Request] {
        lock.withLock { requests.values.sorted { $0.id < $1.id } }
    }
}

extension Recorder {
    /// When each URL's transfer was in flight, as the events tell it: from a
    /// request's `.loading` until its `.transferred`, or until its outcome
    /// (failed or cancelled) when it has no `.transferred`; still open at the
    /// end of the run if neither came; a failed transfer ends at its
    /// `.transferFailed`, the moment the loader freed its slot. Requests for one URL share one
    /// transfer, hence one entry per URL. A request that joined after the body
    /// had arrived (another request for the URL had its `.transferred` and
    /// was not finished yet) is sent the steps it missed at once; they are not
    /// a transfer. The events' times follow their `sequence` order (both are
    /// taken under the loader's lock), so the times alone order them.
    package static func transferSpans(_ requests: [Request]) -> [String: [Range<Double>]] {
        let started = Dictionary(grouping: requests.filter { $0.loading != nil }, by: \.url)
        return started.mapValues { group in
            group.compactMap { request -> Range<Double>? in
                guard let start = request.loading else { return nil }
                let joinedLate = group.contains { other in
                    other.id != request.id && (other.transferred.map { $0 <= start } ?? false)
                        && (other.finished.map { $0 > start } ?? true)
                }
                if joinedLate { return nil }
                let stop = request.transferred ?? request.transferFailed ?? request.finished ?? .infinity
                return start..<max(start, stop)
            }
        }
    }

    /// Transfers in flight at `time`: the URLs with a span (from ``transferSpans(_:)``) holding it.
    package static func transfersInFlight(_ spans: [String: [Range<Double>]], at time: Double) -> Int {
        spans.values.count { $0.contains { $0.contains(time) } }
    }
}

/// Prints progress while the demo runs: a redrawn bar on a terminal, plain
/// lines once a second otherwise, nothing with `--json`.
package final class ProgressPrinter: @unchecked Sendable {
    private let timer: DispatchSourceTimer
    private let isTerminal = isatty(STDOUT_FILENO) != 0

    package init(recorder: Recorder, expected: @escaping @Sendable () -> (done: Int, total: Int), quiet: Bool) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "demo progress"))
        let interval = isTerminal ? 0.1 : 1.0
        timer.schedule(deadline: .now() + interval, repeating: interval)
        let terminal = isTerminal
        timer.setEventHandler {
            guard !quiet else { return }
            print(Self.line(recorder, expected(), terminal: terminal), terminator: terminal ? "" : "\n")
            fflush(nil)
        }
        timer.resume()
    }

    package func stop(recorder: Recorder, expected: (done: Int, total: Int), quiet: Bool) {
        timer.cancel()
        guard !quiet else { return }
        print(Self.line(recorder, expected, terminal: isTerminal), terminator: "\n")
    }

    package static func line(_ recorder: Recorder, _ progress: (done: Int, total: Int), terminal: Bool) -> String {
        let s = recorder.snapshot
        let elapsed = max(0.001, ProcessInfo.processInfo.systemUptime - recorder.start)
        let fraction = progress.total == 0 ? 1 : Double(progress.done) / Double(progress.total)
        let width = 24
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let megabytes = Double(s.bytes) / 1_000_000
        let text = String(
            format: "[%@] %3.0f%%  loaded %d  failed %d  cancelled %d  memory hits %d  disk hits %d  %.1f MB  %.1f MB/s",
            bar, fraction * 100, s.loaded, s.failed, s.cancelled, s.memoryHits, s.diskHits, megabytes, megabytes / elapsed)
        return terminal ? "\r" + text : text
    }
}
