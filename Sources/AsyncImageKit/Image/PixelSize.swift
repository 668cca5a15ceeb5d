/// A size in whole pixels.
public struct PixelSize: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Creates a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `width * height`.
    public var pixelCount: Int { width * height }

    /// The size with width and height exchanged (a 90° rotation).
    public var transposed: PixelSize { PixelSize(width: height, height: width) }

    /// `"WIDTHxHEIGHT"`.
    public var description: String { "\(width)x\(height)" }

    /// The size this size is scaled to so that it fits or fills `target`,
    /// keeping its aspect ratio; it grows only when `enlarges` is true (else
    /// a size already within the target is returned unchanged). Each side is
    /// at least 1 pixel.
    public func scaled(toFit target: PixelSize, contentMode: ContentMode, enlarges: Bool = false) -> PixelSize {
        guard width > 0, height > 0, target.width > 0, target.height > 0 else { return self }
        let sx = Double(target.width) / Double(width)
        let sy = Double(target.height) / Double(height)
        let scale = contentMode == .aspectFit ? min(sx, sy) : max(sx, sy)
        guard scale < 1 || (enlarges && scale > 1) else { return self }
        func side(_ length: Int) -> Int {
            let scaled = Int(min((Double(length) * scale).rounded(), Double(1 << 30)))
            return max(1, enlarges ? scaled : min(length, scaled))
        }
        return PixelSize(width: side(width), height: side(height))
    }
}

/// How an image is scaled to a target size.
public enum ContentMode: Sendable, Hashable {
    /// Scale so the whole image fits inside the target (one side may be smaller).
    case aspectFit
    /// Scale so the image covers the target (one side may be larger), as a
    /// thumbnail cell that crops would show it.
    case aspectFill
}
