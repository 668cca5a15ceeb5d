@testable import AsyncImageKit
import CImageCodecs
import Foundation
import ImageFixtures
import TestSupport
import XCTest

final class PixelBufferPoolTests: XCTestCase {
    private let mebibyte = 1 << 20

    /// Fills `count` bytes, so the pages are really resident.
    private func touch(_ pointer: UnsafeMutablePointer<UInt8>, _ count: Int, _ value: UInt8 = 0xAB) {
        pointer.initialize(repeating: value, count: count)
    }

    /// Whether every page of `range` (one byte a page, and the last byte) holds `value`.
    private func pages(_ pointer: UnsafeMutablePointer<UInt8>, _ range: Range<Int>, hold value: UInt8) -> Bool {
        (stride(from: range.lowerBound, to: range.upperBound, by: 4096).map { $0 } + [range.upperBound - 1])
            .allSatisfy { pointer[$0] == value }
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

    func testDefaults() {
        let pool = PixelBufferPool()
        XCTAssertEqual(pool.countLimit, 1)
        XCTAssertEqual(pool.byteLimit, 256 << 20)
        XCTAssertEqual(pool.idleLifetime, 2)
        XCTAssertEqual(PixelBufferPool.shared.countLimit, 1)
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

    /// A pooled buffer too small for the next image is not kept resident
    /// beside the fresh one: its pages are moved under the fresh one's start.
    func testTooSmallBufferMovesUnderTheStartOfTheFreshOne() throws {
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 60)
        let small = try XCTUnwrap(pool.take(3 * mebibyte))
        touch(small, 3 * mebibyte, 0x66)
        pool.recycle(small)
        let big = try XCTUnwrap(pool.take(9 * mebibyte))
        XCTAssertTrue(pages(big, 0..<3 * mebibyte, hold: 0x66), "the small buffer's pages, moved")
        XCTAssertEqual(pool.refill(big, written: 0), .later, "the rest may still be refilled")
        touch(big, 9 * mebibyte)
        let statistics = pool.statistics
        XCTAssertEqual(statistics.mapped, 2)
        XCTAssertEqual(statistics.reused, 0)
        XCTAssertEqual(statistics.refills, 1)
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

    /// A released buffer's pages are moved under the part of a fresh buffer
    /// not yet written (so the decoder writes into pages the kernel need not
    /// zero), never under what was written; a buffer made of moved pieces
    /// moves whole again (mremap before Linux 6.17 refuses a range across
    /// two mappings, so the pool moves one huge page at a time; on newer
    /// kernels that part passes either way).
    func testRefillMovesAWaitingBufferUnderTheUnwrittenPart() throws {
        let pool = PixelBufferPool(countLimit: 4, byteLimit: 1 << 30, idleLifetime: 60)
        let target = try XCTUnwrap(pool.take(8 * mebibyte))
        XCTAssertEqual(pool.refill(target, written: 0), .later, "nothing waits: ask again later")
        touch(target, 3 * mebibyte, 0x11)  // a decoder's first rows
        let source = try XCTUnwrap(pool.take(6 * mebibyte))
        touch(source, 6 * mebibyte, 0x22)
        pool.recycle(source)

        XCTAssertEqual(pool.refill(target, written: 3 * mebibyte), .done, "4 of 6 MiB moved to 4..<8 MiB: full")
        XCTAssertTrue(pages(target, 0..<3 * mebibyte, hold: 0x11), "written rows kept")
        XCTAssertTrue(pages(target, 4 * mebibyte..<8 * mebibyte, hold: 0x22), "moved pages, not fresh ones")
        var statistics = pool.statistics
        XCTAssertEqual(statistics.refills, 1)
        XCTAssertEqual(statistics.pooledCount, 0)
        XCTAssertEqual(statistics.pooledBytes, 0, "the waiting buffer costs nothing of its own any more")
        touch(target, 8 * mebibyte, 0x33)  // the whole buffer is mapped and writable

        // Made of two mappings now; it moves whole into the next fresh buffer.
        let next = try XCTUnwrap(pool.take(8 * mebibyte))
        XCTAssertNotEqual(next, target)
        pool.recycle(target)
        XCTAssertEqual(pool.refill(next, written: 0), .done)
        XCTAssertTrue(pages(next, 0..<8 * mebibyte, hold: 0x33), "every page moved")
        touch(next, 8 * mebibyte)
        pool.recycle(next)

        // A recycled buffer is resident already: nothing to refill.
        let reused = try XCTUnwrap(pool.take(8 * mebibyte))
        XCTAssertEqual(reused, next)
        let waiting = try XCTUnwrap(pool.take(4 * mebibyte))
        pool.recycle(waiting)
        XCTAssertEqual(pool.refill(reused, written: 0), .done)
        statistics = pool.statistics
        XCTAssertEqual(statistics.refills, 2)
        XCTAssertEqual(statistics.pooledCount, 1, "left waiting")
        pool.recycle(reused)
        XCTAssertEqual(pool.refill(reused, written: 0), .done, "not handed out: nothing to do")
        pool.removeAll()
        XCTAssertEqual(pool.statistics.outstanding, 0)
    }

    /// A refill takes the smallest waiting buffer that fills the rest, so a
    /// big one is not spent (and mostly unmapped) on a small remainder.
    func testRefillTakesTheSmallestBufferThatFillsTheRest() throws {
        let pool = PixelBufferPool(countLimit: 4, byteLimit: 1 << 30, idleLifetime: 60)
        let target = try XCTUnwrap(pool.take(4 * mebibyte))
        let small = try XCTUnwrap(pool.take(2 * mebibyte))
        let big = try XCTUnwrap(pool.take(16 * mebibyte))
        touch(small, 2 * mebibyte, 0x21)
        touch(big, 16 * mebibyte, 0x22)
        pool.recycle(small)
        pool.recycle(big)  // the newest
        touch(target, 2 * mebibyte, 0x11)
        XCTAssertEqual(pool.refill(target, written: 2 * mebibyte), .done)
        XCTAssertTrue(pages(target, 0..<2 * mebibyte, hold: 0x11), "written exactly up to a huge page: kept")
        XCTAssertTrue(pages(target, 2 * mebibyte..<4 * mebibyte, hold: 0x21), "the small buffer's pages, from there")
        XCTAssertEqual(pool.statistics.pooledBytes, 16 * mebibyte, "the big one still waits")
        pool.recycle(target)
        pool.removeAll()
    }

    /// A chunk that fails to move (here: its source is not mapped) is
    /// either left as it was or, where the kernel unmapped it under the
    /// destination before failing (some do), mapped afresh; or reported
    /// lost. Never a hole the decoder would write into.
    func testFailedMoveLeavesNoHole() throws {
        let size = 4 * mebibyte
        let destination = try XCTUnwrap(freshMapping())
        defer { munmap(destination, size) }
        touch(destination, mebibyte, 0x44)
        var lost = -1
        let moved = aiv_move_pages(unmappedRange(), 2 * mebibyte, destination + 2 * mebibyte, 2 * mebibyte, &lost)
        XCTAssertEqual(moved, 0)
        XCTAssertTrue(lost == 0 || lost == 2 * mebibyte, "at most the failed chunk")
        XCTAssertTrue(pages(destination, 0..<mebibyte, hold: 0x44))
        if lost == 0 {
            XCTAssertTrue(isMapped(destination + 2 * mebibyte, 2 * mebibyte))
            touch(destination + mebibyte, size - mebibyte, 0x55)
        }
    }

    /// What a failed move maps again, it maps only into a hole: where the
    /// kernel unmapped it, another thread may have been given the range
    /// since, and its memory must stay (MAP_FIXED would replace it).
    func testMappingAHoleNeverMapsOverAMapping() throws {
        let size = 4 * mebibyte
        let memory = try XCTUnwrap(freshMapping())
        defer { munmap(memory, size) }
        touch(memory, size, 0x5A)  // someone else's, say
        XCTAssertEqual(aiv_map_hole(memory + 2 * mebibyte, 2 * mebibyte), -1)
        XCTAssertEqual(aiv_map_hole(memory + mebibyte, 2 * mebibyte), -1, "partly mapped")
        XCTAssertTrue(pages(memory, 0..<size, hold: 0x5A), "not replaced by fresh pages")

        munmap(memory + 2 * mebibyte, 2 * mebibyte)  // a hole
        XCTAssertEqual(aiv_map_hole(memory + 2 * mebibyte, 2 * mebibyte), 0)
        XCTAssertTrue(isMapped(memory + 2 * mebibyte, 2 * mebibyte))
        touch(memory + 2 * mebibyte, 2 * mebibyte, 0x11)
        XCTAssertTrue(pages(memory, 0..<2 * mebibyte, hold: 0x5A))
    }

    /// A move that fails part-way reports what it moved: that part of the
    /// source is gone (its caller must not unmap it again), the rest of the
    /// source is untouched, and so is the destination past the failed chunk.
    func testMoveFailingPartWayReportsWhatItMoved() throws {
        let source = try XCTUnwrap(freshMapping(6 * mebibyte))
        let destination = try XCTUnwrap(freshMapping(6 * mebibyte))
        defer {
            munmap(source, 6 * mebibyte)
            munmap(destination, 6 * mebibyte)
        }
        touch(source, 2 * mebibyte, 0x66)
        munmap(source + 2 * mebibyte, 2 * mebibyte)  // the second chunk cannot move
        touch(source + 4 * mebibyte, 2 * mebibyte, 0x67)
        touch(destination + 4 * mebibyte, 2 * mebibyte, 0x77)
        var lost = -1
        let moved = aiv_move_pages(source, 6 * mebibyte, destination, 2 * mebibyte, &lost)
        XCTAssertEqual(moved, 2 * mebibyte)
        XCTAssertTrue(lost == 0 || lost == 2 * mebibyte, "at most the failed chunk")
        XCTAssertFalse(isMapped(source, 2 * mebibyte), "moved away")
        XCTAssertTrue(pages(destination, 0..<2 * mebibyte, hold: 0x66))
        XCTAssertTrue(pages(source + 4 * mebibyte, 0..<2 * mebibyte, hold: 0x67), "the source's rest untouched")
        XCTAssertTrue(pages(destination + 4 * mebibyte, 0..<2 * mebibyte, hold: 0x77), "not moved over")
    }

    /// When a move fails and a chunk of the destination is lost, the refill
    /// fails (so does the decode, below), the buffer is never reused, and
    /// the pool never unmaps what is no longer its own: neither the part of
    /// the source that moved nor the lost chunk, where other mappings may be
    /// by now (here two sentinels, mapped there the moment the move fails,
    /// as another thread might). What is still its own it does unmap.
    func testLostPagesAreNeverUnmapped() throws {
        let chunk = 2 * mebibyte
        let sentinels = Locked<[UnsafeMutablePointer<UInt8>]>([])
        let destinations = Locked<[UnsafeMutablePointer<UInt8>]>([])
        let pool = PixelBufferPool(countLimit: 2, byteLimit: 1 << 30, idleLifetime: 60) { from, count, to in
            // One chunk moves; the next is lost (a kernel unmapped it, and
            // another mapping took the hole); the rest is left as it was.
            let moved = PixelBufferPool.movePages(from, chunk, to).moved
            munmap(to + moved, chunk)
            for hole in [from, to + moved] {
                if let sentinel = mapSentinel(at: hole) { sentinels.withLock { $0.append(sentinel) } }
            }
            destinations.withLock { $0.append(to) }
            return (moved, chunk)
        }
        defer { sentinels.withLock { $0 }.forEach { munmap($0, chunk) } }

        // A refill: 2 MiB of the source move to 2..<4 MiB; 4..<6 MiB are lost.
        let target = try XCTUnwrap(pool.take(8 * mebibyte))
        touch(target, mebibyte, 0x11)
        let source = try XCTUnwrap(pool.take(6 * mebibyte))
        touch(source, 6 * mebibyte, 0x22)
        pool.recycle(source)
        XCTAssertEqual(pool.refill(target, written: mebibyte), .failed)
        XCTAssertEqual(sentinels.withLock { $0.count }, 2, "both holes were free")
        XCTAssertFalse(isMapped(source + chunk, chunk), "the source's rest is unmapped")
        XCTAssertTrue(pages(target, 0..<mebibyte, hold: 0x11), "written rows kept")
        XCTAssertTrue(pages(target, chunk..<2 * chunk, hold: 0x22), "the chunk that moved")
        touch(target + 6 * mebibyte, chunk, 0x12)  // past the lost chunk: still the target's
        pool.recycle(target)
        XCTAssertEqual(pool.statistics.pooledCount, 0, "a buffer with a lost part is never reused")
        XCTAssertFalse(isMapped(target, 4 * mebibyte), "unmapped up to the lost chunk")
        XCTAssertFalse(isMapped(target + 6 * mebibyte, chunk), "and after it")

        // A too-small waiting buffer moved under a fresh one: 2 of its 4 MiB
        // move, the fresh buffer's 2..<4 MiB are lost.
        let small = try XCTUnwrap(pool.take(3 * mebibyte))
        touch(small, 3 * mebibyte, 0x33)
        pool.recycle(small)
        XCTAssertNil(pool.take(9 * mebibyte), "out of memory")
        XCTAssertEqual(sentinels.withLock { $0.count }, 4, "both holes were free")
        XCTAssertFalse(isMapped(small + chunk, chunk), "the small buffer's rest is unmapped")
        let fresh = try XCTUnwrap(destinations.withLock { $0.last })
        XCTAssertFalse(isMapped(fresh, chunk), "the fresh buffer is unmapped up to the lost chunk")
        XCTAssertFalse(isMapped(fresh + 2 * chunk, chunk), "and after it")

        for sentinel in sentinels.withLock({ $0 }) {
            XCTAssertTrue(isMapped(sentinel, chunk), "another mapping was unmapped")
            if isMapped(sentinel, chunk) { XCTAssertTrue(pages(sentinel, 0..<chunk, hold: 0x5A)) }
        }
        let statistics = pool.statistics
        XCTAssertEqual(statistics.outstanding, 0)
        XCTAssertEqual(statistics.pooledCount, 0)
    }

    /// A JPEG or PNG decode whose refill fails that way ends as a memory
    /// failure, and gives its buffer back (which is then never reused).
    func testDecodeWhoseRefillFailsIsAMemoryFailure() throws {
        for (format, data) in try photoFiles(seed: 6) {
            let (status, result) = decode(format, data, with: losingAllocator)
            XCTAssertEqual(status, -1, format)
            XCTAssertEqual(result.stage, AIV_STAGE_MEMORY, format)
            XCTAssertNil(result.pixels, format)
            let message = withUnsafeBytes(of: result.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            XCTAssertEqual(message, "out of memory while decoding", format)
            let statistics = losingPool.statistics
            XCTAssertEqual(statistics.outstanding, 0, "\(format): the buffer was given back")
            XCTAssertEqual(statistics.pooledCount, 0, "\(format): and not kept")
            losingPool.removeAll()
        }
    }

    /// A 1-megapixel photo as a JPEG and as a PNG, named by format.
    private func photoFiles(seed: UInt64) throws -> [(String, Data)] {
        let photo = SyntheticImage.photo(width: 1024, height: 1024, seed: seed)
        return [("JPEG", try JPEGEncoder(quality: 90).encode(photo)), ("PNG", try PNGEncoder().encode(photo))]
    }

    /// Decodes `data` (a `format` file) through the C codec with `allocator`.
    private func decode(
        _ format: String, _ data: Data, with allocator: aiv_pixel_allocator
    ) -> (status: Int32, result: aiv_decode_result) {
        var result = aiv_decode_result()
        let status = data.withUnsafeBytes { raw in
            withUnsafePointer(to: allocator) { allocator in
                let bytes = raw.baseAddress!.assumingMemoryBound(to: UInt8.self)
                return format == "JPEG"
                    ? aiv_jpeg_decode(bytes, raw.count, 1 << 40, 100, 1, 0, allocator, nil, &result)
                    : aiv_png_decode(bytes, raw.count, 1 << 40, allocator, nil, &result)
            }
        }
        return (status, result)
    }

    /// An address where nothing is mapped (for a source that cannot move).
    private func unmappedRange() -> UnsafeMutablePointer<UInt8> {
        let raw = mmap(nil, 4 * mebibyte, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
        munmap(raw, 4 * mebibyte)
        return raw.assumingMemoryBound(to: UInt8.self)
    }

    /// Whether every page of `count` bytes at `pointer` is mapped.
    private func isMapped(_ pointer: UnsafeMutablePointer<UInt8>, _ count: Int) -> Bool {
        msync(pointer, count, MS_ASYNC) == 0
    }

    /// Fresh anonymous memory (4 MiB unless told).
    private func freshMapping(_ size: Int = 4 << 20) -> UnsafeMutablePointer<UInt8>? {
        guard let raw = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            raw != MAP_FAILED
        else { return nil }
        return raw.assumingMemoryBound(to: UInt8.self)
    }

    /// JPEG and PNG decodes whose buffer is refilled with other pages
    /// part-way (here: full of 0xEE, from a third of the rows on) are exact:
    /// the pages arrive only under rows not yet written.
    func testDecodesRefilledPartWayAreExact() throws {
        for (format, data) in try photoFiles(seed: 5) {
            let expected = [UInt8](try ImageDecoder().decode(data).frames[0].pixels)
            let before = refillPool.statistics.refills
            let (status, result) = decode(format, data, with: refillingAllocator)
            XCTAssertEqual(status, 0, format)
            let pixels = try XCTUnwrap(result.pixels)
            XCTAssertEqual(refillPool.statistics.refills, before + 1, "\(format): refilled once")
            XCTAssertEqual(memcmp(pixels, expected, expected.count), 0, "\(format): the decode is exact")
            refillPool.recycle(pixels)
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

/// The pool of `testDecodesRefilledPartWayAreExact` (C callbacks capture nothing).
private let refillPool = PixelBufferPool(countLimit: 4, byteLimit: 1 << 30, idleLifetime: 60)

/// Takes a fresh buffer, then releases another of the same size full of
/// 0xEE, which the first progress call past a third of the rows moves in.
private let refillingAllocator = aiv_pixel_allocator(
    allocate: { count in takeWithOneWaiting(refillPool, count, filledWith: 0xEE) },
    release: { pointer, _ in if let pointer { refillPool.recycle(pointer) } },
    progress: { pointer, count, written in
        guard let pointer, written >= count / 3 else { return 0 }
        return refillPool.progress(pointer, written: written)
    })

/// A fresh buffer of `count` bytes from an emptied `pool`, and another one
/// released into it (its pages filled with `fill`), waiting for a refill.
private func takeWithOneWaiting(
    _ pool: PixelBufferPool, _ count: Int, filledWith fill: UInt8
) -> UnsafeMutablePointer<UInt8>? {
    pool.removeAll()
    guard let buffer = pool.take(count), let other = pool.take(count) else { return nil }
    other.initialize(repeating: fill, count: count)
    pool.recycle(other)
    return buffer
}

/// Maps 2 MiB full of 0x5A exactly at `address` if nothing is mapped there
/// (MAP_FIXED_NOREPLACE), as another thread's allocation might.
private func mapSentinel(at address: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8>? {
    guard aiv_map_hole(address, 2 << 20) == 0 else { return nil }
    address.initialize(repeating: 0x5A, count: 2 << 20)
    return address
}

/// A pool whose moves all fail at once and lose the destination's first chunk.
private let losingPool = PixelBufferPool(countLimit: 4, byteLimit: 1 << 30, idleLifetime: 60) { _, _, to in
    munmap(to, 2 << 20)
    return (0, 2 << 20)
}

/// Takes a fresh buffer, then releases another one, which the first
/// progress call past a third of the rows tries to move in: and loses.
private let losingAllocator = aiv_pixel_allocator(
    allocate: { count in takeWithOneWaiting(losingPool, count, filledWith: 0xEE) },
    release: { pointer, _ in if let pointer { losingPool.recycle(pointer) } },
    progress: { pointer, count, written in
        guard let pointer, written >= count / 3 else { return 0 }
        return losingPool.progress(pointer, written: written)
    })
