import CZlib
import Foundation

/// What a disk cache entry carries besides its body.
public struct DataCacheMetadata: Sendable, Hashable, Codable {
    /// The key it was stored under (checked on read: a file is only ever
    /// read back for its own key).
    public internal(set) var key: String = ""
    /// When it was stored, seconds since 1970.
    public internal(set) var storedAt: Double = 0
    /// The HTTP `ETag` validator, if any.
    public var etag: String?
    /// The HTTP `Last-Modified` validator, if any.
    public var lastModified: String?
    /// Until when (seconds since 1970) the entry is fresh, if known.
    public var freshUntil: Double?
    /// The `Content-Type`, if any.
    public var contentType: String?
    /// Which stored response an entry belongs to: an ``AsyncImageLoader``
    /// keeps a response's headers, its body and its processed images as
    /// separate entries, each with the response's generation, and uses
    /// an entry only while its generation matches the headers' (a `200`
    /// that replaced the response orphans the others, a `304` keeps them).
    public var generation: String?
    /// The whole stored HTTP response but its body (status, headers, the
    /// request headers `Vary` named, its times), on a loader's headers
    /// entry: what ``HTTPCachePolicy`` reads. (`etag`, `lastModified`,
    /// `freshUntil` and `contentType` are copies of it for readers of the
    /// metadata; the loader reads this alone.)
    package var http: StoredHTTPHead?

    /// Metadata with the given validators and freshness.
    public init(etag: String? = nil, lastModified: String? = nil, freshUntil: Double? = nil, contentType: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
        self.freshUntil = freshUntil
        self.contentType = contentType
    }
}

/// The bytes of one entry file: a 32-byte header, the metadata (JSON), the body.
///
/// Header, little-endian: magic `AIKD`, format version (UInt16), reserved
/// (UInt16), metadata length (UInt32), body length (UInt64), CRC-32 of the
/// metadata and the body (UInt32), reserved (UInt32), reserved (UInt32).
/// Any mismatch (short file, wrong magic or version, lengths that do not
/// add up to the file's size, checksum) makes the file unreadable: a miss.
package enum DataCacheEntry {
    static let magic: [UInt8] = Array("AIKD".utf8)
    static let version: UInt16 = 1
    package static let headerSize = 32

    package static func encode(_ body: Data, metadata: DataCacheMetadata) -> Data {
        let meta = (try? JSONEncoder().encode(metadata)) ?? Data()
        var out = Data(capacity: headerSize + meta.count + body.count)
        out.append(contentsOf: magic)
        append(&out, version)
        append(&out, UInt16(0))
        append(&out, UInt32(meta.count))
        append(&out, UInt64(body.count))
        var crc = crc32(0, nil, 0)
        crc = checksum(crc, meta)
        crc = checksum(crc, body)
        append(&out, UInt32(truncatingIfNeeded: crc))
        append(&out, UInt32(0))
        append(&out, UInt32(0))
        out.append(meta)
        out.append(body)
        return out
    }

    /// The entry in `file`, or why it cannot be read.
    package static func decode(_ file: Data) -> Result<(body: Data, metadata: DataCacheMetadata), DecodeFailure> {
        guard file.count >= headerSize else { return .failure(.short) }
        let bytes = [UInt8](file.prefix(headerSize))
        guard Array(bytes[0..<4]) == magic else { return .failure(.notAnEntry) }
        let fileVersion = read(bytes, 4, as: UInt16.self)
        guard fileVersion <= version else { return .failure(.newerVersion) }
        guard fileVersion == version else { return .failure(.unknownVersion) }
        let metaLength = Int(read(bytes, 8, as: UInt32.self))
        let bodyLength = read(bytes, 12, as: UInt64.self)
        guard bodyLength <= UInt64(Int.max - headerSize - metaLength),
            headerSize + metaLength + Int(bodyLength) == file.count
        else { return .failure(.short) }
        let stored = read(bytes, 20, as: UInt32.self)
        let meta = file.subdata(in: file.startIndex + headerSize..<file.startIndex + headerSize + metaLength)
        let body = file.subdata(in: file.startIndex + headerSize + metaLength..<file.endIndex)
        var crc = crc32(0, nil, 0)
        crc = checksum(crc, meta)
        crc = checksum(crc, body)
        guard UInt32(truncatingIfNeeded: crc) == stored else { return .failure(.checksum) }
        guard let metadata = try? JSONDecoder().decode(DataCacheMetadata.self, from: meta) else {
            return .failure(.checksum)
        }
        return .success((body, metadata))
    }

    package enum DecodeFailure: Error {
        case short, notAnEntry, unknownVersion, newerVersion, checksum
    }

    private static func checksum(_ crc: uLong, _ data: Data) -> uLong {
        data.withUnsafeBytes { raw -> uLong in
            var crc = crc
            var offset = 0
            // zlib's length is a UInt32: feed it in chunks.
            while offset < raw.count {
                let length = min(raw.count - offset, 1 << 30)
                crc = crc32(crc, raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset, uInt(length))
                offset += length
            }
            return crc
        }
    }

    private static func append<T: FixedWidthInteger>(_ data: inout Data, _ value: T) {
        withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
    }

    private static func read<T: FixedWidthInteger>(_ bytes: [UInt8], _ offset: Int, as: T.Type) -> T {
        var value: T = 0
        for i in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + i]) << (8 * i) }
        return value
    }
}
