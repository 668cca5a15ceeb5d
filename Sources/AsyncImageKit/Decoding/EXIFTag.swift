/// One EXIF tag found in a file: its number and the directory (IFD) it was
/// found in (numbers are only unique within a directory: GPS tag 1 is not
/// IFD0 tag 1).
struct EXIFTag: Sendable, Hashable, Codable, Comparable, CustomStringConvertible {
    /// The TIFF image file directory a tag belongs to.
    enum Directory: Int, Sendable, Hashable, Codable, Comparable, CaseIterable {
        /// IFD0, the main image's directory (orientation, make, model...).
        case image = 0
        /// The Exif sub-IFD (tag 0x8769 in IFD0): exposure, dates, lens.
        case exif = 1
        /// The GPS sub-IFD (tag 0x8825 in IFD0).
        case gps = 2

        /// Orders by raw value: image, exif, gps.
        static func < (lhs: Directory, rhs: Directory) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The directory the tag was found in.
    var directory: Directory
    /// The tag number, e.g. `0x0112` for the orientation.
    var number: UInt16

    /// Creates a tag identifier.
    init(_ directory: Directory, _ number: UInt16) {
        self.directory = directory
        self.number = number
    }

    /// Orders by directory, then number.
    static func < (lhs: EXIFTag, rhs: EXIFTag) -> Bool {
        (lhs.directory, lhs.number) < (rhs.directory, rhs.number)
    }

    /// `"image:0x0112"`, `"exif:0x829A"`, `"gps:0x0002"`.
    var description: String {
        let hex = String(number, radix: 16, uppercase: true)
        return "\(directory):0x" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// IFD0 0x010F: camera make.
    static let make = EXIFTag(.image, 0x010F)
    /// IFD0 0x0110: camera model.
    static let model = EXIFTag(.image, 0x0110)
    /// IFD0 0x0112: orientation.
    static let orientation = EXIFTag(.image, 0x0112)
    /// IFD0 0x0132: date and time the file was changed.
    static let dateTime = EXIFTag(.image, 0x0132)
    /// IFD0 0x8769: the offset of the Exif sub-IFD.
    static let exifDirectory = EXIFTag(.image, 0x8769)
    /// IFD0 0x8825: the offset of the GPS sub-IFD.
    static let gpsDirectory = EXIFTag(.image, 0x8825)
    /// Exif 0x829A: exposure time in seconds.
    static let exposureTime = EXIFTag(.exif, 0x829A)
    /// Exif 0x829D: F number.
    static let fNumber = EXIFTag(.exif, 0x829D)
    /// Exif 0x8827: ISO speed (photographic sensitivity).
    static let isoSpeed = EXIFTag(.exif, 0x8827)
    /// Exif 0x9003: date and time the photo was taken.
    static let dateTimeOriginal = EXIFTag(.exif, 0x9003)
    /// Exif 0x9011: the UTC offset of ``dateTimeOriginal``, e.g. `+02:00`.
    static let offsetTimeOriginal = EXIFTag(.exif, 0x9011)
    /// Exif 0x920A: focal length in millimetres.
    static let focalLength = EXIFTag(.exif, 0x920A)
    /// GPS 0x0001: `N` or `S`.
    static let gpsLatitudeRef = EXIFTag(.gps, 0x0001)
    /// GPS 0x0002: latitude as degrees, minutes, seconds.
    static let gpsLatitude = EXIFTag(.gps, 0x0002)
    /// GPS 0x0003: `E` or `W`.
    static let gpsLongitudeRef = EXIFTag(.gps, 0x0003)
    /// GPS 0x0004: longitude as degrees, minutes, seconds.
    static let gpsLongitude = EXIFTag(.gps, 0x0004)
    /// GPS 0x0005: 0 above sea level, 1 below.
    static let gpsAltitudeRef = EXIFTag(.gps, 0x0005)
    /// GPS 0x0006: altitude in metres.
    static let gpsAltitude = EXIFTag(.gps, 0x0006)
}

extension EXIFTag.Directory: CustomStringConvertible {
    /// `"image"`, `"exif"` or `"gps"`.
    var description: String {
        switch self {
        case .image: return "image"
        case .exif: return "exif"
        case .gps: return "gps"
        }
    }
}
