import Foundation

/// What identifies a decoded image in a cache: the URL and how it was
/// decoded (the target size and content mode of a downsampled decode).
///
/// The hash is computed once, when the key is made, so a cache lookup costs
/// one string comparison at most.
public struct ImageCacheKey: Hashable, Sendable, CustomStringConvertible {
    /// The parts behind one reference: copying a key is one retain.
    private final class Storage: Sendable {
        let url: String
        let processing: String
        let hash: Int

        init(url: String, processing: String, hash: Int) {
            self.url = url
            self.processing = processing
            self.hash = hash
        }
    }

    private let storage: Storage

    /// The URL's absolute string, or the request's own key (``ImageRequest/init(url:targetSize:contentMode:scaling:maxPixels:maxFrames:priority:headers:cachePolicy:diskStorage:processors:key:)``).
    public var url: String { storage.url }
    /// `""` for a full-size decode without processors and with the default
    /// colour management; otherwise e.g. `"256x256-fill-hq"` (`hq`: the
    /// default ``ResizeQuality/high``; ``ResizeQuality/fast`` has no part,
    /// `"256x256-fill"`, the key of earlier versions; a colour
    /// management other than the default adds its part, such as
    /// `"256x256-fill-colour-off"` or `"colour-off"` at full size), followed
    /// by `|` and the processors' identifiers.
    public var processing: String { storage.processing }
    /// The hash computed when the key was made.
    var precomputedHash: Int { storage.hash }

    /// The key for `url` decoded with `options` (only the target size,
    /// content mode, scaling, resize quality and colour management matter; the pixel limit
    /// does not change the pixels).
    public init(url: URL, options: DecodingOptions = DecodingOptions()) {
        self.init(url: url.absoluteString, processing: Self.processingKey(options))
    }

    /// A key from its parts.
    public init(url: String, processing: String) {
        var hasher = Hasher()
        hasher.combine(url)
        hasher.combine(processing)
        storage = Storage(url: url, processing: processing, hash: hasher.finalize())
    }

    static func processingKey(_ options: DecodingOptions) -> String {
        // The first frame before the colour: a still at full size is not
        // the original (see `isFullSize`).
        let colour = [options.firstFrameOnly ? "first-frame" : "", options.colorManagement.keyPart]
            .filter { !$0.isEmpty }.joined(separator: "-")
        guard let size = options.targetSize else { return colour }
        let scaling = options.scaling.keyPart
        let quality = options.resizeQuality.keyPart
        return "\(size.width)x\(size.height)-\(options.contentMode == .aspectFill ? "fill" : "fit")"
            + (scaling.isEmpty ? "" : "-" + scaling) + (quality.isEmpty ? "" : "-" + quality)
            + (colour.isEmpty ? "" : "-" + colour)
    }

    /// Whether `processing` (a key's ``processing``) names an image as
    /// decoded from the original with nothing done to its size or pixels,
    /// at most its colour management set (`colour-off`): the original body
    /// serves it, and the disk never stores it as a processed image (a
    /// re-encoded copy of the original). The one home of that rule.
    static func isFullSize(_ processing: String) -> Bool {
        processing.isEmpty || (processing.hasPrefix(ColorManagement.keyPrefix) && !processing.contains("|"))
    }

    /// Feeds the precomputed hash.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(storage.hash)
    }

    /// Equal when URL and processing are equal.
    public static func == (lhs: ImageCacheKey, rhs: ImageCacheKey) -> Bool {
        if lhs.storage === rhs.storage { return true }
        return lhs.storage.hash == rhs.storage.hash && lhs.url == rhs.url && lhs.processing == rhs.processing
    }

    /// `URL` or `URL [processing]`.
    public var description: String { processing.isEmpty ? url : "\(url) [\(processing)]" }
}
