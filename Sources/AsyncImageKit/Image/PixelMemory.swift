import CImageCodecs
import Foundation

/// Allocation of pixel buffers. Large buffers are mapped with huge pages
/// (see `aiv_pixels_alloc`), so a fresh 90 MB RGBA buffer does not pay ~22,000
/// first-touch page faults; every buffer is handed to `Data` without a copy.
enum PixelMemory {
    /// Uninitialised memory for `count` bytes, or `nil` when it cannot be had.
    static func allocate(_ count: Int) -> UnsafeMutablePointer<UInt8>? {
        aiv_pixels_alloc(count)
    }

    /// Wraps a buffer from ``allocate(_:)`` (or a decode) in `Data`, which frees it.
    static func data(taking pointer: UnsafeMutablePointer<UInt8>, count: Int) -> Data {
        Data(bytesNoCopy: pointer, count: count, deallocator: .custom { pointer, count in
            aiv_pixels_free(pointer, count)
        })
    }

    /// Allocates `count` bytes, lets `body` fill them, and returns them as `Data`.
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
            aiv_pixels_free(pointer, count)
            throw error
        }
        return data(taking: pointer, count: count)
    }
}
