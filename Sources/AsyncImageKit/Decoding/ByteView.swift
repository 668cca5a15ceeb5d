import Foundation

/// A bounds-checked view of bytes for the header parsers: every read is
/// checked against the end (with overflow-safe arithmetic) and answers `nil`
/// instead of trapping, so no input can crash a parser.
///
/// Only valid inside the `withUnsafeBytes` closure that made it.
struct ByteView {
    let bytes: UnsafeRawBufferPointer

    var count: Int { bytes.count }

    /// Whether `length` bytes from `offset` lie inside the view.
    @inline(__always)
    func contains(_ offset: Int, _ length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= bytes.count && length <= bytes.count - offset
    }

    func u8(_ offset: Int) -> UInt8? {
        contains(offset, 1) ? bytes[offset] : nil
    }

    func u16(_ offset: Int, littleEndian: Bool = false) -> UInt16? {
        guard contains(offset, 2) else { return nil }
        let a = UInt16(bytes[offset]), b = UInt16(bytes[offset + 1])
        return littleEndian ? a | b << 8 : a << 8 | b
    }

    func u32(_ offset: Int, littleEndian: Bool = false) -> UInt32? {
        guard let a = u16(offset, littleEndian: littleEndian), let b = u16(offset + 2, littleEndian: littleEndian)
        else { return nil }
        return littleEndian ? UInt32(a) | UInt32(b) << 16 : UInt32(a) << 16 | UInt32(b)
    }

    /// The offset of the first `byte` at or after `offset`, or `nil` (a `memchr`).
    func firstIndex(of byte: UInt8, from offset: Int) -> Int? {
        guard offset >= 0, offset < bytes.count, let base = bytes.baseAddress else { return nil }
        guard let found = memchr(base + offset, Int32(byte), bytes.count - offset) else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Whether the bytes at `offset` are `prefix`.
    func matches(_ offset: Int, _ prefix: [UInt8]) -> Bool {
        guard contains(offset, prefix.count) else { return false }
        for (index, byte) in prefix.enumerated() where bytes[offset + index] != byte { return false }
        return true
    }

    /// `length` bytes from `offset`, or `nil` when they reach past the end.
    func slice(_ offset: Int, _ length: Int) -> ByteView? {
        guard contains(offset, length) else { return nil }
        return ByteView(bytes: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]))
    }

    /// The bytes from `offset` to the end (empty past the end).
    func suffix(from offset: Int) -> ByteView {
        let start = min(max(0, offset), bytes.count)
        return ByteView(bytes: UnsafeRawBufferPointer(rebasing: bytes[start...]))
    }
}

extension Array where Element == UInt8 {
    /// The bytes of an ASCII literal.
    init(ascii text: StaticString) {
        self = Array(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
