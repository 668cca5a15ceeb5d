/// What a decode may do and what it should produce.
public struct DecodingOptions: Sendable, Hashable {
    /// The default limit: 100 megapixels.
    public static let defaultMaxPixels = 100_000_000

    /// The most pixels a decode may produce, counted over all frames of an
    /// animated GIF. Checked from the header, before any pixel buffer is
    /// allocated, so a decompression bomb costs nothing.
    public var maxPixels: Int

    /// Downsample to this upright size (fitting or filling it per
    /// ``contentMode``, keeping the aspect ratio, never enlarging). `nil`
    /// decodes at full size. A JPEG is decoded with DCT scaling to the
    /// smallest scale still at least this size, so a large photo never needs
    /// a full-size buffer.
    public var targetSize: PixelSize?

    /// How ``targetSize`` is met.
    public var contentMode: ContentMode

    /// Creates options.
    public init(
        maxPixels: Int = DecodingOptions.defaultMaxPixels,
        targetSize: PixelSize? = nil,
        contentMode: ContentMode = .aspectFill
    ) {
        self.maxPixels = maxPixels
        self.targetSize = targetSize
        self.contentMode = contentMode
    }
}
