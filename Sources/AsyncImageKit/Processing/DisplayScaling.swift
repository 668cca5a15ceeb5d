import Foundation

/// A display size and how the image meets it, named for what the result
/// is: the presets a thumbnail service or a view asks for, at the call site.
///
/// ```swift
/// ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 256, height: 256)))
/// ImageRequest(url: url, sizing: .fillAndCrop(PixelSize(width: 256, height: 256)))
/// ImageProcessors.Resize(.fitInside(PixelSize(width: 64, height: 64)))
/// ```
///
/// For a 500x375 source and a 50x40 one, at 100x100:
///
/// | preset | 500x375 | 50x40 | margins |
/// |---|---|---|---|
/// | ``fitInside(_:)`` | 100x75 | 50x40 (not enlarged) | never |
/// | ``fillAndCrop(_:)`` | 100x100 (133x100, centre cropped) | 40x40 (its centre, not enlarged) | never |
/// | ``exact(_:contentMode:)`` fit | 100x100, the image 100x75 centred | 100x100, the image 50x40 centred | transparent, where the image does not cover the box |
/// | ``exact(_:contentMode:)`` fill | 100x100 (133x100, centre cropped) | 100x100, the image 50x40 centred | transparent, for a small source |
///
/// Neither ``fitInside(_:)`` nor ``fillAndCrop(_:)`` ever enlarges a
/// source or adds a transparent pixel, so an opaque source gives an opaque
/// result (``Image/isOpaque``), which ``ImageEncoding/automatic(quality:)``
/// writes as JPEG. ``exact(_:contentMode:)`` is Nimbus' default (and the
/// default of ``ImageRequest/init(url:targetSize:contentMode:scaling:maxPixels:maxFrames:priority:headers:cachePolicy:diskStorage:processors:key:)``):
/// exactly the box, with transparent margins, for a view that lays out
/// a fixed box. A source is enlarged only with
/// ``ScalingOptions/enlargesSmallImages``, through ``init(size:contentMode:scaling:)``.
public struct ImageSizing: Sendable, Hashable {
    /// The box.
    public var size: PixelSize
    /// Whether the image fits inside the box or covers it.
    public var contentMode: ContentMode
    /// How the result is framed (see ``ScalingOptions``).
    public var scaling: ScalingOptions

    /// A display size from its parts (what the presets are made of).
    public init(size: PixelSize, contentMode: ContentMode, scaling: ScalingOptions = []) {
        self.size = size
        self.contentMode = contentMode
        self.scaling = scaling
    }

    /// Fit inside the box, without padding, never enlarged: the whole image,
    /// its aspect ratio kept, at most the box on each side (a 500x375 source
    /// at 100x100 is 100x75; a 50x40 one stays 50x40). Aspect fit with
    /// ``ScalingOptions/fitWithoutMargins``.
    public static func fitInside(_ size: PixelSize) -> ImageSizing {
        ImageSizing(size: size, contentMode: .aspectFit, scaling: .fitWithoutMargins)
    }

    /// Cover the box and crop to it, centred, never enlarged: exactly the
    /// box when the source covers it (a 500x375 source at 100x100 is
    /// scaled to 133x100, then 16 columns are cropped on the left and 17 on
    /// the right). A source too small to cover the box is not enlarged: it
    /// is cropped, centred, to the box's shape at its own scale (a 50x40
    /// source at 100x100 gives its centre 40x40; at 256x128, 50x25), so the
    /// result always has the box's aspect ratio and no margins. Aspect fill
    /// with ``ScalingOptions/cropsSmallImagesToShape``.
    public static func fillAndCrop(_ size: PixelSize) -> ImageSizing {
        ImageSizing(size: size, contentMode: .aspectFill, scaling: .cropsSmallImagesToShape)
    }

    /// Exactly the box, Nimbus' default (no ``ScalingOptions``): aspect fit
    /// scales the whole image inside it and leaves transparent margins;
    /// aspect fill covers it and crops the excess; a source smaller than
    /// the box is not enlarged but centred on it, with transparent margins.
    public static func exact(_ size: PixelSize, contentMode: ContentMode = .aspectFill) -> ImageSizing {
        ImageSizing(size: size, contentMode: contentMode)
    }
}

