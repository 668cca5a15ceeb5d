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
/// Payloads, chosen by ``ProcessedImageEncoding``:
/// - `jpeg`: an opaque still under ``ProcessedImageEncoding/automatic``
///   (quality 90: a 256x256 thumbnail is about 15-25 KB and decodes in well
///   under a millisecond);
/// - `png`: a still with transparency, or any still under
///   ``ProcessedImageEncoding/lossless`` (pixel for pixel what was made);
/// - `raw`: the frames of an animation, as they are (no encoder here writes
///   animations).
package enum StoredImage {
    static let magic: [UInt8] = Array("AIKI".utf8)
    /// The largest side stored (a larger processed image is not stored).
    static let maxSide = 1 << 15
    static let version: UInt16 = 1

    enum Payload: UInt8 {
        case raw = 0
        case jpeg = 1
        case png = 2
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
    }

    /// The bytes to store for `image`.
    ///
    /// - Throws: ``AsyncImageError/encoding(_:reason:)`` when the encoder fails.
    package static func encode(_ image: Image, encoding: ProcessedImageEncoding) throws(AsyncImageError) -> Data {
        guard image.width <= maxSide, image.height <= maxSide else {
            throw .encoding(.png, reason: "\(image.width)x\(image.height) is larger than a stored image may be")
        }
        let payloadKind: Payload
        let payload: Data
        if image.isAnimated {
            payloadKind = .raw
            var frames = Data(capacity: image.frames.count * image.width * image.height * 4)
            for frame in image.frames { frames.append(tightPixels(frame.pixels, image)) }
            payload = frames
        } else if encoding == .automatic, isOpaque(image) {
            payloadKind = .jpeg
            payload = try JPEGEncoder(quality: 90).encode(image)
        } else {
            payloadKind = .png
            payload = try PNGEncoder(compressionLevel: 1).encode(image)
        }
        let metadata = Metadata(
            width: image.width, height: image.height, format: image.format?.rawValue,
            originalWidth: image.originalSize.width, originalHeight: image.originalSize.height,
            orientation: image.orientation.rawValue, loopCount: image.loopCount,
            scaleDenominator: image.decodeInfo.scaleDenominator, decodedWidth: image.decodeInfo.decodedSize.width,
            decodedHeight: image.decodeInfo.decodedSize.height, countedPixels: image.decodeInfo.countedPixels,
            durations: image.frames.map(\.duration), fileProperties: image.fileProperties)
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

    /// The image in `data`, or nil when it is not a stored image this
    /// version reads (the caller treats that as a miss).
    package static func decode(_ data: Data, decoders: ImageDecoderRegistry) -> Image? {
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
            metadata.durations.count <= 10_000, metadata.durations.allSatisfy({ $0.isFinite && $0 >= 0 })
        else { return nil }
        let payload = data[(start + jsonLength)...]
        let frames: [ImageFrame]
        let bytesPerRow: Int
        switch kind {
        case .raw:
            let frameBytes = metadata.width * metadata.height * 4
            guard payload.count == frameBytes * metadata.durations.count else { return nil }
            frames = metadata.durations.enumerated().map { index, duration in
                let offset = payload.startIndex + index * frameBytes
                return ImageFrame(pixels: Data(payload[offset..<offset + frameBytes]), duration: duration)
            }
            bytesPerRow = metadata.width * 4
        case .jpeg, .png:
            guard metadata.durations.count == 1,
                let still = try? decoders.decode(Data(payload), options: DecodingOptions(maxPixels: metadata.width * metadata.height)),
                still.width == metadata.width, still.height == metadata.height
            else { return nil }
            frames = [ImageFrame(pixels: still.pixels, duration: metadata.durations[0])]
            bytesPerRow = still.bytesPerRow
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
            decodeInfo: info
        ).with(fileProperties: metadata.fileProperties)
    }

    /// Whether every pixel of the still is fully opaque.
    static func isOpaque(_ image: Image) -> Bool {
        image.pixels.withUnsafeBytes { raw -> Bool in
            let bytes = raw.bindMemory(to: UInt8.self)
            for y in 0..<image.height {
                let row = y * image.bytesPerRow
                var x = 3
                while x < image.width * 4 {
                    if bytes[row + x] != 255 { return false }
                    x += 4
                }
            }
            return true
        }
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

/// How the disk cache stores processed images (see ``AsyncImageLoader/Configuration/processedImageEncoding``).
public enum ProcessedImageEncoding: Sendable, Hashable {
    /// JPEG (quality 90) for opaque stills, PNG for stills with
    /// transparency, raw pixels for animations: small files, close to the
    /// processed pixels but not equal to them. The default.
    case automatic
    /// PNG for every still, raw pixels for animations: read back pixel for
    /// pixel as it was made, in larger files.
    case lossless
}
