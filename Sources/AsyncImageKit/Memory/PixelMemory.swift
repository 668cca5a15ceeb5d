import CImageCodecs
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Allocation of pixel buffers, for the decoders (through
/// ``codecAllocator``), the resizer and every other producer of pixels.
///
/// Buffers under ``largeSize`` come from `malloc`. Larger ones come from
/// ``PixelBufferPool/shared``: mapped with huge pages, and recycled when the
/// image that owns them is released, so a decode into a recycled buffer pays
/// no kernel page zeroing. Every buffer is handed to `Data` without a copy.
enum PixelMemory {
    /// From this size on, buffers are mapped and recycled (2 MiB: one huge page).
    static let largeSize = PixelBufferPool.hugePageSize

    /// Uninitialised memory for `count` bytes, or `nil` when it cannot be had.
    static func allocate(_ count: Int) -> UnsafeMutablePointer<UInt8>? {
        guard count >= 0 else { return nil }  // a size_t past Int.max
        if count >= largeSize { return PixelBufferPool.shared.take(count) }
        return malloc(max(1, count))?.assumingMemoryBound(to: UInt8.self)
    }

    /// Gives back a buffer from ``allocate(_:)`` of `count` bytes.
    static func release(_ pointer: UnsafeMutablePointer<UInt8>, count: Int) {
        if count >= largeSize {
            PixelBufferPool.shared.recycle(pointer)
        } else {
            free(pointer)
            HeapTrim.freed(count)
        }
    }

    /// The allocator the C codecs decode into.
    static let codecAllocator = aiv_pixel_allocator(
        allocate: { count in PixelMemory.allocate(count) },
        release: { pointer, count in
            if let pointer { PixelMemory.release(pointer, count: count) }
        },
        progress: { pointer, count, written in
            guard let pointer, count >= largeSize else { return 1 }
            return PixelBufferPool.shared.progress(pointer, written: written)
        })

    /// Wraps a buffer from ``allocate(_:)`` (or a decode) in `Data`, which gives it back.
    ///
    /// Where the buffer goes back is decided now, from the size it was
    /// allocated with: `Data` reports its *current* length to the
    /// deallocator, which is smaller if the caller has shortened it in place.
    static func data(taking pointer: UnsafeMutablePointer<UInt8>, count: Int) -> Data {
        let allocated = count
        return Data(bytesNoCopy: pointer, count: count, deallocator: .custom { pointer, _ in
            PixelMemory.release(pointer.assumingMemoryBound(to: UInt8.self), count: allocated)
        })
    }

    /// Allocates `count` bytes, lets `body` fill every one of them, and returns them as `Data`.
    static func make(_ count: Int, _ body: (UnsafeMutablePointer<UInt8>) throws(AsyncImageError) -> Void)
        throws(AsyncImageError) -> Data
    {
        guard let pointer = allocate(count) else {
            throw .decoding(
                DecodingFailure(format: nil, stage: .memory, reason: "cannot allocate \(count) bytes"), url: nil)
        }
        do {
            try body(pointer)
        } catch {
            release(pointer, count: count)
            throw error
        }
        return data(taking: pointer, count: count)
    }
}
