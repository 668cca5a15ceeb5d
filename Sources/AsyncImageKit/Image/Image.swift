import Foundation

/// A fully decoded image: every pixel decompressed, ready to draw.
///
/// Pixels are 8-bit RGBA with **straight (non-premultiplied) alpha**, rows top
/// to bottom, `bytesPerRow` bytes apart. The EXIF orientation has already been
/// applied, so `width` and `height` are the upright size. An animated GIF or
/// WebP carries every frame, each a whole canvas of `width` x `height` with
/// blending and disposal already applied; a still image has one frame.
///
/// `Image` is a value type whose pixel storage is shared and immutable, so it
/// is cheap to copy and safe to send between threads.
public struct Image: Sendable {
    /// The pixel layout of every image: 8-bit R, G, B, A, straight alpha.
    public static let bytesPerPixel = 4

    /// The fields of an image, stored once behind ``Storage``.
    private struct Fields: Sendable {
        let width: Int
        let height: Int
        let bytesPerRow: Int
        let frames: [ImageFrame]
        let format: ImageFormat?
        let originalSize: PixelSize
        let orientation: ImageOrientation
        let loopCount: Int?
        let decodeInfo: DecodeInfo
        /// Worked out once from `frames` and `loopCount` (see ``AnimationTimeline``).
        let timeline: AnimationTimeline
        /// Whether every pixel of every frame is opaque: said by the maker
        /// of the image when it knows, else scanned once when it is made.
        let isOpaque: Bool
        /// What the source file said about itself (set by the loader).
        var fileProperties: ImageFileProperties?
    }

    /// Every field behind one reference: copying an image (a cache hit hands
    /// out a copy) is a single retain, not a copy of eleven fields.
    private final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private let storage: Storage

    /// Upright width in pixels.
    public var width: Int { storage.fields.width }
    /// Upright height in pixels.
    public var height: Int { storage.fields.height }
    /// Bytes from the start of one row to the start of the next (at least `width * 4`).
    public var bytesPerRow: Int { storage.fields.bytesPerRow }
    /// Every frame, in display order; `frames[0]` is the still image.
    public var frames: [ImageFrame] { storage.fields.frames }
    /// The format the image was decoded from (`nil` for an image made in memory).
    public var format: ImageFormat? { storage.fields.format }
    /// The upright pixel size of the source before any downsampling.
    public var originalSize: PixelSize { storage.fields.originalSize }
    /// The EXIF orientation that was applied to reach upright pixels.
    public var orientation: ImageOrientation { storage.fields.orientation }
    /// How many times an animation repeats after it first plays (`0` = forever),
    /// `nil` when the file does not say (it then plays once). See ``AnimationTimeline``.
    public var loopCount: Int? { storage.fields.loopCount }
    /// How the decoder produced the pixels (DCT scale, size before resizing).
    public var decodeInfo: DecodeInfo { storage.fields.decodeInfo }
    /// The playback timeline (public as ``animationTimeline``).
    var timeline: AnimationTimeline { storage.fields.timeline }
    /// Whether every pixel of every frame is fully opaque (alpha 255): an
    /// opaque still can be written as JPEG without losing anything but
    /// compression detail (``ImageEncoding/automatic(quality:)`` chooses so).
    ///
    /// Worked out once, when the image is made, and kept with it: a decoder
    /// that knows says so without looking at a pixel (every JPEG; a PNG
    /// whose colour type has no alpha and which has no `tRNS`; a still WebP
    /// without alpha), a resize measures its own result as it writes it, a
    /// canvas with transparent margins or a mask knows it is not; anything
    /// else (a PNG with an alpha channel, a GIF, an animated WebP, an image
    /// made with ``init(width:height:bytesPerRow:frames:format:originalSize:orientation:loopCount:decodeInfo:)``)
    /// is scanned once, the alpha bytes alone, stopping at the first row that
    /// is not opaque.
    public var isOpaque: Bool { storage.fields.isOpaque }
    /// What the source file said about itself, read from its headers
    /// (format, size, bit depth, colour type, frames, ICC, EXIF: see
    /// ``ImageFileProperties``), for an image an ``AsyncImageLoader`` made;
    /// nil for one made otherwise. Kept by the memory and disk caches, and
    /// by processing within the loader.
    public var fileProperties: ImageFileProperties? { storage.fields.fileProperties }

