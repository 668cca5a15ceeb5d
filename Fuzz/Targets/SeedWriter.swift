import AsyncImageKit
import Foundation

/// Writes the seeds of the targets whose inputs no image corpus holds:
/// disk cache entry files (`disk-entry`) and stored processed images
/// (`stored-image`), each as the library itself writes them, and ICC
/// profiles built with Little CMS (`colour`).
/// `FUZZ_WRITE_SEEDS=Fuzz/seeds .build-fuzz/release/asyncimage-fuzz` made `Fuzz/seeds/<target>/`.
public enum SeedWriter {
    /// Writes the seeds under `directory/<target>/`.
    public static func write(to directory: URL) throws {
        let entries = directory.appendingPathComponent(FuzzTarget.diskEntry.rawValue)
        let stored = directory.appendingPathComponent(FuzzTarget.storedImage.rawValue)
        let colour = directory.appendingPathComponent(FuzzTarget.colour.rawValue)
        for folder in [entries, stored, colour] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
        let profiles: [(String, Data?)] = [
            ("display-p3.icc", ColorProfiles.displayP3()), ("srgb.icc", ColorProfiles.sRGB()),
            ("grey-1.8.icc", ColorProfiles.grayProfile(gamma: 1.8, description: "Grey 1.8")),
            ("gamma-2.2.icc", ColorProfiles.matrixProfile(
                chromaticities: [0.3127, 0.3290, 0.64, 0.33, 0.21, 0.71, 0.15, 0.06], gamma: 2.2, description: "Wide 2.2")),
        ]
        for (name, profile) in profiles {
            if let profile { try profile.write(to: colour.appendingPathComponent(name)) }
        }

        let opaque = gradient(width: 24, height: 16, alpha: 255)
        let translucent = gradient(width: 9, height: 13, alpha: 128)
        let animated = Image(
            width: 5, height: 4, bytesPerRow: 20,
            frames: [0, 1, 2].map { ImageFrame(pixels: gradient(width: 5, height: 4, alpha: 255, shift: $0).pixels, duration: 0.1) },
            format: .gif, originalSize: PixelSize(width: 10, height: 8), loopCount: 0,
            decodeInfo: DecodeInfo(scaleDenominator: 1, decodedSize: PixelSize(width: 10, height: 8)))
        try StoredImage.encode(opaque, encoding: .automatic).write(to: stored.appendingPathComponent("opaque-jpeg.aiki"))
        try StoredImage.encode(translucent, encoding: .automatic).write(to: stored.appendingPathComponent("alpha-png.aiki"))
        try StoredImage.encode(animated, encoding: .automatic).write(to: stored.appendingPathComponent("animation-raw.aiki"))
        try StoredImage.encode(opaque, encoding: .webp(quality: 80)).write(to: stored.appendingPathComponent("opaque-webp.aiki"))
        try StoredImage.encode(translucent, encoding: .avif(quality: 60, speed: 10))
            .write(to: stored.appendingPathComponent("alpha-avif.aiki"))

        var metadata = DataCacheMetadata(
            etag: "\"abc\"", lastModified: "Tue, 24 Nov 2026 00:00:00 GMT", freshUntil: 1_800_000_000,
            contentType: "image/png")
        metadata.http = StoredHTTPHead(
            status: 200, headers: ["cache-control": "no-cache", "etag": "\"abc\"", "vary": "Accept, DPR"],
            varyRequestHeaders: ["accept": "image/webp", "dpr": ""], requestTime: 1_799_999_999, responseTime: 1_800_000_000)
        metadata.generation = "g1"
        try DataCacheEntry.encode(Data("a body".utf8), metadata: metadata)
            .write(to: entries.appendingPathComponent("full-metadata.aikd"))
        try DataCacheEntry.encode(Data(), metadata: DataCacheMetadata())
            .write(to: entries.appendingPathComponent("empty.aikd"))
        try DataCacheEntry.encode(StoredImage.encode(opaque, encoding: .lossless), metadata: DataCacheMetadata(contentType: "image/png"))
            .write(to: entries.appendingPathComponent("stored-image.aikd"))
    }

    /// A `width` x `height` still with a diagonal gradient.
    static func gradient(width: Int, height: Int, alpha: UInt8, shift: Int = 0) -> Image {
        var pixels = Data(count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                pixels[i] = UInt8(truncatingIfNeeded: (x + shift) * 255 / max(1, width - 1))
                pixels[i + 1] = UInt8(truncatingIfNeeded: y * 255 / max(1, height - 1))
                pixels[i + 2] = UInt8(truncatingIfNeeded: (x + y) * 8)
                pixels[i + 3] = alpha
            }
        }
        return Image(width: width, height: height, rgba: pixels)
    }
}
