import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// What the LeakSanitizer run checks (`.ci/asan` runs this class with
/// `ASAN_OPTIONS=detect_leaks=1`: any allocation unreachable when the process
/// exits, a retain cycle among them, fails the run): every corpus file
/// decoded, and load-and-cancel cycles through a loader against a loopback
/// server, after which the loader is gone. Run plainly, they check the
/// outcomes and the loader's release.
final class LeakCheckTests: XCTestCase {
    /// Every corpus file, at full size and downsampled, and its properties:
    /// each ends as the manifest says.
    func testDecodeEveryCorpusFile() throws {
        let corpus = try Corpus.load()
        var decoded = 0
        for entry in corpus.entries {
            let data = try corpus.data(entry)
            for options in [DecodingOptions(), DecodingOptions(targetSize: PixelSize(width: 32, height: 32))] {
                do {
                    let image = try ImageDecoder().decode(data, options: options)
                    XCTAssertTrue(entry.expectsSuccess || options.targetSize != nil, "\(entry.path) decoded")
                    XCTAssertGreaterThan(image.pixels.count, 0, entry.path)
                    decoded += 1
                } catch {
                    XCTAssertFalse(entry.expectsSuccess, "\(entry.path): \(error)")
                    XCTAssertFalse(error.description.isEmpty, entry.path)
                }
            }
            _ = ImageFileProperties(data: data)
        }
        XCTAssertGreaterThan(decoded, corpus.entries.count / 2)
    }

    /// Images large enough for the pixel buffer pool (buffers of 2 MiB and
    /// more are mapped and kept for reuse, then trimmed by a timer): the
    /// process ends with buffers pooled and a trim pending, the case
    /// LeakSanitizer once reported 32 bytes for (`PixelBufferPool.scheduleTrim`).
    func testDecodesThroughThePixelBufferPool() throws {
        let jpeg = try JPEGEncoder(quality: 80).encode(SyntheticImage.photo(width: 1024, height: 768))
        let before = PixelBufferPool.shared.statistics
        for _ in 0..<3 {
            let image = try ImageDecoder().decode(jpeg)
            XCTAssertEqual(image.size, PixelSize(width: 1024, height: 768))
        }
        let after = PixelBufferPool.shared.statistics
        XCTAssertGreaterThan(after.mapped + after.reused, before.mapped + before.reused, "the pool served no buffer")
    }

    /// Three cycles of 24 held loads through one loader (4 transfer slots,
    /// so some are queued): a third cancelled by URL, a third by target,
    /// the rest delivered once their responses are released; each
    /// surviving request ends once. Then the loader, its server and its
    /// cache are let go, and the loader must be deallocated.
    func testLoadAndCancelCycles() throws {
        weak var released: AsyncImageLoader?
        do {
            let h = try LoaderHarness(concurrentLoads: 4)
            released = h.loader
            var expected = 0
            for cycle in 0..<3 {
                let urls = (0..<24).map { h.server.url(cycle * 100 + $0) }
                urls.forEach(h.server.hold)
                let targets = urls.map { Target($0.lastPathComponent) }
                for (url, target) in zip(urls, targets) { h.load(url, target: target) }
                wait(for: urls.prefix(4).map { h.server.arrival(of: $0, self) }, timeout: 30)
                for (index, url) in urls.enumerated() {
                    switch index % 3 {
                    case 0: h.loader.cancelLoading(url: url)
                    case 1: h.loader.cancelLoadingImages(target: targets[index])
                    default: break
                    }
                }
                XCTAssertEqual(h.loader.activity.pendingRequests, 8, "cycle \(cycle)")
                expected += 8
                urls.forEach(h.server.release)
                wait(for: [h.log.outcomes(expected, self)], timeout: 30)
                h.drainDeliveries()
                XCTAssertEqual(h.loader.activity.pendingRequests, 0, "cycle \(cycle)")
            }
            h.cache.removeAll()
            h.server.stop()
        }
        let gone = expectation(for: NSPredicate { _, _ in released == nil }, evaluatedWith: nil)
        wait(for: [gone], timeout: 30)
    }
}
