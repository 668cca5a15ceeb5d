import Foundation

/// What an image file says about itself, read from its headers without
/// decoding any pixels: format, stored and upright size, bit depth, colour
/// type, frames and loop count, the colour profile (its description and
/// colour space, read with Little CMS), interlacing, and EXIF metadata
/// (OGImage's `originalFileProperties`).
///
/// ```swift
/// if let properties = ImageFileProperties(data: data) {
///     print(properties.format, properties.uprightPixelSize, properties.colorType, properties.bitDepth)
///     if let exif = properties.exif { print(exif.model ?? "unknown camera", exif.dateTaken as Any) }
/// }
/// ```
///
/// Reading is cheap: a walk over the PNG chunk headers, the JPEG marker
/// segments up to the first scan, the GIF blocks (jumping over image
/// data), or the WebP RIFF chunks, with every offset and length checked, so no input can crash it. It
/// does not check that the pixel data is valid: a file can have properties
/// and still fail to decode.
///
/// ### Per format
/// - **PNG**: IHDR (size, bit depth, colour type, Adam7), `iCCP` (its
///   profile decompressed, bounded), `sRGB`, `gAMA`, `cHRM`, `tRNS`,
///   `eXIf` (its orientation, when the chunk precedes IDAT, is applied by
///   ``PNGDecoder``), APNG `acTL`.
/// - **JPEG**: the first SOFn (size, precision, components, process), JFIF
///   APP0, the first APP1 `Exif`, APP2 `ICC_PROFILE`, Adobe APP14 (its
///   transform tells YCCK from CMYK and RGB from YCbCr).
/// - **GIF**: the logical screen, the colour tables, image descriptors,
///   graphic control extensions, NETSCAPE2.0 and `ICCRGBG1012` application
///   extensions.
/// - **WebP**: libwebp's `WebPGetFeatures` (the `VP8`, `VP8L` or `VP8X`
///   canvas size, alpha, animation, compression) and the RIFF chunks as
///   libwebpdemux parses them: the `ANIM` loop count, the `ANMF` frames, the
///   `VP8X` ICC flag, the `EXIF` chunk. The colour type is
///   ``ImageColorType/ycbcr`` for lossy (VP8) and ``ImageColorType/rgb`` or
///   ``ImageColorType/rgba`` (by the alpha flag) for lossless and animated
///   files; the bit depth is 8. The EXIF orientation is reported in ``exif``
///   but not applied (``orientation`` is ``ImageOrientation/up``), as
///   ``WebPDecoder`` does not apply it.
/// - **AVIF**: the `ftyp`, `meta` and (for an image sequence) `moov` boxes
///   as libavif's `avifDecoderParse` reads them, without decoding AV1 data:
///   `ispe` (size), the bit depth (8, 10, 12), an alpha item, the frames of a
///   sequence (which loops forever: ``loopCount`` 0), the `colr` ICC profile,
///   the `Exif` item, and ``orientation`` from `irot` and `imir` (which
///   ``AVIFDecoder`` applies; the EXIF orientation is reported in ``exif``
///   only). The colour type is ``ImageColorType/ycbcr`` (``ImageColorType/rgba``
///   with alpha; ``ImageColorType/grayscale`` or
///   ``ImageColorType/grayscaleAlpha`` for monochrome, 4:0:0).
/// - **HEIC**: the primary image as libheif reads its boxes (no HEVC data
///   decoded): the size after `clap`, alpha, the luma bit depth, the `colr`
///   ICC profile, the `Exif` item; and ``orientation`` from the primary
///   item's `irot` and `imir` properties (read here, in their `ipma` order),
///   which ``HEIFDecoder`` applies (the EXIF orientation is reported in
///   ``exif`` only). Colour types as for AVIF; one frame. libheif reads no
///   file cut short: such a file has no properties.
/// - **JPEG XL**: libjxl's basic info (size as stored, ``orientation``,
///   bits per sample, alpha, animation and its loop count, stored as plays
///   and given as repeats as for WebP), the colour encoding (an ICC
///   profile, or an enumerated encoding other than sRGB described by libjxl
///   as one: ``hasICCProfile`` is then true; PQ or HLG with its
///   ``ColorProfileInfo/hdrToneMapping``), and an animation's frames
///   counted from their headers. The colour type is ``ImageColorType/rgb``
///   or ``ImageColorType/rgba`` (grey: ``ImageColorType/grayscale``,
///   ``ImageColorType/grayscaleAlpha``). An `Exif` box before the
///   codestream (where `cjxl` puts it) is read into ``exif``; its
///   orientation is the codestream's own.
public struct ImageFileProperties: Sendable, Hashable, Codable {
    /// The format, sniffed from the signature.
    public var format: ImageFormat

