import CImageCodecs
import Foundation

/// Decodes PNG with libpng: every colour type and bit depth (1 to 16), Adam7
/// interlacing, palettes with `tRNS` transparency; 16-bit samples are scaled
/// to 8 bits. Samples are returned as stored (no gamma or ICC transform).
///
/// A downsampled decode decodes at full size, then resizes with area averaging.
public struct PNGDecoder: ImageDecoding {
    /// Creates a PNG decoder.
    public init() {}

    /// ``ImageFormat/png``.
    public var format: ImageFormat { .png }

    /// Decodes a whole PNG; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        var result = aiv_decode_result()
        let status = data.withBytes { bytes, count in
            withUnsafePointer(to: PixelMemory.codecAllocator) { allocator in
                aiv_png_decode(bytes, count, UInt64(max(0, options.maxPixels)), allocator, &result)
            }
        }
        guard status == 0 else { throw failure(result.failureStage, result.messageText, pixelLimit: result.isPixelLimit) }
        let pixels = result.takePixels()
        let image = Image(
            width: Int(result.width), height: Int(result.height), bytesPerRow: Int(result.bytes_per_row),
            frames: [ImageFrame(pixels: pixels, duration: 0)], format: .png,
            decodeInfo: DecodeInfo(scaleDenominator: 1, decodedSize: result.decodedSize))
        guard options.targetSize != nil else { return image }
        return try ImageResizer.resize(image, to: options.naturalSize(for: image.size))
    }
}
