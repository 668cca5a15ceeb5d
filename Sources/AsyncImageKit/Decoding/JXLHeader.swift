import CJXL
import Foundation

/// What a JPEG XL file's headers say, for ``ImageFileProperties``: libjxl's
/// basic info (size as stored, orientation, bit depth, alpha, animation and
/// its loop count), the colour encoding (its ICC profile, or libjxl's
/// rendering of an enumerated encoding as one), and for an animation its
/// frames, counted from their headers without decoding any pixels.
struct JXLHeader {
    /// The size as stored (before the orientation), `nil` when the basic
    /// info is missing, cut off or invalid.
    var size: PixelSize?
    var orientation: ImageOrientation = .up
    var bitDepth = 8
    var hasAlpha = false
    var isGray = false
    var isAnimated = false
    /// The loop count as stored (0 = forever), for an animation.
    var playCount: Int?
    /// The frames shown (1 for a still image; for an animation, those whose
    /// headers were read).
    var frameCount = 1
    /// Whether every header was read: for an animation, up to its last frame.
    var reachedEnd = false
    var colorSource: ColorSource?
    /// Whether the encoded colour space is sRGB (an enumerated encoding).
    var isSRGB = false
    /// The container's `Exif` box (Brotli-compressed `brob` ones too), when
    /// it comes before the (first) frame header, where `cjxl` writes it.
    var exif: EXIFProperties?

    /// The most bytes an `Exif` box is read into.
    static let maxExifSize = 1 << 20

    init(_ data: Data) {
        data.withBytes { bytes, count in read(bytes, count: count) }
    }

    private mutating func read(_ bytes: UnsafePointer<UInt8>, count: Int) {
        guard ImageFormat.sniff(UnsafeRawBufferPointer(start: bytes, count: count)) == .jxl,
            let decoder = JxlDecoderCreate(nil)
        else { return }
        defer { JxlDecoderDestroy(decoder) }
        let events =
            JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue | JXL_DEC_BOX.rawValue
        // The orientation and size as stored: without this libjxl reports the
        // upright size and no orientation (what it decodes to).
        guard JxlDecoderSubscribeEvents(decoder, Int32(events)) == JXL_DEC_SUCCESS,
            JxlDecoderSetKeepOrientation(decoder, 1) == JXL_DEC_SUCCESS,
            JxlDecoderSetDecompressBoxes(decoder, 1) == JXL_DEC_SUCCESS,
            JxlDecoderSetInput(decoder, bytes, count) == JXL_DEC_SUCCESS
        else { return }
        JxlDecoderCloseInput(decoder)
        // An Exif box's contents are whole at the next box event (or the end).
        var exifBuffer: UnsafeMutableRawBufferPointer?
        var foundExif: EXIFProperties?
        func finishExif() {
            guard let buffer = exifBuffer else { return }
            let unused = min(JxlDecoderReleaseBoxBuffer(decoder), buffer.count)
            // 4 bytes: the offset of the TIFF header; then the EXIF data.
            let view = ByteView(bytes: UnsafeRawBufferPointer(rebasing: buffer[0..<(buffer.count - unused)]))
            if let offset = view.u32(0), Int(offset) <= view.count - 4 {
                foundExif = EXIFReader.read(view.suffix(from: 4 + Int(offset)))
            }
            buffer.deallocate()
            exifBuffer = nil
        }
        defer {
            finishExif()
            exif = foundExif
        }
        var frames = 0
        var intensityTarget: Float = 0
        while true {
            let status = JxlDecoderProcessInput(decoder)
            switch status {
            case JXL_DEC_BOX:
                finishExif()
                var type: (CChar, CChar, CChar, CChar) = (0, 0, 0, 0)
                let typed = withUnsafeMutableBytes(of: &type) { raw in
                    JxlDecoderGetBoxType(decoder, raw.baseAddress!.assumingMemoryBound(to: CChar.self), 1)
                }
                var size: UInt64 = 0
                guard typed == JXL_DEC_SUCCESS, foundExif == nil,
                    type == (CChar(UInt8(ascii: "E")), CChar(UInt8(ascii: "x")), CChar(UInt8(ascii: "i")), CChar(UInt8(ascii: "f"))),
                    JxlDecoderGetBoxSizeRaw(decoder, &size) == JXL_DEC_SUCCESS
                else { continue }
                // A compressed box inflates: room for more than its raw size, bounded.
                let capacity = Int(min(UInt64(Self.maxExifSize), max(64, size * 4)))
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 1)
                exifBuffer = buffer
                if JxlDecoderSetBoxBuffer(decoder, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), capacity)
                    != JXL_DEC_SUCCESS
                {
                    buffer.deallocate()
                    exifBuffer = nil
                }
            case JXL_DEC_BOX_NEED_MORE_OUTPUT:
                // Over the bound: skipped.
                if let buffer = exifBuffer {
                    _ = JxlDecoderReleaseBoxBuffer(decoder)
                    buffer.deallocate()
                    exifBuffer = nil
                }
            case JXL_DEC_BASIC_INFO:
                var info = JxlBasicInfo()
                guard JxlDecoderGetBasicInfo(decoder, &info) == JXL_DEC_SUCCESS, info.xsize > 0, info.ysize > 0 else {
                    return
                }
                size = PixelSize(width: Int(info.xsize), height: Int(info.ysize))
                orientation = ImageOrientation(rawValue: Int(info.orientation.rawValue)) ?? .up
                bitDepth = Int(info.bits_per_sample)
                hasAlpha = info.alpha_bits > 0
                isGray = info.num_color_channels == 1
                isAnimated = info.have_animation != 0
                if isAnimated { playCount = Int(info.animation.num_loops) }
                intensityTarget = info.intensity_target
            case JXL_DEC_COLOR_ENCODING:
                (colorSource, isSRGB) = JXLColor.source(decoder, intensityTarget: intensityTarget)
            case JXL_DEC_FRAME:
                // A still image's headers end at its frame header (after
                // the boxes before it: `cjxl` puts a JPEG's Exif there).
                if !isAnimated {
                    reachedEnd = true
                    return
                }
                var header = JxlFrameHeader()
                if JxlDecoderGetFrameHeader(decoder, &header) == JXL_DEC_SUCCESS { frames += 1 }
                frameCount = max(1, frames)
                // Bounded, whatever a file claims.
                if frames > 1 << 20 { return }
            case JXL_DEC_SUCCESS:
                reachedEnd = true
                return
            default:
                // An error, or the end of the bytes before the end of the headers.
                return
            }
        }
    }
}

