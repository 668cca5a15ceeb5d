import AsyncImageKit
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Prometheus

/// The service's endpoints: `GET /thumb`, `/healthz`, `/metrics` and `/budget`.
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

    func add(to router: Router<ServiceContext>) {
        router.get("thumb") { request, context in try await thumbnail(request, context) }
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
                "budget_bytes": memoryBudget, "decoders": ProcessInfo.processInfo.activeProcessorCount,
                "largest_decode_buffer_bytes": 4 * Self.maxPixels,
            ])
        }
    }

    /// `GET /thumb?url=&w=&h=&mode=fit|fill&sig=`: the thumbnail's bytes (see ``SignedQuery``).
    func thumbnail(_ request: Request, _ context: ServiceContext) async throws -> Response {
        let query: SignedQuery
        do { query = try SignedQuery(request.uri.query?[...] ?? "", key: key) }
        catch { return .text(error.status, error.message) }
        let imageRequest = ImageRequest(url: query.url, sizing: query.sizing, maxPixels: Self.maxPixels)
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
