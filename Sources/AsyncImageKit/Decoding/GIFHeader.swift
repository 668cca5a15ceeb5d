import Foundation

/// What is read from a GIF's blocks without decompressing anything: the
/// logical screen, the colour tables' sizes, the image descriptors, the
/// NETSCAPE2.0 loop count, transparency and an ICC profile's presence.
///
/// A walk over the blocks (each data sub-block is jumped over by its length
/// byte) to the trailer or the end of the data; anything malformed ends the
/// walk with what was counted so far.
struct GIFHeader {
    /// The logical screen size.
    var size: PixelSize?
    /// Bits per palette index of the global colour table (1-8), `nil` without one.
    var globalPaletteBits: Int?
    /// Bits per palette index of the first image's local colour table.
    var firstLocalPaletteBits: Int?
    /// Image descriptors read whole (with their image data's sub-blocks).
    var frameCount = 0
    /// The NETSCAPE2.0 (or ANIMEXTS1.0) loop count: 0 = forever.
    var loopCount: Int?
    /// Whether the first image is interlaced.
    var firstFrameInterlaced = false
    /// Whether any graphic control extension names a transparent index.
    var hasTransparency = false
    /// Whether an `ICCRGBG1012` application extension was seen.
    var hasICCProfile = false
    /// The first one's sub-blocks joined (`nil` when they run past the end).
    var iccProfile: Data?
    /// Whether the walk reached the trailer (0x3B).
    var reachedTrailer = false

    init(_ data: Data) {
        data.withUnsafeBytes { raw in
            self.parse(ByteView(bytes: raw))
        }
    }

    /// The colour information of the first `ICCRGBG1012` extension.
    var colorSource: ColorSource? {
        guard hasICCProfile else { return nil }
        guard let iccProfile, !iccProfile.isEmpty else { return .malformed("an empty or cut ICCRGBG1012 extension") }
        return .icc(iccProfile)
    }

    /// The data of the sub-blocks starting at `start` joined, `nil` when
    /// they run past the end.
    private static func joinSubBlocks(_ bytes: ByteView, from start: Int) -> Data? {
        var data = Data()
        var at = start
        while let length = bytes.u8(at) {
            if length == 0 { return data }
            guard let block = bytes.slice(at + 1, Int(length)) else { return nil }
            data.append(contentsOf: block.bytes)
            at += 1 + Int(length)
        }
        return nil
    }

    /// Bits per index of a colour table (its packed size field plus one).
    private static func tableBits(_ packed: UInt8) -> Int? {
        packed & 0x80 != 0 ? Int(packed & 0x07) + 1 : nil
    }

    private mutating func parse(_ bytes: ByteView) {
        guard bytes.matches(0, Array(ascii: "GIF87a")) || bytes.matches(0, Array(ascii: "GIF89a")),
            let width = bytes.u16(6, littleEndian: true), let height = bytes.u16(8, littleEndian: true),
            let packed = bytes.u8(10)
        else { return }
        size = PixelSize(width: Int(width), height: Int(height))
        globalPaletteBits = Self.tableBits(packed)
        var offset = 13 + (globalPaletteBits.map { 3 << $0 } ?? 0)

        /// The offset after the sub-blocks starting at `start`, `nil` when they run past the end.
        func skipSubBlocks(_ start: Int) -> Int? {
            var at = start
            while let length = bytes.u8(at) {
                if length == 0 { return at + 1 }
                at += 1 + Int(length)
            }
            return nil
        }

        while let introducer = bytes.u8(offset) {
            switch introducer {
            case 0x21:  // extension
                guard let label = bytes.u8(offset + 1) else { return }
                let body = offset + 2
                if label == 0xF9, bytes.u8(body) == 4, let flags = bytes.u8(body + 1), flags & 0x01 != 0 {
                    hasTransparency = true
                } else if label == 0xFF, bytes.u8(body) == 11 {
                    if bytes.matches(body + 1, Array(ascii: "NETSCAPE2.0"))
                        || bytes.matches(body + 1, Array(ascii: "ANIMEXTS1.0"))
                    {
                        let sub = body + 12
                        if loopCount == nil, let length = bytes.u8(sub), length >= 3, bytes.u8(sub + 1) == 1,
                            let count = bytes.u16(sub + 2, littleEndian: true)
                        {
                            loopCount = Int(count)
                        }
                    } else if bytes.matches(body + 1, Array(ascii: "ICCRGBG1012")) {
                        if !hasICCProfile { iccProfile = Self.joinSubBlocks(bytes, from: body + 12) }
                        hasICCProfile = true
                    }
                }
                guard let next = skipSubBlocks(body) else { return }
                offset = next
            case 0x2C:  // image descriptor
                guard let packed = bytes.u8(offset + 9) else { return }
                let localBits = Self.tableBits(packed)
                // Local colour table, then the LZW minimum code size, then the data's sub-blocks.
                guard let next = skipSubBlocks(offset + 10 + (localBits.map { 3 << $0 } ?? 0) + 1) else { return }
                if frameCount == 0 {
                    firstLocalPaletteBits = localBits
                    firstFrameInterlaced = packed & 0x40 != 0
                }
                frameCount += 1
                offset = next
            case 0x3B:  // trailer
                reachedTrailer = true
                return
            default:
                return
            }
        }
    }
}
