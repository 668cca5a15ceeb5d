import CAVIF
import Foundation

/// What an AVIF file's boxes say, for ``ImageFileProperties`` and
/// ``AVIFDecoder``: libavif's `avifDecoderParse` reads the `ftyp`, `meta`
/// (and, for an image sequence, `moov`) boxes without decoding any AV1 data:
/// the size (`ispe`, then `clap`), bit depth (`pixi`/`av1C`), alpha (an
/// auxiliary alpha item), the frame count, `irot`/`imir`, the `colr` ICC
/// profile or `nclx` description and the `Exif` item.
struct AVIFHeader {
    /// The stored size after `clap` (before `irot`), `nil` when the boxes
    /// are missing, cut off or invalid.
    var size: PixelSize?
    /// 8, 10 or 12.
    var bitDepth = 8
    var hasAlpha = false
    /// 4:0:0 (no chroma planes).
    var isMonochrome = false
    /// 1 for a still image; the samples of an image sequence's track.
    var frameCount = 1
    /// `irot` and `imir` as the EXIF orientation that turns the stored image upright.
    var orientation: ImageOrientation = .up
    var colorSource: ColorSource?
    var exif: EXIFProperties?

    init(_ data: Data) {
        data.withBytes { bytes, count in read(bytes, count: count) }
    }

    private mutating func read(_ bytes: UnsafePointer<UInt8>, count: Int) {
        guard ImageFormat.sniff(UnsafeRawBufferPointer(start: bytes, count: count)) == .avif,
            let decoder = avifDecoderCreate()
        else { return }
        defer { avifDecoderDestroy(decoder) }
        Self.configure(decoder)
        guard avifDecoderSetIOMemory(decoder, bytes, count) == AVIF_RESULT_OK else { return }
        // libavif checks every box and item against the I/O's size hint,
        // even the `mdat` (or the AV1 data within it) its parse never reads,
        // so a file cut short (or a body's first bytes) would have no
        // properties. Without a hint (0: unknown) it reads the boxes it needs
        // and stops where the bytes do; reads past them fail as truncated.
        decoder.pointee.io.pointee.sizeHint = 0
        guard avifDecoderParse(decoder) == AVIF_RESULT_OK, let image = decoder.pointee.image,
            image.pointee.width > 0, image.pointee.height > 0
        else { return }
        let crop = Self.cleanAperture(image.pointee)
        size = crop.map { PixelSize(width: Int($0.width), height: Int($0.height)) }
            ?? PixelSize(width: Int(image.pointee.width), height: Int(image.pointee.height))
        bitDepth = Int(image.pointee.depth)
        hasAlpha = decoder.pointee.alphaPresent != 0
        isMonochrome = image.pointee.yuvFormat == AVIF_PIXEL_FORMAT_YUV400
        frameCount = max(1, Int(decoder.pointee.imageCount))
        orientation = Self.orientation(image.pointee)
        colorSource = Self.colorSource(image.pointee, bytes, count: count)
        let exifData = image.pointee.exif
        if let start = exifData.data, exifData.size > 0 {
            exif = EXIFReader.read(ByteView(bytes: UnsafeRawBufferPointer(start: start, count: exifData.size)))
        }
    }

    /// The first top-level box that runs past `count` bytes: its offset and
    /// type, `nil` when every box whose header is present is whole.
    static func overrunningBox(_ bytes: UnsafePointer<UInt8>, count: Int) -> (offset: Int, type: String)? {
        func u32(_ at: Int) -> UInt64 {
            UInt64(bytes[at]) << 24 | UInt64(bytes[at + 1]) << 16 | UInt64(bytes[at + 2]) << 8 | UInt64(bytes[at + 3])
        }
        var offset = 0
        while offset + 8 <= count {
            var size = u32(offset)
            if size == 1 {  // a 64-bit size follows the type
                guard offset + 16 <= count else { break }
                size = u32(offset + 8) << 32 | u32(offset + 12)
            }
            // 0: to the end of the file; under 8: invalid (libavif says so).
            guard size >= 8 else { return nil }
            guard size <= UInt64(count - offset) else {
                return (offset, String(decoding: UnsafeBufferPointer(start: bytes + offset + 4, count: 4), as: UTF8.self))
            }
            offset += Int(size)
        }
        return nil
    }

