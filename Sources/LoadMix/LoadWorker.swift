import AsyncImageKit
import Foundation
import ImageFixtures

/// One thread of a ``LoadMix``: random steps from its own seeded generator,
/// on targets of its own (so it knows what it issued to each).
///
/// Cancels and target deallocations are made on the delivery queue, so that
/// "after the cancel" is well defined: no callback of theirs may follow.
struct LoadWorker {
    private let mix: LoadMix
    private let index: Int
    /// Unique across the mix's rounds: request numbers start here, and target names with `prefix`.
    private let base: Int
    private let prefix: String
    private var random: SplitMix64
    private var targets: [LoadTarget]
    /// What this worker issued to each of its targets and has not seen end.
    private var issuedTo: [ObjectIdentifier: [Member]] = [:]
    /// Requests whose handle may be re-ranked or cancelled.
    private var handles: [(entry: Issued, task: ImageTask, owner: ObjectIdentifier?)] = []
    private var sequences: [(task: ImageSequenceTask, members: [Issued], owner: ObjectIdentifier?)] = []
    /// The latest async calls, to cancel.
    private var asyncCalls: [Task<Void, Never>] = []
    private var step = 0

    /// A request issued to a target: `byURL` when `cancelLoading(url:...)` reaches it for sure
    /// (a sequence's later member is made only when its turn comes).
    private struct Member {
        let entry: Issued
        let byURL: Bool
    }

    private static let targetCount = 60
    private static let smallSize = PixelSize(width: 8, height: 8)
    private static let fitSize = PixelSize(width: 12, height: 8)

    init(mix: LoadMix, index: Int, round: Int, seed: UInt64) {
        self.mix = mix
        self.index = index
        base = (round * mix.workers + index) * 1_000_000_000
        prefix = "r\(round)-w\(index)"
        random = SplitMix64(seed: seed)
        targets = (0..<Self.targetCount).map { [prefix] in LoadTarget("\(prefix)-t\($0)") }
    }

    private var ledger: OutcomeLedger { mix.outcomes }
    private var loader: AsyncImageLoader { mix.loader }

    private mutating func roll(_ below: Int) -> Int { Int(random.next() % UInt64(below)) }

    /// Steps until `done` says so.
    mutating func run(until done: () -> Bool) {
        while !done() {
            step += 1
            takeStep()
            if step % 512 == 0 { prune() }
            if index == 0 && step % 256 == 0 { mix.sweep() }
        }
    }

