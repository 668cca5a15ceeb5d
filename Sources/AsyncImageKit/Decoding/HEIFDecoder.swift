import CHEIF
import Foundation

/// Decodes HEIC (HEVC images in a HEIF container) with libheif, HEVC through
/// libde265: the primary image, grids of tiles (as cameras and phones write
/// them), alpha, 8, 10 and 12 bits.
///
/// **Pixels:** libheif converts to straight (not premultiplied) 8-bit RGBA,
/// 10- and 12-bit samples brought to 8 bits (an HDR image's are tone mapped
/// from their own depth); without an alpha image every pixel is opaque.
///
/// **Orientation:** the `clap`, `irot` and `imir` properties are applied by
/// libheif, in the file's order, as browsers and phones do; an `Exif` item's
/// orientation is reported by ``ImageFileProperties/exif`` but not applied
/// (in HEIF the properties are the image's orientation).
///
/// **Colour:** a `colr` ICC profile is applied with Little CMS, converting to
/// sRGB, unless ``DecodingOptions/colorManagement`` says not to (see
/// <doc:ColourManagement>); without one, an `nclx` colour description with
/// SDR code points is converted as the equivalent PNG `cHRM`/`gAMA` chunks
/// are, and one with the PQ or HLG transfer (HDR) is tone mapped to SDR as
/// ``HDRToneMapping`` says (its source peak from the `clli` or `mdcv`
/// property), from the samples at their own depth.
///
/// **Downsampled:** HEVC has no reduced-size decode: the image is decoded at
/// full size, then area-averaged to ``DecodingOptions/naturalSize(for:)``.
///
/// **Limits:** the size comes from the boxes, before any HEVC data is
/// decoded or any buffer allocated. Image sequences (`msf1`) are not read by
/// libheif 1.15: their primary (still) image is decoded.
///
/// **Strict:** libheif's strict decoding is on, so a file cut short or
/// damaged fails, at stage `header` when its boxes cannot be read, `pixels`
/// when its HEVC data cannot: a half-decoded image is never a success.
public struct HEIFDecoder: ImageDecoding {
    /// Creates a HEIC decoder.
    public init() {}

    /// ``ImageFormat/heic``.
    public var format: ImageFormat { .heic }

    /// Decodes the primary image of a HEIC file; see ``ImageDecoding/decode(_:options:)``.
    public func decode(_ data: Data, options: DecodingOptions) throws(AsyncImageError) -> Image {
        // Called directly (not through the registry), it reads HEIC only
        // (libheif would read AVIF too).
        guard ImageFormat.sniff(data) == .heic else {
            throw failure(.header, "not HEIC: no ftyp box with a HEIC or HEIF brand")
        }
        let decoded: Result<Image, AsyncImageError> = data.withBytes { bytes, count in
            let view = ByteView(bytes: UnsafeRawBufferPointer(start: bytes, count: count))
            // Before libheif decodes: it does not bound an overlay's or a
            // grid's canvas by the pixel limit. (Cycles of derived images are
            // refused by HEIFContext, for every use of libheif.)
            if let fault = ISOBox.derivedCanvasFault(view, maxPixels: options.maxPixels) {
                return .failure(self.failure(.limits, fault, pixelLimit: true))
            }
            let opened = HEIFContext.withPrimaryImage(bytes, count: count) { handle in
                Result { () throws(AsyncImageError) -> Image in try decode(handle, view, options: options) }
            }
            switch opened {
            case .success(let result): return result
            case .failure(let failure):
                // Cut short in its HEVC data: the boxes were whole, the pixels are not.
                if !failure.isMemory, let box = AVIFHeader.overrunningBox(bytes, count: count), box.type == "mdat" {
                    return .failure(self.failure(.pixels, "cut short: the mdat box at \(box.offset) runs past the \(count) bytes present"))
                }
                return .failure(
                    self.failure(
                        failure.isLimit ? .limits : failure.isMemory ? .memory : .header, "header: \(failure.text)",
                        pixelLimit: failure.isLimit))
            }
        }
        return try decoded.get()
    }

