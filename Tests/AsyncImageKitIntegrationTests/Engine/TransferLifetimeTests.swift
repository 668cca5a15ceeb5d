@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The loader lets go of a transfer's task once it is over: completed, or
/// cancelled for good. (Regression: the engine's handle kept its task, and
/// the task's completion kept the handle and the job, so every transfer that
/// started stayed in memory with its closures, about 1 KB a request; the
/// load test's RSS check found it, LeakSanitizer showed the cycle.)
final class TransferLifetimeTests: XCTestCase {
    /// The real transport, keeping weak references to the tasks it hands out.
    private final class RecordingLoader: DataLoading, @unchecked Sendable {
        private final class Weak {
            weak var task: DataTask?
            init(_ task: DataTask) { self.task = task }
        }

        private let transport = DataLoader(completionQueue: DispatchQueue(label: "recording transfers"))
        private let lock = NSLock()
        private var tasks: [Weak] = []

        func loadData(
            _ request: DataRequest, completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
        ) -> any DataLoadingTask {
            loadData(request, observer: DataTransferObserver(), completion: completion)
        }

        func loadData(
            _ request: DataRequest, observer: DataTransferObserver,
            completion: @escaping @Sendable (Result<DataResponse, AsyncImageError>) -> Void
        ) -> any DataLoadingTask {
            let task = transport.loadData(from: request.url, headers: request.headers, observer: observer, completion: completion)
            lock.withLock { tasks.append(Weak(task)) }
            return task
        }

        var started: Int { lock.withLock { tasks.count } }
        var alive: Int { lock.withLock { tasks.filter { $0.task != nil }.count } }
    }

    private func harness(_ transport: RecordingLoader) throws -> (ImageServer, AsyncImageLoader, DeliveryLog, DispatchQueue) {
        let server = try ImageServer()
        let queue = DispatchQueue(label: "lifetime delivery")
        let center = NotificationCenter()
        let log = DeliveryLog()
        _ = log.observe(center)
        let loader = AsyncImageLoader(
            configuration: .init(cache: nil, deliveryQueue: queue, notificationCenter: center, dataLoader: transport))
        return (server, loader, log, queue)
    }

    func testCompletedTransfersAreLetGo() throws {
        let transport = RecordingLoader()
        let (server, loader, log, queue) = try harness(transport)
        server.serve("/junk.png", Data("not an image".utf8))
        let requests = [
            ImageRequest(url: server.url(1)), ImageRequest(url: server.url(2), targetSize: PixelSize(width: 2, height: 2)),
            ImageRequest(url: server.url(path: "/junk.png")), ImageRequest(url: server.url(path: "/missing")),
        ]
        for request in requests { loader.loadImage(request, success: log.success, failure: log.failure) }
        wait(for: [log.outcomes(requests.count, self)], timeout: 30)
        queue.sync {}
        XCTAssertEqual(transport.started, requests.count)
        XCTAssertEqual(transport.alive, 0, "a completed transfer's task is kept")
        withExtendedLifetime(loader) {}
    }

    func testCancelledTransfersAreLetGo() throws {
        let transport = RecordingLoader()
        let (server, loader, log, queue) = try harness(transport)
        let url = server.url(5)
        server.hold(url)
        let task = loader.loadImage(ImageRequest(url: url), success: log.success, failure: log.failure)
        wait(for: [server.arrival(of: url, self)], timeout: 15)
        task.cancel()
        XCTAssertTrue(try XCTUnwrap(server.connection(url)).waitForPeerClose(timeout: 10))
        server.release(url)
        queue.sync {}
        XCTAssertEqual(transport.started, 1)
        XCTAssertEqual(transport.alive, 0, "a cancelled transfer's task is kept")
        XCTAssertEqual(log.events, [])
        withExtendedLifetime(loader) {}
    }
}
