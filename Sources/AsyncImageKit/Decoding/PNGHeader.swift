import Foundation

/// What is read from a PNG's chunks without decompressing anything: IHDR,
/// `iCCP` (kept compressed), `sRGB`, `gAMA`, `cHRM`, the presence of
/// `tRNS`, the `eXIf` block and an APNG `acTL`.
///
/// A walk over the chunk headers (length, type, then a jump over the data
/// and CRC) to `IEND` or the end of the data; a chunk whose length reaches
/// past the end ends the walk (CRCs are not checked: that is libpng's job).
struct PNGHeader {
    /// IHDR width and height.
    var size: PixelSize?
    /// IHDR bit depth (1, 2, 4, 8 or 16).
    var bitDepth = 0
    /// IHDR colour type (0, 2, 3, 4 or 6).
    var colorTypeCode: UInt8 = 0
    /// IHDR interlace method 1 (Adam7).
    var isInterlaced = false
    /// Whether an `iCCP` chunk was seen.
    var hasICCProfile = false
    /// The first `iCCP` chunk's payload (name, method, compressed profile).
    var iCCPPayload: Data?
    /// Whether an `sRGB` chunk was seen.
    var hasSRGBChunk = false
    /// The first `gAMA` chunk's value (gamma x 100000), if 4 bytes long.
    var gammaValue: UInt32?
    /// The first `cHRM` chunk's eight values (x 100000), if 32 bytes long.
    var chromaticityValues: [UInt32]?
    /// Whether a `tRNS` chunk was seen.
    var hasTransparencyChunk = false
    /// The first readable `eXIf` chunk.
    var exif: EXIFProperties?
    /// Whether that chunk came before the first IDAT.
    var exifPrecedesImageData = false
    /// The `acTL` chunk's frame and play counts.
    var animationFrameCount: Int?
    var animationPlayCount: Int?
    /// Whether the walk reached `IEND`: nothing after it is read.
    var reachedEnd = false

    /// The EXIF orientation to apply: `.up` when absent or invalid, or when
    /// the `eXIf` chunk comes after the image data. PNG's third edition
    /// (W3C, 2025) puts eXIf before IDAT, and browsers ignore a late one's
    /// orientation (WPT css-images `image-orientation-exif-png-2`: "late EXIF
    /// data is ignored"), as this does; its metadata is still reported.
    var orientation: ImageOrientation { exifPrecedesImageData ? exif?.orientation ?? .up : .up }

    init(_ data: Data) {
        data.withUnsafeBytes { raw in
            self.parse(ByteView(bytes: raw))
        }
    }

    private mutating func parse(_ bytes: ByteView) {
        guard bytes.matches(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return }
        var offset = 8
        var first = true
        var seenImageData = false
        while let length = bytes.u32(offset), length <= 0x7FFF_FFFF, let type = bytes.u32(offset + 4) {
            guard let payload = bytes.slice(offset + 8, Int(length)) else { return }
            switch type {
            case 0x4948_4452:  // IHDR
                guard first, payload.count >= 13, let width = payload.u32(0), let height = payload.u32(4) else {
                    return
                }
                size = PixelSize(width: Int(width), height: Int(height))
                bitDepth = Int(payload.bytes[8])
                colorTypeCode = payload.bytes[9]
                isInterlaced = payload.bytes[12] == 1
            case 0x6943_4350:  // iCCP
                if !hasICCProfile { iCCPPayload = Data(payload.bytes) }
                hasICCProfile = true
            case 0x7352_4742:  // sRGB
                hasSRGBChunk = true
            case 0x6741_4D41:  // gAMA
                if gammaValue == nil, payload.count == 4 { gammaValue = payload.u32(0) }
            case 0x6348_524D:  // cHRM
                if chromaticityValues == nil, payload.count == 32 {
                    chromaticityValues = (0..<8).compactMap { payload.u32($0 * 4) }
                }
            case 0x7452_4E53:  // tRNS
                hasTransparencyChunk = true
            case 0x4944_4154:  // IDAT
                seenImageData = true
            case 0x6558_4966:  // eXIf
                if exif == nil {
                    exif = EXIFReader.read(payload)
                    exifPrecedesImageData = !seenImageData
                }
            case 0x6163_544C:  // acTL
                if let frames = payload.u32(0), let plays = payload.u32(4) {
                    animationFrameCount = Int(frames)
                    animationPlayCount = Int(plays)
                }
            case 0x4945_4E44:  // IEND
                reachedEnd = true
                return
            default:
                break
            }
            guard first == false || size != nil else { return }  // IHDR must come first
            first = false
            offset += 12 + Int(length)
        }
    }

    /// The colour information, in PNG's order of precedence (`iCCP`, `sRGB`,
    /// then `gAMA`/`cHRM`); `nil` without any.
    var colorSource: ColorSource? {
        ColorSource.png(
            iCCP: iCCPPayload, hasSRGB: hasSRGBChunk, gamma: gammaValue, chromaticities: chromaticityValues)
    }

    /// The colour type the IHDR names.
    var colorType: ImageColorType {
        switch colorTypeCode {
        case 0: return .grayscale
        case 2: return .rgb
        case 3: return .palette
        case 4: return .grayscaleAlpha
        case 6: return .rgba
        default: return .unknown
        }
    }
}