/// How an image meets its display size, beyond the content mode: Nimbus'
/// `NINetworkImageView` scale options (see ``DecodingOptions/scaling``).
/// ``ImageSizing``'s presets name the combinations a caller usually wants.
///
/// By default (no option) the result is **exactly the display size**, as in
/// Nimbus: ``ContentMode/aspectFit`` scales the whole image inside it and
/// leaves transparent margins, centred; ``ContentMode/aspectFill`` covers it
/// and crops the excess, centred. For a 500x375 source at 100x100, and a
/// 50x40 one (not enlarged):
///
/// | content mode | options | preset | 500x375 | 50x40 |
/// |---|---|---|---|---|
/// | fit | none | ``ImageSizing/exact(_:contentMode:)`` | 100x100: the image 100x75, transparent rows above and below | 100x100: the image centred, transparent around it |
/// | fill | none | ``ImageSizing/exact(_:contentMode:)`` | 100x100: the image 133x100, 16 columns cropped left and 17 right | 100x100: the image centred, transparent around it |
/// | fit | ``fitWithoutMargins`` (``fitCropsExcess``) | ``ImageSizing/fitInside(_:)`` | 100x75 | 50x40 |
/// | fill | ``cropsSmallImagesToShape`` | ``ImageSizing/fillAndCrop(_:)`` | 100x100, as with none | 40x40: its centre, the box's shape |
/// | fill | ``fillWithoutCropping`` (``fillLeavesExcess``) | | 133x100 | 50x40 |
///
/// A source smaller than the display size is not enlarged unless
/// ``enlargesSmallImages`` is set (a filter cannot add detail, and a
/// service usually wants the original pixels): it is then centred in the
/// display size with transparent margins (or kept at its own size with
/// ``fitWithoutMargins`` / ``fillWithoutCropping``, or cropped to the
/// display size's shape with ``cropsSmallImagesToShape``). With
/// ``enlargesSmallImages`` it is scaled up with the filter a large one is
/// scaled down with (``ResizeQuality``; bilinear with ``ResizeQuality/fast``).
public struct ScalingOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    /// Options from their raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Aspect fit: the result is the fitted image itself, without margins
    /// (Nimbus' `NINetworkImageViewScaleToFitCropsExcess`: nothing is
    /// cropped, whatever the name says; ``fitWithoutMargins`` is the same
    /// option under a name that says so).
    public static let fitCropsExcess = ScalingOptions(rawValue: 1 << 0)
    /// Aspect fill: the result is the covering image itself, not cropped
    /// (Nimbus' `NINetworkImageViewScaleToFillLeavesExcess`;
    /// ``fillWithoutCropping`` is the same option).
    public static let fillLeavesExcess = ScalingOptions(rawValue: 1 << 1)
    /// Scale a source smaller than the display size up to it.
    public static let enlargesSmallImages = ScalingOptions(rawValue: 1 << 2)
    /// Aspect fill: a source too small to cover the display size (and not
    /// enlarged) is cropped, centred, to the display size's aspect ratio at
    /// its own scale, instead of being centred on a transparent canvas of
    /// the display size: no margins, the box's shape, at most the box
    /// (``ImageSizing/fillAndCrop(_:)``). A source that covers the display
    /// size is cropped to it exactly, as without this option. No effect on
    /// aspect fit, nor with ``fillWithoutCropping``.
    public static let cropsSmallImagesToShape = ScalingOptions(rawValue: 1 << 3)

    /// ``fitCropsExcess`` under a name that says what it does: aspect fit
    /// without margins (the result is the fitted image itself).
    public static let fitWithoutMargins = fitCropsExcess
    /// ``fillLeavesExcess`` under a name that says what it does: aspect fill
    /// without cropping (the result is the covering image itself).
    public static let fillWithoutCropping = fillLeavesExcess

    /// The options' part of a cache key (`""` for none).
    var keyPart: String {
        var parts: [String] = []
        if contains(.fitCropsExcess) { parts.append("fitcrops") }
        if contains(.fillLeavesExcess) { parts.append("fillleaves") }
        if contains(.enlargesSmallImages) { parts.append("enlarges") }
        if contains(.cropsSmallImagesToShape) { parts.append("shape") }
        return parts.joined(separator: "+")
    }
}

