import AsyncImageKit
import Foundation

/// What every decoded image must satisfy, and the options a target decodes with.
enum ImageCheck {
    /// The problem with `image`, or `nil`: a positive size, rows wide enough
    /// for the width, every frame's buffer as large as its geometry needs
    /// (``Image``'s own rule: `bytesPerRow * (height - 1) + width * 4`; its
    /// first and last bytes are read: AddressSanitizer checks both ends),
    /// finite non-negative frame durations.
    static func problem(with image: Image) -> String? {
        guard image.width > 0, image.height > 0 else { return "an empty image (\(image.size)) reported as a success" }
        guard !image.frames.isEmpty else { return "an image without frames" }
        guard image.bytesPerRow >= image.width * Image.bytesPerPixel else {
            return "bytesPerRow \(image.bytesPerRow) is too small for a width of \(image.width)"
        }
        for (index, frame) in image.frames.enumerated() {
            let problem = frame.pixels.withUnsafeBytes { raw -> String? in
                guard raw.count >= image.bytesPerRow * (image.height - 1) + image.width * Image.bytesPerPixel else {
                    return "frame \(index): \(raw.count) bytes for \(image.bytesPerRow) x \(image.height)"
                }
                if let first = raw.first, let last = raw.last { _ = first &+ last }
                return nil
            }
            if let problem { return problem }
            guard frame.duration.isFinite, frame.duration >= 0 else { return "frame \(index): duration \(frame.duration)" }
        }
        return nil
    }

    /// The problem when `image`, decoded from `data`, disagrees with what
    /// its headers say (``ImageFileProperties``): its upright size and frame count.
    static func disagreement(_ image: Image, _ data: Data) -> String? {
        let properties = ImageFileProperties(data: data)
        guard let properties, properties.uprightPixelSize == image.originalSize,
            properties.frameCount == image.frames.count
        else {
            return "the header properties (\(properties.map { "\($0.uprightPixelSize), \($0.frameCount) frames" } ?? "none")) "
                + "disagree with the decoded image (\(image.originalSize), \(image.frames.count) frames)"
        }
        return nil
    }

    /// A full-size decode and a downsampled one, under a small pixel limit
    /// so that each run stays quick; the input's last byte picks the target
    /// size and content mode.
    static func options(for data: Data) -> [DecodingOptions] {
        let selector = Int(data.last ?? 0)
        let side = 1 + selector % 97
        return [
            DecodingOptions(maxPixels: 4_000_000),
            DecodingOptions(
                maxPixels: 4_000_000, targetSize: PixelSize(width: side, height: side + selector % 7),
                contentMode: selector & 0x80 == 0 ? .aspectFill : .aspectFit),
        ]
    }
}
