import Foundation

/// What a file's EXIF metadata says, read from the TIFF structure in a
/// JPEG's APP1 `Exif` segment or a PNG's `eXIf` chunk: IFD0, the Exif
/// sub-IFD (0x8769) and the GPS sub-IFD (0x8825).
///
/// Every field is optional: a field is `nil` when its tag is absent, has an
/// unexpected type, or points outside the data. A damaged EXIF block yields
/// whatever could be read before the damage, never a crash.
///
/// ```swift
/// if let exif = ImageFileProperties(data: data)?.exif {
///     print(exif.make ?? "?", exif.model ?? "?", exif.exposureTime ?? "?")
///     if let latitude = exif.gpsLatitude, let longitude = exif.gpsLongitude { print(latitude, longitude) }
/// }
/// ```
public struct EXIFProperties: Sendable, Hashable, Codable {
    /// Whether the TIFF data is big-endian (`MM`) rather than little-endian (`II`).
    public var isBigEndian: Bool

    /// Every tag found in IFD0 and the Exif and GPS sub-IFDs, whether or not
    /// its value could be read.
    var tagsPresent: Set<EXIFTag>

    /// The orientation tag (0x0112), `nil` when absent or not 1-8.
    public var orientation: ImageOrientation?

    /// The camera maker (0x010F), trimmed.
    public var make: String?

    /// The camera model (0x0110), trimmed.
    public var model: String?

    /// When the photo was taken (Exif 0x9003), as stored: `"YYYY:MM:DD HH:MM:SS"`
    /// in the camera's local time.
    public var dateTimeOriginal: String?

    /// The UTC offset of ``dateTimeOriginal`` (Exif 0x9011), as stored, e.g. `"+02:00"`.
    public var offsetTimeOriginal: String?

    /// ``dateTimeOriginal`` as a date: at ``offsetTimeOriginal`` when the file
    /// gives one, otherwise read as UTC (EXIF dates carry no zone). `nil`
    /// when the text is not a valid date (cameras write `0000:00:00 00:00:00`
    /// when their clock is unset).
    public var dateTaken: Date?

    /// The exposure time in seconds (Exif 0x829A), e.g. `1/250`.
    public var exposureTime: EXIFRational?

    /// The F number (Exif 0x829D), e.g. `2.8`.
    public var fNumber: Double?

    /// The ISO speed (Exif 0x8827, the first value).
    public var isoSpeed: Int?

    /// The focal length in millimetres (Exif 0x920A).
    public var focalLength: Double?

    /// The latitude in signed decimal degrees (GPS 0x0002), negative south
    /// of the equator (GPS 0x0001 `S`); `nil` when absent or out of range.
    public var gpsLatitude: Double?

    /// The longitude in signed decimal degrees (GPS 0x0004), negative west
    /// of Greenwich (GPS 0x0003 `W`); `nil` when absent or out of range.
    public var gpsLongitude: Double?

    /// The altitude in metres (GPS 0x0006), negative below sea level (GPS 0x0005 = 1).
    public var gpsAltitude: Double?

    /// Creates properties with no fields set.
    public init(isBigEndian: Bool = false) {
        self.isBigEndian = isBigEndian
        self.tagsPresent = []
    }

    /// Reads the TIFF structure of an EXIF block: `data` starts with `II` or
    /// `MM` (a PNG `eXIf` chunk's payload), or with `Exif\0\0` followed by
    /// them (a JPEG APP1 payload).
    ///
    /// Returns `nil` when the TIFF header is invalid or IFD0 lies outside the
    /// data; otherwise whatever could be read. Never traps, whatever the input.
    public init?(tiff data: Data) {
        guard let parsed = data.withUnsafeBytes({ EXIFReader.read(ByteView(bytes: $0)) }) else { return nil }
        self = parsed
    }
}
