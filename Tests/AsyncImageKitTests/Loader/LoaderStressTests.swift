import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import XCTest

/// Thousands of requests over hundreds of targets, made from several threads
/// at once, with random cancels (by every API), target deallocations, cache
/// purges and setting changes. Every request must end in exactly one outcome,
/// announced by exactly one notification right before its action; no callback
/// may reach a dead, cancelled or superseded request; no target may be kept
/// alive; and the in-flight count must never pass the cap. Requests come at
/// every priority, and their handles are re-ranked and cancelled too.
final class LoaderStressTests: XCTestCase {
    func testStress() throws {
        let workers = 4
        let stepsPerWorker = 800
        let cap = 3
        let h = try LoaderHarness(concurrentLoads: cap)
        h.cache.countLimit = 40
        for n in stride(from: 0, to: 200, by: 17) {  // some failures among the successes
            h.server.serve("/img/\(n).png", Data("not an image".utf8))
        }
        let check = StressCheck()
        let observers = [Notification.Name.asyncImageLoadDidFinish, .asyncImageLoadDidFail].map { name in
            h.center.addObserver(forName: name, object: nil, queue: nil) { note in check.posted(note) }
        }
        defer { observers.forEach(h.center.removeObserver) }
        let loads = Counter()

        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var random = SplitMix64(seed: 2026 + UInt64(worker))
            // Each worker has targets of its own, so it knows what it issued to each.
            var targets = (0..<75).map { Target("w\(worker)-t\($0)") }
            var issuedTo = [ObjectIdentifier: [(number: Int, url: URL)]]()
            var handles: [(number: Int, target: ObjectIdentifier?, task: ImageTask)] = []

            for step in 0..<stepsPerWorker {
                let number = worker * stepsPerWorker + step
                let roll = random.next() % 100
                let index = Int(random.next() % UInt64(targets.count))
                let url = h.server.url(Int(random.next() % 200))
                if (10..<14).contains(roll) {
                    // Deallocation: no reference of the test's own may outlive the swap.
                    let orphaned = issuedTo.removeValue(forKey: ObjectIdentifier(targets[index])) ?? []
                    let name = targets[index].name
                    h.queue.sync {
                        weak let dead = targets[index]
                        targets[index] = Target("w\(worker)-t\(index)-\(step)")
                        // Only the loader's short lock-scoped reads may still hold it.
                        let deadline = Date().addingTimeInterval(5)
                        while dead != nil && Date() < deadline { sched_yield() }
                        if dead != nil { check.violation("the loader keeps target \(name) alive") }
                        check.forbid(orphaned.map(\.number))
                    }
                    continue
                }
                let target = targets[index]
                // Cancels and deallocations happen on the delivery queue, so
                // "after" is well defined: no delivery of theirs may follow.
                switch roll {
                case 0..<5:
                    let cancelled = issuedTo.removeValue(forKey: ObjectIdentifier(target)) ?? []
                    h.queue.sync {
                        check.forbid(cancelled.map(\.number))
                        h.loader.cancelLoadingImages(target: target)
                    }
                case 5..<7:
                    let cancelled = issuedTo.removeValue(forKey: ObjectIdentifier(target)) ?? []
                    h.queue.sync {
                        check.forbid(cancelled.map(\.number))
                        h.loader.cancelLoadingImages(target: target, action: StressCheck.action)
                        h.loader.cancelLoadingImages(target: target, action: ImageAction("another") { _, _, _ in })
                    }
                case 7..<9:
                    let issued = issuedTo[ObjectIdentifier(target)] ?? []
                    let victim = issued.isEmpty ? url : issued[Int(random.next() % UInt64(issued.count))].url
                    let (cancelled, kept) = issued.partitioned { $0.url == victim }
                    issuedTo[ObjectIdentifier(target)] = kept
                    let byAction = roll == 7
                    h.queue.sync {
                        check.forbid(cancelled.map(\.number))
                        if byAction {
                            h.loader.cancelLoading(url: victim, target: target, action: StressCheck.action)
                        } else {
                            h.loader.cancelLoading(url: victim, target: target)
                        }
                    }
                case 9:
                    h.queue.sync {
                        check.forbidEverything(issuedFor: url)
                        h.loader.cancelLoading(url: url)
                    }
                case 14..<16:
                    if roll == 14 { MemoryPressureMonitor.shared.purge() } else { h.cache.removeAll() }
                case 16..<18:
                    h.loader.concurrentLoads = 1 + Int(random.next() % UInt64(cap))
                    h.loader.loadingTimeout = 30 + Double(random.next() % 30)
                    h.loader.cache = random.next() % 4 == 0 ? nil : h.cache
                case 20..<23 where !handles.isEmpty:
                    // Re-rank a request through its handle (waiting, running or ended).
                    let handle = handles[Int(random.next() % UInt64(handles.count))]
                    handle.task.priority = ImagePriority.allCases[Int(random.next() % 5)]
                case 23..<25 where !handles.isEmpty:
                    // Cancel through the handle.
                    let handle = handles.remove(at: Int(random.next() % UInt64(handles.count)))
                    if let owner = handle.target { issuedTo[owner]?.removeAll { $0.number == handle.number } }
                    h.queue.sync {
                        check.forbid([handle.number])
                        handle.task.cancel()
                    }
                case 18..<20:
                    let issued = Set((issuedTo[ObjectIdentifier(target)] ?? []).map(\.url))
                    for found in [h.loader.url(for: target), h.loader.url(for: target, action: StressCheck.action)] {
                        if let found, !issued.contains(found) {
                            check.violation("url(for:) gave \(found.path), never set on \(target.name) or cancelled")
                        }
                    }
                default:
                    let chosen: Target? = roll < 28 ? nil : target
                    // Several sizes and pixel limits of one URL share its transfer,
                    // each decoded (and cached) on its own; the 4x4 images are over
                    // a limit of 8 pixels. Every outcome is checked against the request.
                    let request: ImageRequest
                    let expected: StressCheck.Expected
                    let junk = Int(url.deletingPathExtension().lastPathComponent)! % 17 == 0
                    switch random.next() % 10 {
                    case 0..<3:
                        request = ImageRequest(url: url, targetSize: PixelSize(width: 2, height: 2))
                        expected = junk ? .failure : .image(PixelSize(width: 2, height: 2))
                    case 3:
                        request = ImageRequest(url: url, targetSize: PixelSize(width: 3, height: 2), contentMode: .aspectFit)
                        expected = junk ? .failure : .image(PixelSize(width: 3, height: 2))  // 2x2, with margins
                    case 4:
                        request = ImageRequest(url: url, maxPixels: 8)
                        expected = .failure
                    default:
                        request = ImageRequest(url: url)
                        expected = junk ? .failure : .image(PixelSize(width: 4, height: 4))
                    }
                    var ranked = request
                    ranked.priority = ImagePriority.allCases[Int(random.next() % 5)]
                    let (success, failure) = check.actions(number, target: chosen?.name, expected: expected)
                    let task = h.loader.loadImage(ranked, target: chosen, success: success, failure: failure)
                    if random.next() % 4 == 0 { handles.append((number, chosen.map(ObjectIdentifier.init), task)) }
                    check.issued(number, url: url)
                    loads.increment()
                    if let chosen { issuedTo[ObjectIdentifier(chosen), default: []].append((number, url)) }
                }
            }
        }

