import CImageCodecs
import Dispatch
import Synchronization

/// Gives freed heap memory back to the kernel after many small pixel
/// buffers were freed: an animation's frames are each under
/// ``PixelMemory/largeSize``, so they come from `malloc`, and glibc keeps
/// what they leave in its per-thread arenas. Eight 10,000-frame GIFs left
/// 1.4 GB resident 20 s after their answers; a trim once 64 MiB of them
/// are freed returns it within a fraction of a second.
///
/// Coalesced: one `malloc_trim(0)` (glibc walks every arena) at most per
/// burst, 100 ms after the burst's first 64 MiB, on a utility thread.
enum HeapTrim {
    /// Bytes of small buffers freed since the last trim.
    private static let freed = Atomic<Int>(0)
    /// A trim is scheduled.
    private static let scheduled = Atomic<Bool>(false)
    /// What is freed before a trim is worth its walk.
    static let threshold = 64 << 20

    /// `count` bytes of a small pixel buffer were freed.
    static func freed(_ count: Int) {
        let total = freed.add(count, ordering: .relaxed).newValue
        guard total >= threshold,
            scheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(100)) {
            freed.store(0, ordering: .relaxed)
            _ = aiv_trim_heap()
            scheduled.store(false, ordering: .releasing)
        }
    }
}
