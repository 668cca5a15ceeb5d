/// How an image is made smaller (or larger) for a display size, a
/// ``ImageProcessors/Resize`` or a stored thumbnail.
///
/// | | ``high`` (the default) | ``fast`` |
/// |---|---|---|
/// | shrink-on-load (JPEG's DCT scaling, WebP's scaled decode) | to no less than twice the final size, chroma smoothed | to the final size or just above it, chroma not smoothed |
/// | formats decoded at full size (PNG, GIF, AVIF, HEIC, JPEG XL) | an integer box in linear light to about twice the final size, then the filter | the filter alone |
/// | the final step | Lanczos3 in linear light (premultiplied, ringing clamped) | an area average of the stored values; bilinear when growing |
/// | cache key | adds `hq` to a display size's part | as before 0.11 |
///
/// ``high`` is what a person compares with libvips or Pillow: on real
/// photographs it scores several SSIMULACRA2 points above both (BENCHMARKS.md,
/// *Thumbnail quality*) for a little more CPU than ``fast``. ``fast`` keeps
/// the pixels and the cost of earlier versions byte for byte (and their
/// cache keys, so their stored thumbnails stay valid).
///
/// A full-size decode is the same under both: nothing is resized.
public enum ResizeQuality: String, Sendable, Hashable, CaseIterable {
    /// Shrink-on-load with a margin, then Lanczos3 in linear light.
    case high
    /// Shrink-on-load to the final size, then an area average of the stored values.
    case fast

    /// Its part of a display size's cache key: `"hq"` for ``high``, none for
    /// ``fast`` (the key of earlier versions). A change to ``high``'s pixels
    /// gives it a new part, so caches never mix the two.
    var keyPart: String { self == .high ? "hq" : "" }
}

/// Shrink-on-load: how much smaller a decoder that can decode smaller
/// (libjpeg-turbo's DCT scaling, libwebp's scaled decode) decodes before the
/// final resize, and how much a full decode is box-reduced before the
/// filter. The one home of that rule: the JPEG codec call, the WebP scaled
/// decode, ``ImageResizer`` and the progressive early end
/// (`DCEarlyEnd.decodesFromDCAlone`) all ask here.
///
/// ``ResizeQuality/high`` stops at no less than ``margin`` times the final
/// size on each side (Pillow's `reducing_gap`, libvips' rule): the filter
/// then has real pixels to work from, not the 8x8 blocks' means.
package enum ShrinkOnLoad {
    /// How many times the final size a reduced decode keeps, at least.
    package static func margin(_ quality: ResizeQuality) -> Int { quality == .high ? 2 : 1 }

    /// The largest of libjpeg's DCT scale denominators (8, 4, 2) at which a
    /// `source` (stored orientation) still covers `final` (the same
    /// orientation) times the margin on both sides, each side rounded up as
    /// libjpeg does; 1 (full size) when none does.
    package static func jpegDenominator(source: PixelSize, final: PixelSize, quality: ResizeQuality) -> Int {
        let margin = margin(quality)
        for denominator in [8, 4, 2] {
            let width = (source.width + denominator - 1) / denominator
            let height = (source.height + denominator - 1) / denominator
            if width >= final.width * margin && height >= final.height * margin { return denominator }
        }
        return 1
    }

    /// The size libwebp decodes a `source` to before the final resize to
    /// `final`: ``ResizeQuality/fast`` scales straight to `final`;
    /// ``ResizeQuality/high`` to `final` times the margin when the source
    /// is larger than that on both sides (its own scaling is a plain
    /// average, so the filter gets the last step), else the source itself.
    package static func webpDecodeSize(source: PixelSize, final: PixelSize, quality: ResizeQuality) -> PixelSize {
        guard quality == .high else { return final }
        let margin = margin(quality)
        let scale = max(Double(final.width * margin) / Double(source.width), Double(final.height * margin) / Double(source.height))
        guard scale < 1 else { return source }
        return PixelSize(
            width: min(source.width, max(1, Int((Double(source.width) * scale).rounded(.up)))),
            height: min(source.height, max(1, Int((Double(source.height) * scale).rounded(.up)))))
    }

    /// The integer box factors (horizontal, vertical) that reduce `source`
    /// towards `final` while keeping at least the margin on each side:
    /// 1 where the ratio is under twice the margin (a box of 1 does
    /// nothing). ``ResizeQuality/fast`` never boxes.
    package static func boxFactors(source: PixelSize, final: PixelSize, quality: ResizeQuality) -> (x: Int, y: Int) {
        guard quality == .high else { return (1, 1) }
        let margin = margin(quality)
        return (max(1, source.width / max(1, final.width * margin)), max(1, source.height / max(1, final.height * margin)))
    }
}