        // Wait for the loader to settle: every request delivered or cancelled.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let activity = h.loader.activity
            if activity.pendingRequests == 0 && activity.inFlight == 0 && activity.decoding == 0 { break }
            usleep(2000)
        }
        h.drainDeliveries()

        let activity = h.loader.activity
        let report = check.report
        print(
            "stress: \(loads.value) loads from \(workers) threads: \(activity.delivered) delivered, "
                + "\(activity.cancelled) cancelled, \(report.forbidden) forbidden, "
                + "peak in flight \(activity.peakInFlight), server peak \(h.server.peakActive)")
        XCTAssertEqual(activity.pendingRequests, 0, "requests left hanging")
        XCTAssertEqual(activity.inFlight, 0)
        XCTAssertEqual(activity.queued, 0)
        XCTAssertLessThanOrEqual(activity.peakInFlight, cap)
        XCTAssertLessThanOrEqual(h.server.peakActive, cap)
        XCTAssertEqual(activity.delivered + activity.cancelled, loads.value, "every request ends delivered or cancelled")
        XCTAssertEqual(report.repeated, 0, "a request got more than one callback")
        XCTAssertEqual(report.callbacks, activity.delivered, "callbacks and deliveries disagree")
        XCTAssertEqual(report.posts, activity.delivered, "one notification per delivery, none for cancelled requests")
        XCTAssertGreaterThan(activity.delivered, loads.value / 4)
        XCTAssertGreaterThan(report.forbidden, 100, "the cancels and deallocations hit issued requests")
        XCTAssertEqual(report.violations, [])
    }
}

