@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

private func key(_ n: Int) -> ImageCacheKey { ImageCacheKey(url: "http://127.0.0.1/\(n).png", processing: "") }

/// Priority classes (originals go before thumbnails) and the weak table that
/// finds images still in use after they left the cache.
final class ImageCacheClassTests: XCTestCase {
    /// 10 x 10 pixels: 400 bytes.
    private func image(_ side: Int = 10) -> Image {
        SyntheticImage.solid(width: side, height: side, color: RGBA(r: 1, g: 2, b: 3))
    }

    func testClassesAreOrderedAndNamed() {
        XCTAssertEqual(ImageCacheClass.allCases, [.original, .normal, .thumbnail])
        XCTAssertLessThan(ImageCacheClass.original, .normal)
        XCTAssertLessThan(ImageCacheClass.normal, .thumbnail)
        XCTAssertEqual(ImageCacheClass.allCases.map(\.description), ["original", "normal", "thumbnail"])
    }

    /// Trimming evicts the lowest class first, the least recently used first
    /// within it; the image being stored goes last.
    func testTrimmingEvictsLowerClassesFirst() {
        let cache = ImageCache(totalCostLimit: 4 * 400)
        cache.setImage(image(), for: key(1), cacheClass: .thumbnail)
        cache.setImage(image(), for: key(2), cacheClass: .original)
        cache.setImage(image(), for: key(3), cacheClass: .thumbnail)
        cache.setImage(image(), for: key(4), cacheClass: .normal)
        XCTAssertEqual(cache.keysByRecency, [key(3), key(1), key(4), key(2)])
        cache.setImage(image(), for: key(5), cacheClass: .normal)  // the original goes
        XCTAssertEqual(cache.keysByRecency, [key(3), key(1), key(5), key(4)])
        XCTAssertNotNil(cache[key(4)])  // a hit reorders within its class only
        XCTAssertEqual(cache.keysByRecency, [key(3), key(1), key(4), key(5)])
        cache.setImage(image(), for: key(6), cacheClass: .thumbnail)  // the oldest normal goes
        XCTAssertEqual(cache.keysByRecency, [key(6), key(3), key(1), key(4)])
        // A new original is kept: the lowest class other than itself goes.
        cache.setImage(image(), for: key(7), cacheClass: .original)
        XCTAssertEqual(cache.keysByRecency, [key(6), key(3), key(1), key(7)])
        cache.setImage(image(), for: key(8), cacheClass: .original)  // now the older original goes
        XCTAssertEqual(cache.keysByRecency, [key(6), key(3), key(1), key(8)])
        XCTAssertNotNil(cache[key(1)])
        XCTAssertEqual(cache.keysByRecency, [key(1), key(6), key(3), key(8)])
        cache.setImage(image(), for: key(9), cacheClass: .normal)  // the original goes
        XCTAssertEqual(cache.keysByRecency, [key(1), key(6), key(3), key(9)])
        cache.setImage(image(), for: key(10), cacheClass: .normal)  // the older normal goes
        XCTAssertEqual(cache.keysByRecency, [key(1), key(6), key(3), key(10)])
        cache.setImage(image(), for: key(11), cacheClass: .thumbnail)
        XCTAssertEqual(cache.keysByRecency, [key(11), key(1), key(6), key(3)])
        // Only thumbnails: the least recently used thumbnail goes.
        cache.setImage(image(), for: key(12), cacheClass: .thumbnail)
        XCTAssertEqual(cache.keysByRecency, [key(12), key(11), key(1), key(6)])
        XCTAssertEqual(cache.totalCost, 4 * 400)
        // Replacing an entry moves it to its new class.
        cache.setImage(image(), for: key(6), cacheClass: .original)
        XCTAssertEqual(cache.keysByRecency, [key(12), key(11), key(1), key(6)])
        cache.removeImages(below: .normal)
        XCTAssertEqual(cache.keysByRecency, [key(12), key(11), key(1)])
        XCTAssertEqual(cache.count, 3)
    }