    /// The settings every use of libavif here shares: one thread (the
    /// loader decodes on its own queue), XMP skipped, and libavif's strict
    /// checks off (files from older encoders lack `pixi`, as browsers
    /// accept). The size and frame limits are checked by the callers from
    /// the parsed boxes, to report them as ``DecodingFailure/Stage/limits``;
    /// libavif's own (16384 x 16384 pixels, 32768 a side) still stand behind them.
    static func configure(_ decoder: UnsafeMutablePointer<avifDecoder>) {
        decoder.pointee.maxThreads = 1
        decoder.pointee.ignoreXMP = 1
        decoder.pointee.strictFlags = AVIF_STRICT_DISABLED.rawValue
    }

    /// The EXIF orientation that does what `irot` (a rotation by 90° steps,
    /// anticlockwise) and then `imir` (mode 0: top to bottom, mode 1: left
    /// to right) do, the order HEIF (MIAF) requires.
    static func orientation(_ image: avifImage) -> ImageOrientation {
        let flags = image.transformFlags
        let angle = flags & AVIF_TRANSFORM_IROT.rawValue != 0 ? Int(image.irot.angle & 3) : 0
        let mirror: UInt8? = flags & AVIF_TRANSFORM_IMIR.rawValue != 0 ? image.imir.mode : nil
        return orientation(rotation: angle, mirror: mirror)
    }

    /// See ``orientation(_:)``: `rotation` quarter turns anticlockwise, then
    /// `mirror` 0 (top to bottom), 1 (left to right) or none.
    static func orientation(rotation: Int, mirror: UInt8?) -> ImageOrientation {
        let table: [[ImageOrientation]] = [
            // none, top to bottom (mode 0), left to right (mode 1)
            [.up, .downMirrored, .upMirrored],
            [.left, .leftMirrored, .rightMirrored],
            [.down, .upMirrored, .downMirrored],
            [.right, .rightMirrored, .leftMirrored],
        ]
        let column = mirror.map { $0 == 0 ? 1 : 2 } ?? 0
        return table[rotation & 3][column]
    }

    /// The `colr` box's ICC profile, else its `nclx` description (`nil`
    /// when that leaves both primaries and transfer unspecified), with the
    /// primary item's `clli` and `mdcv` for a PQ one (libavif 0.11 reads
    /// neither: read from the file's boxes, `bytes`).
    static func colorSource(_ image: avifImage, _ bytes: UnsafePointer<UInt8>, count: Int) -> ColorSource? {
        if let start = image.icc.data, image.icc.size > 0 { return .icc(Data(bytes: start, count: image.icc.size)) }
        let transfer = Int(image.transferCharacteristics)
        let levels =
            transfer == 16 ? ContentLightLevels.read(ByteView(bytes: UnsafeRawBufferPointer(start: bytes, count: count))) : nil
        let nclx = NCLXColor(primaries: Int(image.colorPrimaries), transfer: transfer, lightLevel: levels)
        return nclx.primaries == 2 && nclx.transfer == 2 ? nil : .nclx(nclx)
    }

    /// The `clap` (clean aperture) property as the rectangle to keep of the
    /// decoded image, by libavif's `avifCropRectConvertCleanApertureBox`
    /// (ISO/IEC 14496-12 and MIAF's rules: whole pixels, inside the image,
    /// even offsets for subsampled chroma); `nil` without one, when it is
    /// invalid (ignored, as browsers ignore it) or keeps the whole image.
    static func cleanAperture(_ image: avifImage) -> avifCropRect? {
        guard image.transformFlags & AVIF_TRANSFORM_CLAP.rawValue != 0 else { return nil }
        var rect = avifCropRect()
        var clap = image.clap
        var diagnostics = avifDiagnostics()
        guard
            avifCropRectConvertCleanApertureBox(&rect, &clap, image.width, image.height, image.yuvFormat, &diagnostics) != 0,
            rect.width > 0, rect.height > 0, rect.x <= image.width - rect.width, rect.y <= image.height - rect.height,
            rect.width != image.width || rect.height != image.height
        else { return nil }
        return rect
    }

    /// libavif's result code and its diagnostic, in words.
    static func message(_ result: avifResult, _ decoder: UnsafeMutablePointer<avifDecoder>, _ what: String) -> String {
        let name = avifResultToString(result).map { String(cString: $0) } ?? "libavif result \(result.rawValue)"
        let detail = withUnsafeBytes(of: &decoder.pointee.diag.error) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return "\(what): \(name)" + (detail.isEmpty ? "" : " (\(detail))")
    }
}
