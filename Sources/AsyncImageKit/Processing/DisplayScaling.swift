import Foundation

/// How an image meets its display size, beyond the content mode: Nimbus'
/// `NINetworkImageView` scale options (see ``DecodingOptions/scaling``).
///
/// By default (no option) the result is **exactly the display size**, as in
/// Nimbus: ``ContentMode/aspectFit`` scales the whole image inside it and
/// leaves transparent margins, centred; ``ContentMode/aspectFill`` covers it
/// and crops the excess, centred. For a 500x375 source at 100x100:
///
/// | content mode | options | result |
/// |---|---|---|
/// | fit | none | 100x100: the image 100x75, transparent rows above and below |
/// | fill | none | 100x100: the image 133x100, 16 columns cropped left and 17 right |
/// | fit | ``fitCropsExcess`` | 100x75 |
/// | fill | ``fillLeavesExcess`` | 133x100 |
///
/// A source smaller than the display size is not enlarged unless
/// ``enlargesSmallImages`` is set (area averaging cannot add detail, and a
/// service usually wants the original pixels): it is then centred in the
/// display size with transparent margins (or kept at its own size with
/// ``fitCropsExcess`` / ``fillLeavesExcess``). With ``enlargesSmallImages``
/// it is scaled up (bilinear) like a large one is scaled down.
public struct ScalingOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int

    /// Options from their raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Aspect fit: the result is the fitted image itself, without margins
    /// (Nimbus' `NINetworkImageViewScaleToFitCropsExcess`).
    public static let fitCropsExcess = ScalingOptions(rawValue: 1 << 0)
    /// Aspect fill: the result is the covering image itself, not cropped
    /// (Nimbus' `NINetworkImageViewScaleToFillLeavesExcess`).
    public static let fillLeavesExcess = ScalingOptions(rawValue: 1 << 1)
    /// Scale a source smaller than the display size up to it.
    public static let enlargesSmallImages = ScalingOptions(rawValue: 1 << 2)

    /// The options' part of a cache key (`""` for none).
    var keyPart: String {
        var parts: [String] = []
        if contains(.fitCropsExcess) { parts.append("fitcrops") }
        if contains(.fillLeavesExcess) { parts.append("fillleaves") }
        if contains(.enlargesSmallImages) { parts.append("enlarges") }
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
        let keepsNatural =
            options.contentMode == .aspectFit
            ? options.scaling.contains(.fitCropsExcess) : options.scaling.contains(.fillLeavesExcess)
        guard !keepsNatural, image.size != target else { return image }
        return try ImageCanvas.centered(image, in: target)
    }
}

/// Placing an image on a canvas of another size.
public enum ImageCanvas {
    /// `image` centred on a transparent canvas of `size` (every frame): what
    /// falls outside is cropped, what is not covered is transparent. Odd
    /// differences put the extra pixel on the right and bottom.
    public static func centered(_ image: Image, in size: PixelSize) throws(AsyncImageError) -> Image {
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
        return Image(
            width: size.width, height: size.height, bytesPerRow: rowBytes, frames: frames, format: image.format,
            originalSize: image.originalSize, orientation: image.orientation, loopCount: image.loopCount,
            decodeInfo: image.decodeInfo)
    }
}
