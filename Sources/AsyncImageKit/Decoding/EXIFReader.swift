import Foundation

/// Reads the TIFF structure of an EXIF block into ``EXIFProperties``.
///
/// Offsets are relative to the TIFF header. Every offset and count is
/// checked against the data (a count of 2^31 simply does not fit), each
/// directory is read at most once (an IFD pointing at itself or at another
/// directory already read is ignored), and only IFD0 and its Exif and GPS
/// sub-IFDs are read, so the work is bounded by the data's size.
enum EXIFReader {
    /// One 12-byte directory entry.
    struct Entry {
        let tag: UInt16
        let type: UInt16
        let count: Int
        /// Where the value's bytes are (inline in the entry or at its offset),
        /// `nil` when they lie outside the data or the type is unknown.
        let valueOffset: Int?
    }

    static func read(_ data: ByteView) -> EXIFProperties? {
        var tiff = data
        if data.matches(0, [0x45, 0x78, 0x69, 0x66, 0x00]) {  // "Exif\0" and a pad byte
            tiff = data.suffix(from: 6)
        }
        let littleEndian: Bool
        if tiff.matches(0, [0x49, 0x49]) {
            littleEndian = true
        } else if tiff.matches(0, [0x4D, 0x4D]) {
            littleEndian = false
        } else {
            return nil
        }
        let reader = TIFF(bytes: tiff, littleEndian: littleEndian)
        guard reader.u16(2) == 42, let ifd0 = reader.u32(4).map(Int.init), reader.bytes.contains(ifd0, 2) else {
            return nil
        }
        var properties = EXIFProperties(isBigEndian: !littleEndian)
        var visited: Set<Int> = [ifd0]

        var exifOffset: Int?
        var gpsOffset: Int?
        for entry in reader.entries(at: ifd0) {
            properties.tagsPresent.insert(EXIFTag(.image, entry.tag))
            switch entry.tag {
            case 0x0112:
                properties.orientation = reader.unsigned(entry).flatMap { ImageOrientation(rawValue: $0) }
            case 0x010F: properties.make = reader.string(entry)
            case 0x0110: properties.model = reader.string(entry)
            case 0x8769: exifOffset = reader.unsigned(entry)
            case 0x8825: gpsOffset = reader.unsigned(entry)
            default: break
            }
        }

        if let offset = exifOffset, visited.insert(offset).inserted {
            for entry in reader.entries(at: offset) {
                properties.tagsPresent.insert(EXIFTag(.exif, entry.tag))
                switch entry.tag {
                case 0x829A: properties.exposureTime = reader.rational(entry)
                case 0x829D: properties.fNumber = reader.rational(entry)?.value
                case 0x8827: properties.isoSpeed = reader.unsigned(entry)
                case 0x9003: properties.dateTimeOriginal = reader.string(entry)
                case 0x9011: properties.offsetTimeOriginal = reader.string(entry)
                case 0x920A: properties.focalLength = reader.rational(entry)?.value
                default: break
                }
            }
        }
        if let text = properties.dateTimeOriginal {
            properties.dateTaken = EXIFDate.parse(text, offset: properties.offsetTimeOriginal)
        }

        if let offset = gpsOffset, visited.insert(offset).inserted {
            var latitudeRef: String?
            var longitudeRef: String?
            var altitudeRef: Int?
            var latitude: Double?
            var longitude: Double?
            var altitude: Double?
            for entry in reader.entries(at: offset) {
                properties.tagsPresent.insert(EXIFTag(.gps, entry.tag))
                switch entry.tag {
                case 0x0001: latitudeRef = reader.string(entry)
                case 0x0002: latitude = reader.degrees(entry)
                case 0x0003: longitudeRef = reader.string(entry)
                case 0x0004: longitude = reader.degrees(entry)
                case 0x0005: altitudeRef = reader.unsigned(entry)
                case 0x0006: altitude = reader.rational(entry)?.value
                default: break
                }
            }
            if let latitude, latitude.isFinite, latitude <= 90 {
                properties.gpsLatitude = latitudeRef?.uppercased().hasPrefix("S") == true ? -latitude : latitude
            }
            if let longitude, longitude.isFinite, longitude <= 180 {
                properties.gpsLongitude = longitudeRef?.uppercased().hasPrefix("W") == true ? -longitude : longitude
            }
            if let altitude, altitude.isFinite {
                properties.gpsAltitude = altitudeRef == 1 ? -altitude : altitude
            }
        }
        return properties
    }