    private mutating func takeStep() {
        var dice = roll(100)
        let skip = ProcessInfo.processInfo.environment["LOADMIX_SKIP"] ?? ""
        let cats: [(String, Range<Int>)] = [("cancel", 0..<9), ("dealloc", 9..<12), ("purge", 12..<14), ("settings", 14..<16), ("urlfor", 16..<18), ("handles", 18..<23), ("async", 23..<29), ("prefetch", 29..<34), ("seq", 34..<37)]
        for (name, range) in cats where skip.contains(name) && range.contains(dice) { dice = 99 }
        let slot = roll(targets.count)
        if (9..<12).contains(dice) {
            // Before this step holds the target: it must be let go of.
            replaceTarget(at: slot)
            return
        }
        let target = targets[slot]
        let owner = ObjectIdentifier(target)
        switch dice {
        case 0..<4:
            let cancelled = issuedTo.removeValue(forKey: owner) ?? []
            onDeliveryQueue {
                ledger.forbid(cancelled.map(\.entry))
                loader.cancelLoadingImages(target: target)
            }
        case 4..<6:
            let (cancelled, kept) = (issuedTo[owner] ?? []).split { $0.entry.action == OutcomeLedger.actionName }
            issuedTo[owner] = kept
            let action = ImageAction(OutcomeLedger.actionName) { _, _, _ in }
            onDeliveryQueue {
                ledger.forbid(cancelled.map(\.entry))
                loader.cancelLoadingImages(target: target, action: action)
                loader.cancelLoadingImages(target: target, action: ImageAction("another") { _, _, _ in })
            }
        case 6..<8:
            let issued = issuedTo[owner] ?? []
            let victim = issued.isEmpty ? mix.server.url(roll(LoadImageServer.count)) : issued[roll(issued.count)].entry.url
            let byAction = dice == 6
            let (cancelled, kept) = issued.split {
                $0.byURL && $0.entry.url == victim && (!byAction || $0.entry.action == OutcomeLedger.actionName)
            }
            issuedTo[owner] = kept
            let action = ImageAction(OutcomeLedger.actionName) { _, _, _ in }
            onDeliveryQueue {
                ledger.forbid(cancelled.map(\.entry))
                if byAction {
                    loader.cancelLoading(url: victim, target: target, action: action)
                } else {
                    loader.cancelLoading(url: victim, target: target)
                }
            }
        case 8:
            let url = mix.server.url(roll(LoadImageServer.count), async: roll(4) == 0)
            onDeliveryQueue {
                ledger.forbidEverything(issuedFor: url)
                loader.cancelLoading(url: url)
            }
        case 12:
            MemoryPressureMonitor.shared.purge()
        case 13:
            mix.cache.removeAll()
        case 14..<16:
            let cap = mix.concurrentLoads
            loader.concurrentLoads = roll(2) == 0 ? cap : 1 + roll(cap)
            loader.loadingTimeout = 30 + Double(roll(30))
            loader.cache = roll(4) == 0 ? nil : mix.cache
        case 16..<18:
            checkURLs(of: target)
        case 18..<20 where !handles.isEmpty:
            // Re-rank a request through its handle (waiting, running or ended).
            handles[roll(handles.count)].task.priority = ImagePriority.allCases[roll(5)]
        case 20..<23 where !handles.isEmpty:
            let handle = handles.remove(at: roll(handles.count))
            if let owner = handle.owner { issuedTo[owner]?.removeAll { $0.entry === handle.entry } }
            onDeliveryQueue {
                ledger.forbid([handle.entry])
                handle.task.cancel()
            }
        case 23..<27:
            startAsyncCall()
        case 27..<29 where !asyncCalls.isEmpty:
            asyncCalls[roll(asyncCalls.count)].cancel()
        case 29..<32:
            let prefetcher = mix.prefetchers[index]
            prefetcher.startPrefetching(with: (0...roll(3)).map { _ in prefetchRequest() })
        case 32:
            mix.prefetchers[index].stopPrefetching(with: (0...roll(3)).map { _ in prefetchRequest() })
        case 33:
            mix.prefetchers[index].stopPrefetching()
        case 34..<36:
            startSequence(on: roll(5) == 0 ? nil : target)
        case 36 where !sequences.isEmpty:
            let sequence = sequences.remove(at: roll(sequences.count))
            if let owner = sequence.owner {
                issuedTo[owner]?.removeAll { member in sequence.members.contains { $0 === member.entry } }
            }
            onDeliveryQueue {
                ledger.forbid(sequence.members)
                sequence.task.cancel()
            }
        default:
            load(for: dice < 45 ? nil : target)
        }
    }

    private func onDeliveryQueue(_ body: () -> Void) { mix.queue.sync(execute: body) }

    // MARK: Requests

    /// A request for image N at one of four sizes and limits, and what it must end in.
    private mutating func request(_ n: Int, url: URL) -> (ImageRequest, Expected) {
        let ok = LoadImageServer.kind(n) == .png || LoadImageServer.kind(n) == .jpeg
        let full = PixelSize(width: LoadImageServer.side, height: LoadImageServer.side)
        switch roll(10) {
        case 0..<3:
            return (ImageRequest(url: url, targetSize: Self.smallSize), ok ? .image(Self.smallSize) : .failure)
        case 3:
            // Fitted into 12x8: 8x8 with margins, 12x8 in all.
            return (ImageRequest(url: url, targetSize: Self.fitSize, contentMode: .aspectFit), ok ? .image(Self.fitSize) : .failure)
        case 4:
            return (ImageRequest(url: url, maxPixels: 8), .failure)  // over its pixel limit
        default:
            return (ImageRequest(url: url), ok ? .image(full) : .failure)
        }
    }

    private mutating func load(for target: LoadTarget?) {
        let n = roll(LoadImageServer.count)
        let url = mix.server.url(n)
        var (request, expected) = request(n, url: url)
        request.priority = ImagePriority.allCases[roll(5)]
        let entry = Issued(
            number: base + step, url: url, target: target?.name, action: OutcomeLedger.actionName,
            expected: expected)
        ledger.issue(entry)
        let (success, failure) = ledger.actions(for: entry)
        let task = loader.loadImage(request, target: target, success: success, failure: failure)
        ledger.made(entry, task: task, cancellableByURL: true)
        let owner = target.map(ObjectIdentifier.init)
        if let owner { issuedTo[owner, default: []].append(Member(entry: entry, byURL: true)) }
        if roll(4) == 0 { handles.append((entry, task, owner)) }
    }

