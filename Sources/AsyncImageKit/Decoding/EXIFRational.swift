/// A TIFF `RATIONAL` or `SRATIONAL` value as stored in EXIF: a fraction such
/// as an exposure time of `1/250` s.
public struct EXIFRational: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The numerator (an unsigned RATIONAL's 32 bits fit, as does a signed one's).
    public var numerator: Int64
    /// The denominator; 0 in damaged files.
    public var denominator: Int64

    /// Creates a fraction.
    public init(numerator: Int64, denominator: Int64) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The fraction's value, or `nil` when the denominator is 0.
    public var value: Double? {
        denominator == 0 ? nil : Double(numerator) / Double(denominator)
    }

    /// `"numerator/denominator"`, e.g. `"1/250"`.
    public var description: String { "\(numerator)/\(denominator)" }
}
