import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Item 16: every public method of the loader may be called from any thread.
/// Several threads at once load (with actions and through `image(for:)`),
/// cancel (every way), read `url(for:)` and `activity`, and change every
/// setting, including the delivery queue and notification center while
/// deliveries are under way. Run under the thread sanitizer in CI, this finds
/// data races; the counts check that every request still ends exactly once.
final class LoaderThreadSafetyTests: XCTestCase {
    func testEveryPublicMethodFromManyThreadsAtOnce() throws {
        let run = try ManyThreads()
        var observers: [(NotificationCenter, NSObjectProtocol)] = []
        for center in run.centers {
            for name in [Notification.Name.asyncImageLoadDidFinish, .asyncImageLoadDidFail] {
                observers.append((center, center.addObserver(forName: name, object: nil, queue: nil) { _ in run.posts.increment() }))
            }
        }
        defer { observers.forEach { $0.0.removeObserver($0.1) } }

        DispatchQueue.concurrentPerform(iterations: 4) { run.work(worker: $0) }

        let allTasksEnded = expectation(description: "every image(for:) task ends")
        let started = run.tasks.withLock { $0 }
        Task {
            for task in started { await task.value }
            allTasksEnded.fulfill()
        }
        wait(for: [allTasksEnded], timeout: 60)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let activity = run.loader.activity
            if activity.pendingRequests == 0 && activity.inFlight == 0 && activity.decoding == 0 { break }
            usleep(2000)
        }
        run.queues.forEach { $0.sync {} }

        let activity = run.loader.activity
        let tasks = started.count
        XCTAssertEqual(activity.pendingRequests, 0)
        XCTAssertEqual(run.tasksDelivered.value + run.tasksCancelled.value, tasks, "every task ends once")
        // A task cancelled while its request was being delivered throws
        // CancellationError although the loader counts a delivery.
        let unanswered = activity.delivered - (run.callbacks.value + run.tasksDelivered.value)
        XCTAssertTrue((0...run.tasksCancelled.value).contains(unanswered), "one callback per delivery (\(unanswered) unanswered)")
        // A task cancelled before it ran never made a request; every other
        // cancelled task made one, which the loader counts as cancelled.
        let cancelledLoads = run.loads.value - run.callbacks.value
        XCTAssertTrue(
            (cancelledLoads...(cancelledLoads + run.tasksCancelled.value)).contains(activity.cancelled),
            "\(activity.cancelled) cancelled: \(cancelledLoads) loads, up to \(run.tasksCancelled.value) tasks")
        XCTAssertEqual(run.posts.value, activity.delivered, "one post per delivery")
        XCTAssertLessThanOrEqual(activity.peakInFlight, 3)
        XCTAssertGreaterThan(activity.delivered, 0)
        XCTAssertGreaterThan(activity.cancelled, 0)
        XCTAssertGreaterThan(tasks, 0)
    }
}

/// One loader, two delivery queues and two notification centers to switch
/// between, and the counts the threads keep.
private struct ManyThreads: Sendable {
    let server: ImageServer
    let queues = [DispatchQueue(label: "delivery A"), DispatchQueue(label: "delivery B")]
    let centers = [NotificationCenter(), NotificationCenter()]
    let loader: AsyncImageLoader
    let posts = Counter()
    let callbacks = Counter()
    let loads = Counter()
    let events = Counter()
    let tasksDelivered = Counter()
    let tasksCancelled = Counter()
    let tasks = Locked([Task<Void, Never>]())
    let success: ImageAction
    let failure: ImageFailureAction

    init() throws {
        server = try ImageServer()
        loader = AsyncImageLoader(
            cache: ImageCache(), concurrentLoads: 2, deliveryQueue: queues[0], notificationCenter: centers[0])
        let callbacks = callbacks
        success = ImageAction("safety") { _, _, _ in _ = callbacks.increment() }
        failure = ImageFailureAction("safety") { _, _, _ in _ = callbacks.increment() }
    }

    func work(worker: Int) {
        var random = SplitMix64(seed: 77 + UInt64(worker))
        let targets = (0..<10).map { Target("w\(worker)-\($0)") }
        for _ in 0..<500 {
            let target = targets[Int(random.next() % UInt64(targets.count))]
            let url = server.url(Int(random.next() % 40))
            switch random.next() % 20 {
            case 0: loader.cancelLoading(url: url)
            case 1: loader.cancelLoading(url: url, target: target)
            case 2: loader.cancelLoading(url: url, target: target, action: success)
            case 3: loader.cancelLoadingImages(target: target)
            case 4: loader.cancelLoadingImages(target: target, action: success)
            case 5: _ = (loader.url(for: target), loader.url(for: target, action: success), loader.activity)
            case 6: loader.deliveryQueue = queues[Int(random.next() % 2)]
            case 7: loader.notificationCenter = centers[Int(random.next() % 2)]
            case 8:
                let events = events
                let monitor: (@Sendable (LoaderEvent) -> Void)? = { _ in events.increment() }
                loader.eventMonitor = random.next() % 2 == 0 ? nil : monitor
                loader.concurrentLoads = 1 + Int(random.next() % 3)
                loader.loadingTimeout = 30
                loader.requestTimeout = random.next() % 2 == 0 ? nil : .seconds(30)  // armed and disarmed, never reached
            case 9: loader.cache = random.next() % 3 == 0 ? nil : ImageCache()
            case 10..<13: startTask(url, cancelAtOnce: random.next() % 3 == 0)
            default:
                loader.loadImage(url, target: random.next() % 4 == 0 ? nil : target, success: success, failure: failure)
                loads.increment()
            }
        }
    }

    private func startTask(_ url: URL, cancelAtOnce: Bool) {
        let (loader, delivered, cancelled) = (loader, tasksDelivered, tasksCancelled)
        let task = Task {
            do {
                _ = try await loader.image(for: url)
                delivered.increment()
            } catch is CancellationError {
                cancelled.increment()
            } catch {
                delivered.increment()  // a failure, delivered
            }
        }
        if cancelAtOnce { task.cancel() }
        tasks.withLock { $0.append(task) }
    }
}