    /// The same image (sharing its pixels) with `properties`.
    func with(fileProperties properties: ImageFileProperties?) -> Image {
        var fields = storage.fields
        fields.fileProperties = properties
        return Image(storage: Storage(fields))
    }

    private init(storage: Storage) {
        self.storage = storage
    }

    /// The object every copy of this image shares: the memory cache holds it
    /// weakly to find an image again that something else still holds.
    var storageObject: AnyObject { storage }

    /// The image whose ``storageObject`` is `object` (nil for any other object).
    init?(storageObject object: AnyObject) {
        guard let storage = object as? Storage else { return nil }
        self.storage = storage
    }

    /// Creates an image from frames that already hold RGBA pixels
    /// (``isOpaque`` is worked out from them, once).
    ///
    /// - Precondition: every frame holds at least `bytesPerRow * height` bytes.
    public init(
        width: Int, height: Int, bytesPerRow: Int, frames: [ImageFrame],
        format: ImageFormat? = nil, originalSize: PixelSize? = nil,
        orientation: ImageOrientation = .up, loopCount: Int? = nil,
        decodeInfo: DecodeInfo? = nil
    ) {
        self.init(
            width: width, height: height, bytesPerRow: bytesPerRow, frames: frames, format: format,
            originalSize: originalSize, orientation: orientation, loopCount: loopCount, decodeInfo: decodeInfo,
            opacity: .unknown)
    }

    /// What the maker of an image knows about its alpha (see ``isOpaque``).
    enum Opacity: Sendable {
        /// Every pixel of every frame is opaque.
        case opaque
        /// Some pixel is not (transparent margins, a mask).
        case notOpaque
        /// Not known: the alpha bytes are scanned now, once.
        case unknown
        /// Not measured, and read as not opaque: only for an image that is
        /// resized before anyone sees it (a decoder's full-size
        /// intermediate), since the resize measures its own result.
        case unmeasured

        /// `.opaque` when `known` is true, else `.unknown`.
        static func opaque(if known: Bool) -> Opacity { known ? .opaque : .unknown }
    }

    /// Creates an image whose opacity its maker knows, or leaves to a scan.
    init(
        width: Int, height: Int, bytesPerRow: Int, frames: [ImageFrame],
        format: ImageFormat? = nil, originalSize: PixelSize? = nil,
        orientation: ImageOrientation = .up, loopCount: Int? = nil,
        decodeInfo: DecodeInfo? = nil, opacity: Opacity
    ) {
        precondition(width > 0 && height > 0, "an image has at least one pixel")
        precondition(bytesPerRow >= width * Image.bytesPerPixel, "bytesPerRow too small")
        precondition(!frames.isEmpty, "an image has at least one frame")
        precondition(
            frames.allSatisfy { $0.pixels.count >= bytesPerRow * (height - 1) + width * 4 },
            "a frame holds fewer bytes than its geometry needs")
        storage = Storage(Fields(
            width: width, height: height, bytesPerRow: bytesPerRow, frames: frames, format: format,
            originalSize: originalSize ?? PixelSize(width: width, height: height),
            orientation: orientation, loopCount: loopCount,
            decodeInfo: decodeInfo
                ?? DecodeInfo(scaleDenominator: 1, decodedSize: PixelSize(width: width, height: height)),
            timeline: AnimationTimeline(frameDurations: frames.map(\.duration), loopCount: loopCount),
            isOpaque: {
                switch opacity {
                case .opaque: return true
                case .notOpaque, .unmeasured: return false
                case .unknown:
                    return frames.allSatisfy {
                        Self.isOpaque($0.pixels, width: width, height: height, bytesPerRow: bytesPerRow)
                    }
                }
            }()))
    }

