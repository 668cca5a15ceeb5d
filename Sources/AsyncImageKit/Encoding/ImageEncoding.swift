import Foundation

/// How an image is written as bytes: what ``AsyncImageLoader/encodedImage(for:encoding:)``
/// answers with, and how the disk cache stores processed images
/// (``AsyncImageLoader/Configuration/processedImageEncoding``).
///
/// ```swift
/// let thumbnail = try await loader.encodedImage(
///     for: ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 256, height: 256))),
///     encoding: .automatic(quality: 85))
/// // thumbnail.data, thumbnail.contentType ("image/jpeg" or "image/png")
/// ```
///
/// | encoding | an opaque still | a still with transparency |
/// |---|---|---|
/// | ``automatic(quality:)`` | JPEG at that quality | PNG |
/// | ``jpeg(quality:)`` | JPEG at that quality | JPEG over white (an answer); PNG on disk |
/// | ``png`` | PNG | PNG |
///
/// Opacity is ``Image/isOpaque`` (worked out once, when the image was made).
/// The disk cache never flattens transparency: under ``jpeg(quality:)`` it
/// stores a still with transparency as PNG, as ``automatic(quality:)`` does.
/// Animations are stored as raw frames (no encoder here writes them); an
/// answer for one is its first frame. PNGs are written with zlib level 1
/// (fast: the disk cache's setting, so that what it stores can be served
/// as it is). WebP is for when an encoder for it lands.
public enum ImageEncoding: Sendable, Hashable {
    /// JPEG at `quality` (1 to 100) for an opaque still, PNG for a still
    /// with transparency.
    case automatic(quality: Int)
    /// JPEG at `quality` (1 to 100) for every still. An answer flattens
    /// transparency onto white; the disk cache keeps it (PNG).
    case jpeg(quality: Int)
    /// PNG for every still: lossless, pixel for pixel what was made.
    case png

    /// ``automatic(quality:)`` at quality 90: the disk cache's default (a
    /// 256x256 thumbnail is about 15-25 KB and decodes in well under a
    /// millisecond), and ``AsyncImageLoader/encodedImage(for:encoding:)``'s,
    /// so that a stored thumbnail is served as it is.
    public static let automatic = ImageEncoding.automatic(quality: 90)
    /// ``png``: the disk cache stores every still losslessly.
    public static let lossless = ImageEncoding.png

    /// What an answer of this encoding is for a still whose opacity is `opaque`.
    func answerKind(opaque: Bool) -> EncodedKind {
        switch self {
        case .automatic(let quality): return opaque ? .jpeg(quality: EncodedKind.clamp(quality)) : .png
        case .jpeg(let quality): return .jpeg(quality: EncodedKind.clamp(quality))
        case .png: return .png
        }
    }

    /// What the disk cache stores under this encoding for a still whose
    /// opacity is `opaque` (never a JPEG of a still with transparency).
    func storedKind(opaque: Bool) -> EncodedKind {
        switch self {
        case .automatic(let quality), .jpeg(let quality): return opaque ? .jpeg(quality: EncodedKind.clamp(quality)) : .png
        case .png: return .png
        }
    }
}

/// An image as bytes, ready to send: the answer of
/// ``AsyncImageLoader/encodedImage(for:encoding:)``.
public struct EncodedImage: Sendable {
    /// The encoded bytes (a whole JPEG or PNG file).
    public let data: Data
    /// ``ImageFormat/jpeg`` or ``ImageFormat/png``.
    public let format: ImageFormat
    /// The JPEG quality the bytes were written at; nil for PNG.
    public let quality: Int?
    /// The encoded image's width in pixels.
    public let width: Int
    /// The encoded image's height in pixels.
    public let height: Int
    /// Where the image came from: the memory cache, the disk cache (a
    /// stored thumbnail, or a stored body decoded), or the network.
    public let source: ImageResponse.Source
    /// The bytes are the disk cache's stored thumbnail, served as they were
    /// stored: neither decoded nor encoded (``source`` is then
    /// ``ImageResponse/Source/diskCache``). False when they were encoded
    /// for this answer.
    public let isStoredEncoding: Bool
    /// Served from a stale disk entry (see ``ImageResponse/isStale``).
    public let isStale: Bool
    /// What the source file said about itself (kept with a stored
    /// thumbnail), when known: ``Image/fileProperties``.
    public let fileProperties: ImageFileProperties?

