import CZlib
import Foundation

/// PNG decompression bombs, for the tests of the decoder's inflate bounds
/// and the loader's attack suite: a small grey image whose one zlib stream
/// holds its rows, then `extraBytes` more zeros that no row needs (zeros
/// compress about 1,000 to 1, so 8 MB of IDAT inflates to 8 GiB).
public enum PNGBomb {
    /// A `width`x`height` 8-bit grey PNG (every pixel 0) whose image data
    /// inflates to its rows plus `extraBytes` zeros.
    public static func make(width: Int, height: Int, extraBytes: Int) -> Data {
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var ihdr = Data()
        ihdr.append(bigEndian: UInt32(width))
        ihdr.append(bigEndian: UInt32(height))
        ihdr.append(contentsOf: [8, 0, 0, 0, 0])  // 8-bit grey, not interlaced
        png.append(chunk: "IHDR", ihdr)
        png.append(chunk: "IDAT", deflateZeros(height * (width + 1) + extraBytes))
        png.append(chunk: "IEND", Data())
        return png
    }

    /// A zlib stream of `count` zero bytes, made a MiB at a time.
    private static func deflateZeros(_ count: Int) -> Data {
        var stream = z_stream()
        precondition(
            deflateInit_(&stream, 9, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK, "deflateInit failed")
        defer { deflateEnd(&stream) }
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var left = count
        repeat {
            let piece = min(left, zeros.count)
            left -= piece
            zeros.withUnsafeBufferPointer { input in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(piece)
                repeat {
                    buffer.withUnsafeMutableBufferPointer { out in
                        stream.next_out = out.baseAddress
                        stream.avail_out = uInt(out.count)
                        _ = deflate(&stream, left == 0 ? Z_FINISH : Z_NO_FLUSH)
                        output.append(out.baseAddress!, count: out.count - Int(stream.avail_out))
                    }
                } while stream.avail_out == 0
            }
        } while left > 0
        return output
    }
}
