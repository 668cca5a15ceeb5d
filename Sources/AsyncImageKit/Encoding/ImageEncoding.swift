import Foundation

/// How an image is written as bytes: what ``AsyncImageLoader/encodedImage(for:encoding:)``
/// answers with, and how the disk cache stores processed images
/// (``AsyncImageLoader/Configuration/processedImageEncoding``).
///
/// ```swift
/// let thumbnail = try await loader.encodedImage(
///     for: ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 256, height: 256))),
///     encoding: .negotiated(accept: acceptHeader, quality: 80))
/// // thumbnail.data, thumbnail.contentType ("image/avif", "image/webp", "image/jpeg" or "image/png"),
/// // thumbnail.variesByAccept (true: answer with `Vary: Accept`)
/// ```
///
/// | encoding | an opaque still | a still with transparency |
/// |---|---|---|
/// | ``automatic(quality:)`` | JPEG at that quality | PNG |
/// | ``jpeg(quality:)`` | JPEG at that quality | JPEG over white (an answer); PNG on disk |
/// | ``png`` | PNG | PNG |
/// | ``webp(quality:)`` | lossy WebP at that quality | lossy WebP, alpha kept |
/// | ``webpLossless`` | lossless WebP | lossless WebP, alpha kept |
/// | ``avif(quality:speed:)`` | AVIF (4:2:0) at that quality and speed | AVIF, alpha kept |
/// | ``negotiated(accept:quality:avifSpeed:)`` | AVIF, WebP or as ``automatic(quality:)``, as the client's `Accept` says | the same, alpha kept |
///
/// Opacity is ``Image/isOpaque`` (worked out once, when the image was made).
/// Transparency is never flattened except by an answer under
/// ``jpeg(quality:)``: WebP and AVIF keep it, and under ``jpeg(quality:)``
/// the disk cache stores a still with transparency as PNG, as
/// ``automatic(quality:)`` does. Animations are stored as raw frames (no
/// encoder here writes them); an answer for one is its first frame. PNGs
/// are written with zlib level 1 (fast: the disk cache's setting, so that
/// what it stores can be served as it is); WebP with libwebp's method 4
/// (``WebPEncoder``, its default); AVIF with libaom, 8 bits, 4:2:0, one
/// thread (``AVIFEncoder``).
///
/// A quality is each format's own scale (JPEG's, `cwebp -q`, and AVIF's
/// mapping to quantizers: ``AVIFEncoder/quantizer(forQuality:)``): the same
/// number is not the same look, and AVIF at a number is much smaller than
/// JPEG at it. Out of 1...100 it is clamped (it often comes from a
/// request), as an AVIF speed is to 0...10; the encoders themselves
/// refuse what is out of range.
///
/// **Encoding cost.** A 512x370 photo takes about 0.5 ms as JPEG on one
/// core here, 20 ms as WebP and 60 ms as AVIF at speed 8 (185 ms at speed
/// 6; libaom: BENCHMARKS.md, *Encoders*). An answer is encoded on the
/// calling task unless the disk cache stores the thumbnail in the same
/// kind (then it is served as it is stored), so a service that answers
/// mostly AVIF can store AVIF (``AsyncImageLoader/Configuration/processedImageEncoding``
/// may be any of these) and pay the encode once per thumbnail.
public enum ImageEncoding: Sendable, Hashable {
    /// JPEG at `quality` (1 to 100) for an opaque still, PNG for a still
    /// with transparency.
    case automatic(quality: Int)
    /// JPEG at `quality` (1 to 100) for every still. An answer flattens
    /// transparency onto white; the disk cache keeps it (PNG).
    case jpeg(quality: Int)
    /// PNG for every still: lossless, pixel for pixel what was made.
    case png
    /// Lossy WebP at `quality` (1 to 100, `cwebp -q`) for every still, with
    /// its alpha channel when it has transparency.
    case webp(quality: Int)
    /// Lossless WebP for every still: pixel for pixel what was made (as
    /// ``png``), usually a third smaller or more.
    case webpLossless
    /// AVIF at `quality` (1 to 100; ``AVIFEncoder/quantizer(forQuality:)``)
    /// and libavif's `speed` (0, slowest and smallest, to 10, fastest),
    /// 4:2:0, with an alpha plane when the still has transparency.
    case avif(quality: Int, speed: Int)
    /// The best encoding the client's `Accept` field (`accept`, nil when the
    /// request had none) allows, chosen for each image: AVIF (at `quality`
    /// and `avifSpeed`) if the client names `image/avif`, else lossy WebP
    /// (at `quality`) if it names `image/webp`, else as
    /// ``automatic(quality:)`` (JPEG for an opaque still, PNG with
    /// transparency). The answer says it depended on the field
    /// (``EncodedImage/variesByAccept``): a service sends `Vary: Accept`.
    ///
    /// The rules (``AsyncImageLoader/encodedImage(for:encoding:)`` shows a handler):
    /// - AVIF and WebP count only when the field names them (`image/avif`,
    ///   `image/webp`) with a weight above 0: `image/*` and `*/*` do not
    ///   count for them, since clients that cannot decode them send those
    ///   too. The automatic choice weighs what it makes (`image/jpeg` for
    ///   an opaque still, `image/png` with transparency), by any range that
    ///   matches it.
    /// - The highest weight (`q`) wins; a tie goes to AVIF, then WebP, then
    ///   the automatic choice. `image/avif;q=0` refuses AVIF.
    /// - No field, a field that cannot be read, or one that accepts none of
    ///   them: the automatic choice (RFC 9110 allows disregarding the field
    ///   rather than answering 406).
    /// - Media ranges and the `q` name are compared case-insensitively, other
    ///   parameters ignored, malformed members skipped.
    ///
    /// `avifSpeed` is 8 by default: a client waits for the encode (about
    /// 60 ms for a 512x370 photo on one core here; speed 6 takes about
    /// three times as long, for files of about the same size).
    case negotiated(accept: String?, quality: Int, avifSpeed: Int = 8)