    /// The size as stored: PNG IHDR, the JPEG frame header, the GIF logical
    /// screen, the WebP canvas; for AVIF and HEIC after the `clap` crop
    /// (before `irot`).
    public var pixelSize: PixelSize

    /// The EXIF orientation the decoders apply: ``ImageOrientation/up``
    /// without EXIF, for GIF, and for a PNG whose `eXIf` chunk comes after
    /// the image data (browsers ignore those; ``exif`` still reports the
    /// chunk's own orientation tag).
    public var orientation: ImageOrientation

    /// Bits per sample as stored: PNG 1, 2, 4, 8 or 16 (for a palette image,
    /// bits per index); the JPEG frame's precision (8, or 12); AVIF 8, 10 or
    /// 12 (decoded to 8); for GIF, bits
    /// per palette index (1-8) of the global colour table, or of the first
    /// image's local table when there is no global one.
    public var bitDepth: Int

    /// How the file stores colour.
    public var colorType: ImageColorType

    /// The frames the decoders produce: the number of complete GIF image
    /// descriptors, the `ANMF` chunks of an animated WebP, the samples of an
    /// AVIF image sequence, 1 for PNG, JPEG
    /// and still WebP (an APNG's extra frames are not
    /// decoded; see ``animatedPNGFrameCount``).
    public var frameCount: Int

    /// How many times a GIF animation repeats (NETSCAPE2.0 extension; `0` =
    /// forever), `nil` when the file does not say (and for PNG and JPEG).
    /// For an animated WebP, whose `ANIM` chunk counts plays rather than
    /// repeats, the count converted to repeats
    /// (``WebPDecoder/loopCount(forPlayCount:)``: 0 stays 0, 1 play is `nil`,
    /// `n` plays are `n - 1`; the stored value is ``animatedWebPPlayCount``).
    /// The same value as ``Image/loopCount``.
    public var loopCount: Int?

    /// Whether the file embeds an ICC colour profile: PNG `iCCP`, JPEG APP2
    /// `ICC_PROFILE`, GIF `ICCRGBG1012`, WebP `ICCP` (flagged in `VP8X`).
    /// ``colorProfile`` says what it is and whether the decoders apply it.
    public var hasICCProfile: Bool

    /// The file's colour information: its ICC profile's description and
    /// colour space, or the PNG `sRGB`, `gAMA` and `cHRM` chunks; whether it
    /// is sRGB (the decoders then leave the pixels as they are); and a
    /// ``ColorProfileInfo/warning`` when the profile cannot be used (the
    /// image still decodes, unconverted). `nil` for a file with no colour
    /// information, whose samples are read as sRGB. See <doc:ColourManagement>.
    public var colorProfile: ColorProfileInfo?

    /// Whether the image is stored in passes: PNG Adam7, a progressive JPEG
    /// (SOF2, SOF6, SOF10, SOF14), a GIF whose first image is interlaced.
    public var isInterlaced: Bool

    /// Whether the file can hold transparent pixels: a PNG with an alpha
    /// channel or a `tRNS` chunk, a GIF with a transparent colour index, a
    /// WebP whose header says it has alpha. Always `false` for JPEG.
    public var hasTransparency: Bool

    /// The EXIF metadata of a JPEG APP1 `Exif` segment, a PNG `eXIf`
    /// chunk or a WebP `EXIF` chunk, `nil` when there is none or its TIFF header is unreadable.
    public var exif: EXIFProperties?

    /// The JPEG's frame and colour-transform details, `nil` for other formats.
    public var jpeg: JPEGCoding?

    /// The frames an APNG's `acTL` chunk declares (the decoders show only
    /// the default image), `nil` for a plain PNG and other formats.
    public var animatedPNGFrameCount: Int?

    /// The plays an APNG's `acTL` chunk declares (`0` = forever), `nil` without `acTL`.
    public var animatedPNGPlayCount: Int?

    /// How a WebP's image data is compressed (lossy VP8, lossless VP8L, or
    /// an animation's mixed frames), `nil` for other formats.
    public var webPCompression: WebPCompression?

    /// The loop count an animated WebP's `ANIM` chunk stores: the number of
    /// plays, `0` = forever (``loopCount`` gives it as repeats), `nil` for a
    /// still WebP and other formats.
    public var animatedWebPPlayCount: Int?

    /// The upright size: ``pixelSize`` with width and height exchanged when
    /// the ``orientation`` turns the image by 90°. The size of the decoded
    /// ``Image`` (its ``Image/originalSize``).
    public var uprightPixelSize: PixelSize {
        orientation.swapsDimensions ? pixelSize.transposed : pixelSize
    }

