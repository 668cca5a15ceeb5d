import CJXL
import Foundation

/// Decodes JPEG XL with libjxl: lossy (VarDCT, XYB) and lossless (modular),
/// bare codestreams and the container, still images and animations, alpha,
/// any bit depth (10, 12, 16, float) brought to 8 bits.
///
/// **Pixels:** 8-bit RGBA from libjxl, straight alpha (a premultiplied file
/// is divided back); grey is expanded to RGB. The codestream's orientation
/// is applied by libjxl (JPEG XL stores it in its header, and a JPEG's EXIF
/// orientation is carried there by `cjxl`).
///
/// **Colour:** with colour management on, an image whose colour encoding
/// has the PQ or HLG transfer (HDR) is tone mapped to SDR as
/// ``HDRToneMapping`` says, from 16-bit samples in that encoding, before
/// anything is rounded to 8 bits: a lossless image's as stored, a lossy
/// (XYB) one's as libjxl renders them to the same encoding (asked for as
/// its preferred output profile, and checked to be what it gives); PQ's
/// source peak is the codestream's intensity target unless that is one of
/// libjxl's defaults (``HDRToneMapping/PeakSource/intensityTarget``), HLG's
/// the nominal 1000 cd/m². Any other lossy (XYB) image is rendered by libjxl
/// straight to sRGB; any other output colour space (a lossless image's ICC
/// profile or enumerated encoding, described by libjxl as an ICC profile)
/// is converted with Little CMS, as for the other formats (see
/// <doc:ColourManagement>). With it off, the samples are libjxl's in the
/// image's own colour space (for PQ and HLG, the signal as stored, brought
/// to 8 bits).
///
/// **Downsampled:** libjxl 0.7 has no reduced-size decode: the image is
/// decoded at full size, then area-averaged to ``DecodingOptions/naturalSize(for:)``.
///
/// **Limits:** the size comes from the header, before any buffer is
/// allocated. An animation's frames are not listed up front: each frame is
/// counted as its header arrives (its canvas, at least
/// ``minimumFramePixels``, against ``DecodingOptions/maxPixels``; one more
/// than ``DecodingOptions/maxFrames`` fails), before its pixels are decoded,
/// as for GIF.
///
/// **Animation:** every frame is the whole canvas (libjxl coalesces them),
/// lasting its ticks at the animation's tick rate, after the short-delay
/// rule (``AnimationTimeline/displayDuration(_:)``). The stored loop count
/// is the number of plays (0 = forever), converted to repeats as for WebP
/// (``WebPDecoder/loopCount(forPlayCount:)``).
///
/// **Strict:** a file cut short or damaged fails, at stage `header` before
/// the basic info is read, `pixels` after: a half-decoded image is never a success.
public struct JXLDecoder: ImageDecoding {
    /// Creates a JPEG XL decoder.
    public init() {}

    /// ``ImageFormat/jxl``.
    public var format: ImageFormat { .jxl }

    /// The least a frame of an animation counts against the pixel limit (as for GIF).
    public static let minimumFramePixels = GIFDecoder.minimumFramePixels

