#if GTKSupport
import AsyncImageKit
import CAsyncImageGTK
import Foundation

/// A `GdkMemoryTexture` over one frame of an ``AsyncImageKit/Image``, in
/// `GDK_MEMORY_R8G8B8A8_PREMULTIPLIED`, the format GDK draws without a
/// conversion. The library's images are straight-alpha RGBA, 8 bits, sRGB:
///
/// - An opaque image (``AsyncImageKit/Image/isOpaque``) is the same bytes
///   premultiplied or not (alpha is 255): the texture is made over the
///   frame's own bytes, not copied; `g_bytes_new_with_free_func` holds the
///   pixel storage alive until GDK lets it go.
/// - Otherwise each pixel is premultiplied once, into a buffer the texture owns.
///
/// Owned by the main thread (GTK's objects are not thread-safe).
final class PictureTexture {
    /// The GdkTexture (one reference, dropped on deinit).
    let texture: OpaquePointer
    let width: Int
    let height: Int

    /// How many textures were made over an image's own bytes and how many
    /// premultiplied into a copy, since the process started (tests).
    nonisolated(unsafe) static var sharedCount = 0
    nonisolated(unsafe) static var copiedCount = 0

    /// Keeps a frame's pixel storage alive for GDK.
    private final class PixelOwner {
        let pixels: Data
        init(_ pixels: Data) { self.pixels = pixels }
    }

    init?(_ image: Image, frame: Int) {
        guard frame < image.frames.count, image.width > 0, image.height > 0 else { return nil }
        let pixels = image.frames[frame].pixels
        let stride = image.bytesPerRow
        let length = stride * (image.height - 1) + image.width * 4
        guard pixels.count >= length else { return nil }
        let width = image.width
        let height = image.height
        self.width = width
        self.height = height
        // Data of 14 bytes or fewer is stored inline, with no storage to
        // point into: such tiny images are copied as transparent ones are.
        if image.isOpaque && pixels.count > 64 {
            let owner = Unmanaged.passRetained(PixelOwner(pixels))
            let made = pixels.withUnsafeBytes { raw -> OpaquePointer? in
                aik_texture_new_premultiplied(
                    Int32(width), Int32(height), raw.baseAddress, stride, length,
                    { owner in Unmanaged<AnyObject>.fromOpaque(owner!).release() }, owner.toOpaque())
            }
            guard let made else { return nil }
            texture = made
            Self.sharedCount += 1
        } else {
            let rowBytes = width * 4
            let buffer = g_malloc(gsize(rowBytes * height))!
            let out = buffer.assumingMemoryBound(to: UInt8.self)
            let opaque = image.isOpaque
            pixels.withUnsafeBytes { raw in
                let src = raw.bindMemory(to: UInt8.self).baseAddress!
                for y in 0..<height {
                    let s = src + y * stride
                    let d = out + y * rowBytes
                    if opaque {
                        d.update(from: s, count: rowBytes)
                        continue
                    }
                    for x in 0..<width {
                        let i = x * 4
                        let a = UInt32(s[i + 3])
                        d[i] = UInt8((UInt32(s[i]) * a + 127) / 255)
                        d[i + 1] = UInt8((UInt32(s[i + 1]) * a + 127) / 255)
                        d[i + 2] = UInt8((UInt32(s[i + 2]) * a + 127) / 255)
                        d[i + 3] = UInt8(a)
                    }
                }
            }
            guard let made = aik_texture_new_premultiplied(
                Int32(width), Int32(height), buffer, rowBytes, rowBytes * height, g_free, buffer)
            else { return nil }
            texture = made
            Self.copiedCount += 1
        }
    }

    /// The texture as a `GdkPaintable`.
    var paintable: OpaquePointer { aik_paintable(UnsafeMutableRawPointer(texture)) }

    deinit { g_object_unref(UnsafeMutableRawPointer(texture)) }
}
#endif
