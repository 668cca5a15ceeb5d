import CImageCodecs
import Foundation

/// Decodes PNG with libpng: every colour type and bit depth (1 to 16), Adam7
/// interlacing, palettes with `tRNS` transparency; 16-bit samples are scaled
/// to 8 bits. Colour information (an `iCCP` profile, or `gAMA`/`cHRM`
/// chunks without one) is applied with Little CMS, converting to sRGB,
/// unless ``DecodingOptions/colorManagement`` says not to; an `sRGB` chunk,
/// an sRGB profile and a `gAMA` of 1/2.2 alone leave the samples as
/// stored, as does a file without colour information (see <doc:ColourManagement>).
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
        let header = PNGHeader(data)
        let orientation = header.orientation
        // libpng hands out RGBA (grey expanded): the transform runs on the
        // rows as they become final, in cache, not as a second pass; for a
        // display size filtered in linear light with a matrix-shaper
        // profile, in the resize instead (see JPEGDecoder).
        let transform = header.colorSource.flatMap { source in
            ColorPixelLayout(header.colorType).flatMap {
                ColorConversion.transform(for: source, layout: $0, management: options.colorManagement)
            }
        }
        let resizeLight = transform?.linearSource(resizing: options.targetSize != nil, quality: options.resizeQuality)
        var result = aiv_decode_result()
        let status = data.withBytes { bytes, count in
            withUnsafePointer(to: PixelMemory.codecAllocator) { allocator in
                RowSink(stop: options.stop, transform: resizeLight == nil ? transform : nil).withCSink { sink in
                    aiv_png_decode(bytes, count, UInt64(max(0, options.maxPixels)), allocator, sink, &result)
                }
            }
        }
        guard status == 0 else { throw result.failure(format) }
        let stored = result.decodedSize
        let upright = orientation.swapsDimensions ? stored.transposed : stored
        // The target is for the upright image: the stored pixels are resized to its stored equivalent.
        let resized = options.targetSize.map { _ in
            let final = options.naturalSize(for: upright)
            return orientation.swapsDimensions ? final.transposed : final
        }
        let light = resized != nil && resized != stored ? resizeLight : nil
        if resizeLight != nil, light == nil, let transform, let raw = result.pixels {
            // No resize after all: converted here.
            transform.apply(raw, width: stored.width, height: stored.height, bytesPerRow: Int(result.bytes_per_row))
        }
        let pixels = result.takePixels()
        // Opaque by its colour type (no alpha, no tRNS), else scanned,
        // unless a resize follows, which measures its own result.
        let opacity: Image.Opacity =
            result.opaque != 0 ? .opaque : resized.map { $0 != stored } == true ? .unmeasured : .unknown
        var image = Image(
            width: stored.width, height: stored.height, bytesPerRow: Int(result.bytes_per_row),
            frames: [ImageFrame(pixels: pixels, duration: 0)], format: .png, originalSize: upright,
            decodeInfo: DecodeInfo(scaleDenominator: 1, decodedSize: stored), opacity: opacity)
        if let resized {
            image = try ImageResizer.resize(image, to: resized, quality: options.resizeQuality, light: light ?? .sRGB)
        }
        if orientation != .up {
            image = try OrientationTransform.apply(orientation, to: image)
        }
        return image
    }
}
