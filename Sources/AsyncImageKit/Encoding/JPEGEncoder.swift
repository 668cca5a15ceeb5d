import CImageCodecs
import Foundation

/// Encodes an ``Image`` (its first frame) as JPEG with libjpeg-turbo.
///
/// Alpha is dropped. The encoder can write grayscale or CMYK (with an Adobe
/// marker, inverted as Photoshop writes it) and an EXIF orientation tag, which
/// is how the test suite and the demo make JPEGs of every kind the decoder reads.
public struct JPEGEncoder: Sendable {
    /// The colour model written to the file.
    public enum ColorModel: Sendable, Hashable {
        /// YCbCr from the RGB channels.
        case rgb
        /// One channel: the luma of the RGB channels.
        case grayscale
        /// Four inks, derived naively from RGB and stored inverted with an Adobe marker.
        case cmyk
    }

    /// Quality, 1 to 100.
    public var quality: Int
    /// Write a progressive JPEG.
    public var progressive: Bool
    /// The colour model.
    public var colorModel: ColorModel
    /// Write an EXIF APP1 segment with this orientation (`nil`: no EXIF).
    /// The pixels are written as given: the tag tells a reader how to turn them.
    public var orientation: ImageOrientation?

    /// Creates an encoder.
    public init(
        quality: Int = 90, progressive: Bool = false, colorModel: ColorModel = .rgb,
        orientation: ImageOrientation? = nil
    ) {
        self.quality = quality
        self.progressive = progressive
        self.colorModel = colorModel
        self.orientation = orientation
    }

    /// The JPEG bytes of the image's first frame.
    public func encode(_ image: Image) throws(AsyncImageError) -> Data {
        let exif = orientation.map(Self.exifSegment) ?? []
        var input = AIV_JPEG_INPUT_RGBA
        var pixels = image.pixels
        var bytesPerRow = image.bytesPerRow
        switch colorModel {
        case .rgb:
            break
        case .grayscale:
            input = AIV_JPEG_INPUT_GRAY
            pixels = Self.convert(image, bytesPerPixel: 1) { r, g, b, out in
                let luma: Int = 299 * Int(r) + 587 * Int(g) + 114 * Int(b)
                out[0] = UInt8((luma + 500) / 1000)
            }
            bytesPerRow = image.width
        case .cmyk:
            input = AIV_JPEG_INPUT_CMYK
            pixels = Self.convert(image, bytesPerPixel: 4) { r, g, b, out in
                // Inverted (Adobe) inks: 255 = no ink. K from the darkest channel.
                let k = max(r, g, b)
                func ink(_ v: UInt8) -> UInt8 { k == 0 ? 255 : UInt8(Int(v) * 255 / Int(k)) }
                out[0] = ink(r)
                out[1] = ink(g)
                out[2] = ink(b)
                out[3] = k
            }
            bytesPerRow = image.width * 4
        }
        var result = aiv_encode_result()
        let status = pixels.withBytes { bytes, _ in
            exif.withUnsafeBufferPointer { app1 in
                aiv_jpeg_encode(
                    bytes, UInt32(image.width), UInt32(image.height), UInt32(bytesPerRow), input,
                    Int32(max(1, min(100, quality))), progressive ? 1 : 0, app1.baseAddress, app1.count, &result)
            }
        }
        return try EncodedBytes.take(&result, status: status, format: .jpeg)
    }

    private static func convert(
        _ image: Image, bytesPerPixel: Int, _ pixel: (UInt8, UInt8, UInt8, UnsafeMutablePointer<UInt8>) -> Void
    ) -> Data {
        var out = Data(count: image.width * image.height * bytesPerPixel)
        out.withUnsafeMutableBytes { dst in
            let d = dst.bindMemory(to: UInt8.self).baseAddress!
            image.pixels.withUnsafeBytes { src in
                let s = src.bindMemory(to: UInt8.self).baseAddress!
                for y in 0..<image.height {
                    for x in 0..<image.width {
                        let p = s + y * image.bytesPerRow + x * 4
                        pixel(p[0], p[1], p[2], d + (y * image.width + x) * bytesPerPixel)
                    }
                }
            }
        }
        return out
    }

    /// A minimal big-endian EXIF APP1 payload holding only IFD0's orientation tag.
    static func exifSegment(_ orientation: ImageOrientation) -> [UInt8] {
        let value = UInt8(orientation.rawValue)
        var bytes: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]  // "Exif\0\0"
        bytes += [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08]  // "MM", 42, IFD0 at 8
        bytes += [0x00, 0x01]  // one entry
        bytes += [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01]  // tag 0x0112, SHORT, count 1
        bytes += [0x00, value, 0x00, 0x00]  // the value
        bytes += [0x00, 0x00, 0x00, 0x00]  // no next IFD
        return bytes
    }
}
