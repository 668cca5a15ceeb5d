import Foundation

/// Builds TIFF/EXIF blocks by hand, in either byte order: IFD0 and optional
/// Exif and GPS sub-IFDs (their pointer tags are added to IFD0), values of
/// more than 4 bytes in a data area after the directories.
public struct EXIFBuilder: Sendable {
    public enum Value: Sendable {
        case byte([UInt8])
        case ascii(String)
        case short([UInt16])
        case long([UInt32])
        case rational([(UInt32, UInt32)])
        case srational([(Int32, Int32)])

        public var type: UInt16 {
            switch self {
            case .byte: return 1
            case .ascii: return 2
            case .short: return 3
            case .long: return 4
            case .rational: return 5
            case .srational: return 10
            }
        }
    }

    public var bigEndian: Bool
    public var image: [(UInt16, Value)] = []
    public var exif: [(UInt16, Value)] = []
    public var gps: [(UInt16, Value)] = []

    public init(bigEndian: Bool, image: [(UInt16, Value)] = [], exif: [(UInt16, Value)] = [], gps: [(UInt16, Value)] = []) {
        self.bigEndian = bigEndian
        self.image = image
        self.exif = exif
        self.gps = gps
    }

    private func u16(_ v: UInt16) -> [UInt8] {
        bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)]
    }

    private func u32(_ v: UInt32) -> [UInt8] {
        let bytes = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
        return bigEndian ? bytes : bytes.reversed()
    }

    private func encode(_ value: Value) -> (count: UInt32, bytes: [UInt8]) {
        switch value {
        case .byte(let v): return (UInt32(v.count), v)
        case .ascii(let s): let b = Array(s.utf8) + [0]; return (UInt32(b.count), b)
        case .short(let v): return (UInt32(v.count), v.flatMap(u16))
        case .long(let v): return (UInt32(v.count), v.flatMap(u32))
        case .rational(let v): return (UInt32(v.count), v.flatMap { u32($0.0) + u32($0.1) })
        case .srational(let v):
            return (UInt32(v.count), v.flatMap { u32(UInt32(bitPattern: $0.0)) + u32(UInt32(bitPattern: $0.1)) })
        }
    }

    /// The TIFF bytes (starting `II` or `MM`).
    public func tiff() -> [UInt8] {
        var ifd0 = image
        let directories = [exif, gps]
        func size(_ entries: Int) -> Int { 2 + entries * 12 + 4 }
        // IFD0 gets pointer entries for the non-empty sub-IFDs.
        let pointerCount = directories.filter { !$0.isEmpty }.count
        let ifd0Size = size(ifd0.count + pointerCount)
        var offset = 8 + ifd0Size
        var subOffsets: [Int?] = []
        for directory in directories {
            if directory.isEmpty {
                subOffsets.append(nil)
            } else {
                subOffsets.append(offset)
                offset += size(directory.count)
            }
        }
        if let exifOffset = subOffsets[0] { ifd0.append((0x8769, .long([UInt32(exifOffset)]))) }
        if let gpsOffset = subOffsets[1] { ifd0.append((0x8825, .long([UInt32(gpsOffset)]))) }

        var dataArea: [UInt8] = []
        let dataStart = offset
        func directoryBytes(_ entries: [(UInt16, Value)]) -> [UInt8] {
            var out = u16(UInt16(entries.count))
            for (tag, value) in entries.sorted(by: { $0.0 < $1.0 }) {
                let (count, bytes) = encode(value)
                out += u16(tag) + u16(value.type) + u32(count)
                if bytes.count <= 4 {
                    out += bytes + [UInt8](repeating: 0, count: 4 - bytes.count)
                } else {
                    out += u32(UInt32(dataStart + dataArea.count))
                    dataArea += bytes
                    if dataArea.count % 2 == 1 { dataArea.append(0) }
                }
            }
            return out + u32(0)
        }
        var out: [UInt8] = bigEndian ? [0x4D, 0x4D] : [0x49, 0x49]
        out += u16(42) + u32(8)
        out += directoryBytes(ifd0)
        for directory in directories where !directory.isEmpty { out += directoryBytes(directory) }
        return out + dataArea
    }

    /// A JPEG APP1 segment's payload: `Exif\0\0` and the TIFF bytes.
    public func app1Payload() -> [UInt8] { Array("Exif".utf8) + [0, 0] + tiff() }

    /// `jpeg` with marker segments inserted right after SOI.
    public static func insertingSegments(_ segments: [(marker: UInt8, payload: [UInt8])], into jpeg: Data) -> Data {
        var out = Data(jpeg.prefix(2))
        for segment in segments {
            let length = segment.payload.count + 2
            out += [0xFF, segment.marker, UInt8(length >> 8), UInt8(length & 0xFF)] + segment.payload
        }
        return out + jpeg.dropFirst(2)
    }
}