    /// The cache against a plain model over random operations with classes:
    /// the same entries in the same eviction order and cost after each step.
    func testMatchesAReferenceModelWithClasses() {
        let cache = ImageCache(totalCostLimit: 20 * 64, countLimit: 12)
        // Last to be evicted first: classes from the highest, then most recent first.
        var model: [(key: ImageCacheKey, cost: Int, cacheClass: ImageCacheClass)] = []
        var costLimit = 20 * 64
        var countLimit = 12
        func order() {
            // A stable sort by class (highest first) keeps recency within a class.
            model = ImageCacheClass.allCases.reversed().flatMap { c in model.filter { $0.cacheClass == c } }
        }
        func trimModel(keeping kept: ImageCacheKey? = nil) {
            func over() -> Bool { model.reduce(0, { $0 + $1.cost }) > costLimit || model.count > countLimit }
            while over() {
                if let victim = model.lastIndex(where: { $0.key != kept }) {
                    model.remove(at: victim)
                } else {
                    model.removeAll()
                }
            }
        }
        var random = SplitMix64(seed: 7)
        for step in 0..<20_000 {
            let n = Int(random.next() % 30)
            let cacheClass = ImageCacheClass.allCases[Int(random.next() % 3)]
            switch random.next() % 20 {
            case 0:
                cache[key(n)] = nil
                model.removeAll { $0.key == key(n) }
            case 1:
                costLimit = 64 * Int(5 + random.next() % 20)
                cache.totalCostLimit = costLimit
                trimModel()
            case 2:
                countLimit = Int(1 + random.next() % 16)
                cache.countLimit = countLimit
                trimModel()
            case 3...8:
                let side = Int(1 + random.next() % 6)  // 4 to 144 bytes
                cache.setImage(image(side), for: key(n), cacheClass: cacheClass)
                model.removeAll { $0.key == key(n) }
                if side * side * 4 <= costLimit {
                    model.insert((key(n), side * side * 4, cacheClass), at: 0)
                    order()
                    trimModel(keeping: key(n))
                }
            default:
                let hit = cache[key(n)]
                if let index = model.firstIndex(where: { $0.key == key(n) }) {
                    XCTAssertEqual(hit?.cost, model[index].cost, "step \(step)")
                    model.insert(model.remove(at: index), at: 0)
                    order()
                } else {
                    XCTAssertNil(hit, "step \(step)")
                }
            }
            XCTAssertEqual(cache.keysByRecency, model.map(\.key), "step \(step)")
            XCTAssertEqual(cache.totalCost, model.reduce(0) { $0 + $1.cost }, "step \(step)")
            if cache.keysByRecency != model.map(\.key) { return }
        }
    }

    /// A memory-pressure purge keeps the thumbnails (an album's grid stays);
    /// pressure again with nothing stored since takes them too.
    func testPressurePurgeKeepsThumbnailsUntilPressureComesAgain() {
        let cache = ImageCache()
        for n in 0..<3 { cache.setImage(image(4), for: key(n), cacheClass: .thumbnail) }
        cache.setImage(image(4), for: key(10), cacheClass: .original)
        cache.setImage(image(4), for: key(11), cacheClass: .normal)
        MemoryPressureMonitor.shared.purge()
        XCTAssertEqual(cache.keysByRecency, [key(2), key(1), key(0)])
        cache.setImage(image(4), for: key(12), cacheClass: .original)  // a store: the next purge is a first again
        MemoryPressureMonitor.shared.purge()
        XCTAssertEqual(cache.keysByRecency, [key(2), key(1), key(0)])
        MemoryPressureMonitor.shared.purge()  // nothing stored since: pressure persists
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.totalCost, 0)