    /// Whether every pixel of `pixels` (RGBA rows `bytesPerRow` apart) has
    /// alpha 255: the pixels of a row ANDed together (a loop the compiler
    /// vectorizes), the row's alpha lanes checked once; stops at the first
    /// row that is not opaque.
    static func isOpaque(_ pixels: Data, width: Int, height: Int, bytesPerRow: Int) -> Bool {
        pixels.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return false }
            for y in 0..<height {
                let row = base + y * bytesPerRow
                var all: UInt32 = 0xFFFF_FFFF
                for x in 0..<width { all &= row.loadUnaligned(fromByteOffset: x * 4, as: UInt32.self) }
                // Byte 3 of each pixel (alpha) is the top byte of a little-endian word.
                if UInt32(littleEndian: all) >> 24 != 0xFF { return false }
            }
            return true
        }
    }

    /// Creates a still image from RGBA pixels.
    public init(width: Int, height: Int, rgba pixels: Data, bytesPerRow: Int? = nil) {
        self.init(
            width: width, height: height, bytesPerRow: bytesPerRow ?? width * 4,
            frames: [ImageFrame(pixels: pixels, duration: 0)])
    }

    /// The still image's pixels (the first frame).
    public var pixels: Data { frames[0].pixels }

    /// The upright pixel size.
    public var size: PixelSize { PixelSize(width: width, height: height) }

    /// Whether the image has more than one frame.
    public var isAnimated: Bool { frames.count > 1 }

    /// What a memory cache counts: the bytes of pixel storage over all
    /// frames, plus ``frameOverhead`` for each frame of an animation (so that
    /// thousands of tiny frames are not counted as free).
    public var cost: Int {
        let pixels = frames.reduce(0) { $0 + $1.pixels.count }
        return frames.count > 1 ? pixels + frames.count * Self.frameOverhead : pixels
    }

    /// The bytes of bookkeeping ``cost`` counts for each frame of an animation.
    public static let frameOverhead = 256

    /// The total duration of one loop of the animation, in seconds: the sum
    /// of the frames' stored durations, exact when each is a whole number of
    /// microseconds (as a decoded GIF's or WebP's are: frames of 0.1 and 0.2 s
    /// make 0.3, not `0.30000000000000004`). (What it takes on screen is
    /// ``AnimationTimeline/loopDuration``, which also applies the short-delay
    /// rule to frames made in memory; for a decoded GIF or WebP the two are the same.)
    public var duration: Double { AnimationTimeline.sum(frames.map(\.duration)) }

    /// The RGBA value of one pixel of one frame.
    public func pixel(x: Int, y: Int, frame: Int = 0) -> RGBA {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel out of bounds")
        let offset = y * bytesPerRow + x * 4
        return frames[frame].pixels.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> RGBA in
            RGBA(r: raw[offset], g: raw[offset + 1], b: raw[offset + 2], a: raw[offset + 3])
        }
    }
}

/// One frame of an image.
public struct ImageFrame: Sendable {
    /// RGBA pixels of the whole canvas, laid out as the image's `bytesPerRow` says.
    public let pixels: Data
    /// How long the frame is shown, in seconds (0 for a still image).
    public let duration: Double

    /// Creates a frame.
    public init(pixels: Data, duration: Double) {
        self.pixels = pixels
        self.duration = duration
    }
}

/// One pixel: 8-bit red, green, blue and straight alpha.
public struct RGBA: Hashable, Sendable, CustomStringConvertible {
    /// Red.
    public var r: UInt8
    /// Green.
    public var g: UInt8
    /// Blue.
    public var b: UInt8
    /// Alpha (255 = opaque).
    public var a: UInt8

    /// Creates a pixel value.
    public init(r: UInt8, g: UInt8, b: UInt8, a: UInt8 = 255) {
        self.r = r
        self.g = g
        self.b = b
        self.a = a
    }

    /// `"rgba(r,g,b,a)"`.
    public var description: String { "rgba(\(r),\(g),\(b),\(a))" }
}

/// How a decoder produced an image's pixels.
public struct DecodeInfo: Sendable, Hashable {
    /// The DCT scale denominator a JPEG was decoded at (1, 2, 4 or 8); 1 for other formats.
    public let scaleDenominator: Int
    /// The size of the largest pixel buffer the decoder filled, before any
    /// resize and orientation: the full size unless the decode was downsampled
    /// by DCT scaling.
    public let decodedSize: PixelSize
    /// The pixels the decoder counted against `maxPixels`, when it counts
    /// more than the source size times the frames (GIF: frames larger than
    /// the screen, and a minimum per frame; WebP: the minimum per frame). Checked again for each request
    /// that shares the image.
    var countedPixels: Int?

    /// Creates decode information.
    public init(scaleDenominator: Int, decodedSize: PixelSize) {
        self.scaleDenominator = scaleDenominator
        self.decodedSize = decodedSize
    }
}
