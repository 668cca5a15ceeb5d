/// The early end of a progressive JPEG's transfer at its DC coefficients
/// (``AsyncImageLoader/Configuration/endsTransfersAtDCScans``): when every
/// request of a job decodes at libjpeg's 1/8 scale, which reads the DC
/// alone, the transfer stops once the DC scans are in and the decode reads
/// that prefix. The one owner of its rules: the transfer, the job table,
/// the decoder and the disk each ask here.
enum DCEarlyEnd {
    /// At a transfer's start: whether its scans are watched for the DC's
    /// end (the setting is on and every request has a display size; the
    /// sizes are checked again when the DC is in).
    static func watches(_ job: LoadJob, enabled: Bool) -> Bool {
        enabled && job.orderedRequests.allSatisfy { $0.request.options.targetSize != nil }
    }

    /// When the DC is in (the job still loading): whether the transfer ends
    /// here. Only a `200` (the file from its start), with the source's size
    /// known, and every request still decoded at 1/8 scale from it.
    static func mayEnd(_ job: LoadJob, head: ResponseHead?) -> Bool {
        guard let head, head.statusCode == 200, let source = job.fileProperties?.uprightPixelSize,
            !job.requests.isEmpty
        else { return false }
        return job.orderedRequests.allSatisfy { decodesFromDCAlone($0.request, source: source) }
    }

    /// Whether a job whose transfer ended early (or not) can serve
    /// `request`: a prefix serves 1/8-scale decodes only; a request that
    /// needs more goes to a job of its own.
    static func canServe(_ request: ImageRequest, _ job: LoadJob) -> Bool {
        guard job.earlyEnd != nil else { return true }
        guard let source = job.fileProperties?.uprightPixelSize else { return false }
        return decodesFromDCAlone(request, source: source)
    }

    /// The options a decode of `job`'s body uses: a prefix ends before the
    /// file does, and is decoded tolerating its end.
    static func decodingOptions(_ options: DecodingOptions, for job: LoadJob) -> DecodingOptions {
        var options = options
        options.isProgressivePreview = job.earlyEnd != nil
        return options
    }

    /// Whether `job`'s body may be stored as the original: never a prefix.
    static func storesBody(of job: LoadJob) -> Bool { job.earlyEnd == nil }

    /// A transfer of `job` completed: its own completion after an early end
    /// (or an early end after the whole body came) does not count; a
    /// completion that is not an early end clears it.
    static func transferCompleted(_ job: LoadJob, endedEarly: Bool) {
        if !endedEarly { job.earlyEnd = nil }
    }

    /// Whether `request` is decoded at 1/8 scale from a source of `source`
    /// (upright) pixels: the decoder's own choice of scale
    /// (``ShrinkOnLoad/jpegDenominator(source:final:quality:)``, whose
    /// answer does not depend on the orientation) is 8.
    static func decodesFromDCAlone(_ request: ImageRequest, source: PixelSize) -> Bool {
        guard request.options.targetSize != nil else { return false }
        let natural = request.options.naturalSize(for: source)
        return ShrinkOnLoad.jpegDenominator(source: source, final: natural, quality: request.options.resizeQuality) == 8
    }
}
