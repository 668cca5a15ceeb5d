import CWebP
import Foundation

/// Decodes WebP with libwebp: lossy (VP8), lossless (VP8L), with alpha
/// (`ALPH` or VP8L's own), and animated (`ANIM`/`ANMF`, through
/// libwebpdemux's `WebPAnimDecoder`, which composites every frame with its
/// blending and disposal onto the canvas).
///
/// Pixels are straight RGBA (`MODE_RGBA`), decoded into a buffer from the
/// pixel pool without a copy. An `ICCP` chunk's profile is applied with
/// Little CMS, converting to sRGB (after libwebp's scaling), unless
/// ``DecodingOptions/colorManagement`` says not to. An `EXIF`
/// chunk's orientation is not applied (``ImageFileProperties``
/// reports it): WebP has no rule that viewers turn the image, and the WebP
/// container's canvas is the upright size.
///
/// **Strict:** a file shorter than its RIFF header declares fails at stage
/// `pixels` (or `header`, when even the header is cut), as does any frame
/// libwebp cannot decode: a half-decoded image is never a success.
///
/// **Downsampled:** a still image is scaled by libwebp while it decodes,
/// straight to ``DecodingOptions/naturalSize(for:)``, so no full-size buffer
/// is ever allocated (``DecodeInfo/decodedSize`` is the scaled size). An
/// animation is decoded at full size, then every frame is area-averaged.
///
/// **Pixel limit:** a still image counts its canvas; an animation counts its
/// canvas once for every frame (at least ``minimumFramePixels`` each), as
/// for GIF. Both are read from the headers before any buffer is allocated.
///
/// **Durations:** each frame lasts the difference between its timestamp and
/// the previous one, in seconds, after the short-delay rule
/// (``AnimationTimeline/displayDuration(_:)``: 10 ms or less is shown for
/// 0.1 s), as for GIF.
///
/// **Loop count:** WebP's `ANIM` loop count is the number of *plays* (0 =
/// forever), while ``Image/loopCount`` follows GIF's NETSCAPE2.0 rule of
/// *repeats after the first play* (see ``AnimationTimeline``). So a WebP
/// loop count of 0 becomes 0 (forever), 1 becomes `nil` (plays once) and
/// `n` becomes `n - 1`; see ``loopCount(forPlayCount:)``.
public struct WebPDecoder: ImageDecoding {
    /// Creates a WebP decoder.
    public init() {}

    /// ``ImageFormat/webp``.
    public var format: ImageFormat { .webp }

    /// The least a frame of an animation counts against the pixel limit (as for GIF).
    public static let minimumFramePixels = GIFDecoder.minimumFramePixels

    /// ``Image/loopCount`` for a WebP `ANIM` loop count (the number of plays,
    /// 0 = forever): 0 for 0, `nil` for 1 (one play, as a GIF without a
    /// NETSCAPE2.0 block), `n - 1` for `n` (repeats after the first play).
    public static func loopCount(forPlayCount plays: Int) -> Int? {
        if plays <= 0 { return 0 }
        return plays == 1 ? nil : plays - 1
    }

