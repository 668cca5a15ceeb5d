import Foundation

/// What is read from a JPEG's markers before decoding: the frame size and the
/// EXIF orientation. A bounds-checked walk over the marker segments up to the
/// first scan; anything malformed simply yields `nil` / `.up` and is left for
/// libjpeg to report.
struct JPEGHeader {
    /// Stored (not upright) size from the first SOFn marker.
    var size: PixelSize?
    /// EXIF orientation from an APP1 `Exif` segment, `.up` when absent or invalid.
    var orientation: ImageOrientation = .up

    init(_ data: Data) {
        data.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            self.parse(bytes)
        }
    }

    private mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return }
        var offset = 2
        while offset + 4 <= bytes.count {
            guard bytes[offset] == 0xFF else { return }
            let marker = bytes[offset + 1]
            if marker == 0xFF { offset += 1; continue }  // fill byte
            if marker == 0x01 || (0xD0...0xD8).contains(marker) { offset += 2; continue }
            if marker == 0xD9 || marker == 0xDA { return }  // EOI, SOS
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= 2, offset + 2 + length <= bytes.count else { return }
            let payload = UnsafeBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 2 + length)])
            switch marker {
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                if size == nil, payload.count >= 5 {
                    let height = Int(payload[1]) << 8 | Int(payload[2])
                    let width = Int(payload[3]) << 8 | Int(payload[4])
                    size = PixelSize(width: width, height: height)
                }
            case 0xE1:
                if let value = Self.exifOrientation(payload) { orientation = value }
            default:
                break
            }
            offset += 2 + length
        }
    }

    /// The orientation tag (0x0112) of IFD0 in an APP1 `Exif\0\0` payload.
    static func exifOrientation(_ payload: UnsafeBufferPointer<UInt8>) -> ImageOrientation? {
        let exifHeader: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]  // "Exif\0\0"
        guard payload.count >= 14, zip(payload.prefix(6), exifHeader).allSatisfy({ $0 == $1 }) else { return nil }
        let tiff = UnsafeBufferPointer(rebasing: payload[6...])
        let littleEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= tiff.count else { return nil }
            return littleEndian
                ? Int(tiff[at]) | Int(tiff[at + 1]) << 8
                : Int(tiff[at]) << 8 | Int(tiff[at + 1])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return littleEndian ? a | b << 16 : a << 16 | b
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for index in 0..<min(count, 1000) {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry) else { return nil }
            guard tag == 0x0112 else { continue }
            guard u16(entry + 2) == 3, let value = u16(entry + 8) else { return nil }
            return ImageOrientation(rawValue: value)
        }
        return nil
    }
}
