import CAVIF
import Foundation

/// Decodes AVIF with libavif (AV1 through dav1d, or aom): still images and
/// image sequences (`avis`), with alpha, 8, 10 and 12 bits, 4:4:4, 4:2:2,
/// 4:2:0 and monochrome.
///
/// **Pixels:** libavif converts YUV to straight (not premultiplied) 8-bit
/// RGBA, 10- and 12-bit samples rounded to 8 bits (an HDR image's are tone
/// mapped from their own depth); a file whose colour is stored
/// premultiplied is divided back. Without an alpha item every pixel is
/// opaque.
///
/// **Crop and orientation:** the `clap` (clean aperture) property crops the
/// image (libavif's conversion of it to a rectangle: an invalid one is
/// ignored), then the `irot` and `imir` properties are applied (rotation
/// first, then mirroring), the order MIAF requires, as browsers do; the
/// header's size (``ImageFileProperties``) is the cropped one, while the
/// pixel limit counts the whole decoded frame. An `Exif`
/// item's orientation is reported by ``ImageFileProperties/exif`` but not
/// applied (the properties are the file's own orientation in AVIF: encoders
/// such as `avifenc` turn an EXIF orientation into them).
///
/// **Colour:** a `colr` ICC profile is applied with Little CMS, converting to
/// sRGB, unless ``DecodingOptions/colorManagement`` says not to (see
/// <doc:ColourManagement>); without one, an `nclx` colour description with
/// SDR code points is converted as the equivalent PNG `cHRM`/`gAMA` chunks
/// are, and one with the PQ or HLG transfer (HDR) is tone mapped to SDR as
/// ``HDRToneMapping`` says (its source peak from the `clli` or `mdcv`
/// property), from the samples at their own depth.
///
/// **Downsampled:** AV1 has no reduced-size decode, so the image is decoded at
/// full size, then area-averaged to ``DecodingOptions/naturalSize(for:)``.
///
/// **Limits:** the size and frame count come from the boxes, before any AV1
/// data is decoded or any buffer allocated: a still image counts its
/// pixels, a sequence its canvas once for every frame (at least
/// ``minimumFramePixels`` each), as for GIF and WebP; more frames than
/// ``DecodingOptions/maxFrames`` fail at stage `limits`.
///
/// **Strict:** a file cut short or damaged fails, at stage `header` when
/// its boxes cannot be read, `pixels` when its AV1 data cannot (libavif's
/// `AVIF_RESULT_TRUNCATED_DATA`, a decode error): a half-decoded image is
/// never a success.
///
/// **Sequences:** each frame lasts its sample's duration in the track's
/// timescale, after the short-delay rule (``AnimationTimeline/displayDuration(_:)``).
/// libavif 0.11 does not read a loop count (an edit list's repetitions): a
/// sequence loops forever (``Image/loopCount`` 0), as browsers play them.
public struct AVIFDecoder: ImageDecoding {
    /// Creates an AVIF decoder.
    public init() {}

    /// ``ImageFormat/avif``.
    public var format: ImageFormat { .avif }

    /// The least a frame of a sequence counts against the pixel limit (as for GIF).
    public static let minimumFramePixels = GIFDecoder.minimumFramePixels

