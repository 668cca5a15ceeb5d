import Foundation

/// A processed image (a display-size thumbnail) as the disk cache keeps it:
/// small to store, quick to read back, and with everything the loader told
/// its caller about the image when it was made (source format and size,
/// orientation, how it was decoded, frame timing).
///
/// Layout: magic `AIKI`, format version (UInt16, little-endian), payload
/// kind (UInt8), metadata length (UInt32, little-endian), the metadata
/// (JSON), the payload. The disk cache's own checksum covers all of it.
///
/// Payloads, chosen by ``ImageEncoding`` (see ``ImageEncoding/storedKind(opaque:)``)
/// from ``Image/isOpaque``:
/// - `jpeg`: an opaque still under ``ImageEncoding/automatic(quality:)`` or
///   ``ImageEncoding/jpeg(quality:)`` (quality 90 by default: a 256x256
///   thumbnail is about 15-25 KB and decodes in well under a millisecond);
/// - `png`: a still with transparency, or any still under
///   ``ImageEncoding/png`` (pixel for pixel what was made);
/// - `webp`, `avif`: any still under ``ImageEncoding/webp(quality:)``,
///   ``ImageEncoding/webpLossless`` or ``ImageEncoding/avif(quality:speed:)``
///   (or what ``ImageEncoding/negotiated(accept:quality:avifSpeed:)``
///   resolves to), alpha kept. They are read back by the loader's
///   decoders, as the others (found by sniffing): a registry without a
///   WebP or AVIF decoder reads them as a miss. A version of the library
///   before these kinds reads them as a miss too.
/// - `raw`: the frames of an animation, as they are (no encoder here writes
///   animations).
///
/// The metadata says the JPEG's, WebP's or AVIF's quality (and WebP's
/// `lossless`, AVIF's speed) and whether the image is opaque (the JPEG
/// quality and the opacity are absent from entries written before they
/// were recorded: a JPEG then was always quality 90; an unknown opacity is
/// read as "decode to know"), so that ``AsyncImageLoader/encodedImage(for:encoding:)`` can
/// serve a payload as it is, with no decode and no encode (``stored(_:)``).
/// Optional JSON fields: the format version did not change, and either
/// version of the library reads the other's entries.
package enum StoredImage {
    static let magic: [UInt8] = Array("AIKI".utf8)
    /// The largest side stored (a larger processed image is not stored).
    static let maxSide = 1 << 15
    static let version: UInt16 = 1

    enum Payload: UInt8 {
        case raw = 0
        case jpeg = 1
        case png = 2
        case webp = 3
        case avif = 4
    }

    /// What the payload does not say about the image.
    struct Metadata: Codable {
        var width: Int
        var height: Int
        var format: String?
        var originalWidth: Int
        var originalHeight: Int
        var orientation: Int
        var loopCount: Int?
        var scaleDenominator: Int
        var decodedWidth: Int
        var decodedHeight: Int
        var countedPixels: Int?
        var durations: [Double]
        /// The source file's properties (``Image/fileProperties``).
        var fileProperties: ImageFileProperties?
        /// A `jpeg` payload's quality (nil before it was recorded: then 90,
        /// the only quality written until then); a `webp` or `avif`
        /// payload's (libwebp's effort for a lossless WebP).
        var quality: Int?
        /// Whether a `webp` payload is lossless.
        var lossless: Bool?
        /// An `avif` payload's libavif speed.
        var speed: Int?
        /// ``Image/isOpaque`` (nil before it was recorded).
        var opaque: Bool?
    }

    /// The JPEG quality of stored payloads written before the quality was recorded.
    static let unrecordedJPEGQuality = 90

    /// The bytes to store for `image`.
    ///
    /// - Throws: ``AsyncImageError/encoding(_:reason:)`` when the encoder fails.
    package static func encode(_ image: Image, encoding: ImageEncoding) throws(AsyncImageError) -> Data {
        try encode(image, encoding: encoding, reusing: nil)
    }

    /// The bytes to store for `image`; `made`: the still's bytes, made
    /// already (for an answer of ``AsyncImageLoader/encodedImage(for:encoding:)``),
    /// used when they are the kind `encoding` stores.
    static func encode(_ image: Image, encoding: ImageEncoding, reusing made: EncodedPayload?)
        throws(AsyncImageError) -> Data
    {
        guard image.width <= maxSide, image.height <= maxSide else {
            throw .encoding(.png, reason: "\(image.width)x\(image.height) is larger than a stored image may be")
        }
        let payloadKind: Payload
        let payload: Data
        var quality: Int?
        var lossless: Bool?
        var speed: Int?
        if image.isAnimated {
            payloadKind = .raw
            var frames = Data(capacity: image.frames.count * image.width * image.height * 4)
            for frame in image.frames { frames.append(tightPixels(frame.pixels, image)) }
            payload = frames
        } else {
            let kind = encoding.storedKind(opaque: image.isOpaque)
            if let made, made.kind == kind {
                payload = made.data
            } else {
                payload = try EncodedPayload(image, as: kind).data
            }
            switch kind {
            case .jpeg(let q):
                (payloadKind, quality) = (.jpeg, q)
            case .png:
                payloadKind = .png
            case .webp(let q, let isLossless):
                (payloadKind, quality, lossless) = (.webp, q, isLossless)
            case .avif(let q, let s):
                (payloadKind, quality, speed) = (.avif, q, s)
            }
        }
        let metadata = Metadata(
            width: image.width, height: image.height, format: image.format?.rawValue,
            originalWidth: image.originalSize.width, originalHeight: image.originalSize.height,
            orientation: image.orientation.rawValue, loopCount: image.loopCount,
            scaleDenominator: image.decodeInfo.scaleDenominator, decodedWidth: image.decodeInfo.decodedSize.width,
            decodedHeight: image.decodeInfo.decodedSize.height, countedPixels: image.decodeInfo.countedPixels,
            durations: image.frames.map(\.duration), fileProperties: image.fileProperties, quality: quality,
            lossless: lossless, speed: speed, opaque: image.isOpaque)
        guard let json = try? JSONEncoder().encode(metadata) else {
            throw .encoding(.png, reason: "the stored image's metadata could not be encoded")
        }
        var out = Data(capacity: 11 + json.count + payload.count)
        out.append(contentsOf: magic)
        withUnsafeBytes(of: version.littleEndian) { out.append(contentsOf: $0) }
        out.append(payloadKind.rawValue)
        withUnsafeBytes(of: UInt32(json.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(json)
        out.append(payload)
        return out
    }

    /// A stored image read without decoding its payload: its metadata and
    /// the payload's bytes.
    struct Parts {
        let kind: Payload
        let metadata: Metadata
        let payload: Data

        /// The payload's bytes as one encoded kind (a JPEG, WebP or AVIF at
        /// its settings, or a PNG), nil for raw frames (or a WebP or AVIF
        /// whose settings are not recorded).
        var encoded: EncodedPayload? {
            switch kind {
            case .raw: return nil
            case .png: return EncodedPayload(kind: .png, data: payload)
            case .jpeg:
                return EncodedPayload(
                    kind: .jpeg(quality: metadata.quality ?? StoredImage.unrecordedJPEGQuality), data: payload)
            case .webp:
                guard let quality = metadata.quality, let lossless = metadata.lossless else { return nil }
                return EncodedPayload(kind: .webp(quality: quality, lossless: lossless), data: payload)
            case .avif:
                guard let quality = metadata.quality, let speed = metadata.speed else { return nil }
                return EncodedPayload(kind: .avif(quality: quality, speed: speed), data: payload)
            }
        }

        /// Whether the image is opaque, when known without a decode: a
        /// `jpeg` payload is (only opaque stills are stored so), else the
        /// metadata says, if it was recorded.
        var isOpaque: Bool? { kind == .jpeg ? true : metadata.opaque }

        var size: PixelSize { PixelSize(width: metadata.width, height: metadata.height) }
        var originalSize: PixelSize { PixelSize(width: metadata.originalWidth, height: metadata.originalHeight) }
        var frameCount: Int { metadata.durations.count }
    }

    /// The parts of the stored image in `data`, or nil when it is not a
    /// stored image this version reads (a miss). Nothing is decoded.
    static func stored(_ data: Data) -> Parts? {
        let bytes = [UInt8](data.prefix(11))
        guard bytes.count == 11, Array(bytes[0..<4]) == magic,
            UInt16(bytes[4]) | UInt16(bytes[5]) << 8 == version,
            let kind = Payload(rawValue: bytes[6])
        else { return nil }
        let jsonLength = Int(UInt32(bytes[7]) | UInt32(bytes[8]) << 8 | UInt32(bytes[9]) << 16 | UInt32(bytes[10]) << 24)
        let start = data.startIndex + 11
        guard data.count - 11 >= jsonLength,
            let metadata = try? JSONDecoder().decode(Metadata.self, from: data[start..<start + jsonLength]),
            metadata.width > 0, metadata.height > 0, !metadata.durations.isEmpty,
            metadata.width <= maxSide, metadata.height <= maxSide,
            (1...(1 << 20)).contains(metadata.originalWidth), (1...(1 << 20)).contains(metadata.originalHeight),
            (1...(1 << 20)).contains(metadata.decodedWidth), (1...(1 << 20)).contains(metadata.decodedHeight),
            metadata.durations.count <= 10_000, metadata.durations.allSatisfy({ $0.isFinite && $0 >= 0 }),
            kind == .raw || metadata.durations.count == 1, metadata.quality.map({ (1...100).contains($0) }) ?? true,
            metadata.speed.map({ (0...10).contains($0) }) ?? true
        else { return nil }
        return Parts(kind: kind, metadata: metadata, payload: Data(data[(start + jsonLength)...]))
    }

    /// The image in `data`, or nil when it is not a stored image this
    /// version reads (the caller treats that as a miss).
    package static func decode(_ data: Data, decoders: ImageDecoderRegistry) -> Image? {
        guard let parts = stored(data) else { return nil }
        let metadata = parts.metadata
        let payload = parts.payload
        let frames: [ImageFrame]
        let bytesPerRow: Int
        var opacity = Image.Opacity.unknown
        switch parts.kind {
        case .raw:
            let frameBytes = metadata.width * metadata.height * 4
            guard payload.count == frameBytes * metadata.durations.count else { return nil }
            frames = metadata.durations.enumerated().map { index, duration in
                let offset = payload.startIndex + index * frameBytes
                return ImageFrame(pixels: Data(payload[offset..<offset + frameBytes]), duration: duration)
            }
            bytesPerRow = metadata.width * 4
            if let opaque = metadata.opaque { opacity = opaque ? .opaque : .notOpaque }
        case .jpeg, .png, .webp, .avif:
            guard let still = try? decoders.decode(payload, options: DecodingOptions(maxPixels: metadata.width * metadata.height)),
                still.width == metadata.width, still.height == metadata.height
            else { return nil }
            frames = [ImageFrame(pixels: still.pixels, duration: metadata.durations[0])]
            bytesPerRow = still.bytesPerRow
            // What was stored: the decoder looked (a JPEG is opaque; a PNG is scanned).
            opacity = still.isOpaque ? .opaque : .notOpaque
        }
        var info = DecodeInfo(
            scaleDenominator: metadata.scaleDenominator,
            decodedSize: PixelSize(width: metadata.decodedWidth, height: metadata.decodedHeight))
        info.countedPixels = metadata.countedPixels
        return Image(
            width: metadata.width, height: metadata.height, bytesPerRow: bytesPerRow, frames: frames,
            format: metadata.format.flatMap(ImageFormat.init(rawValue:)),
            originalSize: PixelSize(width: metadata.originalWidth, height: metadata.originalHeight),
            orientation: ImageOrientation(rawValue: metadata.orientation) ?? .up, loopCount: metadata.loopCount,
            decodeInfo: info, opacity: opacity
        ).with(fileProperties: metadata.fileProperties)
    }

    /// A frame's pixels without row padding.
    private static func tightPixels(_ pixels: Data, _ image: Image) -> Data {
        let rowBytes = image.width * 4
        guard image.bytesPerRow != rowBytes else { return pixels.prefix(rowBytes * image.height) }
        var out = Data(capacity: rowBytes * image.height)
        for y in 0..<image.height {
            let start = pixels.startIndex + y * image.bytesPerRow
            out.append(pixels[start..<start + rowBytes])
        }
        return out
    }
}