    /// ``automatic(quality:)`` at quality 90: the disk cache's default (a
    /// 256x256 thumbnail is about 15-25 KB and decodes in well under a
    /// millisecond), and ``AsyncImageLoader/encodedImage(for:encoding:)``'s,
    /// so that a stored thumbnail is served as it is.
    public static let automatic = ImageEncoding.automatic(quality: 90)
    /// ``png``: the disk cache stores every still losslessly.
    public static let lossless = ImageEncoding.png

    /// Whether the answer depends on the client's `Accept` field (``negotiated(accept:quality:avifSpeed:)``).
    var variesByAccept: Bool {
        if case .negotiated = self { return true }
        return false
    }

    /// What an answer of this encoding is for a still whose opacity is `opaque`.
    func answerKind(opaque: Bool) -> EncodedKind {
        switch self {
        case .automatic(let quality): return opaque ? .jpeg(quality: EncodedKind.clamp(quality)) : .png
        case .jpeg(let quality): return .jpeg(quality: EncodedKind.clamp(quality))
        case .png: return .png
        case .webp(let quality): return .webp(quality: EncodedKind.clamp(quality), lossless: false)
        case .webpLossless: return .webp(quality: EncodedKind.webpLosslessEffort, lossless: true)
        case .avif(let quality, let speed):
            return .avif(quality: EncodedKind.clamp(quality), speed: EncodedKind.clampSpeed(speed))
        case .negotiated(let accept, let quality, let avifSpeed):
            return Self.negotiate(AcceptHeader(accept), quality: quality, avifSpeed: avifSpeed, opaque: opaque)
                .answerKind(opaque: opaque)
        }
    }

    /// What the disk cache stores under this encoding for a still whose
    /// opacity is `opaque` (never a JPEG of a still with transparency).
    func storedKind(opaque: Bool) -> EncodedKind {
        switch self {
        case .jpeg(let quality): return opaque ? .jpeg(quality: EncodedKind.clamp(quality)) : .png
        default: return answerKind(opaque: opaque)
        }
    }

