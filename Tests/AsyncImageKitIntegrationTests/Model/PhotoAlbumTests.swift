import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The photo album data source (issue: photo albums, items 1 and 2): the
/// best image in memory at once, thumbnail then original, neighbours
/// prefetched, the original's size before its pixels, stop loading.
final class PhotoAlbumTests: XCTestCase {
    private static let original = try! JPEGEncoder(quality: 92).encode(SyntheticImage.photo(width: 640, height: 480))

    /// Photos 0..<n: thumbnails /img/N.png (4x4), originals served from `resource(N)`.
    private func album(_ h: LoaderHarness, count: Int, resources: inout [RangeResource]) -> PhotoAlbum {
        var photos: [PhotoAlbum.Photo] = []
        for index in 0..<count {
            let resource = RangeResource(body: Self.original, contentType: "image/jpeg")
            resources.append(resource)
            let originalURL = h.server.serve("/original-\(index).jpg", resource: resource)
            photos.append(PhotoAlbum.Photo(thumbnailURL: h.server.url(index), originalURL: originalURL))
        }
        return PhotoAlbum(photos: photos, thumbnailSize: PixelSize(width: 4, height: 4), loader: h.loader)
    }

    func testThumbnailThenOriginalAndTheBestInMemoryAtOnce() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        var resources: [RangeResource] = []
        let album = album(h, count: 3, resources: &resources)
        let changes = Box<[PhotoAlbum.PhotoState]>([])
        let both = expectation(description: "thumbnail, then original")
        album.onChange = { state in
            guard state.index == 1 else { return }
            changes.update { $0 = ($0 ?? []) + [state] }
            if state.sizeClass == .original { both.fulfill() }
        }
        // The thumbnail is held until the first answer is read: a 4x4 PNG
        // from loopback could otherwise be in memory before `photo(at:)`
        // returns (it reads memory again after starting the loads).
        let thumbnail = h.server.url(1)
        h.server.hold(thumbnail)
        let first = album.photo(at: 1)
        h.server.release(thumbnail)
        XCTAssertEqual(first.sizeClass, .none, "nothing in memory yet")
        XCTAssertNil(first.image)
        XCTAssertTrue(first.isLoadingBetter)
        wait(for: [both], timeout: 15)
        let classes = changes.value!.compactMap { $0.image == nil ? nil : $0.sizeClass }
        XCTAssertEqual(classes.first, .thumbnail, "the thumbnail first: \(classes)")
        XCTAssertEqual(classes.last, .original)
        let order = h.server.arrivalOrder
        XCTAssertLessThan(order.firstIndex(of: "/img/1.png")!, order.firstIndex(of: "/original-1.jpg")!)
        // Now at once, from memory.
        do {
            let now = album.photo(at: 1)
            XCTAssertEqual(now.sizeClass, .original)
            XCTAssertEqual(now.image?.size, PixelSize(width: 640, height: 480))
            XCTAssertFalse(now.isLoadingBetter)
            XCTAssertEqual(now.originalSize, PixelSize(width: 640, height: 480))
        }
        // Classes: the original in the original class, the thumbnail in the
        // thumbnail class; a purge of the lower classes keeps the thumbnail.
        // (The cache's own entries: an image still held somewhere, even by a
        // decode thread finishing, would be found again through its weak table.)
        h.cache.removeImages(below: .thumbnail)
        let kept = Set(h.cache.keysByRecency)
        XCTAssertTrue(kept.contains(album.thumbnailRequest(at: 1).cacheKey), "thumbnails stay")
        XCTAssertFalse(kept.contains(album.originalRequest(at: 1).cacheKey), "originals go first")
    }

    /// The original's size is reported while its pixels are still held by
    /// the server: its header was read from the first bytes.
    func testTheOriginalsSizeIsKnownBeforeItsPixels() throws {
        let h = try LoaderHarness()
        var resources: [RangeResource] = []
        let album = album(h, count: 1, resources: &resources)
        let gate = Gate()
        defer { gate.open() }
        resources[0].inject(.hold(after: 2_000, gate: gate))
        let sized = expectation(description: "size known")
        album.onChange = { state in if state.originalSize != nil, state.sizeClass != .original { sized.fulfill() } }
        _ = album.photo(at: 0)
        wait(for: [sized], timeout: 15)
        let state = album.photo(at: 0)
        XCTAssertEqual(state.originalSize, PixelSize(width: 640, height: 480))
        XCTAssertNotEqual(state.sizeClass, .original, "the original's pixels are still on the way")
        XCTAssertTrue(state.isLoadingBetter)
        let done = expectation(description: "original")
        album.onChange = { state in if state.sizeClass == .original { done.fulfill() } }
        gate.open()
        wait(for: [done], timeout: 15)
    }

    /// The neighbours are loaded after the current photo, at low priority.
    func testNeighboursArePrefetched() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        var resources: [RangeResource] = []
        let album = album(h, count: 5, resources: &resources)
        let prefetched = expectation(description: "neighbours")
        prefetched.expectedFulfillmentCount = 2
        album.onChange = { state in if state.sizeClass == .original, state.index != 2 { prefetched.fulfill() } }
        _ = album.photo(at: 2)
        wait(for: [prefetched], timeout: 15)
        let order = h.server.arrivalOrder
        func at(_ path: String) -> Int { order.firstIndex(of: path) ?? .max }
        XCTAssertLessThan(at("/img/2.png"), at("/original-2.jpg"))
        for neighbour in ["/img/1.png", "/img/3.png", "/original-1.jpg", "/original-3.jpg"] {
            XCTAssertLessThan(at("/original-2.jpg"), at(neighbour), "the current photo first: \(order)")
        }
        XCTAssertEqual(h.server.requestCount(h.server.url(path: "/original-0.jpg")), 0, "only i-1 and i+1")
        XCTAssertEqual(h.server.requestCount(h.server.url(path: "/original-4.jpg")), 0)
        XCTAssertEqual(album.photo(at: 1).sizeClass, .original)
        XCTAssertEqual(album.photo(at: 3).sizeClass, .original)
    }

    /// `stopLoading(at:)` cancels what the index started.
    func testStopLoadingCancels() throws {
        let h = try LoaderHarness(concurrentLoads: 1)
        var resources: [RangeResource] = []
        let album = album(h, count: 1, resources: &resources)
        let cancelled = expectation(description: "cancelled")
        cancelled.expectedFulfillmentCount = 2
        h.loader.eventMonitor = { event in if event.kind == .cancelled { cancelled.fulfill() } }
        h.server.hold(h.server.url(0))
        _ = album.photo(at: 0)
        wait(for: [h.server.arrival(of: h.server.url(0), self)], timeout: 15)
        album.stopLoading(at: 0)
        wait(for: [cancelled], timeout: 15)
        h.server.release(h.server.url(0))
        XCTAssertEqual(h.server.requestCount(h.server.url(path: "/original-0.jpg")), 0, "the queued original never started")
    }
}
