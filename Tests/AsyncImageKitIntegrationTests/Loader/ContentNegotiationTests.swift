@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// `Accept` against a server that negotiates, as image CDNs do: it has one
/// picture as AVIF and as JPEG, answers with the one the request's `Accept`
/// weighs higher (AVIF on a tie), and says `Vary: Accept`.
final class ContentNegotiationTests: XCTestCase {
    /// The server, and the `Accept` of each request it was sent (nil: none).
    private final class NegotiatingServer: Sendable {
        let server: LoopbackServer
        private let accepts = LoopbackHTTP.Locked<[String?]>([])

        init(avif: Data, jpeg: Data) throws {
            let accepts = self.accepts
            server = try LoopbackServer { request, connection in
                let accept = request.headers["accept"]
                accepts.withLock { $0.append(accept) }
                let (avifWeight, jpegWeight) = (
                    Self.weight("image/avif", in: accept), Self.weight("image/jpeg", in: accept)
                )
                guard avifWeight > 0 || jpegWeight > 0 else {
                    return connection.respond(status: 406, headers: [("Vary", "Accept")], body: Data())
                }
                let useAVIF = avifWeight >= jpegWeight
                connection.respond(
                    status: 200,
                    headers: [
                        ("Content-Type", useAVIF ? "image/avif" : "image/jpeg"), ("Vary", "Accept"),
                        ("Cache-Control", "max-age=3600"),
                    ],
                    body: useAVIF ? avif : jpeg)
            }
        }

        var url: URL { server.url("/photo") }
        var seen: [String?] { accepts.withLock { $0 } }

        /// The q-value `accept` gives `type`: its own member's, else
        /// `image/*`'s, else `*/*`'s, else 0 (no header: everything at 1).
        static func weight(_ type: String, in accept: String?) -> Double {
            guard let accept else { return 1 }
            var weights: [String: Double] = [:]
            for member in accept.split(separator: ",") {
                let parts = member.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
                let q = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
                weights[parts[0]] = q
            }
            return weights[type] ?? weights["image/*"] ?? weights["*/*"] ?? 0
        }
    }

    private var tools: CodecTools!
    private var negotiating: NegotiatingServer!

    override func setUpWithError() throws {
        tools = try CodecTools(["avifenc": "libavif-bin"])
        let picture = SyntheticImage.quadrants(width: 64, height: 48)
        negotiating = try NegotiatingServer(
            avif: try tools.avifenc([picture], ["-l"]), jpeg: try JPEGEncoder(quality: 90).encode(picture))
    }

    override func tearDown() {
        negotiating?.server.stop()
        tools?.remove()
    }

    private func loader(accept: String? = nil, disk: DataCache? = nil) -> AsyncImageLoader {
        var configuration = AsyncImageLoader.Configuration(
            cache: ImageCache(), notificationCenter: nil, diskCache: disk)
        configuration.deliveryQueue = DispatchQueue(label: "negotiation")
        configuration.acceptHeader = accept
        return AsyncImageLoader(configuration: configuration)
    }

    /// The default `Accept` names every registered format, AVIF first:
    /// the server sends AVIF, and the loader decodes it.
    func testTheDefaultAcceptGetsAVIF() async throws {
        let loader = loader()
        XCTAssertEqual(loader.acceptHeader, ImageDecoderRegistry.default.acceptHeader)
        XCTAssertTrue(loader.acceptHeader.hasPrefix("image/avif,"), loader.acceptHeader)
        let response = try await loader.response(for: ImageRequest(url: negotiating.url))
        XCTAssertEqual(response.image.format, .avif)
        XCTAssertEqual(response.image.size, PixelSize(width: 64, height: 48))
        XCTAssertEqual(negotiating.seen, [loader.acceptHeader])
    }

