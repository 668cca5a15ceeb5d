import Foundation

/// A step that turns a decoded image into the image a request wants (a
/// resize, a crop, a mask), as Nuke's `ImageProcessing` does.
///
/// A request's processors run in order on the decode queues, after the
/// decode at its display size, never on the delivery queue; only the final
/// result is kept in memory (and on disk as a processed image), under a
/// cache key that names every processor. Requests whose URL, display size
/// and processors are the same share one decode and one run of the chain.
///
/// ```swift
/// struct Sepia: ImageProcessing {
///     var identifier: String { "com.example.sepia" }
///     func process(_ image: Image) throws(AsyncImageError) -> Image { ... }
/// }
/// let request = ImageRequest(url: url, targetSize: PixelSize(width: 64, height: 64),
///                            processors: [ImageProcessors.Circle(), Sepia()])
/// ```
public protocol ImageProcessing: Sendable {
    /// Names the processing and its parameters, for cache keys: two
    /// processors with equal identifiers must make equal images.
    var identifier: String { get }

    /// The processed image.
    ///
    /// - Throws: ``AsyncImageError/processing(_:reason:)`` (or any
    ///   ``AsyncImageError``): the request fails with it.
    func process(_ image: Image) throws(AsyncImageError) -> Image
}

extension [any ImageProcessing] {
    /// The processors' identifiers as one cache key part (`""` for none).
    var keyPart: String {
        map { $0.identifier.replacingOccurrences(of: "|", with: "||") }.joined(separator: "|")
    }

    /// `image` through every processor in order.
    func apply(to image: Image) throws(AsyncImageError) -> Image {
        var image = image
        for processor in self { image = try processor.process(image) }
        return image
    }
}

/// The built-in processors.
public enum ImageProcessors {
    /// Scales to a size with Nimbus' rules (see ``ScalingOptions``): the
    /// same result as a display-size decode, for an image already decoded
    /// (as the step of a chain, or after a crop).
    public struct Resize: ImageProcessing {
        public let size: PixelSize
        public let contentMode: ContentMode
        public let scaling: ScalingOptions
        /// How the pixels are filtered (default ``ResizeQuality/high``:
        /// Lanczos3 in linear light, after an integer box to about twice the
        /// size; ``ResizeQuality/fast``: an area average, as before 0.11).
        public let quality: ResizeQuality

        /// A resize to `size`.
        public init(
            size: PixelSize, contentMode: ContentMode = .aspectFill, scaling: ScalingOptions = [],
            quality: ResizeQuality = .high
        ) {
            self.size = size
            self.contentMode = contentMode
            self.scaling = scaling
            self.quality = quality
        }

        /// A resize to a display size said by what the result is
        /// (``ImageSizing/fitInside(_:)``, ``ImageSizing/fillAndCrop(_:)``, ...).
        public init(_ sizing: ImageSizing, quality: ResizeQuality = .high) {
            self.init(size: sizing.size, contentMode: sizing.contentMode, scaling: sizing.scaling, quality: quality)
        }

        /// `resize(` and the display size's cache key part `)`, e.g. `resize(64x64-fit-hq)`.
        public var identifier: String { "resize(\(ImageCacheKey.processingKey(options)))" }

        private var options: DecodingOptions {
            var options = DecodingOptions(targetSize: size, contentMode: contentMode, scaling: scaling)
            options.resizeQuality = quality
            return options
        }

        public func process(_ image: Image) throws(AsyncImageError) -> Image {
            guard size.width > 0, size.height > 0 else { throw .processing(identifier, reason: "an empty size") }
            let options = options
            let scaled = try ImageResizer.resize(image, to: options.naturalSize(for: image.size), quality: quality)
            return try DisplayFrame.apply(scaled, options)
        }
    }

    /// Crops to a rectangle, in the image's pixels (upright, after any
    /// display-size scaling), clipped to the image.
    public struct Crop: ImageProcessing {
        public let x: Int
        public let y: Int
        public let size: PixelSize

        /// A crop of `size` at (`x`, `y`).
        public init(x: Int, y: Int, size: PixelSize) {
            self.x = x
            self.y = y
            self.size = size
        }

        public var identifier: String { "crop(\(x),\(y),\(size))" }

