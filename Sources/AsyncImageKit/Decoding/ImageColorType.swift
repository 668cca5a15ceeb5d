/// How a file stores colour, as its header says (not the decoded pixels,
/// which are always RGBA).
public enum ImageColorType: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// One gray channel: PNG colour type 0, a 1-component JPEG.
    case grayscale
    /// Gray and alpha: PNG colour type 4.
    case grayscaleAlpha
    /// Red, green, blue: PNG colour type 2, a JPEG with an Adobe marker
    /// whose transform is 0 or components named `R`, `G`, `B`.
    case rgb
    /// Red, green, blue, alpha: PNG colour type 6.
    case rgba
    /// Indices into a palette: PNG colour type 3, every GIF.
    case palette
    /// Luma and chroma: the usual 3-component JPEG.
    case ycbcr
    /// Four inks: a 4-component JPEG without an Adobe transform of 2.
    case cmyk
    /// YCbCr plus black: a 4-component JPEG with an Adobe transform of 2.
    case ycck
    /// Anything else (a JPEG of 2 or more than 4 components, an unknown PNG colour type).
    case unknown

    /// The raw value: `"grayscale"`, `"rgba"`, `"ycbcr"`...
    public var description: String { rawValue }
}