    private func decode(_ handle: OpaquePointer, _ view: ByteView, options: DecodingOptions) throws(AsyncImageError)
        -> Image
    {
        // The size after libheif's transforms: the upright size.
        let width = Int(heif_image_handle_get_width(handle))
        let height = Int(heif_image_handle_get_height(handle))
        guard width > 0, height > 0 else { throw failure(.header, "image is \(width)x\(height)") }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= options.maxPixels else {
            throw failure(
                .limits, "\(width)x\(height) is \(overflow ? "too many" : "\(pixels)") pixels, over the limit of \(options.maxPixels)",
                pixelLimit: true)
        }
        let hasAlpha = heif_image_handle_has_alpha_channel(handle) != 0
        let colorSource = HEIFHeader.colorSource(handle, view)
        let toneMapping = ColorConversion.toneMapping(for: colorSource, management: options.colorManagement)
        let transform =
            toneMapping == nil
            ? ColorConversion.transform(for: colorSource, layout: .rgba, management: options.colorManagement) : nil
        let full = PixelSize(width: width, height: height)
        let natural = options.naturalSize(for: full)
        let resizes = options.targetSize != nil && natural != full
        // A matrix-shaper transform before a resize in linear light runs in
        // the resize (see JPEGDecoder).
        let resizeLight = transform?.linearSource(resizing: resizes, quality: options.resizeQuality)
        // HDR above 8 bits: libheif's samples at their own depth (16-bit
        // words in this machine's order), tone mapped before anything is
        // rounded to 8 bits.
        let lumaBits = Int(heif_image_handle_get_luma_bits_per_pixel(handle))
        let wide = toneMapping != nil && lumaBits > 8
        let channels = hasAlpha ? 4 : 3
        #if _endian(big)
        let (words, wordsWithAlpha) = (heif_chroma_interleaved_RRGGBB_BE, heif_chroma_interleaved_RRGGBBAA_BE)
        #else
        let (words, wordsWithAlpha) = (heif_chroma_interleaved_RRGGBB_LE, heif_chroma_interleaved_RRGGBBAA_LE)
        #endif
        let chroma: heif_chroma = !wide ? heif_chroma_interleaved_RGBA : hasAlpha ? wordsWithAlpha : words

        guard let decodingOptions = heif_decoding_options_alloc() else {
            throw failure(.memory, "cannot allocate libheif's decoding options")
        }
        defer { heif_decoding_options_free(decodingOptions) }
        // Versions 2 and 3 of the structure (libheif 1.15 fills in version 4).
        decodingOptions.pointee.convert_hdr_to_8bit = wide ? 0 : 1
        decodingOptions.pointee.strict_decoding = 1
        var decoded: OpaquePointer?
        let error = heif_decode_image(handle, &decoded, heif_colorspace_RGB, chroma, decodingOptions)
        guard error.code == heif_error_Ok, let decoded else {
            let failure = HEIFContext.Failure(error)
            throw self.failure(
                failure.isLimit ? .limits : failure.isMemory ? .memory : .pixels, "image data: \(failure.text)",
                pixelLimit: failure.isLimit)
        }
        defer { heif_image_release(decoded) }
        var stride: Int32 = 0
        let depth = Int(heif_image_get_bits_per_pixel_range(decoded, heif_channel_interleaved))
        guard heif_image_get_width(decoded, heif_channel_interleaved) == width,
            heif_image_get_height(decoded, heif_channel_interleaved) == height,
            wide ? (9...16).contains(depth) : depth == 8,
            let plane = heif_image_get_plane_readonly(decoded, heif_channel_interleaved, &stride),
            Int(stride) >= width * (wide ? channels * 2 : 4)
        else {
            throw failure(.pixels, "libheif's RGB image is not \(width)x\(height) at \(wide ? "\(lumaBits)" : "8") bits")
        }
        let mapper = toneMapping.flatMap { mapping in
            let primaries: Int
            if case .nclx(let nclx)? = colorSource { primaries = nclx.primaries } else { primaries = 2 }
            return HDRToneMapper(mapping, primaries: primaries, bitDepth: depth)
        }

        let bytesPerRow = width * 4
        let frame = try PixelMemory.make(bytesPerRow * height) { out throws(AsyncImageError) in
            if let mapper, wide {
                let samples = UnsafeRawPointer(plane).assumingMemoryBound(to: UInt16.self)
                mapper.map(
                    samples, channels: channels, inputRowSamples: Int(stride) / 2, width: width, height: height,
                    into: out, bytesPerRow: bytesPerRow)
            } else if let mapper {
                mapper.map(
                    plane, channels: 4, inputRowSamples: Int(stride), width: width, height: height, into: out,
                    bytesPerRow: bytesPerRow)
            } else {
                for y in 0..<height {
                    (out + y * bytesPerRow).update(from: plane + y * Int(stride), count: bytesPerRow)
                }
                if resizeLight == nil { transform?.apply(out, width: width, height: height, bytesPerRow: bytesPerRow) }
            }
        }
        guard natural.width > 0, natural.height > 0 else { throw failure(.pixels, "cannot scale to \(natural)") }
        let image = Image(
            width: width, height: height, bytesPerRow: bytesPerRow, frames: [ImageFrame(pixels: frame, duration: 0)],
            format: .heic, originalSize: full, decodeInfo: DecodeInfo(scaleDenominator: 1, decodedSize: full),
            opacity: !hasAlpha ? .opaque : resizes ? .unmeasured : .unknown)
        return resizes
            ? try ImageResizer.resize(image, to: natural, quality: options.resizeQuality, light: resizeLight ?? .sRGB)
            : image
    }
}
