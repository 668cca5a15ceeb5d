import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The loader's header probe: the file's properties
/// (``ImageFileProperties/init(prefix:readsColorProfile:)``) from a
/// transfer's body as it arrives, on the transport's thread, in time linear
/// in the bytes it is shown, whatever they hold.
///
/// It is shown the whole body so far at every write callback. Reading the
/// properties from scratch each time costs the whole prefix each time:
/// quadratic in the body, on the one thread every transfer shares. (A body
/// of `FF D8 FF E0` and zeros, which never reaches a frame header, held a
/// core for 30 s, and other origins' 27 KB images took seconds.) So:
/// - a JPEG's segments are walked once, from where the last call stopped,
///   each skipped by its length without reading its payload (bytes between
///   segments, which libjpeg skips too, are passed over once, with
///   `memchr`); the properties are read once, when the walk reaches the
///   first scan. A segment length that no JPEG has ends the probe.
/// - another format is read again only once the body has grown by an
///   eighth since the last try, or reached its announced length: at most
///   about nine times the body's bytes in all.
/// - WebP is never read from a prefix (see `ImageFileProperties(prefix:)`):
///   the probe ends at once.
/// - past ``limit`` bytes (1 MiB, ``DataTransferObserver/bodyStartLimit``'s
///   default) it ends: the properties are then read from the whole body
///   before its decode, which fails as usual if it is no image. (A JPEG
///   with more metadata than that before its frame is still decoded.)
///
/// Not thread-safe: one transfer's, on the transport's thread.
package final class HeaderProbe: @unchecked Sendable {
    /// What one look found.
    package enum Step {
        /// Not yet: show it more of the body.
        case needsMore
        /// The properties (without the colour profile judged).
        case found(ImageFileProperties)
        /// Never from this body's prefix: no image, malformed, WebP, or past the limit.
        case ended
    }

    /// The most body bytes it reads.
    package let limit: Int
    private var format: ImageFormat?
    private var ended = false
    /// JPEG: where the next segment (or stray byte) starts.
    private var offset = 2
    /// Other formats: the prefix's length at the last try.
    private var triedAt = 0
    /// Bytes stepped over or read so far, a try at the properties counting
    /// the whole prefix (tests: linear in the body).
    package private(set) var cost = 0

    package init(limit: Int = DataTransferObserver().bodyStartLimit) {
        self.limit = limit
    }

    /// Looks at `prefix`, the body so far (each call's a longer one);
    /// `expectedLength`: the body's whole length when known.
    package func look(at prefix: Data, expectedLength: Int? = nil) -> Step {
        guard !ended else { return .ended }
        guard prefix.count <= limit else { return end() }
        if format == nil {
            // Sixteen bytes tell every signature apart.
            guard prefix.count >= 16 else { return .needsMore }
            guard let sniffed = ImageFormat.sniff(prefix), sniffed != .webp else { return end() }
            format = sniffed
        }
        if format == .jpeg {
            switch walkJPEG(prefix) {
            case .needsMore: return .needsMore
            case .malformed: return end()
            case .reachedScan: break
            }
        } else {
            let grown = prefix.count >= triedAt + max(1, triedAt / 8)
            guard grown || prefix.count == expectedLength else { return .needsMore }
            triedAt = prefix.count
        }
        cost += prefix.count
        guard let properties = ImageFileProperties(prefix: prefix, readsColorProfile: false) else {
            // A JPEG that reached its first scan has all it will ever have.
            return format == .jpeg ? end() : .needsMore
        }
        ended = true
        return .found(properties)
    }

    private func end() -> Step {
        ended = true
        return .ended
    }

    /// Where a JPEG's walk stopped.
    private enum Walk {
        case needsMore, reachedScan, malformed
    }

    /// Walks a JPEG's segments from where the last call stopped, to the
    /// first scan (or the image's end). The rules are `JPEGHeader`'s, which
    /// reads the same segments, so the two agree on where the first scan is.
    private func walkJPEG(_ prefix: Data) -> Walk {
        prefix.withUnsafeBytes { raw -> Walk in
            let count = raw.count
            while offset < count {
                cost += 1
                if raw[offset] != 0xFF {
                    // Stray bytes between segments: libjpeg skips to the next 0xFF.
                    let rest = count - offset
                    guard let found = memchr(raw.baseAddress! + offset, 0xFF, rest) else {
                        cost += rest
                        offset = count
                        break
                    }
                    let next = raw.baseAddress!.distance(to: UnsafeRawPointer(found))
                    cost += next - offset
                    offset = next
                    continue
                }
                guard offset + 1 < count else { break }
                let marker = raw[offset + 1]
                if marker == 0xFF { offset += 1; continue }  // fill byte
                if marker == 0x00 || marker == 0x01 || (0xD0...0xD8).contains(marker) { offset += 2; continue }
                if marker == 0xD9 || marker == 0xDA { return .reachedScan }  // EOI, SOS
                guard offset + 4 <= count else { break }
                var length = Int(raw[offset + 2]) << 8 | Int(raw[offset + 3])
                if length < 2, JPEGHeader.isSkippedWhenShort(marker) { length = 2 }  // as libjpeg reads it
                guard length >= 2 else { return .malformed }
                // Skipped by its length: its payload may not be here yet.
                offset += 2 + length
            }
            return .needsMore
        }
    }
}
