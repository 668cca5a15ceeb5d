import Foundation

/// Removes the `chunked` transfer coding (RFC 9112 §7.1) from a body that
/// libcurl passes through undecoded.
///
/// Why: libcurl fails a response whose `Transfer-Encoding` names a coding
/// it does not know (error 61), while a cache or a browser passes such a
/// body on as it came, read until the connection closes (RFC 9112 §6.3).
/// A transfer that wants bodies as sent (``DataRequest/acceptsEncodedBodies``
/// false) turns libcurl's transfer decoding off, and this decoder takes
/// over for `chunked`, the one coding such a transfer must undo. libcurl
/// still finds the end of a chunked body itself; this only strips the
/// framing (sizes, extensions, line ends, trailers).
struct ChunkedDecoder {
    private enum State {
        case size(digits: Int, value: Int, inExtension: Bool)
        case sizeLineEnd(value: Int)
        case data(remaining: Int)
        case dataCR, dataLF
        case trailerLineStart, trailerLine, trailerLineEnd(empty: Bool)
        case done
        case malformed
    }

    private var state = State.size(digits: 0, value: 0, inExtension: false)

    /// Whether the framing broke its grammar (the rest is then dropped).
    var isMalformed: Bool {
        if case .malformed = state { return true }
        return false
    }

    /// Appends the data bytes of `bytes` to `output`.
    mutating func decode(_ bytes: UnsafeRawBufferPointer, into output: inout Data) {
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            switch state {
            case .size(let digits, let value, let inExtension):
                if byte == 0x0D {
                    state = digits > 0 ? .sizeLineEnd(value: value) : .malformed
                } else if inExtension {
                    break
                } else if let digit = Self.hexValue(byte), digits < 15 {
                    state = .size(digits: digits + 1, value: value * 16 + digit, inExtension: false)
                } else if byte == UInt8(ascii: ";") || byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                    state = .size(digits: digits, value: value, inExtension: true)
                } else {
                    state = .malformed
                }
            case .sizeLineEnd(let value):
                guard byte == 0x0A else {
                    state = .malformed
                    break
                }
                state = value == 0 ? .trailerLineStart : .data(remaining: value)
            case .data(let remaining):
                let count = min(remaining, bytes.count - index)
                output.append(bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + index, count: count)
                index += count
                state = remaining - count == 0 ? .dataCR : .data(remaining: remaining - count)
                continue
            case .dataCR:
                state = byte == 0x0D ? .dataLF : .malformed
            case .dataLF:
                state = byte == 0x0A ? .size(digits: 0, value: 0, inExtension: false) : .malformed
            case .trailerLineStart:
                state = byte == 0x0D ? .trailerLineEnd(empty: true) : .trailerLine
            case .trailerLine:
                if byte == 0x0D { state = .trailerLineEnd(empty: false) }
            case .trailerLineEnd(let empty):
                guard byte == 0x0A else {
                    state = .malformed
                    break
                }
                state = empty ? .done : .trailerLineStart
            case .done, .malformed:
                return
            }
            index += 1
        }
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        default: return nil
        }
    }
}
