import AsyncImageKit
import CZlib
import Foundation

/// Hand-made hostile files: headers that promise huge images, bodies cut short.
public enum CraftedFiles {
    /// A PNG whose header says `width` x `height` (8-bit RGBA) followed by a tiny
    /// IDAT: a decompression bomb, as far as the header goes.
    public static func pngHeader(width: UInt32, height: UInt32) -> Data {
        var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var ihdr = Data()
        ihdr.append(bigEndian: width)
        ihdr.append(bigEndian: height)
        ihdr.append(contentsOf: [8, 6, 0, 0, 0])
        data.append(chunk: "IHDR", ihdr)
        data.append(chunk: "IDAT", Data([0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]))
        data.append(chunk: "IEND", Data())
        return data
    }

    /// A copy of a real JPEG whose first frame header is patched to `width` x `height`.
    public static func jpeg(_ jpeg: Data, patchedTo width: UInt16, height: UInt16) -> Data {
        var bytes = [UInt8](jpeg)
        var offset = 2
        while offset + 9 < bytes.count {
            guard bytes[offset] == 0xFF else { break }
            let marker = bytes[offset + 1]
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if (0xC0...0xC2).contains(marker) {
                bytes[offset + 5] = UInt8(height >> 8)
                bytes[offset + 6] = UInt8(height & 0xFF)
                bytes[offset + 7] = UInt8(width >> 8)
                bytes[offset + 8] = UInt8(width & 0xFF)
                break
            }
            offset += 2 + length
        }
        return Data(bytes)
    }

    /// A GIF header whose logical screen is `width` x `height`, with one 1x1 frame.
    public static func gifScreen(width: UInt16, height: UInt16) -> Data {
        var data = Data("GIF89a".utf8)
        data.append(contentsOf: [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8)])
        data.append(contentsOf: [0x80, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF])  // 2-colour global table
        data.append(contentsOf: [0x2C, 0, 0, 0, 0, 1, 0, 1, 0, 0])  // 1x1 image
        data.append(contentsOf: [0x02, 0x02, 0x44, 0x01, 0x00, 0x3B])  // LZW data, trailer
        return data
    }
}

extension Data {
    mutating func append(bigEndian value: UInt32) {
        append(contentsOf: [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)])
    }

    mutating func append(chunk type: String, _ payload: Data) {
        append(bigEndian: UInt32(payload.count))
        let typed = Data(type.utf8) + payload
        append(typed)
        let crc = typed.withUnsafeBytes { raw in
            crc32(0, raw.bindMemory(to: Bytef.self).baseAddress, uInt(raw.count))
        }
        append(bigEndian: UInt32(crc))
    }
}
