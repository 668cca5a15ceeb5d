import AsyncImageKit
import Foundation

/// The disk cache's readers: whatever parses bytes read back from disk.
enum DiskCacheTargets {
    /// `DataCacheEntry.decode` on the input as a file, then on the input
    /// made into a well-formed entry (its first two bytes give the metadata
    /// length; lengths and checksum made right) so that the metadata's
    /// decoder is reached. An entry that reads must read the same once written again.
    static func entry(_ data: Data) -> String? {
        var files = [data]
        if data.count >= 2 {
            let rest = data.dropFirst(2)
            let metaLength = min(rest.count, Int(data[data.startIndex]) << 8 | Int(data[data.startIndex + 1]))
            files.append(wellFormedEntry(metadata: Data(rest.prefix(metaLength)), body: Data(rest.dropFirst(metaLength))))
        }
        for file in files {
            guard case .success(let entry) = DataCacheEntry.decode(file) else { continue }
            guard entry.body.count <= file.count - DataCacheEntry.headerSize else { return "a body longer than the file" }
            guard case .success(let again) = DataCacheEntry.decode(DataCacheEntry.encode(entry.body, metadata: entry.metadata))
            else { return "an entry that read does not read once written again: \(entry.metadata)" }
            guard again.body == entry.body, again.metadata == entry.metadata else {
                return "an entry changed by writing it again: \(entry.metadata) became \(again.metadata)"
            }
        }
        return nil
    }

    /// `StoredImage.decode` (the `AIKI` format): a miss or an image whose
    /// buffers match its size; an image that reads must read back the same
    /// size once stored again.
    static func storedImage(_ data: Data) -> String? {
        guard let image = StoredImage.decode(data, decoders: .default) else { return nil }
        if let problem = ImageCheck.problem(with: image) { return problem }
        let stored: Data
        do {
            stored = try StoredImage.encode(image, encoding: .lossless)
        } catch {
            return "an image read back that cannot be stored again: \(error)"
        }
        guard let again = StoredImage.decode(stored, decoders: .default) else {
            return "an image read back that does not read once stored again (\(image.size), \(image.frames.count) frames)"
        }
        guard again.size == image.size, again.frames.count == image.frames.count, again.originalSize == image.originalSize
        else { return "stored again, \(image.size) became \(again.size)" }
        return nil
    }

    /// An entry file around `metadata` and `body` as `DataCacheEntry.encode`
    /// writes it (magic `AIKD`, the current version, lengths, CRC-32 of both).
    static func wellFormedEntry(metadata: Data, body: Data) -> Data {
        var out = Data("AIKD".utf8)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) } }
        append(DataCacheEntry.version)
        append(UInt16(0))
        append(UInt32(metadata.count))
        append(UInt64(body.count))
        append(CRC32.checksum(body, startingWith: CRC32.checksum(metadata)))
        append(UInt32(0))
        append(UInt32(0))
        out.append(metadata)
        out.append(body)
        return out
    }
}

/// CRC-32 (ISO-HDLC, zlib's `crc32`).
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var c = UInt32(index)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ data: Data, startingWith crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        for byte in data { c = table[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        return ~c
    }
}
