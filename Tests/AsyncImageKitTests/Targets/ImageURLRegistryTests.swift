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

    /// Every set advances the generation, a nil set also the clear count;
    /// the record holds the latest URL.
    func testRecords() {
        let registry = ImageURLRegistry()
        let object = NSObject()
        let (a, b) = (URL(string: "http://127.0.0.1/a")!, URL(string: "http://127.0.0.1/b")!)
        XCTAssertNil(registry.record(for: object))
        registry.set(a, for: object) { XCTAssertEqual([$0.latest, $0.generation, $0.clears.token] as [AnyHashable?], [a, 1, 0]) }
        registry.set(b, for: object) { XCTAssertEqual([$0.latest, $0.generation, $0.clears.token] as [AnyHashable?], [b, 2, 0]) }
        XCTAssertEqual(registry.url(for: object), b)
        registry.set(nil, for: object) {
            XCTAssertEqual([$0.latest, $0.generation, $0.clears.token] as [AnyHashable?], [nil, 3, 1])
        }
        XCTAssertNil(registry.url(for: object))
        XCTAssertEqual(registry.record(for: object)?.clears.token, 1)
    }
}
