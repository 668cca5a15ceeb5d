/// Whether and how decoders convert an image's colours to sRGB (see
/// <doc:ColourManagement>).
///
/// On by default: an image tagged with an ICC profile (JPEG APP2
/// `ICC_PROFILE`, PNG `iCCP`, WebP `ICCP`, GIF `ICCRGBG1012`), or a PNG with
/// `gAMA`/`cHRM` chunks, is converted to sRGB with Little CMS while it is
/// decoded, so its pixels mean what an sRGB display shows. An AVIF or HEIC
/// whose `nclx` description, or a JPEG XL whose colour encoding, says PQ or
/// HLG (HDR) is tone mapped to SDR (``HDRToneMapping``). An image with no
/// colour information, and one whose profile is sRGB, is not touched.
///
/// ```swift
/// // Per loader: never convert (the pixels as stored, read as sRGB).
/// var configuration = AsyncImageLoader.Configuration()
/// configuration.colorManagement = .off
/// let loader = AsyncImageLoader(configuration: configuration)
/// // Per request: perceptual rendering for this one.
/// var request = ImageRequest(url: url)
/// request.colorManagement = ColorManagement(intent: .perceptual)
/// ```
///
/// Part of ``DecodingOptions`` and so of the memory cache's key
/// (``ImageCacheKey/processing``): images decoded under different colour
/// management are never mixed in a cache.
public struct ColorManagement: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Whether tagged images are converted to sRGB (default true).
    public var convertsToSRGB: Bool
    /// How colours outside sRGB's gamut are mapped (default
    /// ``ColorRenderingIntent/relativeColorimetric``).
    public var intent: ColorRenderingIntent
    /// Little CMS's black-point compensation: the source's black is mapped to
    /// sRGB's black, lifting or crushing the shadows (default false).
    public var usesBlackPointCompensation: Bool

    /// Conversion with the given intent (by default relative colorimetric
    /// without black-point compensation: the colours sRGB can show are kept
    /// exactly, the others clipped to its gamut, and the source's white
    /// becomes sRGB's white; this is what browsers do for tagged images, so
    /// an image looks here as it does on a web page).
    public init(
        convertsToSRGB: Bool = true, intent: ColorRenderingIntent = .relativeColorimetric,
        usesBlackPointCompensation: Bool = false
    ) {
        self.convertsToSRGB = convertsToSRGB
        self.intent = intent
        self.usesBlackPointCompensation = usesBlackPointCompensation
    }

    /// The default: convert to sRGB, relative colorimetric, no black-point compensation.
    public static let `default` = ColorManagement()

    /// No conversion: the samples as stored, read as sRGB (what the library
    /// did before 0.10.0), HDR ones too (no tone mapping: brought to 8 bits
    /// as they are). CMYK is still turned into RGB, with the simple formula
    /// used for untagged CMYK.
    public static let off = ColorManagement(convertsToSRGB: false)

    /// Its part of a cache key: empty for ``default``, else `colour-off` or
    /// e.g. `colour-perceptual-bpc`.
    var keyPart: String {
        guard self != .default else { return "" }
        guard convertsToSRGB else { return Self.keyPrefix + "off" }
        return Self.keyPrefix + intent.rawValue + (usesBlackPointCompensation ? "-bpc" : "")
    }

    /// How every ``keyPart`` but the default's begins.
    static let keyPrefix = "colour-"

    /// `default`, `off`, or the intent and the compensation.
    public var description: String {
        if self == .default { return "default" }
        return convertsToSRGB ? "\(intent)\(usesBlackPointCompensation ? " with BPC" : "")" : "off"
    }
}

/// The ICC rendering intent of a conversion (``ColorManagement/intent``).
///
/// Matrix-shaper profiles (Adobe RGB, ProPhoto, Display P3, most camera and
/// display profiles) have no perceptual or saturation tables: Little CMS then
/// renders those two intents colorimetrically.
public enum ColorRenderingIntent: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Compresses the whole source gamut into sRGB's (a profile's
    /// perceptual table, when it has one).
    case perceptual
    /// In-gamut colours exactly, out-of-gamut ones clipped, white point
    /// adapted (the default).
    case relativeColorimetric = "relative"
    /// Saturated colours kept saturated (a profile's saturation table).
    case saturation
    /// As relative colorimetric, without adapting the white point (a paper
    /// white stays tinted).
    case absoluteColorimetric = "absolute"

    /// Little CMS's `INTENT_*` value.
    var lcmsValue: UInt32 {
        switch self {
        case .perceptual: return 0
        case .relativeColorimetric: return 1
        case .saturation: return 2
        case .absoluteColorimetric: return 3
        }
    }

    /// The raw value: `"perceptual"`, `"relative"`, `"saturation"`, `"absolute"`.
    public var description: String { rawValue }
}
