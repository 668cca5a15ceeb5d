import Foundation

/// Watches a progressive JPEG's body as it arrives, on the transport's
/// thread: a scan is complete when the next one starts (an SOS marker, `FF
/// DA`, which entropy-coded data never contains: a data `FF` is followed by
/// `00` or a restart marker).
///
/// - Previews (when asked for): after the first complete scan, the body up
///   to a scan's start, at most ``maxPreviews`` times, at least
///   ``minimumInterval`` apart.
/// - The DC coefficients (when asked for): a scan with `Ss = Se = 0` and
///   `Al <= 1` brings the DC of its components to within one bit; once every
///   component's DC is there, the body up to the next scan's start decodes
///   at 1/8 scale as the whole file does to within about 50 dB PSNR (libjpeg's
///   1/8 scale reads the luma's DC alone, and 4:2:0 chroma's lowest four
///   coefficients). Measured on libjpeg's default progressive script
///   (`ProgressivePreviewTests.testWhereTheDCCoefficientsEnd`): after its
///   first scan (DC, `Al = 1`), 5% of a 1600x1200 photo's bytes, 50 dB;
///   after the DC refinement (scan 7, `Al = 0`), 37% of the bytes, 53 dB;
///   exact only after the chroma AC refinements (39%). The first is
///   visually identical (a difference of one level at most, here and
///   there), so the transfer stops there.
package final class PreviewWatcher: @unchecked Sendable {
    static let maxPreviews = 3
    static let minimumInterval = 0.15

    /// Transport thread only.
    /// Bytes looked at so far; 0 until the first scan was found by walking
    /// the segments before it (their payloads, EXIF thumbnails among them,
    /// may hold any bytes).
    private var scanned = 0
    /// Where the walk to the first scan goes on at the next look: the walk
    /// is not started over each time (it would cost the segments before
    /// the scan again at every write callback).
    private var segmentOffset = 2
    private var scans = 0
    private var made = 0
    private var lastTime = -Double.infinity
    private let preview: (@Sendable (Data) -> Void)?
    private let dcComplete: (@Sendable (Data) -> Void)?
    /// The frame's component ids (from its SOF).
    private var componentIDs: Set<UInt8> = []
    private var dcDone: Set<UInt8> = []
    /// The DC became complete with a scan (the next scan's start ends it).
    private var dcCompleted = false
    private var reportedDC = false

    /// `preview` is called with the body up to the start of a scan; `dcComplete`
    /// with the body up to the end of the scan that completed the DC.
    package init(preview: (@Sendable (Data) -> Void)?, dcComplete: (@Sendable (Data) -> Void)?) {
        self.preview = preview
        self.dcComplete = dcComplete
    }

    private var wantsMore: Bool {
        (preview != nil && made < Self.maxPreviews) || (dcComplete != nil && !reportedDC)
    }

    /// Looks at the new bytes; returns whether it wants more.
    package func look(at body: Data) -> Bool {
        guard wantsMore else { return false }
        body.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            if scanned == 0 {
                guard let first = firstScan(in: bytes) else { return }
                scanned = first + 1
            }
            var index = scanned
            while index < bytes.count {
                if bytes[index] == 0xDA, bytes[index - 1] == 0xFF {
                    // A scan's header may not be all here yet: look again next time.
                    guard scanStarted(at: index - 1, in: bytes) else { break }
                }
                index += 1
            }
            scanned = index
        }
        return wantsMore
    }

    /// Walks the segments from the start of the file to the first SOS (its
    /// offset), reading the frame's component ids on the way; nil while
    /// they have not all arrived.
    private func firstScan(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var offset = segmentOffset
        defer { segmentOffset = offset }
        while offset + 4 <= bytes.count {
            // Stray bytes between segments, which libjpeg (and `JPEGHeader`) skip.
            guard bytes[offset] == 0xFF else {
                offset = bytes[offset...].firstIndex(of: 0xFF) ?? bytes.count
                continue
            }
            let marker = bytes[offset + 1]
            if marker == 0xFF { offset += 1; continue }
            if marker == 0xDA { return offset }
            if marker == 0x01 || (0xD0...0xD9).contains(marker) { offset += 2; continue }
            var length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if length < 2, JPEGHeader.isSkippedWhenShort(marker) { length = 2 }  // as libjpeg reads it
            guard length >= 2, offset + 2 + length <= bytes.count else { return nil }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC, length >= 8 {
                let count = Int(bytes[offset + 9])
                for component in 0..<count where offset + 10 + 3 * component < offset + 2 + length {
                    componentIDs.insert(bytes[offset + 10 + 3 * component])
                }
            }
            offset += 2 + length
        }
        return nil
    }

    /// A scan starts at `start` (its `FF DA`); false when its header is not all in.
    private func scanStarted(at start: Int, in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard start + 4 < bytes.count else { return false }
        let length = Int(bytes[start + 2]) << 8 | Int(bytes[start + 3])
        guard length >= 6 else { return true }  // not a scan header: skipped
        guard start + 2 + length <= bytes.count else { return false }
        scans += 1
        let prefix = { Data(bytes[..<start]) }
        // What completes here: the scans before this one.
        if let dcComplete, !reportedDC, dcCompleted {
            reportedDC = true
            dcComplete(prefix())
        }
        let now = ProcessInfo.processInfo.systemUptime
        if let preview, scans >= 2, made < Self.maxPreviews, now - lastTime >= Self.minimumInterval {
            made += 1
            lastTime = now
            preview(prefix())
        }
        // This scan: does it bring the DC of its components to within a bit?
        let count = Int(bytes[start + 4])
        guard count >= 1, 5 + 2 * count + 3 <= length + 2 else { return true }
        let spectral = start + 5 + 2 * count
        let (ss, se, approximation) = (bytes[spectral], bytes[spectral + 1], bytes[spectral + 2])
        if ss == 0, se == 0, approximation & 0x0F <= 1 {
            for component in 0..<count where componentIDs.contains(bytes[start + 5 + 2 * component]) {
                dcDone.insert(bytes[start + 5 + 2 * component])
            }
            if !componentIDs.isEmpty, dcDone == componentIDs { dcCompleted = true }
        }
        return true
    }
}
