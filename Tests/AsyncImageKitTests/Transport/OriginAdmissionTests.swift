@testable import AsyncImageKit
import Foundation
import XCTest

/// `OriginAdmission`, the transport's places per origin (see
/// ``TransportConfiguration/maxConnectionsPerHost``): exact, on transfers
/// that never reach libcurl.
final class OriginAdmissionTests: XCTestCase {
    private func transfer(_ url: String, priority: Int = 0, first: Bool = false, stamp: UInt64 = 0) -> CurlTransfer {
        CurlTransfer(
            url: URL(string: url)!, configuration: TransportConfiguration(),
            urgency: TransferUrgency(priority: priority, isFirstForTarget: first, stamp: stamp),
            completionQueue: DispatchQueue(label: "admission"), completion: { _ in })
    }

    func testAtMostTheLimitPerOriginAndTheMostUrgentNext() {
        var admission = OriginAdmission(limit: 2)
        let a = transfer("https://a.example/1"), b = transfer("https://a.example/2")
        let other = transfer("https://b.example/1")
        XCTAssertTrue(admission.admit(a, multiplexes: nil))
        XCTAssertTrue(admission.admit(b, multiplexes: nil))
        XCTAssertTrue(admission.admit(other, multiplexes: nil), "another origin has places of its own")
        let old = transfer("https://a.example/old", stamp: 1)
        let new = transfer("https://a.example/new", stamp: 5)
        let urgent = transfer("https://a.example/urgent", priority: 3)
        let oldToo = transfer("https://a.example/old-too", stamp: 1)
        for waiting in [old, new, urgent, oldToo] { XCTAssertFalse(admission.admit(waiting, multiplexes: false)) }
        XCTAssertEqual(admission.waitingCount, 4)
        XCTAssertTrue(admission.ended(a) === urgent)
        XCTAssertTrue(admission.ended(b) === new)
        XCTAssertNil(admission.ended(other), "nothing waits for b.example")
        XCTAssertTrue(admission.ended(urgent) === old, "equal urgency: the first to arrive")
        XCTAssertTrue(admission.ended(new) === oldToo)
        XCTAssertNil(admission.ended(old))
        XCTAssertNil(admission.ended(oldToo))
        XCTAssertEqual(admission.waitingCount, 0)
        XCTAssertNil(admission.ended(oldToo), "a place is given back once")
        XCTAssertTrue(admission.admit(transfer("https://a.example/3"), multiplexes: nil))
        XCTAssertTrue(admission.admit(transfer("https://a.example/4"), multiplexes: nil), "both places are free again")
    }

    /// First-for-target transfers (thumbnails) hold at most all but one of
    /// an origin's places while others of their priority (full images)
    /// wait; a higher priority is not held back, and a cap of 1 has no
    /// exception.
    func testFirstsLeaveOnePlaceForTheRest() {
        var admission = OriginAdmission(limit: 3)
        let running = (1...3).map { transfer("https://a.example/thumb\($0)", first: true) }
        for each in running { XCTAssertTrue(admission.admit(each, multiplexes: nil)) }
        let thumb4 = transfer("https://a.example/thumb4", first: true, stamp: 9)
        let thumb5 = transfer("https://a.example/thumb5", first: true, stamp: 8)
        let full = transfer("https://a.example/full", stamp: 1)
        for each in [thumb4, thumb5, full] { XCTAssertFalse(admission.admit(each, multiplexes: nil)) }
        XCTAssertTrue(admission.ended(running[0]) === full, "two thumbnails still run: the third place carries a full image")
        XCTAssertTrue(admission.ended(running[1]) === thumb4, "one thumbnail runs: the most urgent next")
        let full2 = transfer("https://a.example/full2", stamp: 20)
        XCTAssertFalse(admission.admit(full2, multiplexes: nil))
        XCTAssertTrue(admission.ended(full) === full2, "thumbnails hold two places: the third stays with full images")
        XCTAssertTrue(admission.ended(full2) === thumb5, "no full image waits: a thumbnail may take the last place")
        XCTAssertEqual(admission.waitingCount, 0)

        // A higher priority goes first whatever it is.
        let urgentThumb = transfer("https://a.example/urgent-thumb", priority: 2, first: true)
        let lowFull = transfer("https://a.example/low-full")
        for each in [urgentThumb, lowFull] { XCTAssertFalse(admission.admit(each, multiplexes: nil)) }
        XCTAssertTrue(admission.ended(running[2]) === urgentThumb, "thumbnails would hold all three, but it outranks the full image")

        // A cap of 1: strict order.
        var single = OriginAdmission(limit: 1)
        XCTAssertTrue(single.admit(transfer("https://a.example/1", first: true), multiplexes: nil))
        let one = transfer("https://a.example/one", first: true)
        let other = transfer("https://a.example/other")
        for each in [other, one] { XCTAssertFalse(single.admit(each, multiplexes: nil)) }
        XCTAssertTrue(single.ended(transfer("https://a.example/1")) == nil, "only a transfer holding a place gives one back")
    }

    func testCancelledWaitingTransfersAreSkippedAndSwept() {
        var admission = OriginAdmission(limit: 1)
        let running = transfer("https://a.example/run")
        XCTAssertTrue(admission.admit(running, multiplexes: nil))
        let waiting = (0..<10).map { transfer("https://a.example/\($0)", stamp: UInt64($0)) }
        for each in waiting { XCTAssertFalse(admission.admit(each, multiplexes: nil)) }
        for each in waiting where each !== waiting[3] {
            XCTAssertTrue(each.cancel())
            admission.cancelledWhileWaiting(each)
        }
        XCTAssertLessThan(admission.waitingCount, 10, "swept once the cancelled outnumber the rest")
        XCTAssertTrue(admission.ended(running) === waiting[3])
        XCTAssertNil(admission.ended(waiting[3]))
        XCTAssertEqual(admission.waitingCount, 0)
    }

    func testAnOriginKnownToMultiplexHasNoLimitAndReleasesItsWaiting() {
        var admission = OriginAdmission(limit: 1)
        XCTAssertTrue(admission.admit(transfer("https://a.example/1"), multiplexes: nil))
        let waiting = [transfer("https://a.example/2", stamp: 1), transfer("https://a.example/3", stamp: 2)]
        for each in waiting { XCTAssertFalse(admission.admit(each, multiplexes: nil)) }
        XCTAssertEqual(admission.multiplexes("https://a.example:443").map(\.url.path), ["/3", "/2"])
        XCTAssertEqual(admission.waitingCount, 0)
        XCTAssertTrue(admission.admit(transfer("https://a.example/4"), multiplexes: true))
        XCTAssertTrue(admission.admit(transfer("https://a.example/5"), multiplexes: true))
    }

    func testNoLimitAdmitsEverything() {
        var admission = OriginAdmission(limit: 0)
        for n in 0..<20 { XCTAssertTrue(admission.admit(transfer("http://a.example/\(n)"), multiplexes: false)) }
    }
}
