/// How a JPEG is coded, read from its start-of-frame (SOFn) marker and the
/// segments before the first scan.
public struct JPEGCoding: Sendable, Hashable, Codable {
    /// The process a SOFn marker names.
    public enum Process: String, Sendable, Hashable, Codable, CaseIterable {
        /// SOF0: baseline sequential DCT (8-bit, Huffman).
        case baseline
        /// SOF1, SOF5, SOF9, SOF13: extended sequential DCT.
        case extendedSequential
        /// SOF2, SOF6, SOF10, SOF14: progressive DCT.
        case progressive
        /// SOF3, SOF7, SOF11, SOF15: lossless.
        case lossless
    }

    /// The start-of-frame marker's second byte (`0xC0`...`0xCF`).
    public var startOfFrameMarker: UInt8
    /// The number of colour components in the frame (1 gray, 3 YCbCr or RGB, 4 CMYK or YCCK).
    public var componentCount: Int
    /// The colour transform of an Adobe APP14 segment (0 none, 1 YCbCr, 2 YCCK), `nil` without one.
    public var adobeTransform: Int?
    /// Whether the file has a JFIF APP0 segment.
    public var hasJFIF: Bool

    /// Creates a description of a JPEG's coding.
    public init(startOfFrameMarker: UInt8, componentCount: Int, adobeTransform: Int? = nil, hasJFIF: Bool = false) {
        self.startOfFrameMarker = startOfFrameMarker
        self.componentCount = componentCount
        self.adobeTransform = adobeTransform
        self.hasJFIF = hasJFIF
    }

    /// The process the SOFn marker names.
    public var process: Process {
        switch startOfFrameMarker & 0x03 {
        case 0: return startOfFrameMarker == 0xC0 ? .baseline : .extendedSequential
        case 1: return .extendedSequential
        case 2: return .progressive
        default: return .lossless
        }
    }

    /// Whether the entropy coding is arithmetic (SOF9-SOF15) rather than Huffman.
    public var isArithmeticCoded: Bool { startOfFrameMarker >= 0xC9 }

    /// Whether the frame is differential, part of a hierarchical file (SOF5-7, SOF13-15).
    public var isHierarchical: Bool { (startOfFrameMarker & 0x07) >= 5 }
}