    /// The bytes' media type: `image/jpeg` or `image/png` (a `Content-Type`).
    public var contentType: String { format.mimeType }

    /// An encoded image, as a custom caller or a test makes one.
    public init(
        data: Data, format: ImageFormat, quality: Int?, width: Int, height: Int, source: ImageResponse.Source,
        isStoredEncoding: Bool = false, isStale: Bool = false, fileProperties: ImageFileProperties? = nil
    ) {
        self.data = data
        self.format = format
        self.quality = quality
        self.width = width
        self.height = height
        self.source = source
        self.isStoredEncoding = isStoredEncoding
        self.isStale = isStale
        self.fileProperties = fileProperties
    }
}

/// What a still is written as: the one place the encoders' settings are chosen.
enum EncodedKind: Sendable, Hashable {
    case jpeg(quality: Int)
    case png

    /// zlib's level for every PNG written here: fast (a thumbnail's PNG is
    /// written on the disk write queue, or for an answer, while it waits).
    static let pngCompressionLevel = 1

    static func clamp(_ quality: Int) -> Int { max(1, min(100, quality)) }

    var format: ImageFormat {
        switch self {
        case .jpeg: return .jpeg
        case .png: return .png
        }
    }

    var quality: Int? {
        if case .jpeg(let quality) = self { return quality }
        return nil
    }

    /// The bytes of `still` (its first frame) as this kind; a JPEG of a
    /// still with transparency is flattened onto white first.
    func encode(_ still: Image) throws(AsyncImageError) -> Data {
        switch self {
        case .jpeg(let quality):
            return try JPEGEncoder(quality: quality).encode(still.isOpaque ? still : still.flattenedOntoWhite())
        case .png:
            return try PNGEncoder(compressionLevel: Self.pngCompressionLevel).encode(still)
        }
    }
}

/// A still's bytes as one kind: made once, for the disk and an answer alike.
struct EncodedPayload: Sendable {
    let kind: EncodedKind
    let data: Data

    /// `still` (its first frame) written as `kind`.
    init(_ still: Image, as kind: EncodedKind) throws(AsyncImageError) {
        self.kind = kind
        data = try kind.encode(still)
    }

    init(kind: EncodedKind, data: Data) {
        self.kind = kind
        self.data = data
    }
}

extension Image {
    /// The first frame composited onto opaque white (straight alpha: each
    /// channel `c * a + 255 * (1 - a)`, rounded): what a JPEG of a still
    /// with transparency shows.
    func flattenedOntoWhite() -> Image {
        let rowBytes = width * 4
        var out = Data(count: rowBytes * height)
        out.withUnsafeMutableBytes { dst in
            let d = dst.bindMemory(to: UInt8.self).baseAddress!
            pixels.withUnsafeBytes { src in
                let s = src.bindMemory(to: UInt8.self).baseAddress!
                for y in 0..<height {
                    let from = s + y * bytesPerRow
                    let to = d + y * rowBytes
                    for x in 0..<width {
                        let a = UInt32(from[x * 4 + 3])
                        for c in 0..<3 {
                            to[x * 4 + c] = UInt8((UInt32(from[x * 4 + c]) * a + 255 * (255 - a) + 127) / 255)
                        }
                        to[x * 4 + 3] = 255
                    }
                }
            }
        }
        return Image(
            width: width, height: height, bytesPerRow: rowBytes, frames: [ImageFrame(pixels: out, duration: 0)],
            format: format, originalSize: originalSize, orientation: orientation, decodeInfo: decodeInfo,
            opacity: .opaque
        ).with(fileProperties: fileProperties)
    }
}
