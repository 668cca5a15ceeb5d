import CWebP
import Foundation

/// What a WebP file's headers say, for ``ImageFileProperties``: the size,
/// alpha and animation flags and the compression from libwebp's
/// `WebPGetFeatures` (the same call ``WebPDecoder`` starts with), and from
/// libwebpdemux (parsing the RIFF chunks only, never the bitstreams) the
/// frame and loop counts, the `VP8X` ICC flag and the `EXIF` chunk.
struct WebPHeader {
    /// The canvas size, `nil` when the header is missing, cut off or invalid.
    var size: PixelSize?
    var hasAlpha = false
    var isAnimated = false
    var compression: WebPCompression?
    /// The frames ``WebPDecoder`` produces: 1 for a still image, the `ANMF`
    /// chunks of an animation (those present, in a file cut short).
    var frameCount = 1
    /// The `ANIM` loop count as stored: the number of plays, 0 = forever.
    var playCount: Int?
    var hasICCProfile = false
    /// The `ICCP` chunk, when flagged (see ``colorSource(_:)``).
    var colorSource: ColorSource?
    var exif: EXIFProperties?

    init(_ data: Data) {
        data.withBytes { bytes, count in read(bytes, count: count) }
    }

    private mutating func read(_ bytes: UnsafePointer<UInt8>, count: Int) {
        var features = WebPBitstreamFeatures()
        guard ImageFormat.sniff(UnsafeRawBufferPointer(start: bytes, count: count)) == .webp,
            WebPGetFeatures(bytes, count, &features) == VP8_STATUS_OK, features.width > 0, features.height > 0
        else { return }
        size = PixelSize(width: Int(features.width), height: Int(features.height))
        hasAlpha = features.has_alpha != 0
        isAnimated = features.has_animation != 0
        switch features.format {
        case 1: compression = .lossy
        case 2: compression = .lossless
        default: compression = isAnimated ? .mixed : nil
        }

        // The chunks, from a file that may be cut short.
        var input = WebPData(bytes: bytes, size: count)
        var state = WEBP_DEMUX_PARSE_ERROR
        guard let demux = WebPDemuxPartial(&input, &state) else { return }
        defer { WebPDemuxDelete(demux) }
        let flags = WebPDemuxGetI(demux, WEBP_FF_FORMAT_FLAGS)
        hasICCProfile = flags & ICCP_FLAG.rawValue != 0
        if hasICCProfile { colorSource = Self.colorSource(UnsafeRawBufferPointer(start: bytes, count: count)) }
        if isAnimated {
            frameCount = Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
            playCount = Int(WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT))
        }
        var chunk = WebPChunkIterator()
        if flags & EXIF_FLAG.rawValue != 0, WebPDemuxGetChunk(demux, "EXIF", 1, &chunk) != 0 {
            defer { WebPDemuxReleaseChunkIterator(&chunk) }
            if let start = chunk.chunk.bytes, chunk.chunk.size > 0 {
                exif = EXIFReader.read(ByteView(bytes: UnsafeRawBufferPointer(start: start, count: chunk.chunk.size)))
            }
        }
    }

    /// The `ICCP` chunk's payload when the `VP8X` header's ICC flag is set
    /// (the only case WebP's container allows one): a bounds-checked walk over
    /// the RIFF chunks from the first, the flag checked before anything else,
    /// so a file without it costs a few byte comparisons. An ICC flag without
    /// a whole `ICCP` chunk is ``ColorSource/malformed(_:)``.
    static func colorSource(_ bytes: UnsafeRawBufferPointer) -> ColorSource? {
        let view = ByteView(bytes: bytes)
        guard view.matches(0, Array(ascii: "RIFF")), view.matches(8, Array(ascii: "WEBP")),
            view.matches(12, Array(ascii: "VP8X")), let flags = view.u8(20), flags & 0x20 != 0
        else { return nil }
        var offset = 12
        while let size = view.u32(offset + 4, littleEndian: true) {
            guard let payload = view.slice(offset + 8, Int(size)) else { break }
            if view.matches(offset, Array(ascii: "ICCP")) {
                return payload.count == 0 ? .malformed("an empty ICCP chunk") : .icc(Data(payload.bytes))
            }
            offset += 8 + Int(size) + Int(size & 1)
        }
        return .malformed("the VP8X header flags an ICC profile but there is no whole ICCP chunk")
    }

    /// The size the RIFF header declares (the bytes after its first 8), or
    /// `nil` without a whole RIFF header.
    static func riffSize(_ bytes: UnsafePointer<UInt8>, count: Int) -> UInt32? {
        guard count >= 8 else { return nil }
        return UInt32(bytes[4]) | UInt32(bytes[5]) << 8 | UInt32(bytes[6]) << 16 | UInt32(bytes[7]) << 24
    }
}

/// How a WebP file's image data is compressed (``ImageFileProperties/webPCompression``).
public enum WebPCompression: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// VP8, lossy (YUV 4:2:0), with or without an `ALPH` chunk.
    case lossy
    /// VP8L, lossless ARGB.
    case lossless
    /// An animation, whose frames may each be lossy or lossless.
    case mixed

    /// The raw value: `"lossy"`, `"lossless"`, `"mixed"`.
    public var description: String { rawValue }
}
