import Foundation

/// What to load: a URL, how to decode it, and how urgently.
///
/// Two requests with the same ``cacheKey`` share one transfer and one decode.
public struct ImageRequest: Sendable, Hashable {
    /// The image's URL (`http`, `https` or `file`).
    public let url: URL
    /// How to decode: pixel limit, and a display size to downsample to.
    public let options: DecodingOptions
    /// The memory-cache key: the URL and the display size.
    public let cacheKey: ImageCacheKey
    /// Where the request stands in the loader's queue (default ``ImagePriority/normal``).
    /// Change a request already made through its ``ImageTask``.
    public var priority: ImagePriority

    /// A request for `url`, decoded at full size or downsampled for display.
    ///
    /// - Parameters:
    ///   - targetSize: the size the image is shown at; `nil` decodes at full size.
    ///   - contentMode: how the image meets `targetSize`.
    ///   - maxPixels: the decompression-bomb limit (see ``DecodingOptions/maxPixels``).
    ///   - priority: where it stands in the queue.
    public init(
        url: URL, targetSize: PixelSize? = nil, contentMode: ContentMode = .aspectFill,
        maxPixels: Int = DecodingOptions.defaultMaxPixels, priority: ImagePriority = .normal
    ) {
        self.url = url
        self.options = DecodingOptions(maxPixels: maxPixels, targetSize: targetSize, contentMode: contentMode)
        self.cacheKey = ImageCacheKey(url: url, options: options)
        self.priority = priority
    }
}
