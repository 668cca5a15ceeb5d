import AsyncImageKit
import Foundation
import XCTest

/// Records what a loader delivers, in order, on its delivery queue; with
/// ``checkQueue(_:)``, every record made anywhere else fails the test
/// (items 1 and 8: actions and notifications run on the delivery queue only).
public final class DeliveryLog: @unchecked Sendable {
    private static let deliveryQueueKey = DispatchSpecificKey<ObjectIdentifier>()
    private var checksQueue = false
    public enum Event: Equatable, Sendable, CustomStringConvertible {
        case success(String, target: ObjectIdentifier?)
        case failure(String, target: ObjectIdentifier?)
        case notified(String, finished: Bool)

        public var description: String {
            switch self {
            case .success(let path, _): return "success(\(path))"
            case .failure(let path, _): return "failure(\(path))"
            case .notified(let path, let finished): return "\(finished ? "didFinish" : "didFail")(\(path))"
            }
        }
    }

    private let lock = NSLock()
    private var stored: [Event] = []
    private var waiters: [(count: Int, expectation: XCTestExpectation)] = []
    public private(set) var images: [String: Image] = [:]
    public private(set) var errors: [String: AsyncImageError] = [:]

    public init() {}

    public var events: [Event] { lock.withLock { stored } }

    public var deliveredPaths: [String] {
        events.compactMap {
            switch $0 {
            case .success(let path, _), .failure(let path, _): return path
            case .notified: return nil
            }
        }
    }

    /// From now on, records must be made on `queue` (which it marks).
    public func checkQueue(_ queue: DispatchQueue) {
        queue.setSpecific(key: Self.deliveryQueueKey, value: ObjectIdentifier(self))
        lock.withLock { checksQueue = true }
    }

    /// Whether the caller runs on the queue given to ``checkQueue(_:)``.
    public var isOnCheckedQueue: Bool { DispatchQueue.getSpecific(key: Self.deliveryQueueKey) == ObjectIdentifier(self) }

    public func record(_ event: Event, image: Image? = nil, error: AsyncImageError? = nil) {
        if lock.withLock({ checksQueue }), !isOnCheckedQueue {
            XCTFail("\(event) ran off the delivery queue")
        }
        let ready = lock.withLock { () -> [XCTestExpectation] in
            stored.append(event)
            if case .success(let path, _) = event { images[path] = image }
            if case .failure(let path, _) = event { errors[path] = error }
            let outcomes = stored.filter { if case .notified = $0 { return false } else { return true } }.count
            let done = waiters.filter { $0.count <= outcomes }.map(\.expectation)
            waiters.removeAll { $0.count <= outcomes }
            return done
        }
        ready.forEach { $0.fulfill() }
    }

    /// Fulfilled once `count` outcomes (success or failure) have been recorded.
    public func outcomes(_ count: Int, _ test: XCTestCase) -> XCTestExpectation {
        let expectation = test.expectation(description: "\(count) outcomes")
        let done = lock.withLock { () -> Bool in
            let outcomes = stored.filter { if case .notified = $0 { return false } else { return true } }.count
            if outcomes >= count { return true }
            waiters.append((count, expectation))
            return false
        }
        if done { expectation.fulfill() }
        return expectation
    }

    public var success: ImageAction {
        ImageAction("log") { target, image, url in
            self.record(.success(url.path, target: target.map(ObjectIdentifier.init)), image: image)
        }
    }

    public var failure: ImageFailureAction {
        ImageFailureAction("log") { target, error, url in
            self.record(.failure(url.path, target: target.map(ObjectIdentifier.init)), error: error)
        }
    }

    /// Observes a loader's notifications into the log.
    public func observe(_ center: NotificationCenter) -> [NSObjectProtocol] {
        [
            center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { note in
                let url = note.userInfo?[AsyncImageURLKey] as? URL
                self.record(.notified(url?.path ?? "?", finished: true))
            },
            center.addObserver(forName: .asyncImageLoadDidFail, object: nil, queue: nil) { note in
                let url = note.userInfo?[AsyncImageURLKey] as? URL
                self.record(.notified(url?.path ?? "?", finished: false))
            },
        ]
    }
}

/// A target object.
public final class Target: @unchecked Sendable {
    public let name: String
    public init(_ name: String = "target") { self.name = name }
}
