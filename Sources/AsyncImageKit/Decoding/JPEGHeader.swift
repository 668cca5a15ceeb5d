import Foundation

/// What is read from a JPEG's markers before decoding: the frame header
/// (size, precision, components, SOFn kind), the EXIF block, an ICC profile's
/// presence and the JFIF and Adobe segments. A bounds-checked walk over the
/// marker segments up to the first scan; anything malformed simply ends the
/// walk with what was read so far, and is left for libjpeg to report.
struct JPEGHeader {
    /// Stored (not upright) size from the first SOFn marker.
    var size: PixelSize?
    /// The first SOFn marker (`0xC0`...`0xCF` but DHT, JPG and DAC).
    var startOfFrameMarker: UInt8?
    /// Bits per sample from the SOFn marker (8, 12, or 2-16 for lossless).
    var precision: Int?
    /// The component identifiers from the SOFn marker, in order.
    var componentIDs: [UInt8] = []
    /// The Adobe APP14 colour transform.
    var adobeTransform: Int?
    /// Whether a JFIF APP0 segment was seen.
    var hasJFIF = false
    /// Whether an APP2 `ICC_PROFILE` segment was seen.
    var hasICCProfile = false
    /// The APP2 `ICC_PROFILE` segments, in file order.
    var iccSegments: [ICCPayload.JPEGSegment] = []
    /// The first readable APP1 `Exif` block.
    var exif: EXIFProperties?
    /// Whether the walk reached the first scan (or the end of the image):
    /// nothing after it changes what was read.
    var reachedScan = false

    /// EXIF orientation, `.up` when absent or invalid.
    var orientation: ImageOrientation { exif?.orientation ?? .up }

    init(_ data: Data) {
        data.withUnsafeBytes { raw in
            self.parse(ByteView(bytes: raw))
        }
    }

    private mutating func parse(_ bytes: ByteView) {
        guard bytes.matches(0, [0xFF, 0xD8]) else { return }
        var offset = 2
        while let byte = bytes.u8(offset) {
            // Extraneous bytes between segments: libjpeg skips to the next 0xFF
            // (with a warning). Found with `memchr`: a hostile body of
            // megabytes of them costs milliseconds, not a byte-by-byte walk.
            guard byte == 0xFF else {
                offset = bytes.firstIndex(of: 0xFF, from: offset) ?? bytes.count
                continue
            }
            guard let marker = bytes.u8(offset + 1) else { return }
            if marker == 0xFF { offset += 1; continue }  // fill byte
            if marker == 0x00 || marker == 0x01 || (0xD0...0xD8).contains(marker) { offset += 2; continue }
            if marker == 0xD9 || marker == 0xDA {  // EOI, SOS
                reachedScan = true
                return
            }
            guard var length = bytes.u16(offset + 2).map(Int.init) else { return }
            // An APPn or COM length under 2: libjpeg skips nothing past the length bytes (and carries on).
            if length < 2, JPEGHeader.isSkippedWhenShort(marker) { length = 2 }
            guard length >= 2, let payload = bytes.slice(offset + 4, length - 2) else { return }
            switch marker {
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                if startOfFrameMarker == nil, payload.count >= 6, let height = payload.u16(1),
                    let width = payload.u16(3), let components = payload.u8(5)
                {
                    startOfFrameMarker = marker
                    precision = Int(payload.bytes[0])
                    size = PixelSize(width: Int(width), height: Int(height))
                    componentIDs = (0..<Int(components)).compactMap { payload.u8(6 + $0 * 3) }
                }
            case 0xE0:
                if payload.matches(0, Array(ascii: "JFIF\0")) { hasJFIF = true }
            case 0xE1:
                if exif == nil, payload.matches(0, Array(ascii: "Exif\0")) { exif = EXIFReader.read(payload) }
            case 0xE2:
                if payload.matches(0, Array(ascii: "ICC_PROFILE\0")) {
                    hasICCProfile = true
                    // Sequence number and count, then the profile's bytes (a
                    // segment too short for the two numbers counts as 0 of 0).
                    let body = payload.suffix(from: 14)
                    iccSegments.append(
                        ICCPayload.JPEGSegment(
                            sequence: payload.u8(12) ?? 0, count: payload.u8(13) ?? 0, data: Data(body.bytes)))
                }
            case 0xEE:
                if payload.matches(0, Array(ascii: "Adobe")), let transform = payload.u8(11) {
                    adobeTransform = Int(transform)
                }
            default:
                break
            }
            offset += 2 + length
        }
    }

    /// Whether libjpeg reads a `marker` segment whose length field is under
    /// 2 as an empty one: APPn and COM, whose payload it skips (`length - 2`
    /// bytes, when positive), where any other segment is an error.
    static func isSkippedWhenShort(_ marker: UInt8) -> Bool {
        (0xE0...0xEF).contains(marker) || marker == 0xFE
    }

    /// The embedded profile, joined from its segments; `nil` without one.
    var colorSource: ColorSource? {
        iccSegments.isEmpty ? nil : ICCPayload.joinJPEG(iccSegments)
    }

    /// How libjpeg's output is laid out for colour conversion: CMYK (Adobe
    /// inverted when an Adobe marker is present, as libjpeg reads it), grey,
    /// or RGB.
    var pixelLayout: ColorPixelLayout? {
        ColorPixelLayout(colorType, adobeInverted: adobeTransform != nil)
    }

    /// The colour model libjpeg infers (its `default_decompress_parms` rules).
    var colorType: ImageColorType {
        switch componentIDs.count {
        case 1:
            return .grayscale
        case 3:
            if hasJFIF { return .ycbcr }
            if let adobeTransform { return adobeTransform == 0 ? .rgb : .ycbcr }
            return componentIDs == [0x52, 0x47, 0x42] ? .rgb : .ycbcr  // "RGB"
        case 4:
            return adobeTransform == 2 ? .ycck : .cmyk
        default:
            return .unknown
        }
    }
}
