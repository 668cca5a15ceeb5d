@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The decode scheduler's order, exactly: bodies that wait for a decoder
/// are taken in the transfer queue's order (priority, then the most
/// recently touched), ranked when a decoder frees up. Every decoder is
/// held by a processor the test releases, so bodies really wait.
final class DecodeOrderTests: XCTestCase {
    /// Holds its decode until the test signals; tells when it is entered.
    private struct Gate: ImageProcessing {
        let name: String
        let release: DispatchSemaphore
        let entered: XCTestExpectation
        var identifier: String { "gate-\(name)" }
        func process(_ image: Image) throws(AsyncImageError) -> Image {
            entered.fulfill()
            release.wait()
            return image
        }
    }

    /// Notes the order decodes reach it.
    private final class OrderLog: @unchecked Sendable {
        private let lock = NSLock()
        private var names: [String] = []
        func append(_ name: String) { lock.withLock { names.append(name) } }
        var order: [String] { lock.withLock { names } }
    }

    private struct Note: ImageProcessing {
        let name: String
        let log: OrderLog
        var identifier: String { "note-\(name)" }
        func process(_ image: Image) throws(AsyncImageError) -> Image {
            log.append(name)
            return image
        }
    }

    /// Two bodies, `older` then `newer`, waiting for a decoder while every
    /// decoder is held; `raiseOlder` raises the older one's priority while
    /// it waits. Returns the order they were decoded in.
    private func decodeOrder(raiseOlder: Bool, order: QueueOrder = .lifo) -> [String] {
        let h = FakeHarness(concurrentLoads: 8, queueOrder: order)
        let decoders = h.loader.state.withLock { $0.decodes.threads }
        XCTAssertLessThanOrEqual(decoders + 2, 8, "room for every held decode and the two bodies")
        let release = DispatchSemaphore(value: 0)
        let transferred = expectation(description: "both bodies are in")
        transferred.expectedFulfillmentCount = 2
        let (olderURL, newerURL) = (h.url(1), h.url(2))
        h.loader.eventMonitor = { event in
            if case .transferred = event.kind, event.url == olderURL || event.url == newerURL { transferred.fulfill() }
        }
        // Every decoder held.
        var entered: [XCTestExpectation] = []
        for n in 0..<decoders {
            let gate = expectation(description: "decoder \(n) held")
            entered.append(gate)
            h.loader.loadImage(
                ImageRequest(url: h.url(100 + n), processors: [Gate(name: "\(n)", release: release, entered: gate)]),
                success: h.log.success, failure: h.log.failure)
            h.transport.finish(h.url(100 + n))
        }
        wait(for: entered, timeout: 10)
        let log = OrderLog()
        let older = h.loader.loadImage(
            ImageRequest(url: olderURL, processors: [Note(name: "older", log: log)]), success: h.log.success)
        h.loader.loadImage(ImageRequest(url: newerURL, processors: [Note(name: "newer", log: log)]), success: h.log.success)
        wait(for: [h.transport.starts(decoders + 2, self)], timeout: 10)
        h.transport.finish(olderURL)
        h.transport.finish(newerURL)
        wait(for: [transferred], timeout: 10)
        XCTAssertEqual(h.loader.activity.decoding, decoders, "the bodies wait: every decoder is held")
        if raiseOlder { older.priority = .high }
        // One decoder freed: the best body takes it, the other waits for it.
        release.signal()
        wait(for: [h.log.outcomes(3, self)], timeout: 10)
        for _ in 1..<decoders { release.signal() }
        wait(for: [h.log.outcomes(decoders + 2, self)], timeout: 10)
        return log.order
    }

    func testTheMostRecentBodyIsDecodedFirstAmongEquals() {
        XCTAssertEqual(decodeOrder(raiseOlder: false), ["newer", "older"])
    }

    /// First come, first served: the body of the older request first.
    func testTheOldestBodyIsDecodedFirstInFIFOOrder() {
        XCTAssertEqual(decodeOrder(raiseOlder: false, order: .fifo), ["older", "newer"])
    }

    /// A priority raised while the body waits for a decoder counts.
    func testAPriorityRaisedWhileWaitingForADecoderCounts() {
        XCTAssertEqual(decodeOrder(raiseOlder: true), ["older", "newer"])
    }
}
