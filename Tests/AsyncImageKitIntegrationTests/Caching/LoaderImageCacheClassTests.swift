import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Priority classes through a loader over loopback HTTP (the cache's own
/// tests, without a server: ImageCacheClassTests in AsyncImageKitTests).
final class LoaderImageCacheClassTests: XCTestCase {
    /// The loader stores a request's image in the request's class.
    func testLoaderStoresTheRequestsClass() async throws {
        let h = try LoaderHarness()
        var thumbnail = ImageRequest(url: h.server.url(3), targetSize: PixelSize(width: 2, height: 2))
        thumbnail.cacheClass = .thumbnail
        var original = ImageRequest(url: h.server.url(4))
        original.cacheClass = .original
        XCTAssertNotEqual(original, ImageRequest(url: h.server.url(4)), "the class is part of a request's equality")
        _ = try await h.loader.image(for: thumbnail)
        _ = try await h.loader.image(for: original)
        _ = try await h.loader.image(for: ImageRequest(url: h.server.url(5)))
        XCTAssertEqual(
            h.cache.keysByRecency, [thumbnail.cacheKey, ImageRequest(url: h.server.url(5)).cacheKey, original.cacheKey])
        h.cache.removeImages(below: .thumbnail)
        XCTAssertEqual(h.cache.keysByRecency, [thumbnail.cacheKey])
    }
}
