import CZlib
import Foundation

/// The colour information a decoder found in a file's headers (see
/// ``ColorProfileInfo`` for what is reported of it). `nil` where there is
/// none: the decode then costs nothing more than before.
enum ColorSource: Hashable, Sendable {
    /// An embedded ICC profile, as joined or decompressed.
    case icc(Data)
    /// A profile was embedded but cannot be had (JPEG segments that do not
    /// add up, an `iCCP` that does not decompress): why.
    case malformed(String)
    /// A PNG `sRGB` chunk.
    case pngSRGB
    /// PNG `gAMA` and/or `cHRM` chunks.
    case pngChunks(PNGColorChunks)
    /// An AVIF or HEIC `nclx` colour description.
    case nclx(NCLXColor)
    /// A JPEG XL colour encoding with the PQ or HLG transfer: tone mapped,
    /// not converted.
    case hdrEncoding(HDREncoding)

    /// Whether this is (or was meant to be) an embedded ICC profile (for
    /// JPEG XL, an encoding libjxl describes as one).
    var isEmbeddedProfile: Bool {
        switch self {
        case .icc, .malformed: return true
        case .hdrEncoding(let encoding): return encoding.profile != nil
        case .pngSRGB, .pngChunks, .nclx: return false
        }
    }

    /// The source of `iCCP` (compressed), `sRGB`, `gAMA` and `cHRM` chunks,
    /// in PNG's order of precedence: `iCCP`, then `sRGB`, then `gAMA` and
    /// `cHRM` (a `gAMA` of 0, or a `cHRM` that is not 32 bytes, is ignored
    /// as libpng ignores it).
    static func png(iCCP: Data?, hasSRGB: Bool, gamma: UInt32?, chromaticities: [UInt32]?) -> ColorSource? {
        if let iCCP { return ICCPayload.pngProfile(iCCP) }
        if hasSRGB { return .pngSRGB }
        let chunks = PNGColorChunks(
            gamma: gamma.flatMap { $0 == 0 ? nil : Double($0) / 100_000 },
            chromaticities: chromaticities.flatMap { $0.count == 8 ? $0.map { Double($0) / 100_000 } : nil })
        guard chunks.gamma != nil || chunks.chromaticities != nil else { return nil }
        return .pngChunks(chunks)
    }
}

/// An HDR colour encoding given by its primaries and white point rather
/// than by code points (a JPEG XL image's): the tone mapping
/// (``HDRToneMapping``) it is brought to SDR with.
struct HDREncoding: Hashable, Sendable {
    var mapping: HDRToneMapping
    /// White x, y, then red, green and blue x, y (as ``NCLXColor/chromaticities``).
    var chromaticities: [Double]
    /// The ICC profile libjxl describes the encoding with: what
    /// ``ImageFileProperties/colorProfile`` reports, as for JPEG XL's other
    /// encodings; `nil` when libjxl gives none.
    var profile: Data?
}

/// What a PNG's `gAMA` and `cHRM` chunks say.
struct PNGColorChunks: Hashable, Sendable {
    /// The file gamma (`gAMA` / 100000, 0.45455 for an image encoded with
    /// 1/2.2): samples are decoded with the exponent 1 / gamma.
    var gamma: Double?
    /// White x, y, then red, green and blue x, y (`cHRM` / 100000).
    var chromaticities: [Double]?

    /// `gAMA 0.45455, cHRM ...`, for ``ColorProfileInfo/description``.
    var summary: String {
        var parts: [String] = []
        if let gamma { parts.append("gAMA \(String(format: "%.5f", gamma))") }
        if let chromaticities {
            parts.append("cHRM " + chromaticities.map { String(format: "%.4f", $0) }.joined(separator: " "))
        }
        return parts.joined(separator: ", ")
    }

    /// Whether the chunks amount to sRGB: a `gAMA` of 1/2.2 (0.45 to 0.46,
    /// what encoders write for sRGB-like images) or none, and no `cHRM` or
    /// one with sRGB's primaries and D65 white (within 0.001). Such an image
    /// is left as it is, as an untagged one, as browsers leave it.
    var isSRGB: Bool {
        if let gamma, !(0.45...0.46).contains(gamma) { return false }
        if let chromaticities {
            let sRGB = [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]
            return zip(chromaticities, sRGB).allSatisfy { abs($0 - $1) <= 0.001 }
        }
        return true
    }
}

