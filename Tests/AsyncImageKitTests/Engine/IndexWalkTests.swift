#if DEBUG  // IndexWalk counts in debug builds only
@testable import AsyncImageKit
import TestSupport
import XCTest

/// The loader engine issue, item 12: no call may scan every pending request.
/// Debug builds count the elements the engine's loops visit (``IndexWalk``);
/// every cancel API, `url(for:)`, re-ranking and the enqueue itself run here
/// over a small and a large queue, on one target and on a target each, and
/// the steps per call must not grow with the queue. A scan would cost about
/// half the queue per call (some 2,000 steps at the large size): these
/// assertions could not miss it. Counts, not times: exact on any machine
/// (BENCHMARKS.md, "Scale", has the times, up to a million requests).
final class IndexWalkTests: XCTestCase {
    private final class Target {}

    private enum Shape: String { case one, many }

    private let small = 200
    private let large = 4_000

    func testNoCallWalksTheQueueOnOneTarget() {
        check(.one)
    }

    func testNoCallWalksTheQueueWithATargetEach() {
        check(.many)
    }

    /// Many targets waiting on one URL (a placeholder, an avatar): a target
    /// with nothing pending there, or nothing with that action, cancels it
    /// without looking at the others; one with a request there looks at its own.
    func testCancellingASharedURLLooksOnlyAtTheTargetsOwnRequests() {
        let h = FakeHarness(concurrentLoads: 1, cache: false)
        h.loader.maxPendingRequests = large + 1
        h.load(1_000_000)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        defer { h.transport.isSuspended = false }
        let (action, other) = (ImageAction("walk") { _, _, _ in }, ImageAction("other") { _, _, _ in })
        let cells = (0..<large).map { _ in Target() }
        for cell in cells { h.loader.loadImage(h.url(7), target: cell, success: action) }
        let idle = Target()

        let counter = IndexWalk.Counter()
        IndexWalk.$counter.withValue(counter) {
            h.loader.cancelLoading(url: h.url(7), target: idle, action: action)
            h.loader.cancelLoading(url: h.url(7), target: idle)
            h.loader.cancelLoading(url: h.url(7), target: cells[0], action: other)
            h.loader.cancelLoading(url: h.url(7), target: cells[1], action: action)
            h.loader.cancelLoading(url: h.url(7), target: cells[2])
        }
        XCTAssertLessThanOrEqual(counter.steps, 8, "\(counter.steps) steps for five cancels beside \(large) requests for the URL")
        XCTAssertEqual(h.loader.activity.pendingRequests, large + 1 - 2, "cells 1 and 2 cancelled, nothing else")
        XCTAssertEqual(h.loader.url(for: cells[0], action: action), h.url(7))
    }

    /// Runs both sizes: no phase may cost more than a few dozen steps per
    /// call, and the whole run's steps per call may not grow with the queue.
    private func check(_ shape: Shape) {
        let few = stepsPerCall(count: small, shape: shape)
        let many = stepsPerCall(count: large, shape: shape)
        XCTAssertEqual(Set(few.phases.keys), Set(many.phases.keys))
        XCTAssertEqual(many.phases.count, shape == .one ? 9 : 10, "every phase ran")
        for (phase, steps) in many.phases.sorted(by: { $0.key < $1.key }) {
            // Work put off is paid in whichever phase trips it: a sweep of
            // the stale heap entries costs up to about ten steps per call
            // of that phase. A scan would cost some 2,000.
            XCTAssertLessThanOrEqual(steps, 32, "\(shape.rawValue), \(phase): \(steps) steps per call at \(large)")
        }
        // Over the whole run, what was put off is paid once per request.
        XCTAssertLessThanOrEqual(
            many.overall, 2 * few.overall + 1,
            "\(shape.rawValue): \(few.overall) steps per call at \(small), \(many.overall) at \(large)")
        XCTAssertLessThanOrEqual(many.overall, 8, "\(shape.rawValue): \(many.overall) steps per call at \(large)")
    }

    /// Steps per call of each phase, with `count` requests queued behind a
    /// transfer that holds the only slot.
    private func stepsPerCall(count: Int, shape: Shape) -> (phases: [String: Double], overall: Double) {
        let h = FakeHarness(concurrentLoads: 1, cache: false)
        h.loader.maxPendingRequests = count + 1
        h.load(1_000_000)
        wait(for: [h.transport.starts(1, self)], timeout: 10)
        defer { h.transport.isSuspended = false }

        let targets = (0..<(shape == .one ? 1 : count)).map { _ in Target() }
        func target(_ index: Int) -> Target { targets[shape == .one ? 0 : index] }
        let action = ImageAction("walk") { _, _, _ in }
        var handles: [ImageTask] = []
        var steps: [String: Double] = [:]
        var (allSteps, allCalls) = (0, 0)
        func measure(_ phase: String, _ indexes: [Int], perRequest: Int? = nil, _ call: (Int) -> Void) {
            let counter = IndexWalk.Counter()
            IndexWalk.$counter.withValue(counter) { indexes.forEach(call) }
            let calls = max(1, perRequest ?? indexes.count)
            steps[phase] = Double(counter.steps) / Double(calls)
            allSteps += counter.steps
            allCalls += calls
        }

        measure("loadImage", Array(0..<count)) {
            handles.append(h.loader.loadImage(ImageRequest(url: h.url($0)), target: target($0), success: action))
        }
        XCTAssertEqual(h.loader.activity.queued, shape == .one ? 1 : count, "all queued")

        // A fixed permutation (7919 is prime, and neither size is a multiple
        // of it), so no phase visits requests in the order they were made.
        let order = (0..<count).map { $0 * 7919 % count }
        let quarter = Array(order.prefix(count / 4))
        measure("url(for:)", quarter) { XCTAssertNotNil(h.loader.url(for: target($0))) }
        measure("url(for:action:)", quarter) { XCTAssertNotNil(h.loader.url(for: target($0), action: action)) }
        measure("ImageTask.priority", quarter) { handles[$0].priority = handles[$0].priority == .high ? .low : .high }

        var next = 0
        func take(_ share: Int) -> [Int] {
            defer { next += share }
            return Array(order[next..<next + share])
        }
        measure("cancelLoading(url:target:)", take(count / 4)) {
            h.loader.cancelLoading(url: h.url($0), target: target($0))
        }
        measure("cancelLoading(url:target:action:)", take(count / 8)) {
            h.loader.cancelLoading(url: h.url($0), target: target($0), action: action)
        }
        measure("cancelLoading(url:)", take(count / 8)) { h.loader.cancelLoading(url: h.url($0)) }
        measure("ImageTask.cancel()", take(count / 8)) { handles[$0].cancel() }
        let rest = Array(order[next...])
        switch shape {
        case .one:
            measure("cancelLoadingImages(target:)", [0], perRequest: rest.count) {
                h.loader.cancelLoadingImages(target: target($0))
            }
        case .many:
            measure("cancelLoadingImages(target:action:)", Array(rest.prefix(rest.count / 2))) {
                h.loader.cancelLoadingImages(target: target($0), action: action)
            }
            measure("cancelLoadingImages(target:)", Array(rest.dropFirst(rest.count / 2))) {
                h.loader.cancelLoadingImages(target: target($0))
            }
        }
        XCTAssertEqual(h.loader.activity.queued, 0, "every request cancelled")
        XCTAssertTrue(handles.allSatisfy { $0.state == .cancelled })
        return (steps, Double(allSteps) / Double(allCalls))
    }
}
#endif
