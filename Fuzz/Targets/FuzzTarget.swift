import AsyncImageKit
import Foundation

/// One libFuzzer target: a function from bytes to a verdict, `nil` when the
/// input was handled as it must be (an image or a typed error, a value or a
/// miss), or the problem found (a message). A crash or a sanitizer report
/// while it runs is a problem too.
///
/// `Fuzz/main.swift` runs the target named by `FUZZ_TARGET` under libFuzzer;
/// `FuzzRegressionTests` replays each target's findings
/// (`Tests/AsyncImageKitTests/Resources/fuzz/<target>/`) through the same
/// function.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// ``AsyncImageKit/ImageDecoder``: sniffing, the format's decoder, the display framing.
    case image
    /// ``AsyncImageKit/PNGDecoder`` called directly (libpng through the C shim).
    case png
    /// ``AsyncImageKit/JPEGDecoder`` called directly (libjpeg-turbo through the C shim).
    case jpeg
    /// ``AsyncImageKit/GIFDecoder`` called directly (giflib).
    case gif
    /// ``AsyncImageKit/WebPDecoder`` called directly (libwebp, libwebpdemux).
    case webp
    /// ``AsyncImageKit/AVIFDecoder`` called directly (libavif, dav1d).
    case avif
    /// ``AsyncImageKit/HEIFDecoder`` called directly (libheif, libde265).
    case heic
    /// ``AsyncImageKit/JXLDecoder`` called directly (libjxl).
    case jxl
    /// ``AsyncImageKit/ImageFormat/sniff(_:)`` and the registry's refusal of what it does not know.
    case sniff
    /// The header probe as the loader runs it on a transfer's first bytes:
    /// ``AsyncImageKit/ImageFileProperties`` (the PNG, JPEG, GIF and WebP
    /// header walks, the EXIF reader) on growing prefixes, then the
    /// progressive JPEG's scan walker (`PreviewWatcher`).
    case probe
    /// The EXIF reader alone: the input is an `eXIf` chunk's payload.
    case exif
    /// The progressive JPEG preview decode (a body cut after some scans).
    case jpegPreview = "jpeg-preview"
    /// Colour profiles in JPEG APP2 segments, a PNG `iCCP` chunk and a GIF
    /// `ICCRGBG1012` extension: the joins, the inflation, Little CMS's
    /// parsing and transforms (a profile never fails a decode).
    case colour
    /// The disk cache's entry file reader (`DataCacheEntry`: header, lengths, checksum, JSON metadata).
    case diskEntry = "disk-entry"
    /// The disk cache's processed image reader (`StoredImage`, the `AIKI` format).
    case storedImage = "stored-image"

    /// The target named `name`, or `nil`.
    public init?(name: String) {
        self.init(rawValue: name)
    }

    /// Runs the target on one input: `nil`, or the problem found.
    public func run(_ data: Data) -> String? {
        switch self {
        case .image: return DecoderTargets.image(data)
        case .png: return DecoderTargets.direct(data, decoder: PNGDecoder())
        case .jpeg: return DecoderTargets.direct(data, decoder: JPEGDecoder())
        case .gif: return DecoderTargets.direct(data, decoder: GIFDecoder())
        case .webp: return DecoderTargets.direct(data, decoder: WebPDecoder())
        case .avif: return DecoderTargets.direct(data, decoder: AVIFDecoder())
        case .heic: return DecoderTargets.direct(data, decoder: HEIFDecoder())
        case .jxl: return DecoderTargets.direct(data, decoder: JXLDecoder())
        case .sniff: return DecoderTargets.sniff(data)
        case .probe: return ProbeTarget.run(data)
        case .exif: return ProbeTarget.exif(data)
        case .jpegPreview: return DecoderTargets.jpegPreview(data)
        case .colour: return ColourTarget.run(data)
        case .diskEntry: return DiskCacheTargets.entry(data)
        case .storedImage: return DiskCacheTargets.storedImage(data)
        }
    }
}
