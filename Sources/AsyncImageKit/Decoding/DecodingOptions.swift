/// What a decode may do and what it should produce.
public struct DecodingOptions: Sendable, Hashable {
    /// The default limit: 100 megapixels.
    public static let defaultMaxPixels = 100_000_000
    /// The default frame limit: 10,000 frames.
    public static let defaultMaxFrames = 10_000

    /// The most pixels a decode may produce, counted over all frames of an
    /// animated GIF, WebP, AVIF or JPEG XL. Checked from the header, before any pixel buffer is
    /// allocated, so a decompression bomb costs nothing.
    public var maxPixels: Int

    /// The most frames an animated GIF, WebP, AVIF or JPEG XL may have. Checked before
    /// each GIF frame is decoded and from a WebP's container before any
    /// frame is: a file of many tiny frames (each costs time and memory of
    /// its own, beyond its pixels) fails at stage `limits`, as one over
    /// ``maxPixels`` does. Default ``defaultMaxFrames``; one frame more than
    /// the limit fails.
    public var maxFrames: Int

    /// Downsample to this upright size (fitting or filling it per
    /// ``contentMode``, keeping the aspect ratio), framed as ``scaling``
    /// says. A source smaller than this size is not enlarged unless
    /// ``scaling`` contains ``ScalingOptions/enlargesSmallImages`` (see
    /// ``naturalSize(for:)``). `nil` decodes at full size. A JPEG is decoded with DCT scaling to the
    /// smallest scale still at least twice this size (once with
    /// ``ResizeQuality/fast``: ``resizeQuality``), and a still WebP is scaled
    /// by libwebp while it decodes, so a large photo never needs a full-size
    /// buffer.
    public var targetSize: PixelSize?

    /// How ``targetSize`` is met.
    public var contentMode: ContentMode

    /// How the result is framed at ``targetSize`` (default none: exactly the
    /// target size, Nimbus' default; see ``ScalingOptions``).
    public var scaling: ScalingOptions

    /// Whether and how a tagged image's colours are converted to sRGB
    /// (default ``ColorManagement/default``: converted, relative
    /// colorimetric; ``ColorManagement/off`` keeps the samples as stored).
    /// Part of the cache key when it is not the default. See <doc:ColourManagement>.
    public var colorManagement: ColorManagement

    /// How a display-size decode reduces the image (default
    /// ``ResizeQuality/high``: shrink-on-load with a margin, then Lanczos3
    /// in linear light; ``ResizeQuality/fast``: the pixels of earlier
    /// versions). Part of the cache key of a display size when
    /// ``ResizeQuality/high`` (`hq`). No effect at full size.
    public var resizeQuality: ResizeQuality = .high

    /// Decodes an animation's first frame alone, as a still (default
    /// false: every frame). What a thumbnail wants: ``AsyncImageLoader/encodedImage(for:encoding:)``
    /// answers with the first frame, and a 4 MB GIF of 10,000 frames costs
    /// one frame's time and memory instead of 200 MB. The frame limit and
    /// the pixel limit count that frame alone. Part of the cache key when
    /// set (`first-frame`): a still and the animation are cached apart.
    public var firstFrameOnly = false

    /// The most scans a progressive JPEG may have (real encoders write about
    /// ten; a valid file can have thousands of tiny ones, each another pass
    /// over the whole image). Internal: tests lower it.
    var maxProgressiveScans = 500

    /// A preview of a progressive JPEG whose data stops after some scans
    /// (the loader's progressive previews): the end of the data is then not
    /// an error. Internal: never set for a final image.
    package var isProgressivePreview = false

    /// Stops the decode when nobody waits for it any more (the loader's
    /// decode stage sets it; see ``DecodeStop``). Not part of equality.
    var stopSlot = DecodeStopSlot(stop: nil)

    /// The decode's stop signal, if it runs under one.
    package var stop: DecodeStop? {
        get { stopSlot.stop }
        set { stopSlot = DecodeStopSlot(stop: newValue) }
    }

    /// Throws the stopped failure of `format` when the decode was asked to
    /// stop: the check a decoder makes between frames.
    package func checkStopped(_ format: ImageFormat) throws(AsyncImageError) {
        if stopSlot.stop?.isStopped == true { throw DecodeStop.failure(format) }
    }

    /// Creates options.
    public init(
        maxPixels: Int = DecodingOptions.defaultMaxPixels,
        targetSize: PixelSize? = nil,
        contentMode: ContentMode = .aspectFill,
        scaling: ScalingOptions = [], maxFrames: Int = DecodingOptions.defaultMaxFrames,
        colorManagement: ColorManagement = .default
    ) {
        self.colorManagement = colorManagement
        self.maxPixels = maxPixels
        self.maxFrames = maxFrames
        self.targetSize = targetSize
        self.contentMode = contentMode
        self.scaling = scaling
    }

    /// The size a decoder scales a source of `size` (upright) to before it
    /// is framed: fitting or covering ``targetSize``, grown only with
    /// ``ScalingOptions/enlargesSmallImages``; `size` itself with no target.
    public func naturalSize(for size: PixelSize) -> PixelSize {
        guard let targetSize else { return size }
        return size.scaled(toFit: targetSize, contentMode: contentMode, enlarges: scaling.contains(.enlargesSmallImages))
    }

    /// Why `image` is over ``maxPixels`` (its source size times its frames)
    /// or ``maxFrames``, or nil. The loader checks each request's own limits
    /// with it when a decode or a cached image made under other limits is shared.
    func limitFailure(for image: Image) -> DecodingFailure? {
        limitFailure(
            format: image.format, originalSize: image.originalSize, frameCount: image.frames.count,
            countedPixels: image.decodeInfo.countedPixels)
    }

    /// Why an image of `originalSize` in `frameCount` frames (its decoder
    /// having counted `countedPixels`) is over the limits, or nil: the check
    /// of ``limitFailure(for:)``, for a stored thumbnail served undecoded.
    func limitFailure(format: ImageFormat?, originalSize size: PixelSize, frameCount: Int, countedPixels: Int?)
        -> DecodingFailure?
    {
        if frameCount > maxFrames {
            return DecodingFailure(
                format: format, stage: .limits,
                reason: "\(frameCount) frames is over the limit of \(maxFrames) frames", isPixelLimit: true)
        }
        var (pixels, overflow) = max(0, size.width).multipliedReportingOverflow(by: max(0, size.height))
        if !overflow { (pixels, overflow) = pixels.multipliedReportingOverflow(by: max(1, frameCount)) }
        if let counted = countedPixels, counted > pixels { pixels = counted }
        guard overflow || pixels > maxPixels else { return nil }
        let frames = frameCount > 1 ? " in \(frameCount) frames" : ""
        return DecodingFailure(
            format: format, stage: .limits,
            reason: "\(size.width)x\(size.height)\(frames) is over the limit of \(maxPixels) pixels", isPixelLimit: true)
    }
}
