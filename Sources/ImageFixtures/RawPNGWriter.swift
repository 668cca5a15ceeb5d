import AsyncImageKit
import CZlib
import Foundation

/// Writes PNGs of any colour type and bit depth, optionally Adam7-interlaced,
/// from raw samples: files whose every pixel value the tests know, so decoders
/// can be checked exactly (the library's own ``PNGEncoder`` only writes RGBA 8).
public enum RawPNGWriter {
    /// PNG colour types.
    public enum ColorType: UInt8, Sendable {
        /// Gray (bit depths 1, 2, 4, 8, 16).
        case gray = 0
        /// RGB (8, 16).
        case rgb = 2
        /// Palette indices (1, 2, 4, 8).
        case palette = 3
        /// Gray and alpha (8, 16).
        case grayAlpha = 4
        /// RGBA (8, 16).
        case rgba = 6

        var channels: Int {
            switch self {
            case .gray, .palette: return 1
            case .grayAlpha: return 2
            case .rgb: return 3
            case .rgba: return 4
            }
        }
    }

    /// Encodes `samples` (`width * height * channels` values, each below `1 << bitDepth`).
    /// - Parameters:
    ///   - palette: PLTE entries for `.palette`.
    ///   - transparency: the raw tRNS chunk payload, if any.
    ///   - chunks: more chunks (type and payload, e.g. `eXIf`, `iCCP`), written before IDAT.
    ///   - trailingChunks: chunks written after IDAT, before IEND.
    public static func encode(
        width: Int, height: Int, colorType: ColorType, bitDepth: Int, samples: [UInt16],
        palette: [RGBA] = [], transparency: Data? = nil, interlaced: Bool = false,
        chunks: [(type: String, payload: Data)] = [], trailingChunks: [(type: String, payload: Data)] = []
    ) -> Data {
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var ihdr = Data()
        ihdr.append(bigEndian: UInt32(width))
        ihdr.append(bigEndian: UInt32(height))
        ihdr.append(contentsOf: [UInt8(bitDepth), colorType.rawValue, 0, 0, interlaced ? 1 : 0])
        png.append(chunk: "IHDR", ihdr)
        if !palette.isEmpty {
            png.append(chunk: "PLTE", Data(palette.flatMap { [$0.r, $0.g, $0.b] }))
        }
        if let transparency { png.append(chunk: "tRNS", transparency) }
        for chunk in chunks { png.append(chunk: chunk.type, chunk.payload) }

        var raw = Data()
        let passes: [(x: Int, y: Int, dx: Int, dy: Int)] =
            interlaced
            ? [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
            : [(0, 0, 1, 1)]
        for pass in passes {
            let xs = Array(stride(from: pass.x, to: width, by: pass.dx))
            guard !xs.isEmpty else { continue }
            for y in stride(from: pass.y, to: height, by: pass.dy) {
                raw.append(0)  // filter: none
                var bits = BitWriter()
                for x in xs {
                    for c in 0..<colorType.channels {
                        bits.write(samples[(y * width + x) * colorType.channels + c], depth: bitDepth)
                    }
                }
                raw.append(bits.finish())
            }
        }
        png.append(chunk: "IDAT", deflate(raw))
        for chunk in trailingChunks { png.append(chunk: chunk.type, chunk.payload) }
        png.append(chunk: "IEND", Data())
        return png
    }

    /// An 8-bit RGBA PNG of `image`'s first frame, with extra chunks (e.g. an
    /// `eXIf` orientation) before IDAT.
    public static func encode(_ image: Image, chunks: [(type: String, payload: Data)]) -> Data {
        var samples: [UInt16] = []
        samples.reserveCapacity(image.width * image.height * 4)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let pixel = image.pixel(x: x, y: y)
                samples += [UInt16(pixel.r), UInt16(pixel.g), UInt16(pixel.b), UInt16(pixel.a)]
            }
        }
        return encode(
            width: image.width, height: image.height, colorType: .rgba, bitDepth: 8, samples: samples, chunks: chunks)
    }

    static func deflate(_ data: Data) -> Data {
        var length = compressBound(uLong(data.count))
        var out = Data(count: Int(length))
        let status = out.withUnsafeMutableBytes { dst in
            data.withUnsafeBytes { src in
                compress2(
                    dst.bindMemory(to: Bytef.self).baseAddress, &length, src.bindMemory(to: Bytef.self).baseAddress,
                    uLong(data.count), 6)
            }
        }
        precondition(status == Z_OK, "zlib compress2 failed")
        return out.prefix(Int(length))
    }

    private struct BitWriter {
        var bytes = Data()
        var current: UInt32 = 0
        var used = 0

        mutating func write(_ value: UInt16, depth: Int) {
            if depth == 16 {
                bytes.append(UInt8(value >> 8))
                bytes.append(UInt8(value & 0xFF))
                return
            }
            current = current << UInt32(depth) | UInt32(value)
            used += depth
            if used == 8 {
                bytes.append(UInt8(current))
                current = 0
                used = 0
            }
        }

        mutating func finish() -> Data {
            if used > 0 { bytes.append(UInt8(current << UInt32(8 - used))) }
            return bytes
        }
    }
}