        public func process(_ image: Image) throws(AsyncImageError) -> Image {
            // Clamped first: no overflow whatever the rectangle.
            let limit = 1 << 40
            let (x, y) = (min(max(x, -limit), limit), min(max(y, -limit), limit))
            let (w, h) = (min(max(size.width, 0), limit), min(max(size.height, 0), limit))
            let x0 = max(0, x)
            let y0 = max(0, y)
            let x1 = min(image.width, x + w)
            let y1 = min(image.height, y + h)
            guard x1 > x0, y1 > y0 else {
                throw .processing(identifier, reason: "the rectangle misses the \(image.width)x\(image.height) image")
            }
            return try ImageCanvas.placed(image, in: PixelSize(width: x1 - x0, height: y1 - y0), at: (-x0, -y0))
        }
    }

    /// A circle: the largest centred square, with everything outside its
    /// inscribed circle transparent (anti-aliased edge), as avatars are shown.
    public struct Circle: ImageProcessing {
        /// A circle mask.
        public init() {}

        public var identifier: String { "circle" }

        public func process(_ image: Image) throws(AsyncImageError) -> Image {
            let side = min(image.width, image.height)
            let square = try ImageCanvas.centered(image, in: PixelSize(width: side, height: side))
            return try Mask.apply(to: square) { x, y in
                let r = Double(side) / 2
                return Mask.coverage(distance: ((x - r) * (x - r) + (y - r) * (y - r)).squareRoot() - r)
            }
        }
    }

    /// Rounded corners of `radius` pixels (anti-aliased); the rest untouched.
    public struct RoundedCorners: ImageProcessing {
        public let radius: Int

        /// Corners of `radius` pixels (at most half the shorter side).
        public init(radius: Int) {
            self.radius = radius
        }

        public var identifier: String { "rounded(\(radius))" }

        public func process(_ image: Image) throws(AsyncImageError) -> Image {
            let r = Double(max(0, min(radius, min(image.width, image.height) / 2)))
            guard r > 0 else { return image }
            let (w, h) = (Double(image.width), Double(image.height))
            return try Mask.apply(to: image) { x, y in
                // Distance outside the rounded rectangle (negative inside).
                let cx = min(max(x, r), w - r)
                let cy = min(max(y, r), h - r)
                let d = ((x - cx) * (x - cx) + (y - cy) * (y - cy)).squareRoot()
                return d == 0 ? 1 : Mask.coverage(distance: d - r)
            }
        }
    }
}

/// Alpha masks for the built-in processors.
enum Mask {
    /// The share of a pixel covered by a shape whose edge is `distance`
    /// pixels from the pixel's centre (negative: inside): a one-pixel ramp.
    static func coverage(distance: Double) -> Double {
        min(1, max(0, 0.5 - distance))
    }

    /// `image` (every frame) with each pixel's alpha multiplied by
    /// `coverage(x, y)` at the pixel's centre.
    static func apply(to image: Image, _ coverage: (Double, Double) -> Double) throws(AsyncImageError) -> Image {
        let rowBytes = image.width * 4
        // Coverage once per pixel, shared by every frame.
        var weights = [UInt16](repeating: 0, count: image.width * image.height)
        var covered = true
        for y in 0..<image.height {
            for x in 0..<image.width {
                let weight = UInt16((coverage(Double(x) + 0.5, Double(y) + 0.5) * 256).rounded())
                weights[y * image.width + x] = weight
                if weight < 256 { covered = false }
            }
        }
        var frames: [ImageFrame] = []
        for frame in image.frames {
            let pixels = try PixelMemory.make(rowBytes * image.height) { out in
                frame.pixels.withUnsafeBytes { raw in
                    let source = raw.bindMemory(to: UInt8.self).baseAddress!
                    for y in 0..<image.height {
                        let from = source + y * image.bytesPerRow
                        let to = out + y * rowBytes
                        to.update(from: from, count: rowBytes)
                        for x in 0..<image.width {
                            let w = UInt32(weights[y * image.width + x])
                            if w == 256 { continue }
                            if w == 0 {
                                (to + x * 4).update(repeating: 0, count: 4)
                            } else {
                                to[x * 4 + 3] = UInt8((UInt32(to[x * 4 + 3]) * w + 128) >> 8)
                            }
                        }
                    }
                }
            }
            frames.append(ImageFrame(pixels: pixels, duration: frame.duration))
        }
        // A mask only lowers alpha (a weight below 256 takes 255 below 255).
        return Image(
            width: image.width, height: image.height, bytesPerRow: rowBytes, frames: frames, format: image.format,
            originalSize: image.originalSize, orientation: image.orientation, loopCount: image.loopCount,
            decodeInfo: image.decodeInfo, opacity: image.isOpaque && covered ? .opaque : .notOpaque)
    }
}
