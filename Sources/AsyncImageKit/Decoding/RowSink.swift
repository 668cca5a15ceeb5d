import CImageCodecs

/// Where a C codec's rows go as it hands them out (`aiv_row_sink`, in
/// `aiv_codecs.h`, says when it is called): the one hook through which rows
/// leave libjpeg-turbo and libpng. It answers whether the decode goes on
/// (``DecodeStop``), and converts each batch of rows to sRGB in place as it
/// comes (``transform``), while the rows are still in cache, instead of a
/// second pass over the image. It is also where a consumer of the rows (a
/// resampler's vertical pass) would attach.
struct RowSink {
    /// Stops the decode when signalled.
    var stop: DecodeStop?
    /// Converts the rows as they come: an RGBA transform (4 bytes a pixel,
    /// the rows packed, as libjpeg-turbo's output is).
    var transform: ColorTransform?

    /// What the C callback reaches (one per decode).
    private final class Context {
        let stop: DecodeStop?
        let transform: ColorTransform?

        init(stop: DecodeStop?, transform: ColorTransform?) {
            self.stop = stop
            self.transform = transform
        }
    }

    /// Calls `body` with the C sink, or with nil when nothing listens (the
    /// codec then makes no call at all).
    func withCSink<R>(_ body: (UnsafePointer<aiv_row_sink>?) -> R) -> R {
        guard stop != nil || transform != nil else { return body(nil) }
        let context = Context(stop: stop, transform: transform)
        return withExtendedLifetime(context) {
            var sink = aiv_row_sink(
                context: Unmanaged.passUnretained(context).toOpaque(),
                rows: { context, pixels, bytesPerRow, first, count in
                    guard let context else { return Int32(AIV_ROWS_CONTINUE) }
                    let sink = Unmanaged<Context>.fromOpaque(context).takeUnretainedValue()
                    if count > 0, let pixels, let transform = sink.transform {
                        transform.apply(
                            pixels + Int(first) * bytesPerRow, width: bytesPerRow / 4, height: Int(count),
                            bytesPerRow: bytesPerRow)
                    }
                    return Int32(sink.stop?.isStopped == true ? AIV_ROWS_STOP : AIV_ROWS_CONTINUE)
                })
            return withUnsafePointer(to: &sink) { body($0) }
        }
    }
}
