import AsyncImageKit
import Foundation
import LoopbackHTTP
import ImageFixtures
import XCTest

/// Thousands of requests over hundreds of targets with random cancels, target
/// deallocations and cache purges. Every request must end in exactly one
/// outcome, no callback may reach a dead or cancelled request, and the
/// in-flight count must never pass the cap.
final class LoaderStressTests: XCTestCase {
    func testStress() throws {
        let requests = 3000
        let cap = 3
        let h = try LoaderHarness(concurrentLoads: cap)
        h.cache.countLimit = 40
        for n in stride(from: 0, to: 200, by: 17) {  // some failures among the successes
            h.server.serve("/img/\(n).png", Data("not an image".utf8))
        }
        let callbacks = Locked([Int: Int]())  // request number -> callbacks
        let violations = Locked([String]())
        let forbidden = Locked(Set<Int>())  // requests that must not be delivered
        var random = SplitMix64(seed: 2026)
        var targets = (0..<300).map { Target("t\($0)") }
        var issuedTo = [ObjectIdentifier: [Int]]()  // requests per live target, issued before now
        var loads = 0

        @Sendable func record(_ number: Int, _ target: AnyObject?, hadTarget: Bool) {
            callbacks.withLock { $0[number, default: 0] += 1 }
            if hadTarget && target == nil { violations.withLock { $0.append("request \(number) delivered to a dead target") } }
            if forbidden.withLock({ $0.contains(number) }) {
                violations.withLock { $0.append("request \(number) delivered after being cancelled") }
            }
        }

        for number in 0..<requests {
            let roll = random.next() % 100
            let index = Int(random.next() % UInt64(targets.count))
            // Cancels and deallocations happen on the delivery queue, so "after"
            // is well defined: no delivery of theirs may follow.
            if roll < 8 {
                let target = targets[index]
                let cancelled = issuedTo[ObjectIdentifier(target)] ?? []
                issuedTo[ObjectIdentifier(target)] = []
                h.queue.sync {
                    forbidden.withLock { $0.formUnion(cancelled) }
                    h.loader.cancelLoadingImages(target: target)
                }
                continue
            }
            if roll < 12 {
                let dead = targets[index]
                issuedTo[ObjectIdentifier(dead)] = nil
                h.queue.sync { targets[index] = Target("t\(index)-\(number)") }
                continue
            }
            if roll < 14 {
                MemoryPressureMonitor.shared.purge()
                continue
            }
            let url = h.server.url(Int(random.next() % 200))
            let target: Target? = roll < 22 ? nil : targets[index]
            let hadTarget = target != nil
            let success = ImageAction("stress") { t, _, _ in record(number, t, hadTarget: hadTarget) }
            let failure = ImageFailureAction("stress") { t, _, _ in record(number, t, hadTarget: hadTarget) }
            h.loader.loadImage(ImageRequest(url: url), target: target, success: success, failure: failure)
            loads += 1
            if let target { issuedTo[ObjectIdentifier(target), default: []].append(number) }
        }

        // Wait for the loader to settle: every request delivered or cancelled.
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let activity = h.loader.activity
            if activity.pendingRequests == 0 && activity.inFlight == 0 { break }
            usleep(2000)
        }
        h.drainDeliveries()
        targets.removeAll()

        let activity = h.loader.activity
        let issued = activity.delivered + activity.cancelled
        print("stress: \(activity.delivered) delivered, \(activity.cancelled) cancelled, peak in flight \(activity.peakInFlight), server peak \(h.server.peakActive)")
        XCTAssertEqual(activity.pendingRequests, 0, "requests left hanging")
        XCTAssertEqual(activity.inFlight, 0)
        XCTAssertEqual(activity.queued, 0)
        XCTAssertLessThanOrEqual(activity.peakInFlight, cap)
        XCTAssertLessThanOrEqual(h.server.peakActive, cap)
        let counts = callbacks.withLock { $0 }
        XCTAssertEqual(counts.values.filter { $0 > 1 }.count, 0, "a request got more than one callback")
        XCTAssertEqual(counts.count, activity.delivered, "callbacks and deliveries disagree")
        XCTAssertGreaterThan(activity.delivered, requests / 4)
        XCTAssertGreaterThan(activity.cancelled, 0)
        XCTAssertEqual(issued, loads, "every request issued ends delivered or cancelled")
        XCTAssertEqual(violations.withLock { $0 }, [])
    }
}
