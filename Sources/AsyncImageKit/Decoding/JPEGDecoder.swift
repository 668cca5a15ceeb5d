import CImageCodecs
import Foundation

/// Decodes JPEG with libjpeg-turbo: baseline, progressive and arithmetic
/// coded; grayscale, YCbCr, and CMYK/YCCK (Adobe inverted or not) converted to
/// RGB. The EXIF orientation (1-8) is applied.
///
/// **Colour:** an embedded ICC profile (APP2 `ICC_PROFILE`, joined across
/// segments) is applied with Little CMS, converting to sRGB, unless
/// ``DecodingOptions/colorManagement`` says not to (see <doc:ColourManagement>).
/// CMYK and YCCK go through their own profile; untagged CMYK is turned into
/// RGB with the simple formula R = (1 - C)(1 - K) (as browsers do: no press
/// profile is assumed).
///
/// Strict like `djpeg -strict`: libjpeg reports corrupt or truncated data only
/// as a warning and fills the gap in; here any such warning fails the decode,
/// so a half-decoded photo is never reported as a success.
///
/// A downsampled decode uses libjpeg's DCT scaling (1/2, 1/4 or 1/8) to the
/// smallest scale whose output still covers twice the target (once, with
/// ``ResizeQuality/fast``), then resizes to the exact size as
/// ``DecodingOptions/resizeQuality`` says: a 24-megapixel photo shown at
/// 256x256 never allocates a full-size bitmap.
public struct JPEGDecoder: ImageDecoding {
    /// Creates a JPEG decoder.
    public init() {}

    /// ``ImageFormat/jpeg``.
    public var format: ImageFormat { .jpeg }

    /// Decodes a whole JPEG; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        let header = JPEGHeader(data)
        let orientation = header.orientation

        // The final upright size, and the stored size the codec must reach.
        var storedTarget: PixelSize?
        if options.targetSize != nil, let stored = header.size, stored.width > 0, stored.height > 0 {
            let upright = orientation.swapsDimensions ? stored.transposed : stored
            let final = options.naturalSize(for: upright)
            storedTarget = orientation.swapsDimensions ? final.transposed : final
        }
        // The DCT scale: ShrinkOnLoad's rule, which the progressive early end shares.
        let denominator = storedTarget.map { target in
            ShrinkOnLoad.jpegDenominator(source: header.size ?? target, final: target, quality: options.resizeQuality)
        } ?? 1

        // An RGB image's transform runs on the rows as libjpeg hands them
        // out (in cache), not as a second pass; CMYK and grey files, whose
        // layout the codec settles, are converted after the decode.
        let rowTransform =
            header.pixelLayout == .rgba && !header.iccSegments.isEmpty
            ? ColorConversion.transform(for: header.colorSource, layout: .rgba, management: options.colorManagement) : nil
        // A display-size decode filtered in linear light with a matrix-shaper
        // profile converts nothing as rows come: the resampler reads the
        // source's values through the profile's curves and matrix (in floats,
        // no rounding to bytes before the filter), and only its output, the
        // small image, is encoded to sRGB bytes.
        let resizeLight = rowTransform?.linearSource(resizing: storedTarget != nil, quality: options.resizeQuality)
        var result = aiv_decode_result()
        let status = data.withBytes { bytes, count in
            withUnsafePointer(to: PixelMemory.codecAllocator) { allocator in
                RowSink(stop: options.stop, transform: resizeLight == nil ? rowTransform : nil).withCSink { sink in
                    (options.isProgressivePreview ? aiv_jpeg_decode_preview : aiv_jpeg_decode)(
                        bytes, count, UInt64(max(0, options.maxPixels)), Int32(clamping: options.maxProgressiveScans),
                        UInt32(denominator), options.resizeQuality == .high ? 1 : 0, allocator, sink, &result)
                }
            }
        }
        guard status == 0 else { throw result.failure(format) }
        if rowTransform != nil, result.layout != AIV_LAYOUT_RGBA {
            // The header said three components and libjpeg gave four: the
            // rows were converted as RGB. Never reached by a file libjpeg
            // accepts; failed rather than shown wrong.
            _ = result.takePixels()
            throw .decoding(
                DecodingFailure(
                    format: format, stage: .pixels, reason: "the colour layout changed during the decode", isPixelLimit: false),
                url: nil)
        }

        let width = Int(result.width)
        let height = Int(result.height)
        let bytesPerRow = Int(result.bytes_per_row)
        // Colour conversion on the decoded (DCT-scaled) pixels, before any
        // resize: CMYK must become RGB first, and the resize then averages
        // sRGB values, as for an untagged file (except resizeLight's case).
        let layout: ColorPixelLayout? =
            switch result.layout {
            case AIV_LAYOUT_CMYK: .cmyk
            case AIV_LAYOUT_CMYK_INVERTED: .cmykInverted
            default: header.iccSegments.isEmpty ? nil : header.pixelLayout.map { $0.isCMYK ? .rgba : $0 }
            }
        let resizes = storedTarget.map { $0 != PixelSize(width: width, height: height) } ?? false
        let transform =
            rowTransform != nil
            ? (resizeLight != nil && !resizes ? rowTransform : nil)  // converted row by row, or by the resize
            : layout.flatMap {
                ColorConversion.transform(for: header.colorSource, layout: $0, management: options.colorManagement)
            }
        if let raw = result.pixels {
            if let transform {
                transform.apply(raw, width: width, height: height, bytesPerRow: bytesPerRow)
            } else if result.layout != AIV_LAYOUT_RGBA {
                Self.convertCMYKToRGBA(raw, count: height * bytesPerRow, inverted: result.layout == AIV_LAYOUT_CMYK_INVERTED)
            }
        }
        let pixels = result.takePixels()
        let source = result.sourceSize
        var image = Image(
            width: width, height: height, bytesPerRow: bytesPerRow,
            frames: [ImageFrame(pixels: pixels, duration: 0)], format: .jpeg,
            originalSize: orientation.swapsDimensions ? source.transposed : source,
            decodeInfo: DecodeInfo(scaleDenominator: Int(result.scale_denom), decodedSize: result.decodedSize),
            opacity: .opaque)  // JPEG has no alpha: every pixel is opaque
        if let storedTarget, storedTarget != image.size {
            image = try ImageResizer.resize(
                image, to: storedTarget, quality: options.resizeQuality, light: resizeLight ?? .sRGB)
        }
        if orientation != .up {
            image = try OrientationTransform.apply(orientation, to: image)
        }
        return image
    }

    /// Converts CMYK (as libjpeg returns it, 4 bytes a pixel) to opaque RGBA in place.
    /// Adobe files store the inks inverted (255 = no ink).
    static func convertCMYKToRGBA(_ p: UnsafeMutablePointer<UInt8>, count: Int, inverted: Bool) {
        var i = 0
        while i < count {
            var c = UInt32(p[i]), m = UInt32(p[i + 1]), y = UInt32(p[i + 2]), k = UInt32(p[i + 3])
            if !inverted { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k }
            // Now 255 means "no ink": RGB = (1 - ink) * (1 - black).
            p[i] = UInt8((c * k + 127) / 255)
            p[i + 1] = UInt8((m * k + 127) / 255)
            p[i + 2] = UInt8((y * k + 127) / 255)
            p[i + 3] = 255
            i += 4
        }
    }
}
