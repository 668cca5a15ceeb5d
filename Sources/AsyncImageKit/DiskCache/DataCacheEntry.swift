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

/// The bytes of one entry file: a 32-byte header, the metadata (binary, see
/// `MetadataCoding`), the body.
///
/// Header, little-endian: magic `AIKD`, format version (UInt16), reserved
/// (UInt16), metadata length (UInt32), body length (UInt64), CRC-32 of the
/// metadata and the body (UInt32), reserved (UInt32), reserved (UInt32).
/// Any mismatch (short file, wrong magic or version, lengths that do not
/// add up to the file's size, checksum) makes the file unreadable: a miss.
package enum DataCacheEntry {
    static let magic: [UInt8] = Array("AIKD".utf8)
    /// 2: binary metadata with the whole stored HTTP response (version 1's
    /// JSON cost about 13 µs a read, most of a small entry's read; and its
    /// entries lack the response, so they read as misses and are removed).
    package static let version: UInt16 = 2
    package static let headerSize = 32

    package static func encode(_ body: Data, metadata: DataCacheMetadata) -> Data {
        let meta = MetadataCoding.encode(metadata)
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
        guard let metadata = MetadataCoding.decode(meta) else { return .failure(.checksum) }
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

/// `DataCacheMetadata` as bytes, little-endian: the key (a string), when it
/// was stored (Float64), a byte of flags saying which optional fields follow
/// (ETag, Last-Modified, fresh-until, Content-Type, generation, HTTP
/// response), then those fields in that order. A string is its UTF-8
/// length (UInt32) and bytes; the HTTP response is its status (Int64), its
/// headers (a count, then name and value pairs), a flag and the `Vary`
/// request headers likewise, and its request and response times. Anything
/// else (a short read, invalid UTF-8, a repeated name, a non-finite time,
/// bytes left over) is no metadata.
enum MetadataCoding {
    static func encode(_ metadata: DataCacheMetadata) -> Data {
        var writer = Writer()
        writer.string(metadata.key)
        writer.double(metadata.storedAt)
        let fields: [Bool] = [
            metadata.etag != nil, metadata.lastModified != nil, metadata.freshUntil != nil,
            metadata.contentType != nil, metadata.generation != nil, metadata.http != nil,
        ]
        writer.byte(fields.enumerated().reduce(UInt8(0)) { $0 | ($1.element ? 1 << UInt8($1.offset) : 0) })
        metadata.etag.map { writer.string($0) }
        metadata.lastModified.map { writer.string($0) }
        metadata.freshUntil.map { writer.double($0) }
        metadata.contentType.map { writer.string($0) }
        metadata.generation.map { writer.string($0) }
        if let http = metadata.http {
            writer.integer(Int64(http.status))
            writer.pairs(http.headers)
            writer.byte(http.varyRequestHeaders == nil ? 0 : 1)
            http.varyRequestHeaders.map { writer.pairs($0) }
            writer.double(http.requestTime)
            writer.double(http.responseTime)
        }
        return writer.data
    }

    static func decode(_ data: Data) -> DataCacheMetadata? {
        var reader = Reader(bytes: [UInt8](data))
        guard let key = reader.string(), let storedAt = reader.double(), let flags = reader.byte(), flags < 64
        else { return nil }
        func field<T>(_ bit: UInt8, _ read: () -> T?) -> T?? {
            guard flags & (1 << bit) != 0 else { return .some(nil) }
            guard let value = read() else { return nil }
            return .some(value)
        }
        guard let etag = field(0, { reader.string() }), let lastModified = field(1, { reader.string() }),
            let freshUntil = field(2, { reader.double() }), let contentType = field(3, { reader.string() }),
            let generation = field(4, { reader.string() })
        else { return nil }
        var metadata = DataCacheMetadata(
            etag: etag, lastModified: lastModified, freshUntil: freshUntil, contentType: contentType)
        metadata.key = key
        metadata.storedAt = storedAt
        metadata.generation = generation
        if flags & (1 << 5) != 0 {
            guard let status = reader.integer(), let headers = reader.pairs(), let hasVary = reader.byte(), hasVary < 2
            else { return nil }
            var vary: [String: String]?
            if hasVary == 1 {
                guard let pairs = reader.pairs() else { return nil }
                vary = pairs
            }
            guard let requestTime = reader.double(), let responseTime = reader.double(),
                let code = Int(exactly: status)
            else { return nil }
            metadata.http = StoredHTTPHead(
                status: code, headers: headers, varyRequestHeaders: vary, requestTime: requestTime,
                responseTime: responseTime)
        }
        return reader.isAtEnd ? metadata : nil
    }

    private struct Writer {
        var data = Data()

        mutating func byte(_ value: UInt8) { data.append(value) }
        mutating func integer(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        mutating func double(_ value: Double) { integer(Int64(bitPattern: value.bitPattern)) }
        mutating func string(_ value: String) {
            let utf8 = Array(value.utf8)
            withUnsafeBytes(of: UInt32(utf8.count).littleEndian) { data.append(contentsOf: $0) }
            data.append(contentsOf: utf8)
        }
        mutating func pairs(_ values: [String: String]) {
            withUnsafeBytes(of: UInt32(values.count).littleEndian) { data.append(contentsOf: $0) }
            for (name, value) in values.sorted(by: { $0.key < $1.key }) {
                string(name)
                string(value)
            }
        }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0

        var isAtEnd: Bool { offset == bytes.count }

        mutating func byte() -> UInt8? {
            guard offset < bytes.count else { return nil }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func fixed<T: FixedWidthInteger>(_: T.Type) -> T? {
            let size = MemoryLayout<T>.size
            guard bytes.count - offset >= size else { return nil }
            var value: T = 0
            for index in 0..<size { value |= T(truncatingIfNeeded: bytes[offset + index]) << (8 * index) }
            offset += size
            return value
        }

        mutating func integer() -> Int64? { fixed(Int64.self) }

        mutating func double() -> Double? {
            guard let bits = fixed(UInt64.self) else { return nil }
            let value = Double(bitPattern: bits)
            return value.isFinite ? value : nil
        }

        mutating func string() -> String? {
            guard let length = fixed(UInt32.self).map(Int.init), bytes.count - offset >= length else { return nil }
            defer { offset += length }
            return String(bytes: bytes[offset..<offset + length], encoding: .utf8)
        }

        mutating func pairs() -> [String: String]? {
            guard let count = fixed(UInt32.self).map(Int.init), count <= bytes.count - offset else { return nil }
            var values: [String: String] = [:]
            for _ in 0..<count {
                guard let name = string(), let value = string(), values[name] == nil else { return nil }
                values[name] = value
            }
            return values
        }
    }
}