/// The last step of a display-size decode: a decoder delivers the image
/// scaled to fit or to cover the display size (its *natural* size, see
/// ``PixelSize/scaled(toFit:contentMode:enlarges:)``); this frames it as
/// ``ScalingOptions`` say. Applied by ``ImageDecoderRegistry/decode(_:options:)``
/// to every decoder's result, built-in or not.
enum DisplayFrame {
    /// `image` (scaled to its natural size by a decoder) framed for `options`.
    static func apply(_ image: Image, _ options: DecodingOptions) throws(AsyncImageError) -> Image {
        guard let target = options.targetSize, target.width > 0, target.height > 0 else { return image }
        let frame: PixelSize
        switch options.contentMode {
        case .aspectFit:
            guard !options.scaling.contains(.fitCropsExcess) else { return image }
            frame = target
        case .aspectFill:
            guard !options.scaling.contains(.fillLeavesExcess) else { return image }
            frame = options.scaling.contains(.cropsSmallImagesToShape) ? shape(of: target, within: image.size) : target
        }
        guard image.size != frame else { return image }
        return try ImageCanvas.centered(image, in: frame)
    }

    /// The largest size of `target`'s aspect ratio within both `target` and
    /// `size` (`target` itself when `size` covers it); each side at least 1.
    static func shape(of target: PixelSize, within size: PixelSize) -> PixelSize {
        let scale = min(1, Double(size.width) / Double(target.width), Double(size.height) / Double(target.height))
        guard scale < 1 else { return target }
        return PixelSize(
            width: max(1, min(size.width, Int((Double(target.width) * scale).rounded()))),
            height: max(1, min(size.height, Int((Double(target.height) * scale).rounded()))))
    }
}

/// Placing an image on a canvas of another size.
enum ImageCanvas {
    /// `image` centred on a transparent canvas of `size` (every frame): what
    /// falls outside is cropped, what is not covered is transparent. Odd
    /// differences put the extra pixel on the right and bottom.
    static func centered(_ image: Image, in size: PixelSize) throws(AsyncImageError) -> Image {
        try placed(image, in: size, at: (x: (size.width - image.width) / 2, y: (size.height - image.height) / 2))
    }

    /// `image` with its top-left corner at `origin` on a transparent canvas of `size`.
    static func placed(_ image: Image, in size: PixelSize, at origin: (x: Int, y: Int)) throws(AsyncImageError) -> Image {
        guard size.width > 0, size.height > 0 else {
            throw .processing("canvas", reason: "cannot place an image on a \(size) canvas")
        }
        let rowBytes = size.width * 4
        // The part of the image that lands on the canvas, in canvas coordinates.
        let x0 = max(0, origin.x)
        let y0 = max(0, origin.y)
        let x1 = min(size.width, origin.x + image.width)
        let y1 = min(size.height, origin.y + image.height)
        var frames: [ImageFrame] = []
        frames.reserveCapacity(image.frames.count)
        for frame in image.frames {
            let pixels = try PixelMemory.make(rowBytes * size.height) { out in
                out.initialize(repeating: 0, count: rowBytes * size.height)
                guard x1 > x0, y1 > y0 else { return }
                frame.pixels.withUnsafeBytes { raw in
                    let source = raw.bindMemory(to: UInt8.self).baseAddress!
                    for y in y0..<y1 {
                        let from = source + (y - origin.y) * image.bytesPerRow + (x0 - origin.x) * 4
                        (out + y * rowBytes + x0 * 4).update(from: from, count: (x1 - x0) * 4)
                    }
                }
            }
            frames.append(ImageFrame(pixels: pixels, duration: frame.duration))
        }
        // Opaque only when the image covers the whole canvas (then as
        // opaque as the part of it kept: scanned, unless it was opaque whole).
        let covers = x0 == 0 && y0 == 0 && x1 == size.width && y1 == size.height
        return Image(
            width: size.width, height: size.height, bytesPerRow: rowBytes, frames: frames, format: image.format,
            originalSize: image.originalSize, orientation: image.orientation, loopCount: image.loopCount,
            decodeInfo: image.decodeInfo, opacity: !covers ? .notOpaque : image.isOpaque ? .opaque : .unknown)
    }
}
