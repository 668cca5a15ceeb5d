/// What a file says about its colours (``ImageFileProperties/colorProfile``):
/// its ICC profile's description and colour space, or the PNG chunks that
/// stand in for one, whether that is sRGB, and why it cannot be used.
public struct ColorProfileInfo: Sendable, Hashable, Codable {
    /// Where the colour information comes from.
    public enum Source: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        /// An embedded ICC profile: JPEG APP2 `ICC_PROFILE` (joined across
        /// segments), PNG `iCCP`, WebP `ICCP`, GIF `ICCRGBG1012`, an AVIF or
        /// HEIC `colr` profile; for JPEG XL, its profile or libjxl's
        /// description of its enumerated colour encoding as one.
        case iccProfile
        /// A PNG `sRGB` chunk (and no `iCCP`).
        case pngSRGBChunk
        /// PNG `gAMA` and/or `cHRM` chunks (and no `iCCP` or `sRGB`): the
        /// decoder builds the equivalent profile.
        case pngGammaAndChromaticities
        /// An AVIF or HEIC `nclx` colour description (and no ICC profile):
        /// for SDR code points the decoder builds the equivalent profile;
        /// PQ and HLG are tone mapped (``ColorProfileInfo/hdrToneMapping``).
        case nclx

        /// The raw value.
        public var description: String { rawValue }
    }

    /// The colour space an ICC profile describes (its header's data colour space).
    public enum ColorSpace: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
        case rgb
        case gray
        case cmyk
        /// Any other (Lab, XYZ, multichannel...): not converted.
        case other

        /// The raw value.
        public var description: String { rawValue }
    }

    /// Where it comes from.
    public var source: Source
    /// The profile's description tag (`desc`, or a v4 profile's `mluc`), as
    /// Little CMS reads it; for PNG chunks, a description of them (such as
    /// `gAMA 0.55556`). `nil` when the profile cannot be read.
    public var description: String?
    /// The profile's colour space, `nil` when it cannot be read.
    public var colorSpace: ColorSpace?
    /// The size of the ICC profile in bytes (as embedded, after joining or
    /// decompressing), 0 for PNG chunks.
    public var byteCount: Int
    /// Whether it is sRGB (or a grey profile with sRGB's curve): converting
    /// would change no pixel by more than one level, so the decoders skip it
    /// and the image is the one an untagged file gives.
    public var isSRGB: Bool
    /// Why the decoders do not use it, `nil` when they do (or it is sRGB): a
    /// profile split over JPEG segments that do not add up, an `iCCP` that
    /// does not decompress, a profile Little CMS rejects, one whose colour
    /// space is not the image's. The image still decodes, unconverted.
    public var warning: String?
    /// For an HDR image (an AVIF or HEIC `nclx` description, or a JPEG XL
    /// colour encoding, with the PQ or HLG transfer):
    /// how the decoders tone map it to SDR sRGB, its source peak and where
    /// that comes from (see ``HDRToneMapping``); `nil` for SDR.
    public var hdrToneMapping: HDRToneMapping?

    /// Creates colour information from known values (for tests and custom decoders).
    /// - Parameters:
    ///   - source: where it comes from.
    ///   - description: the profile's description, or of the chunks or code points.
    ///   - colorSpace: the profile's colour space.
    ///   - byteCount: the ICC profile's size, 0 for chunks and code points.
    ///   - isSRGB: whether it is sRGB.
    ///   - warning: why the decoders do not use it.
    ///   - hdrToneMapping: how an HDR image is tone mapped.
    public init(
        source: Source, description: String?, colorSpace: ColorSpace?, byteCount: Int, isSRGB: Bool,
        warning: String? = nil, hdrToneMapping: HDRToneMapping? = nil
    ) {
        self.source = source
        self.description = description
        self.colorSpace = colorSpace
        self.byteCount = byteCount
        self.isSRGB = isSRGB
        self.warning = warning
        self.hdrToneMapping = hdrToneMapping
    }
}
