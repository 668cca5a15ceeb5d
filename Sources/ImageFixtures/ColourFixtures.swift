import AsyncImageKit
import Foundation

/// Files that carry colour information, built in process: an ICC profile
/// put into a JPEG's APP2 segments, a PNG's `iCCP` chunk or a GIF's
/// `ICCRGBG1012` extension, whole or damaged on purpose. For the colour
/// tests, the fuzz seeds and the demo.
public enum ColourFixtures {
    /// The most profile bytes one APP2 segment holds (65535 less the length
    /// field, the `ICC_PROFILE\0` tag, and the sequence number and count).
    public static let app2Capacity = 65519

    /// APP2 `ICC_PROFILE` segments for `profile`, `capacity` bytes each;
    /// `count` and `sequences` override what they say (for damaged files).
    public static func app2Segments(
        _ profile: Data, capacity: Int = app2Capacity, count: Int? = nil, sequences: [Int]? = nil
    ) -> Data {
        var parts: [Data] = stride(from: 0, to: profile.count, by: capacity).map {
            profile.subdata(in: $0..<min(profile.count, $0 + capacity))
        }
        if parts.isEmpty { parts = [Data()] }
        let numbers = sequences ?? Array(1...parts.count)
        var segments = Data()
        for (number, part) in zip(numbers, parts) {
            var payload = Data("ICC_PROFILE".utf8) + [0, UInt8(truncatingIfNeeded: number), UInt8(truncatingIfNeeded: count ?? parts.count)]
            payload.append(part)
            segments += [0xFF, 0xE2, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)]
            segments.append(payload)
        }
        return segments
    }

    /// `jpeg` with `segments` put right after its SOI marker.
    public static func jpeg(_ jpeg: Data, inserting segments: Data) -> Data {
        var tagged = Data(jpeg.prefix(2))
        tagged.append(segments)
        tagged.append(jpeg.dropFirst(2))
        return tagged
    }

    /// `jpeg` tagged with `profile` (split over as many segments as it needs).
    public static func jpeg(_ jpeg: Data, profile: Data) -> Data {
        Self.jpeg(jpeg, inserting: app2Segments(profile))
    }

    /// An `iCCP` chunk's payload: `name`, a zero, method 0, the profile zlib-compressed.
    public static func iCCPPayload(_ profile: Data, name: String = "ICC") -> Data {
        var payload = Data(name.utf8) + [0, 0]
        payload.append(RawPNGWriter.deflate(profile))
        return payload
    }

    /// A PNG of `image` with `chunks` (such as `iCCP`, `sRGB`, `gAMA`, `cHRM`) before IDAT.
    public static func png(_ image: Image, chunks: [(type: String, payload: Data)]) -> Data {
        RawPNGWriter.encode(image, chunks: chunks)
    }

    /// An encoded `png` with `chunks` inserted after its IHDR (so before
    /// IDAT, as `iCCP` must be).
    public static func png(_ png: Data, inserting chunks: [(type: String, payload: Data)]) -> Data {
        let headerEnd = png.startIndex + 8 + 25  // signature, then IHDR (length, type, 13 bytes, CRC)
        var out = Data(png[png.startIndex..<headerEnd])
        for chunk in chunks { out.append(chunk: chunk.type, chunk.payload) }
        out.append(png[headerEnd...])
        return out
    }

    /// A simple (lossy `VP8 ` or lossless `VP8L`, no alpha chunk) `webp`
    /// of `width` x `height` rewritten in the extended format with an
    /// `ICCP` chunk holding `profile`; nil if it is not a simple WebP.
    public static func webp(_ webp: Data, profile: Data, width: Int, height: Int) -> Data? {
        let bytes = [UInt8](webp)
        guard bytes.count > 20, bytes[0..<4] == [0x52, 0x49, 0x46, 0x46], bytes[8..<12] == [0x57, 0x45, 0x42, 0x50],
            bytes[12..<15] == [0x56, 0x50, 0x38]  // "VP8" (then " " or "L")
        else { return nil }
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            Array(type.utf8) + le(payload.count, 4) + payload + (payload.count % 2 == 1 ? [0] : [])
        }
        // VP8X: flags (ICC profile: 0x20), three reserved bytes, canvas width - 1 and height - 1 (24 bits each).
        let extended = chunk("VP8X", [0x20, 0, 0, 0] + le(width - 1, 3) + le(height - 1, 3))
        let body = Array("WEBP".utf8) + extended + chunk("ICCP", [UInt8](profile)) + Array(bytes[12...])
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    /// `gif` with an `ICCRGBG1012` application extension holding `profile`
    /// (255-byte sub-blocks) after its logical screen and global colour table.
    public static func gif(_ gif: Data, profile: Data) -> Data {
        guard gif.count > 13 else { return gif }
        let packed = gif[gif.startIndex + 10]
        let table = packed & 0x80 != 0 ? 3 << (Int(packed & 7) + 1) : 0
        let at = gif.startIndex + 13 + table
        var extensionBlock = Data([0x21, 0xFF, 11]) + Data("ICCRGBG1012".utf8)
        for start in stride(from: 0, to: profile.count, by: 255) {
            let part = profile.subdata(in: start..<min(profile.count, start + 255))
            extensionBlock.append(UInt8(part.count))
            extensionBlock.append(part)
        }
        extensionBlock.append(0)
        return gif.prefix(upTo: at) + extensionBlock + gif.suffix(from: at)
    }

    /// `image` (sRGB) as a Display P3 JPEG: its pixels re-encoded as P3
    /// numbers and the P3 profile embedded, so that a colour-managed decoder
    /// shows the colours of `image` (and one that is not shows them dull).
    /// The demo's P3 photo. `nil` if Little CMS fails.
    public static func displayP3JPEG(_ image: Image, quality: Int) -> Data? {
        guard let profile = ColorProfiles.displayP3() else { return nil }
        var pixels = image.stillImage(frame: 0).pixels
        guard ColorProfiles.convertFromSRGB(&pixels, to: profile),
            let jpeg = try? JPEGEncoder(quality: quality).encode(Image(width: image.width, height: image.height, rgba: pixels))
        else { return nil }
        return Self.jpeg(jpeg, profile: profile)
    }

    /// A chart of 24 patches (the ColorChecker's sRGB values), `patch`
    /// pixels square, 6 by 4: the colour tests' image.
    public static func chart(patch: Int = 16) -> Image {
        SyntheticImage.make(width: 6 * patch, height: 4 * patch) { pixels in
            for y in 0..<(4 * patch) {
                for x in 0..<(6 * patch) {
                    let colour = patches[(y / patch) * 6 + x / patch]
                    let at = (y * 6 * patch + x) * 4
                    pixels[at] = colour.0
                    pixels[at + 1] = colour.1
                    pixels[at + 2] = colour.2
                    pixels[at + 3] = 255
                }
            }
        }
    }

    /// The ColorChecker's 24 patches in sRGB.
    public static let patches: [(UInt8, UInt8, UInt8)] = [
        (115, 82, 68), (194, 150, 130), (98, 122, 157), (87, 108, 67), (133, 128, 177), (103, 189, 170),
        (214, 126, 44), (80, 91, 166), (193, 90, 99), (94, 60, 108), (157, 188, 64), (224, 163, 46),
        (56, 61, 150), (70, 148, 73), (175, 54, 60), (231, 199, 31), (187, 86, 149), (8, 133, 161),
        (243, 243, 242), (200, 200, 200), (160, 160, 160), (122, 122, 121), (85, 85, 85), (52, 52, 52),
    ]
}