/// What the stress test's callbacks and notifications check, under one lock.
/// Callbacks and posts run on the delivery queue, one at a time.
private final class StressCheck: @unchecked Sendable {
    static let action = ImageAction("stress") { _, _, _ in }

    private let lock = NSLock()
    private var callbacks: [Int: Int] = [:]
    private var forbidden: Set<Int> = []
    private var issuedByURL: [URL: [Int]] = [:]
    private var lastDelivered: [String: Int] = [:]
    /// The post waiting for its action: its URL and object.
    private var unanswered: (url: URL, object: ObjectIdentifier?)?
    private var posts = 0
    private var violations: [String] = []

    func violation(_ text: String) { lock.withLock { violations.append(text) } }

    func forbid(_ numbers: [Int]) { lock.withLock { forbidden.formUnion(numbers) } }

    func forbidEverything(issuedFor url: URL) {
        lock.withLock { forbidden.formUnion(issuedByURL.removeValue(forKey: url) ?? []) }
    }

    /// Called after `loadImage` returned (so a cancel that read it came after the call).
    func issued(_ number: Int, url: URL) { lock.withLock { issuedByURL[url, default: []].append(number) } }

    func posted(_ note: Notification) {
        lock.withLock {
            if let unanswered { violations.append("a post for \(unanswered.url.path) had no action") }
            posts += 1
            unanswered = ((note.userInfo?[AsyncImageURLKey] as? URL) ?? URL(fileURLWithPath: "/"), note.object.map { ObjectIdentifier($0 as AnyObject) })
        }
    }

    /// What a request must end in, if it is delivered.
    enum Expected: Sendable {
        case image(PixelSize)
        case failure
    }

    /// Success and failure actions (named like ``action``) for request `number`.
    func actions(_ number: Int, target name: String?, expected: Expected) -> (ImageAction, ImageFailureAction) {
        let success = ImageAction("stress") { target, image, url in
            if case .image(let size) = expected, image.size == size {} else {
                self.violation("request \(number) for \(url.path): a \(image.size) image, expected \(expected)")
            }
            self.called(number, target, url, name)
        }
        let failure = ImageFailureAction("stress") { target, error, url in
            if case .image = expected { self.violation("request \(number) for \(url.path) failed: \(error)") }
            self.called(number, target, url, name)
        }
        return (success, failure)
    }

    private func called(_ number: Int, _ target: AnyObject?, _ url: URL, _ name: String?) {
        lock.withLock {
            callbacks[number, default: 0] += 1
            if forbidden.contains(number) { violations.append("request \(number) delivered after its cancel or its target's death") }
            if name != nil && target == nil { violations.append("request \(number) delivered to a dead target") }
            if let target = target as? Target, target.name != name { violations.append("request \(number) delivered to \(target.name)") }
            if unanswered?.url != url || unanswered?.object != target.map(ObjectIdentifier.init) {
                violations.append("request \(number) ran without its notification right before")
            }
            unanswered = nil
            if let name {
                if let last = lastDelivered[name], last > number {
                    violations.append("request \(number) on \(name) delivered after the later \(last)")
                }
                lastDelivered[name] = number
            }
        }
    }

    var report: (callbacks: Int, repeated: Int, posts: Int, forbidden: Int, violations: [String]) {
        lock.withLock {
            var all = violations
            if let unanswered { all.append("a post for \(unanswered.url.path) had no action") }
            return (callbacks.count, callbacks.values.filter { $0 > 1 }.count, posts, forbidden.count, all)
        }
    }
}

extension Array {
    /// The elements that match, and those that do not, in order.
    fileprivate func partitioned(by matches: (Element) -> Bool) -> ([Element], [Element]) {
        (filter(matches), filter { !matches($0) })
    }
}