    /// An `image(for:)` call in a task of its own (a quarter cancelled at once, others maybe later).
    private mutating func startAsyncCall() {
        let n = roll(LoadImageServer.count)
        let url = mix.server.url(n, async: true)
        let (request, expected) = request(n, url: url)
        let (loader, ledger) = (self.loader, self.ledger)
        ledger.asyncStarted()
        let call = Task {
            let outcome: Result<Image, any Error>
            do {
                outcome = .success(try await loader.image(for: request))
            } catch {
                outcome = .failure(error)
            }
            ledger.asyncEnded(outcome, expected: expected, url: url)
        }
        if roll(4) == 0 { call.cancel() }
        asyncCalls.append(call)
        if asyncCalls.count > 32 { asyncCalls.removeFirst() }
    }

    private mutating func prefetchRequest() -> ImageRequest {
        let url = mix.server.url(roll(LoadImageServer.count))
        return roll(2) == 0 ? ImageRequest(url: url) : ImageRequest(url: url, targetSize: Self.smallSize)
    }

    /// A sequence of two images (the second a different one), on `target` or none.
    private mutating func startSequence(on target: LoadTarget?) {
        let first = roll(LoadImageServer.count)
        let second = (first + 1 + roll(LoadImageServer.count - 1)) % LoadImageServer.count
        let (small, expectedSmall) = request(first, url: mix.server.url(first))
        let (large, expectedLarge) = request(second, url: mix.server.url(second))
        let members = [(small, expectedSmall), (large, expectedLarge)].map { request, expected in
            Issued(
                number: base + step, url: request.url, target: target?.name,
                action: OutcomeLedger.sequenceActionName, expected: expected)
        }
        members.forEach(ledger.issue)
        ledger.sequenceStarted()
        let (success, failure) = ledger.actions(forSequence: members)
        let task = loader.loadImages([small, large], target: target, success: success, failure: failure)
        // Only the first member is surely made by now: a cancel by URL reaches it.
        ledger.made(members[0], task: nil, cancellableByURL: true)
        let owner = target.map(ObjectIdentifier.init)
        if let owner {
            issuedTo[owner, default: []] += [Member(entry: members[0], byURL: true), Member(entry: members[1], byURL: false)]
        }
        sequences.append((task, members, owner))
    }

    // MARK: Targets

    /// Lets go of a target: the loader must not keep it alive (only its
    /// short lock-scoped reads may hold it a moment), and nothing issued to
    /// it may be delivered from then on.
    private mutating func replaceTarget(at slot: Int) {
        let owner = ObjectIdentifier(targets[slot])
        let orphaned = issuedTo.removeValue(forKey: owner) ?? []
        let name = targets[slot].name
        let replacement = LoadTarget("\(prefix)-t\(slot)-\(step)")
        handles.removeAll { $0.owner == owner }
        sequences.removeAll { $0.owner == owner }
        mix.queue.sync {
            weak let dead = targets[slot]
            targets[slot] = replacement
            let deadline = Date().addingTimeInterval(5)
            while dead != nil && Date() < deadline { sched_yield() }
            if dead != nil { ledger.violation("the loader keeps target \(name) alive") }
            ledger.forbid(orphaned.map(\.entry))
            ledger.forget(target: name)
        }
    }

    /// `url(for:)` may only give a URL issued to the target and not cancelled.
    private func checkURLs(of target: LoadTarget) {
        let issued = Set((issuedTo[ObjectIdentifier(target)] ?? []).map(\.entry.url))
        let action = ImageAction(OutcomeLedger.actionName) { _, _, _ in }
        for found in [loader.url(for: target), loader.url(for: target, action: action)] {
            if let found, !issued.contains(found) {
                ledger.violation("url(for:) gave \(found.path), never set on \(target.name) or cancelled")
            }
        }
    }

    /// Forgets what has ended (the worker's memory stays bounded in a soak).
    private mutating func prune() {
        // On the delivery queue: a sequence is finished as its last member is
        // marked delivered, just before that member's action runs there.
        let finished = mix.queue.sync {
            let finished = sequences.filter { $0.task.isFinished }
            ledger.retire(finished.flatMap(\.members))
            return finished
        }
        sequences.removeAll { sequence in finished.contains { $0.task === sequence.task } }
        handles.removeAll { $0.task.state != .running }
        for (owner, members) in issuedTo {
            let live = ledger.unended(members.map(\.entry))
            let kept = members.filter { member in live.contains { $0 === member.entry } }
            issuedTo[owner] = kept.isEmpty ? nil : kept
        }
    }
}

extension Array {
    /// The elements that match, and those that do not, in order.
    fileprivate func split(by matches: (Element) -> Bool) -> ([Element], [Element]) {
        (filter(matches), filter { !matches($0) })
    }
}
