/// One EXIF tag found in a file: its number and the directory (IFD) it was
/// found in (numbers are only unique within a directory: GPS tag 1 is not
/// IFD0 tag 1).
public struct EXIFTag: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The TIFF image file directory a tag belongs to.
    public enum Directory: Int, Sendable, Hashable, Codable, Comparable, CaseIterable {
        /// IFD0, the main image's directory (orientation, make, model...).
        case image = 0
        /// The Exif sub-IFD (tag 0x8769 in IFD0): exposure, dates, lens.
        case exif = 1
        /// The GPS sub-IFD (tag 0x8825 in IFD0).
        case gps = 2

        /// Orders by raw value: image, exif, gps.
        public static func < (lhs: Directory, rhs: Directory) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The directory the tag was found in.
    public var directory: Directory
    /// The tag number, e.g. `0x0112` for the orientation.
    public var number: UInt16

    /// Creates a tag identifier.
    public init(_ directory: Directory, _ number: UInt16) {
        self.directory = directory
        self.number = number
    }

    /// Orders by directory, then number.
    public static func < (lhs: EXIFTag, rhs: EXIFTag) -> Bool {
        (lhs.directory, lhs.number) < (rhs.directory, rhs.number)
    }

    /// `"image:0x0112"`, `"exif:0x829A"`, `"gps:0x0002"`.
    public var description: String {
        let hex = String(number, radix: 16, uppercase: true)
        return "\(directory):0x" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// IFD0 0x010F: camera make.
    public static let make = EXIFTag(.image, 0x010F)
    /// IFD0 0x0110: camera model.
    public static let model = EXIFTag(.image, 0x0110)
    /// IFD0 0x0112: orientation.
    public static let orientation = EXIFTag(.image, 0x0112)
    /// IFD0 0x0132: date and time the file was changed.
    public static let dateTime = EXIFTag(.image, 0x0132)
    /// IFD0 0x8769: the offset of the Exif sub-IFD.
    public static let exifDirectory = EXIFTag(.image, 0x8769)
    /// IFD0 0x8825: the offset of the GPS sub-IFD.
    public static let gpsDirectory = EXIFTag(.image, 0x8825)
    /// Exif 0x829A: exposure time in seconds.
    public static let exposureTime = EXIFTag(.exif, 0x829A)
    /// Exif 0x829D: F number.
    public static let fNumber = EXIFTag(.exif, 0x829D)
    /// Exif 0x8827: ISO speed (photographic sensitivity).
    public static let isoSpeed = EXIFTag(.exif, 0x8827)
    /// Exif 0x9003: date and time the photo was taken.
    public static let dateTimeOriginal = EXIFTag(.exif, 0x9003)
    /// Exif 0x9011: the UTC offset of ``dateTimeOriginal``, e.g. `+02:00`.
    public static let offsetTimeOriginal = EXIFTag(.exif, 0x9011)
    /// Exif 0x920A: focal length in millimetres.
    public static let focalLength = EXIFTag(.exif, 0x920A)
    /// GPS 0x0001: `N` or `S`.
    public static let gpsLatitudeRef = EXIFTag(.gps, 0x0001)
    /// GPS 0x0002: latitude as degrees, minutes, seconds.
    public static let gpsLatitude = EXIFTag(.gps, 0x0002)
    /// GPS 0x0003: `E` or `W`.
    public static let gpsLongitudeRef = EXIFTag(.gps, 0x0003)
    /// GPS 0x0004: longitude as degrees, minutes, seconds.
    public static let gpsLongitude = EXIFTag(.gps, 0x0004)
    /// GPS 0x0005: 0 above sea level, 1 below.
    public static let gpsAltitudeRef = EXIFTag(.gps, 0x0005)
    /// GPS 0x0006: altitude in metres.
    public static let gpsAltitude = EXIFTag(.gps, 0x0006)
}

extension EXIFTag.Directory: CustomStringConvertible {
    /// `"image"`, `"exif"` or `"gps"`.
    public var description: String {
        switch self {
        case .image: return "image"
        case .exif: return "exif"
        case .gps: return "gps"
        }
    }
}