/// The colour of a decoder's output (`JXL_COLOR_PROFILE_TARGET_DATA`), and
/// of an image whose own encoding is PQ or HLG.
enum JXLColor {
    /// The colour the header probe reports: for an image whose own encoding
    /// is PQ or HLG (``hdr(_:intensityTarget:)``), an
    /// ``ColorSource/hdrEncoding(_:)`` with libjxl's ICC profile for it;
    /// for any other, its output's (``output(_:)``).
    static func source(_ decoder: OpaquePointer, intensityTarget: Float) -> (ColorSource?, isSRGB: Bool) {
        if var hdr = hdr(decoder, intensityTarget: intensityTarget)?.color {
            if case .icc(let profile)? = profile(decoder, JXL_COLOR_PROFILE_TARGET_ORIGINAL) { hdr.profile = profile }
            return (.hdrEncoding(hdr), false)
        }
        return output(decoder)
    }

    /// The output's ICC profile, `nil` when it is sRGB (or cannot be had);
    /// and whether it is sRGB as an enumerated encoding.
    static func output(_ decoder: OpaquePointer) -> (ColorSource?, isSRGB: Bool) {
        var encoding = JxlColorEncoding()
        if JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &encoding) == JXL_DEC_SUCCESS,
            isSRGB(encoding)
        {
            return (nil, true)
        }
        return (profile(decoder, JXL_COLOR_PROFILE_TARGET_DATA), false)
    }

    /// libjxl's ICC profile for `target`, `nil` when it has none (or one
    /// over ``ICCPayload/maxProfileSize``).
    private static func profile(_ decoder: OpaquePointer, _ target: JxlColorProfileTarget) -> ColorSource? {
        var size = 0
        guard JxlDecoderGetICCProfileSize(decoder, nil, target, &size) == JXL_DEC_SUCCESS,
            size > 0, size <= ICCPayload.maxProfileSize
        else { return nil }
        var profile = Data(count: size)
        let status = profile.withUnsafeMutableBytes {
            JxlDecoderGetColorAsICCProfile(
                decoder, nil, target, $0.baseAddress!.assumingMemoryBound(to: UInt8.self), size)
        }
        return status == JXL_DEC_SUCCESS ? .icc(profile) : .malformed("libjxl cannot give the ICC profile")
    }

    /// sRGB (or sRGB grey): D65, sRGB primaries, the sRGB transfer curve.
    static func isSRGB(_ encoding: JxlColorEncoding) -> Bool {
        (encoding.color_space == JXL_COLOR_SPACE_RGB || encoding.color_space == JXL_COLOR_SPACE_GRAY)
            && encoding.white_point == JXL_WHITE_POINT_D65
            && (encoding.color_space == JXL_COLOR_SPACE_GRAY || encoding.primaries == JXL_PRIMARIES_SRGB)
            && encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB
    }

    /// The image's own colour encoding (`JXL_COLOR_PROFILE_TARGET_ORIGINAL`)
    /// when it is RGB or grey with the PQ or HLG transfer and primaries the
    /// tone mapping makes a matrix for: the encoding, and its tone mapping
    /// (PQ's source peak from the codestream's `intensityTarget`, see
    /// ``HDRToneMapping/PeakSource/intensityTarget``). `nil` for an ICC
    /// profile (which has no enumerated encoding) and any other transfer.
    static func hdr(_ decoder: OpaquePointer, intensityTarget: Float)
        -> (encoding: JxlColorEncoding, color: HDREncoding)?
    {
        var encoding = JxlColorEncoding()
        guard JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &encoding)
            == JXL_DEC_SUCCESS,
            encoding.transfer_function == JXL_TRANSFER_FUNCTION_PQ
                || encoding.transfer_function == JXL_TRANSFER_FUNCTION_HLG,
            let chromaticities = chromaticities(encoding), PrimariesMatrix.isUsable(chromaticities),
            let mapping = HDRToneMapping(
                transferCode: Int(encoding.transfer_function.rawValue), intensityTarget: intensityTarget)
        else { return nil }
        return (encoding, HDREncoding(mapping: mapping, chromaticities: chromaticities))
    }

    /// White x, y, then red, green and blue x, y: the enumerated ones from
    /// H.273's table (``NCLXColor/chromaticities``; JPEG XL's P3 primaries
    /// with its own white point), custom ones as given. Grey has sRGB's
    /// primaries (any do: its R, G and B are equal). `nil` for XYB or an
    /// unknown colour space.
    static func chromaticities(_ encoding: JxlColorEncoding) -> [Double]? {
        let white: [Double]
        switch encoding.white_point {
        case JXL_WHITE_POINT_D65: white = Array(NCLXColor.chromaticities[1]![0..<2])
        case JXL_WHITE_POINT_DCI: white = Array(NCLXColor.chromaticities[11]![0..<2])
        case JXL_WHITE_POINT_E: white = [1.0 / 3, 1.0 / 3]
        case JXL_WHITE_POINT_CUSTOM: white = [encoding.white_point_xy.0, encoding.white_point_xy.1]
        default: return nil
        }
        let primaries: [Double]
        switch (encoding.color_space, encoding.primaries) {
        case (JXL_COLOR_SPACE_GRAY, _), (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_SRGB):
            primaries = Array(NCLXColor.chromaticities[1]![2...])
        case (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_2100): primaries = Array(NCLXColor.chromaticities[9]![2...])
        case (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_P3): primaries = Array(NCLXColor.chromaticities[12]![2...])
        case (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_CUSTOM):
            primaries = [
                encoding.primaries_red_xy.0, encoding.primaries_red_xy.1, encoding.primaries_green_xy.0,
                encoding.primaries_green_xy.1, encoding.primaries_blue_xy.0, encoding.primaries_blue_xy.1,
            ]
        default: return nil
        }
        return white + primaries
    }

    /// Whether libjxl outputs `encoding` (`JXL_COLOR_PROFILE_TARGET_DATA`):
    /// for an XYB (lossy) image, after asking for it as the preferred
    /// profile (relative intent); an image in its own colour space is
    /// output in it whatever is asked.
    static func outputs(_ encoding: JxlColorEncoding, _ decoder: OpaquePointer, asking: Bool) -> Bool {
        var wanted = encoding
        wanted.rendering_intent = JXL_RENDERING_INTENT_RELATIVE
        if asking, JxlDecoderSetPreferredColorProfile(decoder, &wanted) != JXL_DEC_SUCCESS { return false }
        var output = JxlColorEncoding()
        guard JxlDecoderGetColorAsEncodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &output)
            == JXL_DEC_SUCCESS
        else { return false }
        return output.color_space == encoding.color_space && output.transfer_function == encoding.transfer_function
            && chromaticities(output) == chromaticities(encoding)
    }
}
