import AsyncImageKit
import Foundation

/// Colour profiles as the decoders meet them: the input is an ICC profile
/// (or, for the `iCCP` case, a whole `iCCP` payload), put into a small valid
/// JPEG (over APP2 segments whose size the input's last byte picks), PNG
/// (`iCCP`, compressed here, and the raw input as the payload) and GIF
/// (`ICCRGBG1012`). The containers' joins and inflation, Little CMS's
/// parsing and transform building, and the identity check all run on it.
///
/// Must hold: every file still decodes (a profile never fails a decode);
/// the properties report colour information; and a profile with a warning,
/// or an sRGB one, leaves the pixels those of the untagged file.
enum ColourTarget {
    // Arrays, not `Data`: LeakSanitizer cannot follow `Data`'s tagged
    // representation from a global, and reported these as leaks.
    private static let jpegBytes: [UInt8] = {
        let image = Image(width: 4, height: 4, rgba: Data((0..<64).map { UInt8(truncatingIfNeeded: $0 * 37) }))
        return [UInt8]((try? JPEGEncoder(quality: 90).encode(image)) ?? Data())
    }()
    private static let pngBytes: [UInt8] = {
        let image = Image(width: 4, height: 4, rgba: Data((0..<64).map { UInt8(truncatingIfNeeded: $0 * 53 | 3) }))
        return [UInt8]((try? PNGEncoder().encode(image)) ?? Data())
    }()
    /// A 1x1 GIF89a with a 2-colour global table (red, black).
    private static let gifBytes: [UInt8] = (
        [0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0, 1, 0, 0x80, 0, 0, 0xFF, 0, 0, 0, 0, 0]
            + [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0, 0x3B])

    static func run(_ data: Data) -> String? {
        let (jpeg, png, gif) = (Data(jpegBytes), Data(pngBytes), Data(gifBytes))
        // 1 to 24736 bytes a segment, as the last byte says (a JPEG holds 255 at most).
        let segment = max(1 + Int(data.last ?? 0) * 97, (data.count + 254) / 255)
        let files: [(String, Data, Data)] = [
            ("jpeg", insertAfterSOI(jpeg, app2Segments(data, capacity: segment)), jpeg),
            ("png iCCP", insertAfterIHDR(png, chunk("iCCP", Data("ICC".utf8) + [0, 0] + zlibStored(data))), png),
            ("png raw iCCP", insertAfterIHDR(png, chunk("iCCP", data)), png),
            ("gif", insertICCExtension(gif, data), gif),
        ]
        for (name, tagged, untagged) in files {
            let decoded: Image
            do {
                decoded = try ImageDecoder().decode(tagged)
            } catch {
                return "\(name): a profile failed the decode: \(error)"
            }
            guard let properties = ImageFileProperties(data: tagged), let info = properties.colorProfile else {
                return "\(name): no colour information reported"
            }
            if info.warning != nil || info.isSRGB {
                guard let plain = try? ImageDecoder().decode(untagged), plain.pixels == decoded.pixels else {
                    return "\(name): a profile with a warning or sRGB changed the pixels (\(info))"
                }
            }
        }
        return nil
    }

    private static func app2Segments(_ profile: Data, capacity: Int) -> Data {
        var segments = Data()
        let count = max(1, (profile.count + capacity - 1) / capacity)
        for index in 0..<count {
            let part = profile.isEmpty ? Data() : profile.subdata(in: index * capacity..<min(profile.count, (index + 1) * capacity))
            var payload = Data("ICC_PROFILE".utf8) + [0, UInt8(index + 1), UInt8(count)]
            payload.append(part)
            segments += [0xFF, 0xE2, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)]
            segments.append(payload)
        }
        return segments
    }

    private static func insertAfterSOI(_ jpeg: Data, _ segments: Data) -> Data {
        Data(jpeg.prefix(2)) + segments + jpeg.dropFirst(2)
    }

    private static func insertAfterIHDR(_ png: Data, _ chunk: Data) -> Data {
        Data(png.prefix(33)) + chunk + png.dropFirst(33)
    }

    private static func insertICCExtension(_ gif: Data, _ profile: Data) -> Data {
        var block = Data([0x21, 0xFF, 11]) + Data("ICCRGBG1012".utf8)
        for start in stride(from: 0, to: profile.count, by: 255) {
            let part = profile.subdata(in: start..<min(profile.count, start + 255))
            block.append(UInt8(part.count))
            block.append(part)
        }
        block.append(0)
        return Data(gif.prefix(19)) + block + gif.dropFirst(19)
    }

    /// A PNG chunk with its CRC.
    private static func chunk(_ type: String, _ payload: Data) -> Data {
        var chunk = Data()
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { chunk.append(contentsOf: $0) }
        let body = Data(type.utf8) + payload
        chunk.append(body)
        withUnsafeBytes(of: crc32(body).bigEndian) { chunk.append(contentsOf: $0) }
        return chunk
    }

    /// A zlib stream of stored (uncompressed) deflate blocks.
    private static func zlibStored(_ data: Data) -> Data {
        var out = Data([0x78, 0x01])
        var start = 0
        repeat {
            let end = min(data.count, start + 65535)
            let length = end - start
            out.append(end == data.count ? 1 : 0)
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out.append(data.subdata(in: start..<end))
            start = end
        } while start < data.count
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        withUnsafeBytes(of: (b << 16 | a).bigEndian) { out.append(contentsOf: $0) }
        return out
    }

    private static func crc32(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
