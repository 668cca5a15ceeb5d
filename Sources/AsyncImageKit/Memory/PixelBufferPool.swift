import CImageCodecs
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Recycles the large pixel buffers of released images for the next decodes.
///
/// The kernel hands a process only zeroed pages: a fresh 20 MB buffer costs
/// about 5,000 page clears before the decoder writes a byte, a tenth of a
/// full-size JPEG decode on this platform. So buffers of 2 MiB and more are
/// mapped directly (2 MiB-aligned, `MADV_HUGEPAGE`), and when the image that
/// owns one is released (delivered and dropped, or evicted from an
/// ``ImageCache``) the buffer waits here for the next decode instead of going
/// back to the kernel.
///
/// A released buffer need not wait for the next decode to start: a decode
/// that is writing a fresh buffer front to back (JPEG, non-interlaced PNG)
/// gets the waiting buffer's pages moved (`mremap`, no copy) under the rows
/// it has not written yet, within a few rows (``Statistics/refills``). So
/// while decodes run, a released buffer costs no memory of its own for
/// longer than that.
///
/// What it may keep is bounded three ways: at most ``countLimit`` buffers and
/// ``byteLimit`` resident bytes, each for at most ``idleLifetime`` seconds
/// unused. Those waiting buffers are the pool's whole cost in memory: a reused
/// buffer bigger than the new image gives the pages it no longer needs back
/// to the kernel (`MADV_DONTNEED`), so a buffer in use is never more resident
/// than its image. A memory-pressure purge (``MemoryPressureMonitor``)
/// empties the pool along with the caches.
///
/// Buffers are mapped in size classes (powers of two from 2 MiB), so one
/// buffer can serve images of many sizes; the unused tail of a class is
/// address space only, never resident memory.
public final class PixelBufferPool: Sendable {
    /// The pool every decode, resize and orientation transform allocates from.
    public static let shared = PixelBufferPool()

    /// Buffers this big or bigger are pooled: one huge page.
    static let hugePageSize = 2 << 20

    /// What the pool has done so far.
    public struct Statistics: Sendable, Hashable {
        /// Buffers mapped fresh from the kernel.
        public var mapped = 0
        /// Buffers handed out again from the pool.
        public var reused = 0
        /// Waiting buffers whose pages were moved under a fresh buffer being
        /// decoded into (see ``PixelBufferPool``).
        public var refills = 0
        /// Buffers given back to the kernel (over a limit, idle, purged, or too small to reuse).
        public var unmapped = 0
        /// Buffers waiting in the pool now.
        public var pooledCount = 0
        /// Resident bytes of the buffers waiting in the pool now (at most: counted in whole huge pages).
        public var pooledBytes = 0
        /// Buffers handed out and not yet released.
        public var outstanding = 0
    }

    private struct Buffer {
        let address: UnsafeMutablePointer<UInt8>
        /// Bytes mapped (a size class).
        let capacity: Int
        /// Bytes that may be resident (written since mapped, and not discarded).
        var resident: Int
        /// From here on (in use) the buffer has neither been written nor
        /// refilled: pages there may still be moved in from a waiting buffer.
        var untouched = 0
        /// A part that could not be mapped again after a failed move: no longer
        /// this buffer's (another mapping may be there by now), so the buffer
        /// is never reused, and it is unmapped around that part.
        var lost: Range<Int>?
        /// When it entered the pool (`DispatchTime` nanoseconds).
        var since: UInt64 = 0
    }

    private struct State {
        var countLimit: Int
        var byteLimit: Int
        var idleLifetime: Double
        /// Waiting for reuse, oldest first.
        var pooled: [Buffer] = []
        var pooledBytes = 0
        /// Handed out, by address.
        var outstanding: [UInt: Buffer] = [:]
        var statistics = Statistics()
        var trimScheduled = false
        /// Bumped when ``idleLifetime`` is lowered: a timer chain of an older generation stops.
        var trimGeneration = 0
    }