/// Reading profiles out of their containers: JPEG APP2 segments, PNG
/// `iCCP`, GIF application-extension sub-blocks. Every length is checked;
/// anything wrong is a ``ColorSource/malformed(_:)`` with the reason.
enum ICCPayload {
    /// The most bytes an `iCCP` chunk may inflate to: far beyond any real
    /// profile (the largest press profiles are a few megabytes), and a
    /// bound on a zlib bomb.
    static let maxProfileSize = 16 << 20

    /// One APP2 `ICC_PROFILE` segment's sequence number, count and data
    /// (the payload after `ICC_PROFILE\0`).
    struct JPEGSegment {
        var sequence: UInt8
        var count: UInt8
        var data: Data
    }

    /// The profile split over APP2 segments, joined by sequence number (the
    /// order in the file does not matter, as for libjpeg's
    /// `jpeg_read_icc_profile`): every segment must give the same count, each
    /// number from 1 to the count must appear exactly once.
    static func joinJPEG(_ segments: [JPEGSegment]) -> ColorSource? {
        guard let first = segments.first else { return nil }
        let count = Int(first.count)
        guard count > 0 else { return .malformed("an ICC_PROFILE segment says the profile has 0 segments") }
        guard segments.allSatisfy({ Int($0.count) == count }) else {
            return .malformed("the ICC_PROFILE segments disagree on their number")
        }
        var parts = [Data?](repeating: nil, count: count)
        for segment in segments {
            let index = Int(segment.sequence) - 1
            guard index >= 0, index < count else {
                return .malformed("ICC_PROFILE segment \(segment.sequence) of \(count)")
            }
            guard parts[index] == nil else { return .malformed("ICC_PROFILE segment \(segment.sequence) appears twice") }
            parts[index] = segment.data
        }
        if let missing = parts.firstIndex(where: { $0 == nil }) {
            return .malformed("ICC_PROFILE segment \(missing + 1) of \(count) is missing")
        }
        var profile = Data()
        profile.reserveCapacity(parts.reduce(0) { $0 + ($1?.count ?? 0) })
        for part in parts { profile.append(part!) }
        guard !profile.isEmpty else { return .malformed("the ICC_PROFILE segments hold no data") }
        return .icc(profile)
    }

    /// An `iCCP` chunk's payload: a name of 1-79 Latin-1 bytes, a zero, the
    /// compression method (0, zlib), then the zlib stream of the profile.
    static func pngProfile(_ payload: Data) -> ColorSource {
        guard let zero = payload.prefix(81).firstIndex(of: 0) else { return .malformed("iCCP: no profile name") }
        let nameLength = zero - payload.startIndex
        guard (1...79).contains(nameLength) else { return .malformed("iCCP: a profile name of \(nameLength) bytes") }
        let methodIndex = zero + 1
        guard methodIndex < payload.endIndex, payload[methodIndex] == 0 else {
            return .malformed("iCCP: unknown compression method")
        }
        switch inflate(payload[(methodIndex + 1)...], limit: maxProfileSize) {
        case .success(let profile):
            return profile.isEmpty ? .malformed("iCCP: an empty profile") : .icc(profile)
        case .failure(let reason):
            return .malformed("iCCP: \(reason)")
        }
    }

    /// zlib-inflates `compressed`, failing past `limit` bytes or when the
    /// stream is damaged or cut short.
    static func inflate(_ compressed: Data, limit: Int) -> Result<Data, InflateFailure> {
        var stream = z_stream()
        guard inflateInit_(&stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return .failure(InflateFailure(reason: "zlib cannot start"))
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 32 * 1024)
        let input = Data(compressed)  // contiguous, from index 0
        return input.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<Data, InflateFailure> in
            stream.next_in = UnsafeMutablePointer(mutating: raw.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(raw.count)
            while true {
                let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = uInt(buffer.count)
                    let status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    return (status, buffer.count - Int(stream.avail_out))
                }
                guard output.count + produced <= limit else {
                    return .failure(InflateFailure(reason: "the profile inflates to more than \(limit) bytes"))
                }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    return .success(output)
                case Z_OK:
                    if produced == 0 && stream.avail_in == 0 {
                        return .failure(InflateFailure(reason: "the compressed profile is cut short"))
                    }
                case Z_BUF_ERROR:
                    return .failure(InflateFailure(reason: "the compressed profile is cut short"))
                default:
                    return .failure(InflateFailure(reason: "the compressed profile is damaged (zlib \(status))"))
                }
            }
        }
    }

    /// Why a stream did not inflate.
    struct InflateFailure: Error {
        var reason: String
    }
}

extension ICCPayload.InflateFailure: CustomStringConvertible {
    var description: String { reason }
}
