import Foundation

/// Turns stored pixels upright according to an EXIF orientation.
enum OrientationTransform {
    /// `image` (stored orientation) transformed so that it shows upright.
    static func apply(_ orientation: ImageOrientation, to image: Image) throws(AsyncImageError) -> Image {
        guard orientation != .up else { return image }
        let w = image.width
        let h = image.height
        let upright = orientation.swapsDimensions ? PixelSize(width: h, height: w) : image.size
        let stride = image.bytesPerRow / 4
        var frames: [ImageFrame] = []
        for frame in image.frames {
            let pixels = try PixelMemory.make(upright.pixelCount * 4) { out throws(AsyncImageError) in
                frame.pixels.withUnsafeBytes { raw in
                    let src = raw.bindMemory(to: UInt32.self).baseAddress!
                    out.withMemoryRebound(to: UInt32.self, capacity: upright.pixelCount) { dst in
                        for y in 0..<upright.height {
                            let row = dst + y * upright.width
                            for x in 0..<upright.width {
                                let (sx, sy) = sourcePoint(orientation, x: x, y: y, width: w, height: h)
                                row[x] = src[sy * stride + sx]
                            }
                        }
                    }
                }
            }
            frames.append(ImageFrame(pixels: pixels, duration: frame.duration))
        }
        return Image(
            width: upright.width, height: upright.height, bytesPerRow: upright.width * 4, frames: frames,
            format: image.format, originalSize: image.originalSize, orientation: orientation,
            loopCount: image.loopCount, decodeInfo: image.decodeInfo,
            opacity: image.isOpaque ? .opaque : .notOpaque)  // the same pixels, moved
    }

    /// The stored pixel shown at upright (x, y); `width`/`height` are the stored size.
    @inline(__always)
    static func sourcePoint(_ orientation: ImageOrientation, x: Int, y: Int, width: Int, height: Int) -> (Int, Int) {
        switch orientation {
        case .up: return (x, y)
        case .upMirrored: return (width - 1 - x, y)
        case .down: return (width - 1 - x, height - 1 - y)
        case .downMirrored: return (x, height - 1 - y)
        case .leftMirrored: return (y, x)
        case .right: return (y, height - 1 - x)
        case .rightMirrored: return (width - 1 - y, height - 1 - x)
        case .left: return (width - 1 - y, x)
        }
    }
}