    /// Decodes a whole JPEG XL file, every frame of an animation; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        let decoded: Result<Image, AsyncImageError> = data.withBytes { bytes, count in
            Result { () throws(AsyncImageError) -> Image in try decode(bytes, count: count, options: options) }
        }
        return try decoded.get()
    }

    private func decode(_ bytes: UnsafePointer<UInt8>, count: Int, options: DecodingOptions) throws(AsyncImageError)
        -> Image
    {
        guard ImageFormat.sniff(UnsafeRawBufferPointer(start: bytes, count: count)) == .jxl else {
            throw failure(.header, "not JPEG XL: no codestream or container signature")
        }
        guard let decoder = JxlDecoderCreate(nil) else { throw failure(.memory, "cannot create libjxl's decoder") }
        defer { JxlDecoderDestroy(decoder) }
        let events =
            JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue
            | JXL_DEC_FULL_IMAGE.rawValue
        guard JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS,
            JxlDecoderSetUnpremultiplyAlpha(decoder, 1) == JXL_DEC_SUCCESS,
            JxlDecoderSetInput(decoder, bytes, count) == JXL_DEC_SUCCESS
        else { throw failure(.header, "libjxl refused its settings") }
        JxlDecoderCloseInput(decoder)

        var format = JxlPixelFormat(num_channels: 4, data_type: JXL_TYPE_UINT8, endianness: JXL_NATIVE_ENDIAN, align: 0)
        var info: JxlBasicInfo?
        var upright = PixelSize(width: 0, height: 0)
        var transform: ColorTransform?
        var resizeLight: LinearSource?
        // PQ or HLG: libjxl's 16-bit RGBA in the image's own encoding, into
        // `wide` (one buffer for every frame), tone mapped into `buffer`.
        var mapper: HDRToneMapper?
        var wide: (pointer: UnsafeMutablePointer<UInt8>, count: Int)?
        defer { if let wide { PixelMemory.release(wide.pointer, count: wide.count) } }
        var frames: [ImageFrame] = []
        var frameDuration = 0.0
        var framePixels = 0
        var buffer: (pointer: UnsafeMutablePointer<UInt8>, count: Int)?
        defer { if let buffer { PixelMemory.release(buffer.pointer, count: buffer.count) } }

        decoding: while true {
            try options.checkStopped(.jxl)
            let status = JxlDecoderProcessInput(decoder)
            switch status {
            case JXL_DEC_BASIC_INFO:
                var basic = JxlBasicInfo()
                guard JxlDecoderGetBasicInfo(decoder, &basic) == JXL_DEC_SUCCESS else {
                    throw failure(.header, "cannot read the basic info")
                }
                // libjxl applies the orientation (keep_orientation is off): it
                // reports the upright size, and no orientation left to apply.
                let stored = PixelSize(width: Int(basic.xsize), height: Int(basic.ysize))
                guard stored.width > 0, stored.height > 0 else { throw failure(.header, "image is \(stored)") }
                let orientation = ImageOrientation(rawValue: Int(basic.orientation.rawValue)) ?? .up
                upright = orientation.swapsDimensions ? stored.transposed : stored
                let (pixels, overflow) = stored.width.multipliedReportingOverflow(by: stored.height)
                guard !overflow, pixels <= options.maxPixels else {
                    throw failure(
                        .limits, "\(stored.width)x\(stored.height) is \(overflow ? "too many" : "\(pixels)") pixels, over the limit of \(options.maxPixels)",
                        pixelLimit: true)
                }
                framePixels = basic.have_animation != 0 ? max(pixels, Self.minimumFramePixels) : pixels
                info = basic
            case JXL_DEC_COLOR_ENCODING:
                guard options.colorManagement.convertsToSRGB, let info else { break }
                // PQ or HLG: the samples in that encoding (an XYB image asked
                // for it, and checked), at 16 bits, tone mapped.
                if let hdr = JXLColor.hdr(decoder, intensityTarget: info.intensity_target),
                    let toneMapper = HDRToneMapper(
                        hdr.color.mapping, chromaticities: hdr.color.chromaticities, bitDepth: 16),
                    JXLColor.outputs(hdr.encoding, decoder, asking: info.uses_original_profile == 0)
                {
                    mapper = toneMapper
                    format.data_type = JXL_TYPE_UINT16
                    break
                }
                // Only takes for an XYB (lossy) image, which libjxl then renders as sRGB.
                var sRGB = JxlColorEncoding()
                JxlColorEncodingSetToSRGB(&sRGB, info.num_color_channels == 1 ? 1 : 0)
                _ = JxlDecoderSetPreferredColorProfile(decoder, &sRGB)
                transform = ColorConversion.transform(
                    for: JXLColor.output(decoder).0, layout: .rgba, management: options.colorManagement)
            case JXL_DEC_FRAME:
                // A frame header: the limits before its pixels.
                guard frames.count < options.maxFrames else {
                    throw failure(.limits, "more than \(options.maxFrames) frames, over the limit", pixelLimit: true)
                }
                let (counted, overflow) = framePixels.multipliedReportingOverflow(by: frames.count + 1)
                guard !overflow, counted <= options.maxPixels else {
                    throw failure(
                        .limits,
                        "\(frames.count + 1) frames of \(upright.width)x\(upright.height): at least \(overflow ? "too many" : "\(counted)") pixels counted (at least \(Self.minimumFramePixels) a frame), over the limit of \(options.maxPixels)",
                        pixelLimit: true)
                }
                var header = JxlFrameHeader()
                guard JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS else {
                    throw failure(.pixels, "cannot read the header of frame \(frames.count)")
                }
                if let info, info.have_animation != 0, info.animation.tps_numerator > 0 {
                    frameDuration =
                        Double(header.duration) * Double(info.animation.tps_denominator)
                        / Double(info.animation.tps_numerator)
                }
            case JXL_DEC_NEED_IMAGE_OUT_BUFFER:
                var size = 0
                let sampleBytes = mapper == nil ? 1 : 2
                guard JxlDecoderImageOutBufferSize(decoder, &format, &size) == JXL_DEC_SUCCESS,
                    size == upright.width * upright.height * 4 * sampleBytes
                else {
                    throw failure(
                        .pixels, "libjxl's output buffer is not \(upright.width)x\(upright.height) RGBA at \(8 * sampleBytes) bits")
                }
                guard let pointer = PixelMemory.allocate(size / sampleBytes) else {
                    throw failure(.memory, "cannot allocate \(size / sampleBytes) bytes for \(upright.width)x\(upright.height)")
                }
                buffer = (pointer, size / sampleBytes)
                if mapper != nil, wide == nil {
                    guard let samples = PixelMemory.allocate(size) else {
                        throw failure(.memory, "cannot allocate \(size) bytes for \(upright.width)x\(upright.height) at 16 bits")
                    }
                    wide = (samples, size)
                }
                guard JxlDecoderSetImageOutBuffer(decoder, &format, wide?.pointer ?? pointer, size) == JXL_DEC_SUCCESS
                else { throw failure(.pixels, "libjxl refused the output buffer") }
            case JXL_DEC_FULL_IMAGE:
                guard let done = buffer else { throw failure(.pixels, "frame \(frames.count) has no pixels") }
                buffer = nil
                if let mapper, let wide {
                    let samples = UnsafeRawPointer(wide.pointer).assumingMemoryBound(to: UInt16.self)
                    mapper.map(
                        samples, channels: 4, inputRowSamples: upright.width * 4, width: upright.width,
                        height: upright.height, into: done.pointer, bytesPerRow: upright.width * 4)
                }
                // A display-size decode filtered in linear light runs a
                // matrix-shaper transform inside the resize (see JPEGDecoder).
                resizeLight = transform?.linearSource(
                    resizing: options.targetSize != nil && options.naturalSize(for: upright) != upright,
                    quality: options.resizeQuality)
                if resizeLight == nil {
                    transform?.apply(done.pointer, width: upright.width, height: upright.height, bytesPerRow: upright.width * 4)
                }
                let duration = (info?.have_animation ?? 0) != 0 ? AnimationTimeline.displayDuration(frameDuration) : 0
                frames.append(ImageFrame(pixels: PixelMemory.data(taking: done.pointer, count: done.count), duration: duration))
                if options.firstFrameOnly { break decoding }  // a still: the rest is never decoded
            case JXL_DEC_SUCCESS:
                break decoding
            case JXL_DEC_NEED_MORE_INPUT:
                throw failure(
                    info == nil ? .header : .pixels,
                    "cut short: the file ends \(info == nil ? "in its header" : "in frame \(frames.count)")")
            default:
                throw failure(
                    info == nil ? .header : .pixels,
                    "corrupt \(info == nil ? "header" : "image data in frame \(frames.count)") (libjxl status \(status.rawValue))")
            }
        }
        guard let info, !frames.isEmpty else { throw failure(.pixels, "the file holds no frame") }

        let animated = info.have_animation != 0
        if animated, frames.count == 1 { frames = [ImageFrame(pixels: frames[0].pixels, duration: 0)] }
        var decodeInfo = DecodeInfo(scaleDenominator: 1, decodedSize: upright)
        if frames.count > 1 { decodeInfo.countedPixels = framePixels * frames.count }
        let natural = options.naturalSize(for: upright)
        let resizes = options.targetSize != nil && natural != upright
        guard natural.width > 0, natural.height > 0 else { throw failure(.pixels, "cannot scale to \(natural)") }
        let image = Image(
            width: upright.width, height: upright.height, bytesPerRow: upright.width * 4, frames: frames, format: .jxl,
            originalSize: upright,
            loopCount: animated && frames.count > 1 ? WebPDecoder.loopCount(forPlayCount: Int(info.animation.num_loops)) : nil,
            decodeInfo: decodeInfo, opacity: info.alpha_bits == 0 ? .opaque : resizes ? .unmeasured : .unknown)
        return resizes
            ? try ImageResizer.resize(image, to: natural, quality: options.resizeQuality, light: resizeLight ?? .sRGB) : image
    }
}
