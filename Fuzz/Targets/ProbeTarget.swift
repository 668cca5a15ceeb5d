import AsyncImageKit
import Foundation

/// The header probe: what the loader reads from a transfer's first bytes.
enum ProbeTarget {
    /// The input arrives in pieces (their sizes drawn from the input itself)
    /// and each growing prefix goes through the probe as the loader's
    /// transport thread runs it: ``HeaderProbe`` (its body's length
    /// announced) until it reads the header, then, for a progressive JPEG,
    /// the scan walker. The properties it finds must be the whole file's
    /// (the loader keeps the first it gets); it must find them whenever
    /// the whole file read as a prefix has them (it gives up on no body
    /// the old probe, re-reading every prefix, would have read); and every
    /// prefix the walker hands over must end where a scan starts (`FF DA`).
    static func run(_ data: Data) -> String? {
        let whole = ImageFileProperties(data: data)
        let handed = Handed()
        let watcher = PreviewWatcher(preview: { handed.append($0) }, dcComplete: { handed.append($0) })
        var random = SplitMix64(seed: UInt64(data.count) &* 0x9E37_79B9 ^ UInt64(data.last ?? 0))
        let probe = HeaderProbe()
        var probed: ImageFileProperties?
        var ended = false
        var end = 0
        while end < data.count {
            end = min(data.count, end + 1 + Int(random.next() % 2048))
            let start = Data(data.prefix(end))
            if probed == nil, !ended {
                switch probe.look(at: start, expectedLength: data.count) {
                case .needsMore: continue
                case .ended: ended = true
                case .found(let found):
                    // As the loader keeps them: read again with the colour profile judged.
                    let properties = ImageFileProperties(prefix: start) ?? found
                    probed = properties
                    guard properties == whole else {
                        let file = String(describing: whole)
                        return "the first \(end) bytes give properties \(properties), the whole file \(file)"
                    }
                }
                guard let properties = probed, properties.jpeg?.process == .progressive else { break }
            }
            if !watcher.look(at: start) { break }
        }
        if probed == nil, data.count >= 16, data.count <= probe.limit, ImageFormat.sniff(data) != .webp,
            ImageFileProperties(prefix: data, readsColorProfile: false) != nil
        {
            return "the probe found nothing in \(data.count) bytes whose whole gives properties"
        }
        for prefix in handed.prefixes {
            guard prefix.count >= 2, prefix.count + 1 < data.count, data.prefix(prefix.count) == prefix,
                data[data.startIndex + prefix.count] == 0xFF, data[data.startIndex + prefix.count + 1] == 0xDA
            else { return "a prefix of \(prefix.count) bytes that does not end at a scan's start" }
        }
        return nil
    }

    /// The EXIF reader on any bytes: the input is the payload of an `eXIf`
    /// chunk in a 1x1 PNG's header, read with ``ImageFileProperties``.
    static func exif(_ data: Data) -> String? {
        var png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        func chunk(_ type: String, _ payload: Data) {
            withUnsafeBytes(of: UInt32(payload.count).bigEndian) { png.append(contentsOf: $0) }
            png.append(contentsOf: Array(type.utf8))
            png.append(payload)
            png.append(contentsOf: [0, 0, 0, 0])  // CRC: not checked by the probe
        }
        chunk("IHDR", Data([0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]))
        chunk("eXIf", data)
        chunk("IEND", Data())
        guard let properties = ImageFileProperties(data: png) else { return "a 1x1 PNG header not read" }
        guard properties.pixelSize == PixelSize(width: 1, height: 1) else { return "size \(properties.pixelSize)" }
        if let exif = properties.exif {
            // Everything read must survive its own encoding (the disk cache stores it as JSON).
            guard let json = try? JSONEncoder().encode(exif) else { return "EXIF properties that do not encode: \(exif)" }
            guard let back = try? JSONDecoder().decode(EXIFProperties.self, from: json) else {
                return "EXIF properties that do not decode: \(String(decoding: json, as: UTF8.self))"
            }
            guard back == exif else { return "EXIF properties changed by their own encoding: \(exif) became \(back)" }
            _ = String(describing: exif)
        }
        return nil
    }
}

/// The prefixes the scan walker handed over (its callbacks are `@Sendable`;
/// the walker calls them on the caller's thread).
private final class Handed: @unchecked Sendable {
    private(set) var prefixes: [Data] = []
    func append(_ prefix: Data) { prefixes.append(prefix) }
}

/// A small deterministic generator: the same input always arrives in the same pieces.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
