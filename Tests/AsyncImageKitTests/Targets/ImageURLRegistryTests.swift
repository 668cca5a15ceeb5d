@testable import AsyncImageKit
import Foundation
import XCTest

/// The per-object records behind `imageURL`.
final class ImageURLRegistryTests: XCTestCase {
    private final class Cell: ImageDisplaying, @unchecked Sendable {
        var image: Image?
        let loader: AsyncImageLoader
        init(_ loader: AsyncImageLoader) { self.loader = loader }
        var imageLoader: AsyncImageLoader { loader }
    }

    /// Records of deallocated objects are dropped as the table grows, so
    /// thousands of short-lived cells leave a small table behind.
    func testRecordsOfDeadObjectsAreDropped() {
        let loader = AsyncImageLoader(cache: nil, deliveryQueue: DispatchQueue(label: "unused"))
        for _ in 0..<5000 {
            let cell = Cell(loader)
            cell.imageURL = nil
        }
        XCTAssertLessThan(ImageURLRegistry.shared.count, 200)
    }

    /// Only URLs set since the last nil are claimed, each once, and a claim
    /// supersedes the URLs set before it.
    func testClaims() {
        let registry = ImageURLRegistry()
        let object = NSObject()
        let (a, b, c) = (URL(string: "http://127.0.0.1/a")!, URL(string: "http://127.0.0.1/b")!, URL(string: "http://127.0.0.1/c")!)
        registry.set(a, for: object) { _ in }
        registry.set(b, for: object) { _ in }
        registry.set(c, for: object) { _ in }
        XCTAssertTrue(registry.claim(b, for: object))
        XCTAssertFalse(registry.claim(a, for: object), "superseded by b")
        XCTAssertFalse(registry.claim(b, for: object), "claimed once")
        XCTAssertEqual(registry.url(for: object), c)
        registry.set(nil, for: object) { _ in }
        XCTAssertFalse(registry.claim(c, for: object), "cleared")
        XCTAssertNil(registry.url(for: object))
    }
}