    /// Decodes a whole WebP, every frame of an animation; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        let decoded: Result<Image, AsyncImageError> = data.withBytes { bytes, count in
            Result { () throws(AsyncImageError) -> Image in
                try decode(bytes, count: count, options: options)
            }
        }
        return try decoded.get()
    }

    private func decode(_ bytes: UnsafePointer<UInt8>, count: Int, options: DecodingOptions) throws(AsyncImageError)
        -> Image
    {
        var features = WebPBitstreamFeatures()
        let status = WebPGetFeatures(bytes, count, &features)
        guard status == VP8_STATUS_OK else {
            throw failure(status == VP8_STATUS_OUT_OF_MEMORY ? .memory : .header, Self.message(status, "header"))
        }
        let width = Int(features.width)
        let height = Int(features.height)
        guard width > 0, height > 0 else { throw failure(.header, "canvas is \(width)x\(height)") }

        // The RIFF header declares the file's length; anything shorter was cut.
        let declared = Int(WebPHeader.riffSize(bytes, count: count) ?? 0) + 8
        if features.has_animation != 0 {
            return try decodeAnimation(bytes, count: count, declared: declared, width: width, height: height, options: options)
        }
        // Without alpha (`ALPH`, or VP8L's own), libwebp writes alpha 255 everywhere.
        let hasAlpha = features.has_alpha != 0

        let pixels = width * height
        guard pixels <= options.maxPixels else {
            throw failure(
                .limits, "\(width)x\(height) is \(pixels) pixels, over the limit of \(options.maxPixels)", pixelLimit: true)
        }
        guard count >= declared else {
            throw failure(.pixels, "cut short: the RIFF header declares \(declared) bytes, \(count) present")
        }

        let full = PixelSize(width: width, height: height)
        let final = options.targetSize == nil ? full : options.naturalSize(for: full)
        guard final.width > 0, final.height > 0 else { throw failure(.pixels, "cannot scale to \(final)") }
        // libwebp's own scaling stops at ShrinkOnLoad's margin; the resize does the rest.
        let output = options.targetSize == nil
            ? full : ShrinkOnLoad.webpDecodeSize(source: full, final: final, quality: options.resizeQuality)

        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else { throw failure(.header, "libwebp's ABI does not match its headers") }
        config.options.use_threads = 0
        if output != full {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(output.width)
            config.options.scaled_height = Int32(output.height)
        }
        let bytesPerRow = output.width * 4
        let size = bytesPerRow * output.height
        guard let buffer = PixelMemory.allocate(size) else {
            throw failure(.memory, "cannot allocate \(size) bytes for \(output.width)x\(output.height)")
        }
        config.output.colorspace = MODE_RGBA
        config.output.is_external_memory = 1
        config.output.u.RGBA.rgba = buffer
        config.output.u.RGBA.stride = Int32(bytesPerRow)
        config.output.u.RGBA.size = size
        let decoded = WebPDecode(bytes, count, &config)
        WebPFreeDecBuffer(&config.output)  // frees nothing of ours: the memory is external
        guard decoded == VP8_STATUS_OK else {
            PixelMemory.release(buffer, count: size)
            throw failure(decoded == VP8_STATUS_OUT_OF_MEMORY ? .memory : .pixels, Self.message(decoded, "image data"))
        }
        // After libwebp's scaling: the fewest pixels; a matrix-shaper
        // transform before a resize in linear light runs in the resize
        // (see JPEGDecoder).
        let transform = colorTransform(bytes, count: count, options: options)
        let resizeLight = transform?.linearSource(resizing: final != output, quality: options.resizeQuality)
        if resizeLight == nil {
            transform?.apply(buffer, width: output.width, height: output.height, bytesPerRow: bytesPerRow)
        }
        let image = Image(
            width: output.width, height: output.height, bytesPerRow: bytesPerRow,
            frames: [ImageFrame(pixels: PixelMemory.data(taking: buffer, count: size), duration: 0)], format: .webp,
            originalSize: full, decodeInfo: DecodeInfo(scaleDenominator: 1, decodedSize: output),
            opacity: .opaque(if: !hasAlpha))
        return try ImageResizer.resize(image, to: final, quality: options.resizeQuality, light: resizeLight ?? .sRGB)
    }

    private func decodeAnimation(
        _ bytes: UnsafePointer<UInt8>, count: Int, declared: Int, width: Int, height: Int, options: DecodingOptions
    ) throws(AsyncImageError) -> Image {
        guard count >= declared else {
            throw failure(.pixels, "cut short: the RIFF header declares \(declared) bytes, \(count) present")
        }
        var input = WebPData(bytes: bytes, size: count)
        // The frame count, from the container, before anything is decoded.
        guard let demux = WebPDemux(&input) else { throw failure(.header, "invalid animation container") }
        let total = Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
        WebPDemuxDelete(demux)
        // A still of an animation: its first frame alone, counted alone.
        let frameCount = options.firstFrameOnly ? min(1, total) : total
        guard frameCount > 0 else { throw failure(.pixels, "the animation holds no frame") }
        guard frameCount <= options.maxFrames else {
            throw failure(.limits, "\(frameCount) frames, over the limit of \(options.maxFrames)", pixelLimit: true)
        }

        let canvasPixels = width * height
        let framePixels = max(canvasPixels, Self.minimumFramePixels)
        let (counted, overflow) = framePixels.multipliedReportingOverflow(by: frameCount)
        guard !overflow, counted <= options.maxPixels else {
            throw failure(
                .limits,
                "\(frameCount) frames of \(width)x\(height): \(overflow ? "too many" : "\(counted)") pixels counted (at least \(Self.minimumFramePixels) a frame), over the limit of \(options.maxPixels)",
                pixelLimit: true)
        }

        var decoderOptions = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&decoderOptions) != 0 else {
            throw failure(.header, "libwebpdemux's ABI does not match its headers")
        }
        decoderOptions.color_mode = MODE_RGBA
        decoderOptions.use_threads = 0
        guard let decoder = WebPAnimDecoderNew(&input, &decoderOptions) else {
            throw failure(.memory, "cannot set up the animation decoder for a \(width)x\(height) canvas")
        }
        defer { WebPAnimDecoderDelete(decoder) }
        var info = WebPAnimInfo()
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0, Int(info.canvas_width) == width,
            Int(info.canvas_height) == height, Int(info.frame_count) == total
        else { throw failure(.header, "the animation's header disagrees with its container") }

        let frameBytes = canvasPixels * 4
        let transform = colorTransform(bytes, count: count, options: options)
        let natural = options.naturalSize(for: PixelSize(width: width, height: height))
        let resizes = options.targetSize != nil && natural != PixelSize(width: width, height: height)
        let resizeLight = transform?.linearSource(resizing: resizes, quality: options.resizeQuality)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(frameCount)
        var previousTimestamp: Int32 = 0
        while frames.count < frameCount, WebPAnimDecoderHasMoreFrames(decoder) != 0 {
            try options.checkStopped(format)
            var canvas: UnsafeMutablePointer<UInt8>?
            var timestamp: Int32 = 0
            guard WebPAnimDecoderGetNext(decoder, &canvas, &timestamp) != 0, let canvas else {
                throw failure(.pixels, "frame \(frames.count) cannot be decoded (after \(frames.count) good frame(s))")
            }
            let pixels = try PixelMemory.make(frameBytes) { out throws(AsyncImageError) in
                out.update(from: canvas, count: frameBytes)
                if resizeLight == nil { transform?.apply(out, width: width, height: height, bytesPerRow: width * 4) }
            }
            let milliseconds = max(0, Int(timestamp) - Int(previousTimestamp))
            previousTimestamp = timestamp
            frames.append(
                ImageFrame(pixels: pixels, duration: AnimationTimeline.displayDuration(Double(milliseconds) / 1000)))
        }
        guard frames.count == frameCount else {
            throw failure(.pixels, "\(frames.count) of \(frameCount) frames decoded")
        }
        if frames.count == 1 { frames = [ImageFrame(pixels: frames[0].pixels, duration: 0)] }

        var decodeInfo = DecodeInfo(scaleDenominator: 1, decodedSize: PixelSize(width: width, height: height))
        decodeInfo.countedPixels = counted
        // Scanned, unless a resize follows, which measures its own result.
        let image = Image(
            width: width, height: height, bytesPerRow: width * 4, frames: frames, format: .webp,
            loopCount: Self.loopCount(forPlayCount: Int(info.loop_count)), decodeInfo: decodeInfo,
            opacity: resizes ? .unmeasured : .unknown)
        guard resizes else { return image }
        return try ImageResizer.resize(image, to: natural, quality: options.resizeQuality, light: resizeLight ?? .sRGB)
    }

    /// The conversion of the `ICCP` chunk's profile to sRGB, `nil` without one.
    private func colorTransform(_ bytes: UnsafePointer<UInt8>, count: Int, options: DecodingOptions) -> ColorTransform? {
        guard options.colorManagement.convertsToSRGB else { return nil }
        return ColorConversion.transform(
            for: WebPHeader.colorSource(UnsafeRawBufferPointer(start: bytes, count: count)), layout: .rgba,
            management: options.colorManagement)
    }

    /// libwebp's status code in words.
    static func message(_ status: VP8StatusCode, _ what: String) -> String {
        switch status {
        case VP8_STATUS_OUT_OF_MEMORY: return "out of memory decoding the \(what)"
        case VP8_STATUS_INVALID_PARAM: return "invalid parameter decoding the \(what)"
        case VP8_STATUS_BITSTREAM_ERROR: return "corrupt \(what) (bitstream error)"
        case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature in the \(what)"
        case VP8_STATUS_SUSPENDED: return "decoding the \(what) was suspended"
        case VP8_STATUS_USER_ABORT: return "decoding the \(what) was aborted"
        case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated \(what) (not enough data)"
        default: return "libwebp status \(status.rawValue) decoding the \(what)"
        }
    }
}
