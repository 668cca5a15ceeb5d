/// The EXIF orientation of a stored image (TIFF tag 0x0112): how the stored
/// pixels must be transformed to be shown upright.
///
/// Decoders apply it, so an ``Image`` is always upright; ``Image/orientation``
/// records the value that was applied.
public enum ImageOrientation: Int, Sendable, Hashable, Codable, CaseIterable {
    /// 1: stored upright.
    case up = 1
    /// 2: mirrored left to right.
    case upMirrored = 2
    /// 3: rotated 180°.
    case down = 3
    /// 4: mirrored top to bottom.
    case downMirrored = 4
    /// 5: mirrored along the top-left to bottom-right diagonal.
    case leftMirrored = 5
    /// 6: must be rotated 90° clockwise to be shown upright.
    case right = 6
    /// 7: mirrored along the top-right to bottom-left diagonal.
    case rightMirrored = 7
    /// 8: must be rotated 90° counter-clockwise to be shown upright.
    case left = 8

    /// Whether the upright image's width is the stored height (5-8).
    public var swapsDimensions: Bool { rawValue >= 5 }
}
