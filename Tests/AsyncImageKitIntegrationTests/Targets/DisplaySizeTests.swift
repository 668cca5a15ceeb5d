import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// Targets take their display size, content mode and scaling from
/// themselves and may change them (issue: display size and processing,
/// item 2): a change loads the URL again at the new size, from the memory
/// cache first.
final class DisplaySizeTests: XCTestCase {
    private static let photo = try! JPEGEncoder(quality: 95).encode(SyntheticImage.quadrants(width: 400, height: 200))

    private func serve(_ h: LoaderHarness) -> URL {
        h.server.serve("/wide.jpg", Self.photo)
        return h.server.url(path: "/wide.jpg")
    }

    /// Waits until `view` shows an image of `size` (that `matches`).
    private func waitForImage(
        of size: PixelSize, _ view: AsyncImageView, matching matches: @escaping @Sendable (Image) -> Bool = { _ in true }
    ) {
        let shown = expectation(description: "an image of \(size)")
        let fulfilled = Box<Bool>(false)
        let check: @Sendable (AsyncImageView) -> Void = { view in
            guard let image = view.image, image.size == size, matches(image) else { return }
            var first = false
            fulfilled.update { done in
                first = done != true
                done = true
            }
            if first { shown.fulfill() }
        }
        view.onChange = check
        check(view)
        wait(for: [shown], timeout: 15)
        view.onChange = nil
    }

    func testChangingTheViewsDisplaySizeReloadsMemoryFirst() throws {
        let h = try LoaderHarness()
        let url = serve(h)
        let view = AsyncImageView(loader: h.loader, displaySize: PixelSize(width: 40, height: 40))
        view.imageURL = url
        waitForImage(of: PixelSize(width: 40, height: 40), view)
        XCTAssertEqual(view.image?.originalSize, PixelSize(width: 400, height: 200))

        view.displaySize = PixelSize(width: 80, height: 80)
        waitForImage(of: PixelSize(width: 80, height: 80), view)
        XCTAssertEqual(h.server.requestCount(url), 2, "a new size: decoded again")
        XCTAssertEqual(view.state, .loaded(url))

        // Back to a size the memory cache holds: set on the delivery queue,
        // the image is there before the setter returns, with no transfer.
        h.queue.sync {
            view.displaySize = PixelSize(width: 40, height: 40)
            XCTAssertEqual(view.image?.size, PixelSize(width: 40, height: 40))
        }
        XCTAssertEqual(h.server.requestCount(url), 2)

        // Content mode: fit leaves margins (400x200 in 40x40: 40x20, rows 10-29).
        view.contentMode = .aspectFit
        waitForImage(of: PixelSize(width: 40, height: 40), view) { $0.pixel(x: 20, y: 5).a == 0 }
        let fit = try XCTUnwrap(view.image)
        XCTAssertEqual(fit.pixel(x: 20, y: 5).a, 0)
        XCTAssertEqual(fit.pixel(x: 20, y: 15).a, 255)
        // Scaling: fit without margins.
        view.scaling = .fitCropsExcess
        waitForImage(of: PixelSize(width: 40, height: 20), view)
        // Unchanged values do not reload.
        let before = h.server.requestCount(url)
        view.scaling = .fitCropsExcess
        view.displaySize = PixelSize(width: 40, height: 40)
        XCTAssertEqual(h.server.requestCount(url), before)
    }

    /// Any adopter of `ImageDisplaying`: its own display size and content
    /// mode, and `imageDisplayDidChange()` after it changes them.
    func testAnAdopterReloadsWhenItsDisplayChanges() throws {
        let h = try LoaderHarness()
        let url = serve(h)
        let cell = Cell(loader: h.loader)
        let first = expectation(description: "first")
        cell.onImage = { image in if image.size == PixelSize(width: 30, height: 30) { first.fulfill() } }
        cell.imageURL = url
        wait(for: [first], timeout: 15)
        let second = expectation(description: "second")
        cell.onImage = { image in if image.size == PixelSize(width: 60, height: 30) { second.fulfill() } }
        cell.side = 60
        cell.mode = .aspectFit
        cell.imageDisplayDidChange()
        wait(for: [second], timeout: 15)
        XCTAssertEqual(cell.imageURL, url)
    }
}

/// A minimal adopter whose display size and content mode change.
private final class Cell: ImageDisplaying, @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Image?
    private var storedSide = 30
    private var storedMode = ContentMode.aspectFill
    var onImage: (@Sendable (Image) -> Void)?
    let loader: AsyncImageLoader

    init(loader: AsyncImageLoader) { self.loader = loader }

    var image: Image? {
        get { lock.withLock { stored } }
        set {
            lock.withLock { stored = newValue }
            if let newValue { onImage?(newValue) }
        }
    }

    var side: Int {
        get { lock.withLock { storedSide } }
        set { lock.withLock { storedSide = newValue } }
    }

    var mode: ContentMode {
        get { lock.withLock { storedMode } }
        set { lock.withLock { storedMode = newValue } }
    }

    var imageLoader: AsyncImageLoader { loader }
    var imageDisplaySize: PixelSize? { PixelSize(width: side, height: side) }
    var imageContentMode: ContentMode { mode }
    var imageScaling: ScalingOptions { mode == .aspectFit ? .fitCropsExcess : [] }
}
