@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

private func key(_ n: Int) -> ImageCacheKey { ImageCacheKey(url: "http://127.0.0.1/\(n).png", processing: "") }

final class ImageCacheTests: XCTestCase {
    private func image(_ side: Int) -> Image {
        SyntheticImage.solid(width: side, height: side, color: RGBA(r: 1, g: 2, b: 3))
    }


    func testCostIsPixelBytesAndLRUIsStrict() {
        let cache = ImageCache(totalCostLimit: 3 * 400)
        for n in 0..<3 { cache[key(n)] = image(10) }  // 400 bytes each
        XCTAssertEqual(cache.totalCost, 1200)
        XCTAssertNotNil(cache[key(0)])  // 0 is now the most recently used
        cache[key(3)] = image(10)  // evicts the least recently used: 1
        XCTAssertEqual(cache.keysByRecency, [key(3), key(0), key(2)])
        XCTAssertNil(cache[key(1)])
        cache[key(4)] = image(10)
        XCTAssertEqual(cache.keysByRecency, [key(4), key(3), key(0)])
    }

    func testCountLimitAndLoweringLimitsEvicts() {
        let cache = ImageCache(totalCostLimit: 1 << 30, countLimit: 2)
        for n in 0..<4 { cache[key(n)] = image(2) }
        XCTAssertEqual(cache.keysByRecency, [key(3), key(2)])
        cache.countLimit = 1
        XCTAssertEqual(cache.keysByRecency, [key(3)])
        cache.countLimit = 10
        for n in 0..<4 { cache[key(n)] = image(10) }
        cache.totalCostLimit = 800
        XCTAssertEqual(cache.keysByRecency, [key(3), key(2)])
        XCTAssertEqual(cache.totalCost, 800)
    }

    func testImageLargerThanTheLimitIsNotStoredAndReplacingUpdatesCost() {
        let cache = ImageCache(totalCostLimit: 1000)
        cache[key(1)] = image(100)
        XCTAssertEqual(cache.count, 0)
        cache[key(1)] = image(10)
        cache[key(1)] = image(5)
        XCTAssertEqual(cache.totalCost, 100)
        cache[key(1)] = nil
        XCTAssertEqual(cache.totalCost, 0)
    }

    func testKeysSeparateDisplaySizes() {
        let url = URL(string: "http://127.0.0.1/a.png")!
        let full = ImageCacheKey(url: url)
        let fill = ImageCacheKey(url: url, options: DecodingOptions(targetSize: PixelSize(width: 256, height: 256)))
        let fit = ImageCacheKey(url: url, options: DecodingOptions(targetSize: PixelSize(width: 256, height: 256), contentMode: .aspectFit))
        XCTAssertEqual(Set([full, fill, fit]).count, 3)
        XCTAssertEqual(full, ImageCacheKey(url: url, options: DecodingOptions(maxPixels: 5)), "the pixel limit does not change the key")
    }

    func testRemoveAllAndMemoryPressurePurge() {
        let cache = ImageCache()
        let other = ImageCache()
        cache[key(1)] = image(4)
        other[key(2)] = image(4)
        cache.removeAll()
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(cache.totalCost, 0)
        cache[key(1)] = image(4)
        let before = MemoryPressureMonitor.shared.purgeCount
        MemoryPressureMonitor.shared.purge()
        XCTAssertEqual(MemoryPressureMonitor.shared.purgeCount, before + 1)
        XCTAssertEqual(cache.count, 0)
        XCTAssertEqual(other.count, 0, "every cache is purged")
    }

    func testMonitorWatchesWhatTheKernelOffers() {
        let sources = MemoryPressureMonitor.shared.watchedSources
        let environment = ProcessInfo.processInfo.environment
        if environment["MEMORY_PRESSURE_WATCH"] == nil, FileManager.default.isWritableFile(atPath: "/proc/pressure/memory") {
            XCTAssertTrue(sources.contains("psi"), "PSI is available but not watched: \(sources)")
        }
        XCTAssertTrue(Set(sources).isSubset(of: ["systemd", "psi", "cgroup2"]))
        XCTAssertLessThanOrEqual(sources.filter { $0 != "cgroup2" }.count, 1, "one PSI source at most")
        XCTAssertEqual(MemoryPressureMonitor.shared.sources.count, sources.count)
    }

    func testConcurrentUse() {
        let cache = ImageCache(totalCostLimit: 50 * 64)
        let images = (0..<100).map { _ in SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3)) }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            var random = SplitMix64(seed: UInt64(worker))
            for _ in 0..<5000 {
                let n = Int(random.next() % 100)
                switch random.next() % 10 {
                case 0: cache[key(n)] = nil
                case 1...4: cache[key(n)] = images[n]
                default: _ = cache[key(n)]
                }
            }
        }
        XCTAssertLessThanOrEqual(cache.totalCost, 50 * 64)
        XCTAssertEqual(cache.totalCost, cache.count * 64)
        XCTAssertEqual(cache.keysByRecency.count, cache.count)
    }

    /// The cache against a plain reference LRU over random operations: the
    /// same images, the same recency order and the same cost after each step.
    func testMatchesAReferenceLRU() {
        let cache = ImageCache(totalCostLimit: 20 * 64, countLimit: 16)
        var model: [(key: ImageCacheKey, cost: Int)] = []  // most recent first
        var costLimit = 20 * 64
        var countLimit = 16
        func trimModel() {
            while model.reduce(0, { $0 + $1.cost }) > costLimit || model.count > countLimit { model.removeLast() }
        }
        var random = SplitMix64(seed: 42)
        for step in 0..<20_000 {
            let n = Int(random.next() % 40)
            switch random.next() % 20 {
            case 0:
                cache[key(n)] = nil
                model.removeAll { $0.key == key(n) }
            case 1:
                costLimit = 64 * Int(5 + random.next() % 20)
                cache.totalCostLimit = costLimit
                trimModel()
            case 2:
                countLimit = Int(1 + random.next() % 20)
                cache.countLimit = countLimit
                trimModel()
            case 3...8:
                let side = Int(1 + random.next() % 6)  // 4 to 144 bytes
                cache[key(n)] = image(side)
                model.removeAll { $0.key == key(n) }
                if side * side * 4 <= costLimit {
                    model.insert((key(n), side * side * 4), at: 0)
                    trimModel()
                }
            default:
                let hit = cache[key(n)]
                if let index = model.firstIndex(where: { $0.key == key(n) }) {
                    XCTAssertEqual(hit?.cost, model[index].cost, "step \(step)")
                    model.insert(model.remove(at: index), at: 0)
                } else {
                    XCTAssertNil(hit, "step \(step)")
                }
            }
            XCTAssertEqual(cache.keysByRecency, model.map(\.key), "step \(step)")
            XCTAssertEqual(cache.totalCost, model.reduce(0) { $0 + $1.cost }, "step \(step)")
            if cache.keysByRecency != model.map(\.key) { return }
        }
    }
}
