import AsyncImageKit
import Foundation

/// What a request of the mix must end in, if it is delivered.
enum Expected: Sendable, CustomStringConvertible {
    case image(PixelSize)
    case failure

    var description: String {
        switch self {
        case .image(let size): return "a \(size.width)x\(size.height) image"
        case .failure: return "a failure"
        }
    }
}

/// One request the mix made with actions (`loadImage`, or a member of a
/// sequence). Guarded by the ledger's lock.
final class Issued: @unchecked Sendable {
    let number: Int
    let url: URL
    /// Its target's name, if it has one.
    let target: String?
    /// Its action's name (its per-target lane is its target and action).
    let action: String
    let expected: Expected
    /// Its handle (nil for a sequence's member, which has none).
    var task: ImageTask?
    var callbacks = 0
    /// Cancelled, or its target let go of: no callback may come from here on.
    var forbidden = false
    /// Checked and forgotten by a sweep: no callback may come any more.
    var accounted = false

    init(number: Int, url: URL, target: String?, action: String, expected: Expected) {
        (self.number, self.url, self.target, self.action, self.expected) = (number, url, target, action, expected)
    }
}

/// The mix's client-side accounting, checked as it runs: every callback
/// (action) against its request, every notification against the action
/// that must follow it, the async API's outcomes, and, by sweeps on the
/// delivery queue, every finished request's callbacks against its handle's
/// state (completed: exactly one; cancelled: none).
///
/// Notifications and actions run on the delivery queue, one at a time, so
/// "right before" is well defined; cancels and target deallocations are
/// made on the delivery queue too, so "after" is.
final class OutcomeLedger: @unchecked Sendable {
    static let actionName = "load"
    static let sequenceActionName = "sequence"

    private let lock = NSLock()
    /// Requests with a handle, not yet accounted by a sweep.
    private var open: [Issued] = []
    /// Issued requests by URL, for `cancelLoading(url:)` (pruned by sweeps).
    private var byURL: [URL: [Issued]] = [:]
    /// The last delivered request number per target name and action (per-target order).
    private var lastDelivered: [String: Int] = [:]
    /// The notification waiting for its action: its URL and object.
    private var unanswered: (url: URL, object: ObjectIdentifier?)?
    private var problems = Problems()
    private(set) var counts = Counts()

    struct Counts: Sendable {
        var issued = 0
        var callbacks = 0
        var posts = 0
        var asyncPosts = 0
        var forbidden = 0
        var accountedCompleted = 0
        var accountedCancelled = 0
        var asyncStarted = 0
        var asyncImages = 0
        var asyncFailures = 0
        var asyncCancelled = 0
        var sequences = 0
    }

    func violation(_ text: String) { lock.withLock { problems.add(text) } }

    var report: (counts: Counts, problems: Problems) {
        lock.withLock {
            var all = problems
            if let unanswered { all.add("a notification for \(unanswered.url.path) had no action") }
            return (counts, all)
        }
    }

    // MARK: Requests with actions

    /// Counts a request about to be made (its callback may come before
    /// `loadImage` returns).
    func issue(_ entry: Issued) {
        lock.withLock { counts.issued += 1 }
    }

    /// Files a request once it is made: with its handle, it joins the
    /// sweeps; `cancellableByURL`, a later `cancelLoading(url:)` forbids it
    /// (filed after the call, so a cancel that finds it came after it).
    func made(_ entry: Issued, task: ImageTask?, cancellableByURL: Bool) {
        lock.withLock {
            if let task {
                entry.task = task
                open.append(entry)
            }
            if cancellableByURL { byURL[entry.url, default: []].append(entry) }
        }
    }

    /// No callback may come for these from now on (call on the delivery queue).
    func forbid(_ entries: [Issued]) {
        lock.withLock {
            for entry in entries where !entry.forbidden {
                entry.forbidden = true
                counts.forbidden += 1
            }
        }
    }

    /// Forbids every request issued for `url` (call on the delivery queue).
    func forbidEverything(issuedFor url: URL) {
        let entries = lock.withLock { byURL.removeValue(forKey: url) ?? [] }
        forbid(entries)
    }

    /// Forgets a target's per-target order (it was deallocated).
    func forget(target name: String) {
        lock.withLock {
            lastDelivered[name + "/" + Self.actionName] = nil
            lastDelivered[name + "/" + Self.sequenceActionName] = nil
        }
    }

    /// Success and failure actions for `entry`, named `action`.
    func actions(for entry: Issued) -> (ImageAction, ImageFailureAction) {
        let success = ImageAction(entry.action) { target, image, url in
            if case .image(let size) = entry.expected, image.size == size {} else {
                self.violation("request \(entry.number) for \(url.path): a \(image.size) image, expected \(entry.expected)")
            }
            self.called(entry, target, url)
        }
        let failure = ImageFailureAction(entry.action) { target, error, url in
            if case .image = entry.expected {
                self.violation("request \(entry.number) for \(url.path) failed: \(error)")
            }
            self.called(entry, target, url)
        }
        return (success, failure)
    }