    /// Typed reads from the TIFF data in its byte order.
    struct TIFF {
        let bytes: ByteView
        let littleEndian: Bool

        func u16(_ offset: Int) -> UInt16? { bytes.u16(offset, littleEndian: littleEndian) }
        func u32(_ offset: Int) -> UInt32? { bytes.u32(offset, littleEndian: littleEndian) }

        /// The size in bytes of one value of a TIFF type, `nil` for an unknown type.
        static func size(of type: UInt16) -> Int? {
            switch type {
            case 1, 2, 6, 7: return 1  // BYTE, ASCII, SBYTE, UNDEFINED
            case 3, 8: return 2  // SHORT, SSHORT
            case 4, 9, 11, 13: return 4  // LONG, SLONG, FLOAT, IFD
            case 5, 10, 12: return 8  // RATIONAL, SRATIONAL, DOUBLE
            default: return nil
            }
        }

        /// The entries of the directory at `offset` (as many as lie inside the data).
        func entries(at offset: Int) -> [Entry] {
            guard let declared = u16(offset) else { return [] }
            let fitting = max(0, (bytes.count - offset - 2) / 12)
            let count = min(Int(declared), fitting)
            var entries: [Entry] = []
            entries.reserveCapacity(count)
            for index in 0..<count {
                let at = offset + 2 + index * 12
                guard let tag = u16(at), let type = u16(at + 2), let count = u32(at + 4) else { break }
                var valueOffset: Int?
                if let size = Self.size(of: type) {
                    let total = Int(count) * size  // at most 2^32 * 8: no overflow
                    if total <= 4 {
                        valueOffset = at + 8
                    } else if let pointer = u32(at + 8), bytes.contains(Int(pointer), total) {
                        valueOffset = Int(pointer)
                    }
                }
                entries.append(Entry(tag: tag, type: type, count: Int(count), valueOffset: valueOffset))
            }
            return entries
        }

        /// The first value of a BYTE, SHORT or LONG entry.
        func unsigned(_ entry: Entry) -> Int? {
            guard entry.count >= 1, let at = entry.valueOffset else { return nil }
            switch entry.type {
            case 1, 7: return bytes.u8(at).map(Int.init)
            case 3: return u16(at).map(Int.init)
            case 4, 13: return u32(at).map(Int.init)
            default: return nil
            }
        }

        /// Value `index` of a RATIONAL or SRATIONAL entry.
        func rational(_ entry: Entry, index: Int = 0) -> EXIFRational? {
            guard index < entry.count, let base = entry.valueOffset else { return nil }
            let at = base + index * 8
            guard let numerator = u32(at), let denominator = u32(at + 4) else { return nil }
            switch entry.type {
            case 5: return EXIFRational(numerator: Int64(numerator), denominator: Int64(denominator))
            case 10:
                return EXIFRational(
                    numerator: Int64(Int32(bitPattern: numerator)), denominator: Int64(Int32(bitPattern: denominator)))
            default: return nil
            }
        }

        /// Degrees, minutes and seconds (1 to 3 rationals) as decimal degrees.
        func degrees(_ entry: Entry) -> Double? {
            var total = 0.0
            for (index, unit) in [1.0, 60.0, 3600.0].enumerated() where index < entry.count {
                guard let value = rational(entry, index: index)?.value, value >= 0 else { return nil }
                total += value / unit
            }
            return entry.count >= 1 ? total : nil
        }

        /// An ASCII entry (or BYTE/UNDEFINED holding text) up to its first NUL,
        /// trimmed; `nil` when empty.
        func string(_ entry: Entry) -> String? {
            guard [1, 2, 7].contains(entry.type), let at = entry.valueOffset,
                let raw = bytes.slice(at, entry.count)
            else { return nil }
            let text = String(decoding: raw.bytes.prefix { $0 != 0 }, as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : text
        }
    }
}