    /// Creates properties from known values (for tests and custom decoders).
    public init(
        format: ImageFormat, pixelSize: PixelSize, orientation: ImageOrientation = .up, bitDepth: Int = 8,
        colorType: ImageColorType, frameCount: Int = 1, loopCount: Int? = nil, hasICCProfile: Bool = false,
        isInterlaced: Bool = false, hasTransparency: Bool = false, exif: EXIFProperties? = nil,
        jpeg: JPEGCoding? = nil, animatedPNGFrameCount: Int? = nil, animatedPNGPlayCount: Int? = nil,
        webPCompression: WebPCompression? = nil, animatedWebPPlayCount: Int? = nil,
        colorProfile: ColorProfileInfo? = nil
    ) {
        self.colorProfile = colorProfile
        self.format = format
        self.pixelSize = pixelSize
        self.orientation = orientation
        self.bitDepth = bitDepth
        self.colorType = colorType
        self.frameCount = frameCount
        self.loopCount = loopCount
        self.hasICCProfile = hasICCProfile
        self.isInterlaced = isInterlaced
        self.hasTransparency = hasTransparency
        self.exif = exif
        self.jpeg = jpeg
        self.animatedPNGFrameCount = animatedPNGFrameCount
        self.animatedPNGPlayCount = animatedPNGPlayCount
        self.webPCompression = webPCompression
        self.animatedWebPPlayCount = animatedWebPPlayCount
    }

    /// Reads the properties of an encoded image from its headers.
    ///
    /// Returns `nil` when `data` is not PNG, JPEG, GIF or WebP (by its
    /// signature), or when the header that gives the size is missing or cut
    /// off (a PNG whose first chunk is not a whole IHDR, a JPEG with no frame
    /// header before its first scan, a GIF shorter than its logical screen
    /// descriptor, a WebP whose `VP8`, `VP8L` or `VP8X` header libwebp
    /// rejects). Damage after that header yields what was read before it.
    /// Never traps, whatever the input.
    public init?(data: Data) {
        self.init(data, requiringAllHeaders: false)
    }

    /// The properties of a file whose first bytes are `prefix` (the loader's
    /// header probe on a transfer's first bytes), once the prefix holds
    /// everything they are read from, so that they are the whole file's
    /// ``init(data:)`` gives: a JPEG up to its first scan (long before its
    /// pixels), a PNG up to `IEND`, a GIF up to its trailer (its frames are
    /// counted), an AVIF once libavif can parse its boxes, a HEIC once it is
    /// whole (libheif refuses a file cut short). Never for WebP: libwebp's reading of the headers depends on
    /// how many bytes it is given, even past the RIFF container's declared
    /// end, so only the whole body gives the whole file's properties. `nil`
    /// until then, and for what ``init(data:)`` refuses.
    ///
    /// `readsColorProfile`: false leaves ``colorProfile`` nil. Judging a
    /// profile (whether it is sRGB, whether Little CMS can use it) builds
    /// its transform, up to tens of milliseconds for a print profile: the
    /// transport thread reads the rest and leaves that to another thread.
    package init?(prefix: Data, readsColorProfile: Bool = true) {
        self.init(prefix, requiringAllHeaders: true, readsColorProfile: readsColorProfile)
    }

