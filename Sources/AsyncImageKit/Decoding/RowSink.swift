import CImageCodecs

/// Where a C codec's rows go as it hands them out (`aiv_row_sink`, in
/// `aiv_codecs.h`, says when it is called): the one hook through which rows
/// leave libjpeg-turbo and libpng. Today it answers one question, whether
/// the decode goes on (``DecodeStop``); it is where a transform of the rows
/// as they come (colour) or a consumer of them (a resampler's vertical pass)
/// attaches, without another pass over the image.
struct RowSink {
    /// Stops the decode when signalled.
    var stop: DecodeStop?

    /// Calls `body` with the C sink, or with nil when nothing listens (the
    /// codec then makes no call at all).
    func withCSink<R>(_ body: (UnsafePointer<aiv_row_sink>?) -> R) -> R {
        guard let stop else { return body(nil) }
        return withExtendedLifetime(stop) {
            var sink = aiv_row_sink(
                context: Unmanaged.passUnretained(stop).toOpaque(),
                rows: { context, _, _, _, _ in
                    guard let context else { return Int32(AIV_ROWS_CONTINUE) }
                    let stop = Unmanaged<DecodeStop>.fromOpaque(context).takeUnretainedValue()
                    return Int32(stop.isStopped ? AIV_ROWS_STOP : AIV_ROWS_CONTINUE)
                })
            return withUnsafePointer(to: &sink) { body($0) }
        }
    }
}
