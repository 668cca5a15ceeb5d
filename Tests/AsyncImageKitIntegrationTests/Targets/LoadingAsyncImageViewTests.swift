import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// AsyncImageView loading over loopback HTTP (its tests without a server:
/// AsyncImageViewTests in AsyncImageKitTests).
final class LoadingAsyncImageViewTests: XCTestCase {
    private let grey = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 100, g: 100, b: 100))
    private let broken = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 255, g: 0, b: 0))

    func testLoadingShowsPlaceholderAndIndicatorThenTheImage() throws {
        let h = try LoaderHarness()
        let view = AsyncImageView(loader: h.loader)
        XCTAssertEqual(view.state, .empty)
        XCTAssertTrue(view.showActivityIndicator)
        XCTAssertEqual(view.crossfadeDuration, 0.4)
        XCTAssertFalse(view.isActivityIndicatorAnimating)
        view.placeholderImage = grey
        let url = h.server.url(5)
        h.server.hold(url)
        let changes = Counter()
        view.onChange = { _ in changes.increment() }
        view.imageURL = url
        XCTAssertEqual(view.state, .loading(url))
        XCTAssertTrue(view.isActivityIndicatorAnimating)
        XCTAssertEqual(view.displayedImage?.pixel(x: 0, y: 0), grey.pixel(x: 0, y: 0))
        view.showActivityIndicator = false
        XCTAssertFalse(view.isActivityIndicatorAnimating)
        view.showActivityIndicator = true

        let loaded = expectation(description: "loaded")
        view.onChange = { view in if case .loaded = view.state { loaded.fulfill() } }
        h.server.release(url)
        wait(for: [loaded], timeout: 15)
        XCTAssertFalse(view.isActivityIndicatorAnimating)
        XCTAssertEqual(view.displayedImage?.pixel(x: 0, y: 0), ImageServer.color(5))
        XCTAssertGreaterThan(changes.value, 0)
    }

    /// `imageURL = nil` on another thread while a delivery is under way
    /// (held here in a didFinish observer, which runs on the delivery queue
    /// right before the action) wins: the image does not come back after
    /// the clear.
    func testClearingWhileADeliveryIsUnderWayWins() throws {
        let h = try LoaderHarness()
        let view = AsyncImageView(loader: h.loader)
        h.whileDeliveryIsUnderWay(for: view, start: { view.imageURL = h.server.url(6) }, meanwhile: { view.imageURL = nil })
        XCTAssertNil(view.image)
        XCTAssertNil(view.displayedImage)
        XCTAssertEqual(view.state, .empty)
        XCTAssertNil(view.imageURL)
    }

    /// The view clears itself at once on `imageURL = nil`, so no clear comes
    /// later through the delivery queue to erase an image set meanwhile.
    func testAnImageSetRightAfterAClearStays() throws {
        let h = try LoaderHarness()
        let view = AsyncImageView(loader: h.loader)
        let busy = DispatchSemaphore(value: 0)
        h.queue.async { busy.wait() }  // the delivery queue is busy
        view.imageURL = h.server.url(6)
        view.imageURL = nil
        view.image = grey
        busy.signal()
        h.drainDeliveries()
        XCTAssertEqual(view.image?.pixel(x: 0, y: 0), grey.pixel(x: 0, y: 0))
    }

    /// Two threads setting `imageURL` at once: the view ends loaded with the
    /// image of the URL it reports. (No cache, so deliveries come in any
    /// order: if the loader took another URL as the latest than the view, the
    /// view's URL would be cancelled and the view left loading for good.)
    func testConcurrentSetsEndLoadedWithTheLastURL() throws {
        let h = try LoaderHarness(cache: false)
        let urls = (0..<8).map { h.server.url(40 + $0) }
        for round in 0..<300 {
            let view = AsyncImageView(loader: h.loader)
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                for step in 0..<20 { view.imageURL = urls[side * 4 + (round + step) % 4] }
            }
            let deadline = Date().addingTimeInterval(15)
            while h.loader.activity.pendingRequests > 0 && Date() < deadline { usleep(1000) }
            h.drainDeliveries()
            let last = try XCTUnwrap(view.imageURL)
            guard view.state == .loaded(last),
                view.image?.pixel(x: 0, y: 0) == ImageServer.color(urls.firstIndex(of: last)! + 40)
            else { return XCTFail("round \(round): imageURL \(last.path), state \(view.state)") }
        }
    }

    func testFailureStateAndImage() throws {
        let h = try LoaderHarness()
        let view = AsyncImageView(loader: h.loader)
        view.failureImage = broken
        let failed = expectation(description: "failed")
        view.onChange = { view in if case .failed = view.state { failed.fulfill() } }
        let url = h.server.url(path: "/gone.png")
        view.imageURL = url
        wait(for: [failed], timeout: 15)
        XCTAssertEqual(view.state.withoutHeaders, .failed(url, .httpStatus(url, code: 404)))
        XCTAssertFalse(view.isActivityIndicatorAnimating)
        XCTAssertEqual(view.displayedImage?.pixel(x: 1, y: 1), broken.pixel(x: 1, y: 1))
    }
}
