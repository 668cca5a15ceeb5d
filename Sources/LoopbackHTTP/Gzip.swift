import CZlib
import Foundation

/// gzip compression with zlib, for serving `Content-Encoding: gzip` bodies.
public enum Gzip {
    /// `data` compressed in the gzip format.
    public static func compress(_ data: Data) -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: gzip wrapper.
        guard deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return Data() }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))) + 32)
        let produced: Int = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(out.count)
                guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return 0 }
                return Int(stream.total_out)
            }
        }
        return output.prefix(produced)
    }
}