    private let state: Locked<State>
    private let movePages: PageMover
    private let trimQueue = DispatchQueue(label: "AsyncImageKit.pixel-pool-trim", qos: .utility)

    /// Creates a pool (the library uses ``shared``; other pools are for tests).
    ///
    /// - Parameters:
    ///   - countLimit: the most buffers kept; default 1.
    ///   - byteLimit: the most resident bytes kept; default 256 MiB.
    ///   - idleLifetime: seconds a buffer may wait unused before it is unmapped; default 2.
    ///   - movePages: how pages are moved (tests put failures in here).
    init(
        countLimit: Int = 1, byteLimit: Int = 256 << 20,
        idleLifetime: Double = 2, movePages: @escaping PageMover = PixelBufferPool.movePages
    ) {
        self.movePages = movePages
        state = Locked(
            State(
                countLimit: max(0, countLimit), byteLimit: max(0, byteLimit),
                idleLifetime: Self.clampedLifetime(idleLifetime)))
    }

    deinit {
        state.withLock { $0.pooled }.forEach(Self.unmap)
    }

    /// A lifetime the timer can count in nanoseconds: 0 up to about 30 years.
    private static func clampedLifetime(_ seconds: Double) -> Double {
        guard !seconds.isNaN else { return 0 }
        return min(max(0, seconds), 1e9)
    }

    /// The most buffers kept for reuse (default 1). While decodes run, a
    /// released buffer is moved into one of them within a few rows, so one
    /// waiting buffer is enough; a second one measured the same speed and a
    /// higher peak (BENCHMARKS.md). 0 turns recycling off.
    public var countLimit: Int {
        get { state.withLock { $0.countLimit } }
        set { enforceLimits { $0.countLimit = max(0, newValue) } }
    }

    /// The most resident bytes kept for reuse (default 256 MiB). A buffer that
    /// would go over it is unmapped when released.
    public var byteLimit: Int {
        get { state.withLock { $0.byteLimit } }
        set { enforceLimits { $0.byteLimit = max(0, newValue) } }
    }

    /// Seconds a buffer may wait unused before it goes back to the kernel
    /// (default 2; clamped to 0 up to 1e9, so `.infinity` means "about never").
    public var idleLifetime: Double {
        get { state.withLock { $0.idleLifetime } }
        set {
            let lifetime = Self.clampedLifetime(newValue)
            // A lower lifetime restarts the timer, so no buffer waits for the old one.
            let restart = state.withLock { state -> Int? in
                defer { state.idleLifetime = lifetime }
                guard lifetime < state.idleLifetime, !state.pooled.isEmpty else { return nil }
                state.trimGeneration += 1
                state.trimScheduled = true
                return state.trimGeneration
            }
            if let restart { scheduleTrim(after: lifetime, generation: restart) }
        }
    }