    /// Decodes a whole AVIF, every frame of a sequence; see ``ImageDecoding/decode(_:options:)``.
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
        // Called directly (not through the registry), it reads AVIF only.
        guard ImageFormat.sniff(UnsafeRawBufferPointer(start: bytes, count: count)) == .avif else {
            throw failure(.header, "not AVIF: no ftyp box with an avif or avis brand")
        }
        guard let decoder = avifDecoderCreate() else { throw failure(.memory, "cannot create libavif's decoder") }
        defer { avifDecoderDestroy(decoder) }
        AVIFHeader.configure(decoder)
        var result = avifDecoderSetIOMemory(decoder, bytes, count)
        if result == AVIF_RESULT_OK { result = avifDecoderParse(decoder) }
        guard result == AVIF_RESULT_OK, let parsed = decoder.pointee.image else {
            // Cut short in its AV1 data: the boxes were whole, the pixels are not.
            if let box = AVIFHeader.overrunningBox(bytes, count: count), box.type == "mdat" {
                throw failure(.pixels, "cut short: the mdat box at \(box.offset) runs past the \(count) bytes present")
            }
            throw failure(
                result == AVIF_RESULT_OUT_OF_MEMORY ? .memory : .header, AVIFHeader.message(result, decoder, "header"))
        }
        let width = Int(parsed.pointee.width)
        let height = Int(parsed.pointee.height)
        guard width > 0, height > 0 else { throw failure(.header, "image is \(width)x\(height)") }
        // The AV1 frame's size: what is decoded (and counted), before `clap`.
        let decoded = PixelSize(width: width, height: height)
        // A still of a sequence: its first frame alone, counted alone.
        let frameCount = options.firstFrameOnly ? min(1, Int(decoder.pointee.imageCount)) : Int(decoder.pointee.imageCount)
        guard frameCount > 0 else { throw failure(.header, "the file holds no image") }
        guard frameCount <= options.maxFrames else {
            throw failure(.limits, "\(frameCount) frames, over the limit of \(options.maxFrames)", pixelLimit: true)
        }
        let framePixels = frameCount > 1 ? max(width * height, Self.minimumFramePixels) : width * height
        let (counted, overflow) = framePixels.multipliedReportingOverflow(by: frameCount)
        guard !overflow, counted <= options.maxPixels else {
            let frames = frameCount > 1 ? "\(frameCount) frames of " : ""
            throw failure(
                .limits,
                "\(frames)\(width)x\(height): \(overflow ? "too many" : "\(counted)") pixels, over the limit of \(options.maxPixels)",
                pixelLimit: true)
        }

        let orientation = AVIFHeader.orientation(parsed.pointee)
        let hasAlpha = decoder.pointee.alphaPresent != 0
        let colorSource = AVIFHeader.colorSource(parsed.pointee, bytes, count: count)
        let toneMapping = ColorConversion.toneMapping(for: colorSource, management: options.colorManagement)
        let transform =
            toneMapping == nil
            ? ColorConversion.transform(for: colorSource, layout: .rgba, management: options.colorManagement) : nil
        // MIAF's order: clap, then irot, then imir.
        let crop = AVIFHeader.cleanAperture(parsed.pointee)
        let stored = crop.map { PixelSize(width: Int($0.width), height: Int($0.height)) } ?? decoded
        let upright = orientation.swapsDimensions ? stored.transposed : stored
        // The stored size the upright natural size comes from.
        let natural = options.naturalSize(for: upright)
        let storedTarget = orientation.swapsDimensions ? natural.transposed : natural
        let resizes = options.targetSize != nil && storedTarget != stored
        guard storedTarget.width > 0, storedTarget.height > 0 else { throw failure(.pixels, "cannot scale to \(natural)") }
        // A matrix-shaper transform before a resize in linear light runs in
        // the resize (see JPEGDecoder): in floats, with only the small image
        // encoded.
        let resizeLight = transform?.linearSource(resizing: resizes, quality: options.resizeQuality)

        let bytesPerRow = stored.width * 4
        var mapper: HDRToneMapper?
        var frames: [ImageFrame] = []
        frames.reserveCapacity(frameCount)
        for index in 0..<frameCount {
            try options.checkStopped(format)
            let next = avifDecoderNextImage(decoder)
            guard next == AVIF_RESULT_OK, let image = decoder.pointee.image else {
                throw failure(
                    next == AVIF_RESULT_OUT_OF_MEMORY ? .memory : .pixels,
                    AVIFHeader.message(next, decoder, frameCount > 1 ? "frame \(index)" : "image data"))
            }
            guard Int(image.pointee.width) == width, Int(image.pointee.height) == height else {
                throw failure(.pixels, "frame \(index) is \(image.pointee.width)x\(image.pointee.height), not \(width)x\(height)")
            }
            let depth = Int(image.pointee.depth)
            if let toneMapping, mapper?.maxCode != (1 << depth) - 1 {
                mapper = HDRToneMapper(toneMapping, primaries: Int(image.pointee.colorPrimaries), bitDepth: depth)
            }
            let pixels = try PixelMemory.make(bytesPerRow * stored.height) { out throws(AsyncImageError) in
                try convert(
                    image, decoder, frame: index, crop: crop, mapper: mapper, into: out, bytesPerRow: bytesPerRow)
                if resizeLight == nil {
                    transform?.apply(out, width: stored.width, height: stored.height, bytesPerRow: bytesPerRow)
                }
            }
            let duration = frameCount > 1 ? AnimationTimeline.displayDuration(decoder.pointee.imageTiming.duration) : 0
            frames.append(ImageFrame(pixels: pixels, duration: duration))
        }