    /// The encoding `accept` chooses for a still whose opacity is `opaque`
    /// (the rules of ``negotiated(accept:quality:avifSpeed:)``):
    /// ``avif(quality:speed:)``, ``webp(quality:)`` or
    /// ``automatic(quality:)``, whose weight is that of what it makes (JPEG
    /// for an opaque still, PNG for one with transparency).
    static func negotiate(_ accept: AcceptHeader, quality: Int, avifSpeed: Int, opaque: Bool) -> ImageEncoding {
        let automatic = ImageEncoding.automatic(quality: quality)
        guard !accept.isEmpty else { return automatic }
        let candidates: [(ImageEncoding, Double)] = [
            (.avif(quality: quality, speed: avifSpeed), accept.namedQuality(of: ImageFormat.avif.mimeType) ?? 0),
            (.webp(quality: quality), accept.namedQuality(of: ImageFormat.webp.mimeType) ?? 0),
            (automatic, accept.quality(of: (opaque ? ImageFormat.jpeg : .png).mimeType)),
        ]
        // The first of the highest weights: the order is the preference.
        var best: (ImageEncoding, Double)?
        for candidate in candidates where candidate.1 > 0 && candidate.1 > (best?.1 ?? 0) { best = candidate }
        return best?.0 ?? automatic
    }
}

/// An image as bytes, ready to send: the answer of
/// ``AsyncImageLoader/encodedImage(for:encoding:)``.
public struct EncodedImage: Sendable {
    /// The encoded bytes (a whole JPEG, PNG, WebP or AVIF file).
    public let data: Data
    /// ``ImageFormat/jpeg``, ``ImageFormat/png``, ``ImageFormat/webp`` or ``ImageFormat/avif``.
    public let format: ImageFormat
    /// The quality the bytes were written at (JPEG, lossy WebP, AVIF); nil
    /// for PNG and lossless WebP.
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
    /// The format was chosen from the client's `Accept` field
    /// (``ImageEncoding/negotiated(accept:quality:avifSpeed:)``), so another
    /// client may get other bytes for the same URL: a service answers with
    /// `Vary: Accept`, so that shared caches (a CDN, a proxy) keep one copy
    /// per field. True for every negotiated answer, whatever was chosen.
    public let variesByAccept: Bool

    /// The bytes' media type: `image/jpeg`, `image/png`, `image/webp` or
    /// `image/avif` (a `Content-Type`).
    public var contentType: String { format.mimeType }

    /// An encoded image, as a custom caller or a test makes one.
    public init(
        data: Data, format: ImageFormat, quality: Int?, width: Int, height: Int, source: ImageResponse.Source,
        isStoredEncoding: Bool = false, isStale: Bool = false, fileProperties: ImageFileProperties? = nil,
        variesByAccept: Bool = false
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
        self.variesByAccept = variesByAccept
    }
}

/// What a still is written as: the one place the encoders' settings are chosen.
enum EncodedKind: Sendable, Hashable {
    case jpeg(quality: Int)
    case png
    /// `quality` is libwebp's: for a lossless file, its effort.
    case webp(quality: Int, lossless: Bool)
    case avif(quality: Int, speed: Int)

    /// zlib's level for every PNG written here: fast (a thumbnail's PNG is
    /// written on the disk write queue, or for an answer, while it waits).
    static let pngCompressionLevel = 1
    /// libwebp's method for every WebP written here: its default (`cwebp -m 4`).
    static let webpMethod = 4
    /// libwebp's effort for a lossless WebP: its default (`cwebp -lossless -q 75`).
    static let webpLosslessEffort = 75

    static func clamp(_ quality: Int) -> Int { max(1, min(100, quality)) }
    static func clampSpeed(_ speed: Int) -> Int { max(0, min(10, speed)) }

    var format: ImageFormat {
        switch self {
        case .jpeg: return .jpeg
        case .png: return .png
        case .webp: return .webp
        case .avif: return .avif
        }
    }

    /// The quality an answer reports: nil for PNG and lossless WebP.
    var quality: Int? {
        switch self {
        case .jpeg(let quality), .avif(let quality, _): return quality
        case .webp(let quality, let lossless): return lossless ? nil : quality
        case .png: return nil
        }
    }

    /// The bytes of `still` (its first frame) as this kind; a JPEG of a
    /// still with transparency is flattened onto white first. WebP and
    /// AVIF keep the alpha.
    func encode(_ still: Image) throws(AsyncImageError) -> Data {
        switch self {
        case .jpeg(let quality):
            return try JPEGEncoder(quality: quality).encode(still.isOpaque ? still : still.flattenedOntoWhite())
        case .png:
            return try PNGEncoder(compressionLevel: Self.pngCompressionLevel).encode(still)
        case .webp(let quality, let lossless):
            return try WebPEncoder(quality: quality, lossless: lossless, method: Self.webpMethod).encode(still)
        case .avif(let quality, let speed):
            return try AVIFEncoder(quality: quality, speed: speed).encode(still)
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
