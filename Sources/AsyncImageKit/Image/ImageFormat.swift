import Foundation

/// An encoded image format, identified by sniffing the first bytes of the data.
///
/// The format is never taken from a file extension or a `Content-Type` header:
/// servers and file names lie, the bytes do not.
public enum ImageFormat: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Portable Network Graphics.
    case png
    /// JPEG (JFIF, EXIF).
    case jpeg
    /// Graphics Interchange Format (87a, 89a), possibly animated.
    case gif
    /// WebP: lossy (VP8), lossless (VP8L), with alpha, possibly animated.
    case webp
    /// AVIF: AV1 images in a HEIF (ISO BMFF) container, still (`avif`) or
    /// an image sequence (`avis`), with alpha, 8, 10 or 12 bits.
    case avif
    /// HEIC: HEVC images in a HEIF (ISO BMFF) container, as phones and
    /// cameras write them (grids of tiles, alpha, 8 to 12 bits).
    case heic
    /// JPEG XL: a bare codestream or the ISO BMFF container, lossy or
    /// lossless, with alpha, possibly animated.
    case jxl

    /// The format whose signature `data` starts with, or `nil`.
    ///
    /// - PNG: `89 50 4E 47 0D 0A 1A 0A`
    /// - JPEG: `FF D8 FF` (start of image followed by a marker)
    /// - GIF: `GIF87a` or `GIF89a`
    /// - WebP: `RIFF`, a 4-byte size, `WEBP` (12 bytes)
    /// - AVIF: an ISO BMFF `ftyp` box first whose major or compatible brands
    ///   include `avif` or `avis` (the content, not a file name, says AVIF)
    /// - HEIC: the same box with `heic`, `heix`, `heim`, `heis`, `hevc` or
    ///   `hevx` among its brands, or a major brand of `mif1` or `msf1`
    ///   (HEIF's own) without `avif`/`avis`
    /// - JPEG XL: `FF 0A` (a codestream) or the 12-byte container signature
    ///   box `00 00 00 0C 4A 58 4C 20 0D 0A 87 0A`
    public static func sniff(_ data: Data) -> ImageFormat? {
        data.withUnsafeBytes { sniff(UnsafeRawBufferPointer($0)) }
    }

    /// The format whose signature `bytes` start with, or `nil`.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        if bytes.count >= 8, zip(bytes.prefix(8), pngSignature).allSatisfy({ $0 == $1 }) {
            return .png
        }
        if bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF {
            return .jpeg
        }
        if bytes.count >= 6, bytes[0] == 0x47, bytes[1] == 0x49, bytes[2] == 0x46, bytes[3] == 0x38,
            bytes[4] == 0x37 || bytes[4] == 0x39, bytes[5] == 0x61
        {
            return .gif
        }
        if bytes.count >= 12, bytes[0] == 0x52, bytes[1] == 0x49, bytes[2] == 0x46, bytes[3] == 0x46,
            bytes[8] == 0x57, bytes[9] == 0x45, bytes[10] == 0x42, bytes[11] == 0x50
        {
            return .webp
        }
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0x0A {
            return .jxl
        }
        if bytes.count >= 12, zip(bytes.prefix(12), jxlContainer).allSatisfy({ $0 == $1 }) {
            return .jxl
        }
        if let brands = isoBrands(bytes), brands.contains(where: { $0 == "avif" || $0 == "avis" }) {
            return .avif
        }
        if let brands = isoBrands(bytes),
            brands.contains(where: { ["heic", "heix", "heim", "heis", "hevc", "hevx"].contains($0) })
                || brands[0] == "mif1" || brands[0] == "msf1"
        {
            return .heic
        }
        return nil
    }

    /// The brands of an ISO BMFF file's leading `ftyp` box (the major brand
    /// first, then the compatible ones), or `nil` when the bytes do not start
    /// with one. Only the brands present in `bytes` are read: a box cut short
    /// gives its whole brands so far (the major brand needs 12 bytes).
    /// The JPEG XL container's signature box.
    private static let jxlContainer: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]

    static func isoBrands(_ bytes: UnsafeRawBufferPointer) -> [String]? {
        guard bytes.count >= 12, bytes[4] == 0x66, bytes[5] == 0x74, bytes[6] == 0x79, bytes[7] == 0x70 else {
            return nil
        }
        let size = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        // A box size of 1 (a 64-bit size follows) or 0 (to the end) never holds an ftyp.
        guard size >= 16, size <= 4096 else { return nil }
        func brand(at offset: Int) -> String {
            String(decoding: (offset..<offset + 4).map { bytes[$0] }, as: UTF8.self)
        }
        var brands = [brand(at: 8)]
        // Bytes 12-15 are the minor version; the compatible brands follow, 4 bytes each.
        var offset = 16
        while offset + 4 <= min(size, bytes.count) {
            brands.append(brand(at: offset))
            offset += 4
        }
        return brands
    }

    /// The lower-case name: `png`, `jpeg`, `gif`, `webp`, `avif`, `heic`, `jxl`.
    public var description: String { rawValue }

    /// The format's media type (`image/png`, `image/jpeg`, `image/gif`, `image/webp`, `image/avif`, `image/heic`,
    /// `image/jxl`).
    public var mimeType: String { "image/\(rawValue)" }

    /// The weight (`Accept` q-value) ``ImageDecoderRegistry`` gives the
    /// format when its decoder is registered without one: 1 for AVIF, JPEG
    /// XL and WebP (smaller files for the same picture: a server that has
    /// them should send them), 0.9 for HEIC (its decoder, libde265, is the
    /// slowest here), 0.8 for PNG, JPEG and GIF (what every server has).
    public var defaultAcceptWeight: Double {
        switch self {
        case .avif, .jxl, .webp: return 1
        case .heic: return 0.9
        case .png, .jpeg, .gif: return 0.8
        }
    }

    /// The order formats of equal weight are listed in an `Accept` header
    /// (a server that ignores q-values may take the first it has).
    static let acceptOrder: [ImageFormat] = [.avif, .jxl, .webp, .heic, .png, .jpeg, .gif]
}