        cache.setImage(image(4), for: key(1), cacheClass: .thumbnail)
        cache.setImage(image(4), for: key(2), cacheClass: .original)
        cache.removeImages(below: .normal)
        XCTAssertEqual(cache.keysByRecency, [key(1)])
        cache.removeImages(below: .original)  // nothing is below the lowest class
        XCTAssertEqual(cache.keysByRecency, [key(1)])
    }

    /// An image still held elsewhere is found again after `removeAll()`, a
    /// pressure purge or an eviction; one nobody holds is gone.
    func testImagesInUseAreFoundAgainAfterAPurge() {
        let cache = ImageCache()
        let held = image(8)
        cache[key(1)] = held
        cache[key(2)] = image(8)
        cache.removeAll()
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.departedCounts.live, 1)
        let found = cache[key(1)]
        XCTAssertTrue(found?.storageObject === held.storageObject, "the same image, not a copy")
        XCTAssertEqual(cache.count, 1, "put back")
        XCTAssertEqual(cache.totalCost, held.cost)
        XCTAssertNil(cache[key(2)], "nobody held it")

        cache.setImage(held, for: key(1), cacheClass: .original)
        MemoryPressureMonitor.shared.purge()
        XCTAssertEqual(cache.count, 0)
        XCTAssertTrue(cache[key(1)]?.storageObject === held.storageObject)
        XCTAssertEqual(cache.keysByRecency, [key(1)])
        cache.removeImages(below: .normal)
        XCTAssertEqual(cache.count, 0, "it came back in its class (original)")

        // Evicted by the limits: found again while held, and put back within them.
        let small = ImageCache(totalCostLimit: 2 * held.cost)
        small[key(1)] = held
        small[key(2)] = image(8)
        small[key(3)] = image(8)  // evicts 1
        XCTAssertEqual(small.keysByRecency, [key(3), key(2)])
        XCTAssertTrue(small[key(1)]?.storageObject === held.storageObject)
        XCTAssertEqual(small.keysByRecency, [key(1), key(3)])
        XCTAssertNil(small[key(2)], "evicted to make room, and nobody held it")
        XCTAssertLessThanOrEqual(small.totalCost, 2 * held.cost)
    }

    /// `removeImage(for:)` and storing another image forget a held image for good.
    func testRemovingOrReplacingForgetsAHeldImage() {
        let cache = ImageCache()
        let held = image(8)
        cache[key(1)] = held
        cache.removeImage(for: key(1))
        XCTAssertNil(cache[key(1)])

        cache[key(1)] = held
        cache.removeAll()
        let replacement = image(6)
        cache[key(1)] = replacement
        XCTAssertTrue(cache[key(1)]?.storageObject === replacement.storageObject)
        cache.removeAll()
        cache[key(1)] = nil
        XCTAssertNil(cache[key(1)])
        withExtendedLifetime(replacement) {}

        // Too big for the limit now: handed out, but not put back.
        let tight = ImageCache(totalCostLimit: held.cost)
        tight[key(1)] = held
        tight.removeAll()
        tight.totalCostLimit = held.cost - 1
        XCTAssertTrue(tight[key(1)]?.storageObject === held.storageObject)
        XCTAssertEqual(tight.count, 0)
    }

    /// Entries of images nobody holds any longer do not pile up.
    func testDeadEntriesArePruned() {
        let cache = ImageCache(countLimit: 4)
        for n in 0..<10_000 { cache[key(n)] = image(2) }
        XCTAssertEqual(cache.count, 4)
        XCTAssertEqual(cache.departedCounts.live, 0)
        XCTAssertLessThanOrEqual(cache.departedCounts.total, 2 * 64)
        for round in 0..<20 {
            for n in 0..<200 { cache[key(round * 1000 + n)] = image(2) }
            cache.removeAll()
        }
        XCTAssertLessThanOrEqual(cache.departedCounts.total, 2 * 64 + 4, "bounded by twice the most alive at once")
        // Held ones survive every prune.
        let held = (0..<100).map { _ in image(2) }
        for (n, image) in held.enumerated() { cache[key(50_000 + n)] = image }
        for n in 0..<5_000 { cache[key(n)] = image(2) }
        XCTAssertEqual(cache.departedCounts.live, 100)
        for (n, image) in held.enumerated() {
            XCTAssertTrue(cache[key(50_000 + n)]?.storageObject === image.storageObject)
        }
    }

    func testConcurrentUseWithClassesAndPurges() {
        let cache = ImageCache(totalCostLimit: 40 * 64)
        let images = (0..<100).map { _ in SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3)) }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var random = SplitMix64(seed: UInt64(worker) + 100)
            for _ in 0..<4000 {
                let n = Int(random.next() % 100)
                switch random.next() % 20 {
                case 0: cache[key(n)] = nil
                case 1: cache.removeImages(below: .thumbnail)
                case 2: cache.removeAll()
                case 3...9: cache.setImage(images[n], for: key(n), cacheClass: ImageCacheClass.allCases[n % 3])
                default: _ = cache[key(n)]
                }
            }
        }
        XCTAssertLessThanOrEqual(cache.totalCost, 40 * 64)
        XCTAssertEqual(cache.totalCost, cache.count * 64)
        XCTAssertEqual(cache.keysByRecency.count, cache.count)
    }
}