    private init?(_ data: Data, requiringAllHeaders: Bool, readsColorProfile: Bool = true) {
        func profile(_ source: ColorSource?, _ layout: ColorPixelLayout?) -> ColorProfileInfo? {
            guard readsColorProfile else { return nil }
            return source.map { ColorConversion.info(for: $0, layout: layout) }
        }
        switch ImageFormat.sniff(data) {
        case .png?:
            let header = PNGHeader(data)
            guard let size = header.size, !requiringAllHeaders || header.reachedEnd else { return nil }
            let colorType = header.colorType
            self.init(
                format: .png, pixelSize: size, orientation: header.orientation, bitDepth: header.bitDepth,
                colorType: colorType, hasICCProfile: header.hasICCProfile, isInterlaced: header.isInterlaced,
                hasTransparency: colorType == .rgba || colorType == .grayscaleAlpha || header.hasTransparencyChunk,
                exif: header.exif, animatedPNGFrameCount: header.animationFrameCount,
                animatedPNGPlayCount: header.animationPlayCount,
                colorProfile: profile(header.colorSource, ColorPixelLayout(colorType)))
        case .jpeg?:
            let header = JPEGHeader(data)
            guard let size = header.size, let marker = header.startOfFrameMarker, !requiringAllHeaders || header.reachedScan
            else { return nil }
            let coding = JPEGCoding(
                startOfFrameMarker: marker, componentCount: header.componentIDs.count,
                adobeTransform: header.adobeTransform, hasJFIF: header.hasJFIF)
            self.init(
                format: .jpeg, pixelSize: size, orientation: header.orientation, bitDepth: header.precision ?? 8,
                colorType: header.colorType, hasICCProfile: header.hasICCProfile,
                isInterlaced: coding.process == .progressive, exif: header.exif, jpeg: coding,
                colorProfile: profile(header.colorSource, header.pixelLayout))
        case .gif?:
            let header = GIFHeader(data)
            guard let size = header.size, !requiringAllHeaders || header.reachedTrailer else { return nil }
            self.init(
                format: .gif, pixelSize: size, bitDepth: header.globalPaletteBits ?? header.firstLocalPaletteBits ?? 8,
                colorType: .palette, frameCount: header.frameCount, loopCount: header.loopCount,
                hasICCProfile: header.hasICCProfile, isInterlaced: header.firstFrameInterlaced,
                hasTransparency: header.hasTransparency,
                colorProfile: profile(header.colorSource, .rgba))
        case .webp?:
            let header = WebPHeader(data)
            guard let size = header.size, !requiringAllHeaders else { return nil }
            let colorType: ImageColorType =
                header.compression == .lossy ? .ycbcr : header.hasAlpha ? .rgba : .rgb
            self.init(
                format: .webp, pixelSize: size, colorType: colorType, frameCount: header.frameCount,
                loopCount: header.playCount.flatMap(WebPDecoder.loopCount(forPlayCount:)),
                hasICCProfile: header.hasICCProfile, hasTransparency: header.hasAlpha, exif: header.exif,
                webPCompression: header.compression, animatedWebPPlayCount: header.playCount,
                colorProfile: profile(header.colorSource, .rgba))
        case .avif?:
            // The boxes that say everything come first in files as encoders
            // write them (`ftyp`, `meta`, `moov`, then `mdat`): once libavif
            // parses a prefix, it has read what it would read of the whole file.
            let header = AVIFHeader(data)
            guard let size = header.size else { return nil }
            let colorType: ImageColorType =
                header.isMonochrome
                ? (header.hasAlpha ? .grayscaleAlpha : .grayscale) : (header.hasAlpha ? .rgba : .ycbcr)
            self.init(
                format: .avif, pixelSize: size, orientation: header.orientation, bitDepth: header.bitDepth,
                colorType: colorType, frameCount: header.frameCount, loopCount: header.frameCount > 1 ? 0 : nil,
                hasICCProfile: header.colorSource?.isEmbeddedProfile ?? false, hasTransparency: header.hasAlpha, exif: header.exif,
                colorProfile: profile(header.colorSource, .rgba))
        case .heic?:
            // libheif reads nothing until the file is whole (see HEIFContext):
            // a prefix has properties once it is the whole body.
            let header = HEIFHeader(data)
            guard let size = header.size else { return nil }
            let colorType: ImageColorType =
                header.isMonochrome
                ? (header.hasAlpha ? .grayscaleAlpha : .grayscale) : (header.hasAlpha ? .rgba : .ycbcr)
            self.init(
                format: .heic, pixelSize: size, orientation: header.orientation, bitDepth: header.bitDepth,
                colorType: colorType, hasICCProfile: header.colorSource?.isEmbeddedProfile ?? false, hasTransparency: header.hasAlpha,
                exif: header.exif, colorProfile: profile(header.colorSource, .rgba))
        case .jxl?:
            // A still image's headers come first; an animation's frames are
            // counted to the last, so a prefix has them once it is whole.
            let header = JXLHeader(data)
            guard let size = header.size, !requiringAllHeaders || header.reachedEnd else { return nil }
            let colorType: ImageColorType =
                header.isGray ? (header.hasAlpha ? .grayscaleAlpha : .grayscale) : (header.hasAlpha ? .rgba : .rgb)
            self.init(
                format: .jxl, pixelSize: size, orientation: header.orientation, bitDepth: header.bitDepth,
                colorType: colorType, frameCount: header.frameCount,
                loopCount: header.isAnimated && header.frameCount > 1
                    ? header.playCount.flatMap(WebPDecoder.loopCount(forPlayCount:)) : nil,
                hasICCProfile: header.colorSource?.isEmbeddedProfile ?? false, hasTransparency: header.hasAlpha,
                exif: header.exif, colorProfile: profile(header.colorSource, .rgba))
        case nil:
            return nil
        }
    }
}
