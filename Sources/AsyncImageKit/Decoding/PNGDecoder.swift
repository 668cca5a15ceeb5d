import CImageCodecs
import Foundation

/// Decodes PNG with libpng: every colour type and bit depth (1 to 16), Adam7
/// interlacing, palettes with `tRNS` transparency; 16-bit samples are scaled
/// to 8 bits. Samples are returned as stored (no gamma or ICC transform).
/// The EXIF orientation of an `eXIf` chunk (1-8) before the image data is
/// applied, as for JPEG: the image is upright, ``Image/orientation`` tells
/// what was applied and ``Image/originalSize`` is the upright size. An
/// `eXIf` after the image data is ignored for orientation, as browsers do
/// (PNG's third edition puts it before IDAT).
///
/// A downsampled decode decodes at full size, then resizes with area
/// averaging (to the target in upright terms), then turns the result upright.
public struct PNGDecoder: ImageDecoding {
    /// Creates a PNG decoder.
    public init() {}

    /// ``ImageFormat/png``.
    public var format: ImageFormat { .png }

    /// Decodes a whole PNG; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        let orientation = PNGHeader(data).orientation
        var result = aiv_decode_result()
        let status = data.withBytes { bytes, count in
            withUnsafePointer(to: PixelMemory.codecAllocator) { allocator in
                aiv_png_decode(bytes, count, UInt64(max(0, options.maxPixels)), allocator, &result)
            }
        }
        guard status == 0 else { throw failure(result.failureStage, result.messageText, pixelLimit: result.isPixelLimit) }
        let pixels = result.takePixels()
        let stored = result.decodedSize
        let upright = orientation.swapsDimensions ? stored.transposed : stored
        var image = Image(
            width: stored.width, height: stored.height, bytesPerRow: Int(result.bytes_per_row),
            frames: [ImageFrame(pixels: pixels, duration: 0)], format: .png, originalSize: upright,
            decodeInfo: DecodeInfo(scaleDenominator: 1, decodedSize: stored))
        if options.targetSize != nil {
            // The target is for the upright image: resize the stored pixels to its stored equivalent.
            let final = options.naturalSize(for: upright)
            image = try ImageResizer.resize(image, to: orientation.swapsDimensions ? final.transposed : final)
        }
        if orientation != .up {
            image = try OrientationTransform.apply(orientation, to: image)
        }
        return image
    }
}