    /// A snapshot of what the pool has done and holds.
    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.pooledCount = state.pooled.count
            statistics.pooledBytes = state.pooledBytes
            statistics.outstanding = state.outstanding.count
            return statistics
        }
    }

    /// Gives every waiting buffer back to the kernel now (memory pressure does this too).
    public func removeAll() {
        let dropped = state.withLock { state -> [Buffer] in
            defer {
                state.pooled = []
                state.pooledBytes = 0
            }
            state.statistics.unmapped += state.pooled.count
            return state.pooled
        }
        dropped.forEach(Self.unmap)
    }

    // MARK: Taking and giving back

    /// A buffer of at least `count` bytes (contents undefined), or `nil` when
    /// memory cannot be had. Give it back with ``recycle(_:)``.
    func take(_ count: Int) -> UnsafeMutablePointer<UInt8>? {
        let touched = Self.roundUpToHugePage(count)
        guard count >= 0, touched >= count else { return nil }  // overflow
        // The smallest waiting buffer that is big enough; failing that, the
        // biggest one that is not has its pages moved under the start of a
        // fresh buffer (so they neither stay resident beside it nor go to
        // waste), and the rest of it is unmapped.
        let (found, victim) = state.withLock { state -> (Buffer?, Buffer?) in
            var best: Int?
            var largest: Int?
            for (index, buffer) in state.pooled.enumerated() {
                if buffer.capacity >= touched {
                    if best.map({ buffer.capacity < state.pooled[$0].capacity }) ?? true { best = index }
                } else if largest.map({ buffer.capacity > state.pooled[$0].capacity }) ?? true {
                    largest = index
                }
            }
            guard let index = best ?? largest else { return (nil, nil) }
            let buffer = state.pooled.remove(at: index)
            state.pooledBytes -= buffer.resident
            guard best != nil else {
                state.statistics.unmapped += 1
                return (nil, buffer)
            }
            state.statistics.reused += 1
            var taken = buffer
            taken.resident = touched
            taken.untouched = touched
            state.outstanding[UInt(bitPattern: buffer.address)] = taken
            return (buffer, nil)
        }
        if let found {
            // Pages past what this image needs go back to the kernel now.
            if found.resident > touched {
                madvise(found.address + touched, found.resident - touched, MADV_DONTNEED)
            }
            return found.address
        }
        guard var buffer = Self.map(Self.sizeClass(touched)) ?? Self.map(touched) else {
            if let victim { Self.unmap(victim) }
            return nil
        }
        buffer.resident = touched
        // The too-small buffer's pages go under the start of the fresh one.
        if let victim {
            let count = min(victim.resident, touched)
            let (moved, lost) = movePages(victim.address, count, buffer.address)
            // Only what was not moved is still the victim's to unmap.
            if victim.capacity > moved { munmap(victim.address + moved, victim.capacity - moved) }
            guard lost == 0 else {
                buffer.lost = moved..<moved + lost
                Self.unmap(buffer)
                return nil
            }
            buffer.untouched = moved
        }
        state.withLock { state in
            state.statistics.mapped += 1
            if victim != nil { state.statistics.refills += 1 }
            state.outstanding[UInt(bitPattern: buffer.address)] = buffer
        }
        return buffer.address
    }

    /// Takes back a buffer from ``take(_:)``: kept for reuse within the
    /// limits, otherwise unmapped.
    func recycle(_ address: UnsafeMutablePointer<UInt8>) {
        let (dropped, scheduleTrim) = state.withLock { state -> ([Buffer], (Double, Int)?) in
            guard var buffer = state.outstanding.removeValue(forKey: UInt(bitPattern: address)) else {
                preconditionFailure("PixelBufferPool: a buffer it did not hand out")
            }
            guard state.countLimit > 0, buffer.resident <= state.byteLimit, buffer.lost == nil else {
                state.statistics.unmapped += 1
                return ([buffer], nil)
            }
            buffer.since = DispatchTime.now().uptimeNanoseconds
            state.pooled.append(buffer)
            state.pooledBytes += buffer.resident
            let dropped = Self.evictOverLimits(&state)
            var trim: (Double, Int)?
            if !state.trimScheduled, !state.pooled.isEmpty {
                state.trimScheduled = true
                trim = (state.idleLifetime, state.trimGeneration)
            }
            return (dropped, trim)
        }
        dropped.forEach(Self.unmap)
        if let (delay, generation) = scheduleTrim { self.scheduleTrim(after: delay, generation: generation) }
    }

    /// What ``refill(_:written:)`` asks of its caller.
    enum Refill {
        /// Call again after more rows: the pool may have a buffer by then.
        case later
        /// Nothing more to gain for this buffer.
        case done
        /// Part of the buffer could not be mapped again: fail the decode.
        case failed
    }

    /// Called by a decoder writing `address` (a buffer from ``take(_:)``)
    /// front to back, `written` bytes so far. If the buffer was freshly
    /// mapped and a released buffer is waiting, the waiting buffer's pages
    /// are moved (`mremap`, no copy) under the part not yet written: the
    /// decoder writes into pages the kernel need not zero, and the waiting
    /// buffer stops costing memory of its own (what was not moved goes back
    /// to the kernel). A released buffer so waits for the next row of any
    /// running decode, not for the next decode to start.
    func refill(_ address: UnsafeMutablePointer<UInt8>, written: Int) -> Refill {
        let start = written <= 0 ? 0 : Self.roundUpToHugePage(written)
        guard start >= 0 else { return .done }
        let (move, result) = state.withLock { state -> ((source: Buffer, offset: Int, count: Int)?, Refill) in
            let key = UInt(bitPattern: address)
            guard var target = state.outstanding[key] else { return (nil, .done) }
            let offset = max(start, target.untouched)
            guard offset < target.resident else { return (nil, .done) }
            guard let index = Self.bestSource(in: state.pooled, for: target.resident - offset) else {
                return (nil, .later)
            }
            let source = state.pooled.remove(at: index)
            state.pooledBytes -= source.resident
            let count = min(source.resident, target.resident - offset)
            target.untouched = offset + count
            state.outstanding[key] = target
            state.statistics.refills += 1
            state.statistics.unmapped += 1
            return ((source, offset, count), target.untouched >= target.resident ? .done : .later)
        }
        guard let move else { return result }
        let (moved, lost) = movePages(move.source.address, move.count, address + move.offset)
        // What was not moved of the source goes back to the kernel; what was
        // moved is not the source's any more (even when the move then failed).
        if move.source.capacity > moved {
            munmap(move.source.address + moved, move.source.capacity - moved)
        }
        guard lost == 0 else {
            let range = move.offset + moved..<move.offset + moved + lost
            state.withLock { $0.outstanding[UInt(bitPattern: address)]?.lost = range }
            return .failed
        }
        return result
    }

    /// ``refill(_:written:)`` as a codec's `aiv_pixel_allocator.progress`
    /// answers it: 0 (call again), 1 (done) or -1 (fail the decode).
    func progress(_ address: UnsafeMutablePointer<UInt8>, written: Int) -> Int32 {
        switch refill(address, written: written) {
        case .later: return 0
        case .done: return 1
        case .failed: return -1
        }
    }

    /// Which waiting buffer refills `rest` bytes: the smallest that fills
    /// them all, else the biggest (what is not moved of it is unmapped, so
    /// a big buffer is not spent on a small remainder while a fitting one waits).
    private static func bestSource(in pooled: [Buffer], for rest: Int) -> Int? {
        var fitting: Int?
        var biggest: Int?
        for (index, buffer) in pooled.enumerated() {
            if buffer.resident >= rest, fitting.map({ buffer.resident < pooled[$0].resident }) ?? true {
                fitting = index
            }
            if biggest.map({ buffer.resident > pooled[$0].resident }) ?? true { biggest = index }
        }
        return fitting ?? biggest
    }

    // MARK: Limits

    private func enforceLimits(_ change: (inout State) -> Void) {
        let dropped = state.withLock { state -> [Buffer] in
            change(&state)
            return Self.evictOverLimits(&state)
        }
        dropped.forEach(Self.unmap)
    }

    /// Removes the oldest waiting buffers until the pool is within its limits.
    private static func evictOverLimits(_ state: inout State) -> [Buffer] {
        var dropped: [Buffer] = []
        while !state.pooled.isEmpty, state.pooled.count > state.countLimit || state.pooledBytes > state.byteLimit {
            let buffer = state.pooled.removeFirst()
            state.pooledBytes -= buffer.resident
            dropped.append(buffer)
        }
        state.statistics.unmapped += dropped.count
        return dropped
    }

    /// Unmaps buffers that have waited at least `idleLifetime` by `now`
    /// (`DispatchTime` nanoseconds); returns how many.
    @discardableResult
    func trim(now: UInt64 = DispatchTime.now().uptimeNanoseconds) -> Int {
        let dropped = state.withLock { state -> [Buffer] in
            let lifetime = UInt64(state.idleLifetime * 1e9)
            var dropped: [Buffer] = []
            state.pooled.removeAll { buffer in
                guard now >= buffer.since, now - buffer.since >= lifetime else { return false }
                dropped.append(buffer)
                return true
            }
            state.pooledBytes -= dropped.reduce(0) { $0 + $1.resident }
            state.statistics.unmapped += dropped.count
            return dropped
        }
        dropped.forEach(Self.unmap)
        return dropped.count
    }

    /// Trims once the oldest buffer may have gone idle, and again while any wait.
    private func scheduleTrim(after seconds: Double, generation: Int) {
        trimQueue.asyncAfter(deadline: .now() + max(0.01, seconds)) { [weak self] in
            guard let self else { return }
            guard self.state.withLock({ $0.trimGeneration == generation }) else { return }
            self.trim()
            let next = self.state.withLock { state -> Double? in
                guard state.trimGeneration == generation else { return nil }
                guard let oldest = state.pooled.first else {
                    state.trimScheduled = false
                    return nil
                }
                let age = Double(DispatchTime.now().uptimeNanoseconds &- oldest.since) / 1e9
                return max(0, state.idleLifetime - age)
            }
            if let next { self.scheduleTrim(after: next, generation: generation) }
        }
    }

    // MARK: Mapping

    /// `count` rounded up to whole huge pages (-1 on overflow).
    static func roundUpToHugePage(_ count: Int) -> Int {
        guard count <= Int.max - hugePageSize else { return -1 }
        return max(1, (count + hugePageSize - 1) / hugePageSize) * hugePageSize
    }

    /// The size class mapped for `bytes`: the next power of two, so that one
    /// buffer serves later images of other sizes (the excess is address space
    /// only). Sizes past 1 GiB are mapped as they are.
    static func sizeClass(_ bytes: Int) -> Int {
        guard bytes > hugePageSize, bytes <= 1 << 30 else { return bytes }
        return 1 << (Int.bitWidth - (bytes - 1).leadingZeroBitCount)
    }

    /// Maps `capacity` bytes aligned to a huge page, marked for huge pages.
    private static func map(_ capacity: Int) -> Buffer? {
        guard capacity > 0, capacity <= Int.max - hugePageSize else { return nil }
        let length = capacity + hugePageSize
        guard let raw = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
            raw != UnsafeMutableRawPointer(bitPattern: -1)
        else { return nil }
        // Trim the mapping to a huge-page-aligned start.
        let start = (UInt(bitPattern: raw) + UInt(hugePageSize) - 1) & ~(UInt(hugePageSize) - 1)
        let head = Int(start - UInt(bitPattern: raw))
        let tail = length - head - capacity
        if head > 0 { munmap(raw, head) }
        if tail > 0 { munmap(raw + head + capacity, tail) }
        let address = UnsafeMutablePointer<UInt8>(bitPattern: start)!
        madvise(address, capacity, MADV_HUGEPAGE)
        return Buffer(address: address, capacity: capacity, resident: 0)
    }

    private static func unmap(_ buffer: Buffer) {
        guard let lost = buffer.lost else {
            munmap(buffer.address, buffer.capacity)
            return
        }
        if lost.lowerBound > 0 { munmap(buffer.address, lost.lowerBound) }
        if buffer.capacity > lost.upperBound {
            munmap(buffer.address + lost.upperBound, buffer.capacity - lost.upperBound)
        }
    }

    // MARK: Moving pages

    /// Moves the pages of `count` bytes at `from` to `to` (both huge-page
    /// aligned), replacing what is mapped there; returns the bytes moved from
    /// the start, and how many bytes of the destination after those were
    /// lost when a move failed (see `aiv_move_pages`): not this pool's any
    /// more, to be neither written nor unmapped.
    typealias PageMover = @Sendable (
        _ from: UnsafeMutablePointer<UInt8>, _ count: Int, _ to: UnsafeMutablePointer<UInt8>
    ) -> (moved: Int, lost: Int)

    /// `mremap` one huge page at a time (`aiv_move_pages`).
    static let movePages: PageMover = { from, count, to in
        var lost = 0
        let moved = aiv_move_pages(from, count, to, hugePageSize, &lost)
        return (moved, lost)
    }
}
