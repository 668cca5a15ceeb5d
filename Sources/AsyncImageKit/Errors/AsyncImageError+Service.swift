import Foundation

/// What a service answers its client when a load fails on the client's
/// behalf (a thumbnail service, an image proxy): the loader fetched from a
/// source the client named, so the source's failures are a gateway's
/// (`502`, `504`), the client's input is the client's (`400`, `404`, `413`,
/// `415`, `422`), and the service's own trouble is its own (`500`, `503`).
extension AsyncImageError {
    /// The HTTP status to answer a client with when this error ended a load
    /// made for it:
    ///
    /// | error | status |
    /// |---|---|
    /// | ``invalidURL(_:)``, ``unsupportedScheme(_:)`` | 400 |
    /// | ``refused(_:reason:)`` (the URL policy), ``disallowedRedirect(_:message:)`` | 403 |
    /// | ``fileNotFound(_:)``; ``httpStatus(_:code:headers:)`` 404 or 410 | 404 |
    /// | ``bodyTooLarge(_:limit:)``; a decode refused by the pixel or frame limit | 413 |
    /// | not an image (``DecodingFailure/Stage/sniffing``) | 415 |
    /// | a damaged or truncated image (header, pixels, trailer) | 422 |
    /// | ``encoding(_:reason:)``, ``processing(_:reason:)``, ``diskCache(path:message:)`` | 500 |
    /// | the source's other statuses, ``transport(_:code:message:)``, ``tls(_:code:message:)``, ``tooManyRedirects(_:limit:)``, ``headersTooLarge(_:limit:)`` | 502 |
    /// | ``queueFull(_:limit:)``; a decode out of memory; ``offline(_:)`` (the service has no network, and no copy it may serve) | 503 |
    /// | ``timedOut(_:seconds:stage:)`` (whatever the stage), ``notCached(_:)`` (RFC 9111's `only-if-cached`) | 504 |
    public var suggestedHTTPStatus: Int {
        switch self {
        case .invalidURL, .unsupportedScheme: return 400
        case .refused, .disallowedRedirect: return 403
        case .fileNotFound: return 404
        case .httpStatus(_, let code, _): return code == 404 || code == 410 ? 404 : 502
        case .bodyTooLarge: return 413
        case .decoding(let failure, _):
            switch failure.stage {
            case .sniffing: return 415
            case .limits: return 413
            case .header, .pixels, .trailer: return failure.isPixelLimit ? 413 : 422
            case .memory: return 503
            }
        case .encoding, .processing, .diskCache: return 500
        case .transport, .tls, .tooManyRedirects, .headersTooLarge: return 502
        case .queueFull, .offline: return 503
        case .timedOut, .notCached: return 504
        }
    }

    /// A sentence safe to show the client: what went wrong, in its terms,
    /// with no URL, host, address, path, port, library or codec detail (the
    /// URL a client names may redirect to an internal one, and the
    /// ``description`` names it; log that, answer this).
    public var clientMessage: String {
        switch self {
        case .invalidURL, .unsupportedScheme: return "The image URL is not valid."
        case .refused, .disallowedRedirect: return "The image URL is not allowed."
        case .fileNotFound: return "The image was not found."
        case .httpStatus(_, let code, _):
            return code == 404 || code == 410 ? "The image was not found." : "The image source answered with an error."
        case .bodyTooLarge: return "The image is larger than allowed."
        case .decoding(let failure, _):
            switch failure.stage {
            case .sniffing: return "The source is not an image in a supported format."
            case .limits: return "The image has more pixels or frames than allowed."
            case .header, .pixels, .trailer:
                return failure.isPixelLimit
                    ? "The image has more pixels or frames than allowed." : "The image is damaged or incomplete."
            case .memory: return "The service is out of memory for this image; try again later."
            }
        case .encoding, .processing, .diskCache: return "The service could not make the image."
        case .transport, .tls, .tooManyRedirects, .headersTooLarge: return "The image source could not be reached."
        case .queueFull: return "The service is busy; try again later."
        case .timedOut(_, _, let stage):
            // The source's slowness, or the request's own time limit passing
            // while it waited for the service or was being decoded.
            return stage == .transfer
                ? "The image source did not answer in time." : "The image could not be made in time."
        case .notCached: return "The image is not cached."
        case .offline: return "The service cannot reach the network and has no copy of the image it may serve; try again later."
        }
    }
}