    /// Success and failure actions shared by a sequence's members (each
    /// callback is matched to its member by URL: the members' URLs differ).
    func actions(forSequence members: [Issued]) -> (ImageAction, ImageFailureAction) {
        let name = OutcomeLedger.sequenceActionName
        let member: @Sendable (URL) -> Issued? = { url in members.first { $0.url == url } }
        let success = ImageAction(name) { target, image, url in
            guard let entry = member(url) else { return self.violation("a sequence answered for \(url.path), not a member") }
            if case .image(let size) = entry.expected, image.size == size {} else {
                self.violation("sequence member \(url.path): a \(image.size) image, expected \(entry.expected)")
            }
            self.called(entry, target, url)
        }
        let failure = ImageFailureAction(name) { target, error, url in
            guard let entry = member(url) else { return self.violation("a sequence answered for \(url.path), not a member") }
            if case .image = entry.expected { self.violation("sequence member \(url.path) failed: \(error)") }
            self.called(entry, target, url)
        }
        return (success, failure)
    }

    /// Marks requests without a handle as ended (a finished sequence's
    /// members; call on the delivery queue): no callback may come any more.
    func retire(_ entries: [Issued]) {
        lock.withLock { entries.forEach { $0.accounted = true } }
    }

    /// Those of `entries` that may still be pending: not answered, cancelled or accounted for.
    func unended(_ entries: [Issued]) -> [Issued] {
        lock.withLock { entries.filter { !$0.accounted && !$0.forbidden && $0.callbacks == 0 } }
    }

    private func called(_ entry: Issued, _ target: AnyObject?, _ url: URL) {
        lock.withLock {
            counts.callbacks += 1
            entry.callbacks += 1
            let number = entry.number
            if entry.callbacks > 1 { problems.add("request \(number) for \(url.path) answered \(entry.callbacks) times") }
            if entry.accounted { problems.add("request \(number) answered after its request was accounted for") }
            if entry.forbidden { problems.add("request \(number) delivered after its cancel or its target's death") }
            if url != entry.url { problems.add("request \(number) for \(entry.url.path) answered for \(url.path)") }
            if entry.target != nil && target == nil { problems.add("request \(number) delivered to a dead target") }
            if let target = target as? LoadTarget, target.name != entry.target {
                problems.add("request \(number) delivered to \(target.name), made for \(entry.target ?? "none")")
            }
            if unanswered?.url != url || unanswered?.object != target.map(ObjectIdentifier.init) {
                problems.add("request \(number) for \(url.path) ran without its notification right before")
            }
            unanswered = nil
            // Per-target order: on one target and action, a delivery never
            // follows a later request's (sequences make their members as they
            // go, so only direct requests are compared).
            if let name = entry.target, entry.action == Self.actionName {
                let key = name + "/" + entry.action
                if let last = lastDelivered[key], last > number {
                    problems.add("request \(number) on \(name) delivered after the later \(last)")
                }
                lastDelivered[key] = number
            }
        }
    }

    /// A `didFinish`/`didFail` notification (on the delivery queue).
    func posted(_ note: Notification) {
        let url = (note.userInfo?[AsyncImageURLKey] as? URL) ?? URL(fileURLWithPath: "/")
        lock.withLock {
            if LoadImageServer.isAsync(url) {
                // The async API posts with no action after it.
                counts.asyncPosts += 1
                if note.object != nil { problems.add("an async request's notification had an object") }
                return
            }
            if let unanswered { problems.add("a notification for \(unanswered.url.path) had no action") }
            counts.posts += 1
            unanswered = (url, note.object.map { ObjectIdentifier($0 as AnyObject) })
        }
    }

    /// Accounts for every finished request with a handle: completed ones
    /// were answered exactly once, cancelled ones never. Run on the delivery
    /// queue, where a request is marked completed and answered in one step.
    func sweep() {
        lock.withLock {
            var still: [Issued] = []
            still.reserveCapacity(open.count)
            for entry in open {
                guard let task = entry.task else { continue }
                switch task.state {
                case .running:
                    still.append(entry)
                    continue
                case .completed:
                    counts.accountedCompleted += 1
                    if entry.callbacks != 1 {
                        problems.add("request \(entry.number) completed with \(entry.callbacks) callbacks")
                    }
                case .cancelled:
                    counts.accountedCancelled += 1
                    if entry.callbacks != 0 {
                        problems.add("request \(entry.number) cancelled after \(entry.callbacks) callbacks")
                    }
                }
                entry.accounted = true
                entry.task = nil
            }
            open = still
            for (url, entries) in byURL {
                let pending = entries.filter { !$0.accounted && !$0.forbidden && $0.callbacks == 0 }
                byURL[url] = pending.isEmpty ? nil : pending
            }
        }
    }

    /// Requests with a handle not yet accounted for.
    var openCount: Int { lock.withLock { open.count } }

    // MARK: Sequences

    func sequenceStarted() { lock.withLock { counts.sequences += 1 } }

    // MARK: The async API

    func asyncStarted() { lock.withLock { counts.asyncStarted += 1 } }

    /// The outcome of one `image(for:)` call.
    func asyncEnded(_ outcome: Result<Image, any Error>, expected: Expected, url: URL) {
        lock.withLock {
            switch outcome {
            case .success(let image):
                counts.asyncImages += 1
                if case .image(let size) = expected, image.size == size {} else {
                    problems.add("async \(url.path): a \(image.size) image, expected \(expected)")
                }
            case .failure(let error as AsyncImageError):
                counts.asyncFailures += 1
                if case .image = expected { problems.add("async \(url.path) failed: \(error)") }
            case .failure(is CancellationError):
                counts.asyncCancelled += 1
            case .failure(let error):
                problems.add("async \(url.path) threw \(error), neither AsyncImageError nor CancellationError")
            }
        }
    }
}

/// A target of the mix: named, so a delivery can be checked against its request.
final class LoadTarget: @unchecked Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}