    /// A loader's `Accept` and a request's (named in any case) replace the
    /// default; a request's replaces its loader's; "" sends none.
    func testTheLoaderAndTheRequestChooseTheirAccept() async throws {
        let jpegLoader = loader(accept: "image/webp,image/jpeg;q=0.9,image/avif;q=0.5")
        let fromLoader = try await jpegLoader.response(for: ImageRequest(url: negotiating.url))
        XCTAssertEqual(fromLoader.image.format, .jpeg)

        let standard = loader()
        let fromRequest = try await standard.response(for: ImageRequest(url: negotiating.url, headers: ["accept": "image/jpeg"]))
        XCTAssertEqual(fromRequest.image.format, .jpeg)
        // (A loader of its own: the memory cache keys images by URL alone,
        // whatever format they came in.)
        let overLoader = try await loader(accept: "image/jpeg").response(
            for: ImageRequest(url: negotiating.url, headers: ["Accept": "image/avif"]))
        XCTAssertEqual(overLoader.image.format, .avif)

        let silent = loader(accept: "")
        let anything = try await silent.response(for: ImageRequest(url: negotiating.url))
        XCTAssertEqual(anything.image.format, .avif, "no Accept: the server's first choice")
        XCTAssertEqual(
            negotiating.seen, ["image/webp,image/jpeg;q=0.9,image/avif;q=0.5", "image/jpeg", "image/avif", nil])
    }

    /// Two requests for one URL with different `Accept`s share no
    /// transfer: each gets its own variant.
    func testRequestsWithOtherAcceptsShareNoTransfer() async throws {
        let (loader, url) = (loader(), negotiating.url)
        async let avif = loader.response(for: ImageRequest(url: url))
        async let jpeg = loader.response(for: ImageRequest(url: url, headers: ["Accept": "image/jpeg"]))
        let (a, j) = try await (avif, jpeg)
        XCTAssertEqual(a.image.format, .avif)
        XCTAssertEqual(j.image.format, .jpeg)
        XCTAssertEqual(negotiating.seen.count, 2)
    }

    /// `Vary: Accept`: the disk cache serves a stored variant only to a
    /// request that sends the `Accept` it was fetched with (the loader's
    /// or its own), and keeps one variant per URL, the last fetched.
    func testTheDiskCacheHonoursVaryAccept() async throws {
        let disk = try DataCache(directory: temporaryFolder("negotiation"))
        let url = negotiating.url

        let firstLoader = loader(disk: disk)
        let first = try await firstLoader.response(for: ImageRequest(url: url))
        XCTAssertEqual(first.source, .network)
        XCTAssertEqual(first.image.format, .avif)
        await firstLoader.flushDiskWrites()
        // Stored normalised: list members joined by ", ".
        let stored = disk.entry(for: url.absoluteString)?.metadata.http?.varyRequestHeaders
        XCTAssertEqual(stored?["accept"]?.replacingOccurrences(of: ", ", with: ","), ImageDecoderRegistry.default.acceptHeader)

        let again = try await loader(disk: disk).response(for: ImageRequest(url: url))
        XCTAssertEqual(again.source, .diskCache, "the same Accept: the stored AVIF")
        XCTAssertEqual(again.image.format, .avif)
        XCTAssertEqual(negotiating.seen.count, 1)

        let jpegLoader = loader(accept: "image/jpeg", disk: disk)
        let jpeg = try await jpegLoader.response(for: ImageRequest(url: url))
        XCTAssertEqual(jpeg.source, .network, "another Accept: not the stored AVIF")
        XCTAssertEqual(jpeg.image.format, .jpeg)
        await jpegLoader.flushDiskWrites()
        XCTAssertEqual(disk.entry(for: url.absoluteString)?.metadata.http?.varyRequestHeaders, ["accept": "image/jpeg"])

        let byRequest = try await loader(disk: disk).response(for: ImageRequest(url: url, headers: ["Accept": "image/jpeg"]))
        XCTAssertEqual(byRequest.source, .diskCache, "a request's own Accept, equal to the stored one")
        XCTAssertEqual(byRequest.image.format, .jpeg)
        XCTAssertEqual(negotiating.seen.count, 2)

        // The data API sends the loader's Accept too, and compares it.
        let dataLoader = loader(disk: disk)
        let bytes = try await dataLoader.data(for: url)
        XCTAssertEqual(bytes.source, .network, "the default Accept: the stored JPEG does not match")
        XCTAssertEqual(ImageFormat.sniff(bytes.body), .avif)
        await dataLoader.flushDiskWrites()
        XCTAssertEqual(negotiating.seen.count, 3)
        let error = await asyncImageError {
            _ = try await jpegLoader.data(for: ImageRequest(url: url, cachePolicy: .cachedOnly))
        }
        XCTAssertEqual(error, .notCached(url), "one variant per URL, the last fetched: the AVIF, not for image/jpeg")
    }
}