        var decodeInfo = DecodeInfo(scaleDenominator: 1, decodedSize: decoded)
        if frameCount > 1 || crop != nil { decodeInfo.countedPixels = counted }
        var image = Image(
            width: stored.width, height: stored.height, bytesPerRow: bytesPerRow, frames: frames, format: .avif,
            originalSize: upright, loopCount: frameCount > 1 ? 0 : nil, decodeInfo: decodeInfo,
            opacity: !hasAlpha ? .opaque : resizes ? .unmeasured : .unknown)
        if resizes {
            image = try ImageResizer.resize(
                image, to: storedTarget, quality: options.resizeQuality, light: resizeLight ?? .sRGB)
        }
        if orientation != .up { image = try OrientationTransform.apply(orientation, to: image) }
        return image
    }

    /// libavif's RGB of one decoded frame, into `out` (RGBA 8, rows
    /// `bytesPerRow` apart): the `crop` of it when there is one, tone mapped
    /// by `mapper` when there is one (the samples then asked for at the
    /// frame's own depth, so nothing is rounded to 8 bits before the mapping).
    private func convert(
        _ image: UnsafeMutablePointer<avifImage>, _ decoder: UnsafeMutablePointer<avifDecoder>, frame index: Int,
        crop: avifCropRect?, mapper: HDRToneMapper?, into out: UnsafeMutablePointer<UInt8>, bytesPerRow: Int
    ) throws(AsyncImageError) {
        let width = Int(image.pointee.width), height = Int(image.pointee.height)
        let depth = mapper == nil ? 8 : Int(image.pointee.depth)
        let sampleBytes = depth > 8 ? 2 : 1
        let rowBytes = width * 4 * sampleBytes
        // The whole frame straight into `out` when it is all that is needed.
        let direct = crop == nil && mapper == nil
        let buffer =
            direct
            ? UnsafeMutableRawPointer(out) : UnsafeMutableRawPointer.allocate(byteCount: rowBytes * height, alignment: 16)
        defer { if !direct { buffer.deallocate() } }
        var rgb = avifRGBImage()
        avifRGBImageSetDefaults(&rgb, image)
        rgb.format = AVIF_RGB_FORMAT_RGBA
        rgb.depth = UInt32(depth)
        rgb.alphaPremultiplied = 0
        rgb.pixels = buffer.assumingMemoryBound(to: UInt8.self)
        rgb.rowBytes = UInt32(direct ? bytesPerRow : rowBytes)
        let converted = avifImageYUVToRGB(image, &rgb)
        guard converted == AVIF_RESULT_OK else {
            throw failure(
                converted == AVIF_RESULT_OUT_OF_MEMORY ? .memory : .pixels,
                AVIFHeader.message(converted, decoder, "converting frame \(index) to RGBA"))
        }
        guard !direct else { return }
        let x = Int(crop?.x ?? 0), y = Int(crop?.y ?? 0)
        let keptWidth = Int(crop?.width ?? UInt32(width)), keptHeight = Int(crop?.height ?? UInt32(height))
        let first = y * rowBytes + x * 4 * sampleBytes
        if let mapper {
            if sampleBytes == 2 {
                let samples = (buffer + first).assumingMemoryBound(to: UInt16.self)
                mapper.map(
                    samples, channels: 4, inputRowSamples: width * 4, width: keptWidth, height: keptHeight, into: out,
                    bytesPerRow: bytesPerRow)
            } else {
                let samples = (buffer + first).assumingMemoryBound(to: UInt8.self)
                mapper.map(
                    samples, channels: 4, inputRowSamples: width * 4, width: keptWidth, height: keptHeight, into: out,
                    bytesPerRow: bytesPerRow)
            }
        } else {
            for row in 0..<keptHeight {
                (out + row * bytesPerRow).update(
                    from: (buffer + first + row * rowBytes).assumingMemoryBound(to: UInt8.self), count: keptWidth * 4)
            }
        }
    }
}
