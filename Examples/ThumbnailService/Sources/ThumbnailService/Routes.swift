import AsyncImageKit
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Prometheus

/// The service's endpoints: `GET /thumb`, `/healthz`, `/metrics` and `/budget`
/// (and `HEAD` on each: see ``Routes/router(for:)``).
struct Routes: Sendable {
    let loader: AsyncImageLoader
    /// The signing key; nil with `--unsigned`.
    let key: SymmetricKey?
    /// The memory budget given to the loader, in bytes.
    let memoryBudget: Int
    /// Pending requests at which the loader answers `503` (`/healthz` too).
    let maxPendingRequests: Int
    let metrics: PrometheusCollectorRegistry

    /// The most pixels a source may have (50 MP): larger ones are refused
    /// with `413`, so the largest decode buffer is 4 bytes x 50 MP = 200 MB.
    static let maxPixels = 50_000_000

    /// Which endpoints a listener serves.
    struct Endpoints: OptionSet, Sendable {
        let rawValue: Int
        /// `/thumb`.
        static let thumbnails = Endpoints(rawValue: 1 << 0)
        /// `/healthz`, `/metrics` and `/budget`: on the public listener
        /// unless `--admin-port` moves them to a listener of their own.
        static let operations = Endpoints(rawValue: 1 << 1)
    }

    /// A router with `endpoints`, each answering `GET` and `HEAD` (Hummingbird's
    /// `autoGenerateHeadEndpoints`: the `GET` handler's status and headers,
    /// its `Content-Length` included, and no body), `405` with `Allow` for
    /// any other method on their paths (``AllowedMethods``), `404` elsewhere.
    func router(for endpoints: Endpoints) -> Router<ServiceContext> {
        let router = Router(context: ServiceContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: MetricsMiddleware())
        var paths: [String] = []
        if endpoints.contains(.thumbnails) {
            paths.append("thumb")
        }
        if endpoints.contains(.operations) {
            paths += ["healthz", "metrics", "budget"]
        }
        // A known path asked with another method has no route: Hummingbird
        // hands it to its 404 responder, which every middleware wraps.
        router.add(middleware: AllowedMethods(paths: Set(paths)))
        if endpoints.contains(.thumbnails) {
            router.get("thumb") { request, context in try await thumbnail(request, context) }
        }
        if endpoints.contains(.operations) { addOperations(to: router) }
        return router
    }

    private func addOperations(to router: Router<ServiceContext>) {
        router.get("healthz") { _, _ in
            let activity = loader.activity
            let full = activity.pendingRequests >= maxPendingRequests
            return Response.json(full ? .serviceUnavailable : .ok, [
                "pending": activity.pendingRequests, "queued": activity.queued,
                "in_flight": activity.inFlight, "decoding": activity.decoding,
            ])
        }
        router.get("metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                     body: .init(byteBuffer: ByteBuffer(bytes: metrics.emitToBuffer())))
        }
        router.get("budget") { _, _ in
            Response.json(.ok, [
                "budget_bytes": memoryBudget, "decoders": AsyncImageLoader.defaultConcurrentDecodes,
                "largest_decode_buffer_bytes": 4 * Self.maxPixels,
            ])
        }
    }

    /// `GET /thumb?url=&w=&h=&mode=fit|fill&sig=`: the thumbnail's bytes (see ``SignedQuery``).
    func thumbnail(_ request: Request, _ context: ServiceContext) async throws -> Response {
        let query: SignedQuery
        do { query = try SignedQuery(request.uri.query?[...] ?? "", key: key) }
        catch { return .text(error.status, error.message) }
        var still = ImageRequest(url: query.url, sizing: query.sizing, maxPixels: Self.maxPixels)
        // The answer is a still (the first frame): a 10,000-frame GIF costs one frame.
        still.firstFrameOnly = true
        let imageRequest = still
        do {
            let image = try await context.cancellingOnDisconnect { try await loader.encodedImage(for: imageRequest) }
            return Response(
                status: .ok,
                headers: [.contentType: image.contentType, .cacheControl: "public, max-age=86400",
                          .imageSource: image.source.name],
                body: .init(byteBuffer: ByteBuffer(bytes: image.data)))
        } catch let error as AsyncImageError {
            context.logger.warning("\(error.suggestedHTTPStatus): \(error.description)")  // with hb.request.id
            return .text(error.suggestedHTTPStatus, error.clientMessage)
        } catch is CancellationError {
            context.logger.info("\(imageRequest.url): the client went away; cancelled")
            return .text(499, "Client closed request.")
        }
    }
}

/// `405 Method Not Allowed`, with `Allow: GET, HEAD`, for a method other than
/// `GET` or `HEAD` on one of the service's paths (RFC 9110 §15.5.6).
/// Hummingbird's router answers `404` when a path has no handler for the
/// method, which tells a client (or a scanner) that the resource is not
/// there rather than that the method is wrong.
struct AllowedMethods: RouterMiddleware {
    typealias Context = ServiceContext
    /// The paths, without slashes at either end (`thumb`), as the router matches them.
    let paths: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard request.method != .get, request.method != .head,
            paths.contains(request.uri.path.split(separator: "/").joined(separator: "/"))
        else { return try await next(request, context) }
        var response = Response.text(405, "Method not allowed: \(request.method.rawValue).")
        response.headers[.allow] = "GET, HEAD"
        return response
    }
}
