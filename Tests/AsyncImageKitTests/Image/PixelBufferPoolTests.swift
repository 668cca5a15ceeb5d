@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

final class PixelBufferPoolTests: XCTestCase {
    private let mebibyte = 1 << 20

    /// Fills `count` bytes, so the pages are really resident.
    private func touch(_ pointer: UnsafeMutablePointer<UInt8>, _ count: Int, _ value: UInt8 = 0xAB) {
        pointer.initialize(repeating: value, count: count)
    }

    /// Waits (at most 10 s) for the pool's own timer to empty it.
    private func waitUntilEmpty(_ pool: PixelBufferPool) {
        let emptied = expectation(description: "pool trimmed")
        DispatchQueue.global().async {
            let deadline = Date().addingTimeInterval(10)
            while pool.statistics.pooledCount > 0, Date() < deadline { usleep(5_000) }
            emptied.fulfill()
        }
        wait(for: [emptied], timeout: 15)
    }

    func testReleasedBufferServesTheNextImageOfAnySmallerSize() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 60)
        let first = try XCTUnwrap(pool.take(5 * mebibyte))
        touch(first, 5 * mebibyte)
        pool.recycle(first)
        XCTAssertEqual(pool.statistics.pooledCount, 1)
        XCTAssertEqual(pool.statistics.pooledBytes, 6 * mebibyte, "resident bytes, whole huge pages")

        let second = try XCTUnwrap(pool.take(3 * mebibyte))
        XCTAssertEqual(second, first, "the pooled buffer is handed out again")
        pool.recycle(second)
        XCTAssertEqual(pool.statistics.pooledBytes, 4 * mebibyte, "the excess past 4 MiB went back to the kernel")
        // Size class 8 MiB: it also serves a bigger image than the first one.
        let third = try XCTUnwrap(pool.take(7 * mebibyte))
        XCTAssertEqual(third, first)
        touch(third, 7 * mebibyte)
        pool.recycle(third)

        let statistics = pool.statistics
        XCTAssertEqual(statistics.mapped, 1)
        XCTAssertEqual(statistics.reused, 2)
        XCTAssertEqual(statistics.outstanding, 0)
        XCTAssertEqual(statistics.pooledBytes, 8 * mebibyte)
        pool.removeAll()
        XCTAssertEqual(pool.statistics.pooledCount, 0)
        XCTAssertEqual(pool.statistics.unmapped, 1)
    }

    /// A pooled buffer too small for the next image is unmapped rather than
    /// kept resident beside the fresh one.
    func testTooSmallBufferIsUnmappedNotKept() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 60)
        let small = try XCTUnwrap(pool.take(3 * mebibyte))
        pool.recycle(small)
        let big = try XCTUnwrap(pool.take(9 * mebibyte))
        touch(big, 9 * mebibyte)
        let statistics = pool.statistics
        XCTAssertEqual(statistics.mapped, 2)
        XCTAssertEqual(statistics.reused, 0)
        XCTAssertEqual(statistics.unmapped, 1)
        XCTAssertEqual(statistics.pooledCount, 0)
        pool.recycle(big)
        pool.removeAll()
    }

    func testCountAndByteLimits() throws {
        let pool = PixelBufferPool(countLimit: 1, byteLimit: 8 * mebibyte, idleLifetime: 60)
        let a = try XCTUnwrap(pool.take(3 * mebibyte))
        let b = try XCTUnwrap(pool.take(3 * mebibyte))
        pool.recycle(a)
        pool.recycle(b)  // over the count limit: the oldest (a) goes
        XCTAssertEqual(pool.statistics.pooledCount, 1)
        XCTAssertEqual(pool.statistics.unmapped, 1)
        let again = try XCTUnwrap(pool.take(3 * mebibyte))
        XCTAssertEqual(again, b)

        let huge = try XCTUnwrap(pool.take(10 * mebibyte))
        pool.recycle(huge)  // 10 MiB resident is over the 8 MiB byte limit
        XCTAssertEqual(pool.statistics.pooledCount, 0)
        XCTAssertEqual(pool.statistics.unmapped, 2)

        pool.countLimit = 0  // recycling off
        pool.recycle(again)
        XCTAssertEqual(pool.statistics.pooledCount, 0)
        XCTAssertEqual(pool.statistics.unmapped, 3)
        XCTAssertEqual(pool.statistics.outstanding, 0)
    }

    func testLoweringALimitEvictsAtOnce() throws {
        let pool = PixelBufferPool(countLimit: 4, byteLimit: 1 << 30, idleLifetime: 60)
        let buffers = (0..<3).compactMap { _ in pool.take(3 * mebibyte) }
        XCTAssertEqual(buffers.count, 3)
        buffers.forEach(pool.recycle)
        XCTAssertEqual(pool.statistics.pooledCount, 3)
        pool.byteLimit = 4 * mebibyte
        XCTAssertEqual(pool.statistics.pooledCount, 1)
        pool.removeAll()
    }

    func testIdleBuffersGoBackToTheKernel() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 60)
        let buffer = try XCTUnwrap(pool.take(3 * mebibyte))
        pool.recycle(buffer)
        let now = DispatchTime.now().uptimeNanoseconds
        XCTAssertEqual(pool.trim(now: now), 0, "not idle long enough")
        XCTAssertEqual(pool.trim(now: now + 61 * 1_000_000_000), 1)
        XCTAssertEqual(pool.statistics.pooledCount, 0)
    }

    /// The pool's own timer trims without anyone calling it.
    func testTrimTimerEmptiesAnIdlePool() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 0.05)
        let buffer = try XCTUnwrap(pool.take(3 * mebibyte))
        pool.recycle(buffer)
        waitUntilEmpty(pool)
        XCTAssertEqual(pool.statistics.pooledCount, 0)
        XCTAssertEqual(pool.statistics.unmapped, 1)
    }

    /// Lowering the lifetime restarts the trim timer: a buffer does not wait out the old one.
    func testLoweringTheLifetimeTrimsSooner() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 3600)
        pool.recycle(try XCTUnwrap(pool.take(3 * mebibyte)))
        pool.idleLifetime = 0.05
        waitUntilEmpty(pool)
        XCTAssertEqual(pool.statistics.pooledCount, 0)
    }

    /// An infinite lifetime is "about never", not a crash in the timer.
    func testInfiniteLifetimeIsClamped() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: .infinity)
        XCTAssertEqual(pool.idleLifetime, 1e9)
        pool.recycle(try XCTUnwrap(pool.take(3 * mebibyte)))
        XCTAssertEqual(pool.trim(now: DispatchTime.now().uptimeNanoseconds + 1_000_000_000), 0)
        pool.idleLifetime = .nan
        XCTAssertEqual(pool.idleLifetime, 0)
        XCTAssertEqual(pool.trim(), 1)
    }

    /// A large pixel buffer shortened in place by its owner still goes back
    /// to the pool (not to `free`, which would abort on mapped memory).
    func testShortenedPixelDataGoesBackByItsAllocatedSize() throws {
        let pool = PixelBufferPool.shared
        let before = pool.statistics.outstanding
        var data = try PixelMemory.make(3 * mebibyte) { $0.initialize(repeating: 1, count: 3 * mebibyte) }
        XCTAssertEqual(pool.statistics.outstanding, before + 1)
        data.removeLast(2 * mebibyte)  // unique owner: shortened in place
        XCTAssertEqual(data.count, mebibyte)
        data = Data()
        XCTAssertEqual(pool.statistics.outstanding, before)
    }

    func testSizeClasses() {
        XCTAssertEqual(PixelBufferPool.roundUpToHugePage(1), 2 * mebibyte)
        XCTAssertEqual(PixelBufferPool.roundUpToHugePage(2 * mebibyte + 1), 4 * mebibyte)
        XCTAssertEqual(PixelBufferPool.roundUpToHugePage(Int.max), -1)
        XCTAssertEqual(PixelBufferPool.sizeClass(6 * mebibyte), 8 * mebibyte)
        XCTAssertEqual(PixelBufferPool.sizeClass(8 * mebibyte), 8 * mebibyte)
        XCTAssertEqual(PixelBufferPool.sizeClass(2 << 30), 2 << 30, "past 1 GiB: as it is")
    }

    // MARK: Through the decoders (the shared pool)

    private var savedLifetime: Double = 2

    override func setUp() {
        super.setUp()
        // The shared pool's timer must not trim between a test's steps.
        savedLifetime = PixelBufferPool.shared.idleLifetime
        PixelBufferPool.shared.idleLifetime = 600
    }

    override func tearDown() {
        PixelBufferPool.shared.idleLifetime = savedLifetime
        super.tearDown()
    }

    /// A decode into a recycled buffer is exact: nothing of the previous
    /// image shows through, for JPEG and PNG alike.
    func testDecodesIntoRecycledBuffersAreExact() throws {
        let pool = PixelBufferPool.shared
        for (format, encode) in [
            ("JPEG", { (image: Image) in try JPEGEncoder(quality: 90).encode(image) }),
            ("PNG", { (image: Image) in try PNGEncoder().encode(image) }),
        ] as [(String, (Image) throws -> Data)] {
            // 1024x768 RGBA is 3 MiB: a pooled size.
            let a = try encode(SyntheticImage.photo(width: 1024, height: 768, seed: 1))
            let b = try encode(SyntheticImage.quadrants(width: 1000, height: 700))
            pool.removeAll()
            var fresh: Image? = try ImageDecoder().decode(b)
            let expected = [UInt8](try XCTUnwrap(fresh).frames[0].pixels)
            fresh = nil
            let reusedBefore = pool.statistics.reused
            var other: Image? = try ImageDecoder().decode(a)  // into b's old buffer
            XCTAssertNotNil(other)
            other = nil
            let again = try ImageDecoder().decode(b)  // into a's buffer, then b's
            XCTAssertGreaterThanOrEqual(pool.statistics.reused - reusedBefore, 2, format)
            XCTAssertEqual([UInt8](again.frames[0].pixels), expected, "\(format): the reused buffer is fully overwritten")
        }
    }

    /// A decode that fails after taking its buffer gives it back.
    func testFailedDecodeGivesItsBufferBack() throws {
        let pool = PixelBufferPool.shared
        let jpeg = try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 1024, height: 768, seed: 3))
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 1024, height: 768, seed: 3))
        for truncated in [jpeg.prefix(jpeg.count * 2 / 3), png.prefix(png.count * 2 / 3)] {
            let before = pool.statistics
            _ = assertDecodingFails { try ImageDecoder().decode(Data(truncated)) }
            let after = pool.statistics
            XCTAssertEqual(after.outstanding, before.outstanding, "no buffer left behind")
            XCTAssertGreaterThan(after.mapped + after.reused, before.mapped + before.reused, "a buffer was taken")
        }
    }

    func testMemoryPressurePurgeEmptiesThePool() throws {
        let jpeg = try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 1024, height: 768, seed: 4))
        var image: Image? = try ImageDecoder().decode(jpeg)
        XCTAssertEqual(image?.width, 1024)
        image = nil
        XCTAssertGreaterThan(PixelBufferPool.shared.statistics.pooledCount, 0)
        MemoryPressureMonitor.shared.purge()
        XCTAssertEqual(PixelBufferPool.shared.statistics.pooledCount, 0)
    }
}
