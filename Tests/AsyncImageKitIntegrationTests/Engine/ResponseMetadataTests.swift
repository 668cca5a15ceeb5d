@testable import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// Every result carries the file's properties and, from the network, the
/// HTTP response (issue: display size and processing, item 6): through the
/// async API, a response action and the notification; kept by the memory
/// cache and by stored thumbnails.
final class ResponseMetadataTests: XCTestCase {
    /// A 200x100 JPEG with a camera's EXIF.
    private static func cameraJPEG() throws -> Data {
        var builder = EXIFBuilder(bigEndian: false)
        builder.image = [(0x010F, .ascii("Acme")), (0x0110, .ascii("Snap 3"))]
        builder.exif = [(0x829A, .rational([(1, 250)])), (0x8827, .short([200]))]
        let jpeg = try JPEGEncoder(quality: 90).encode(SyntheticImage.photo(width: 200, height: 100))
        return EXIFBuilder.insertingSegments([(0xE1, builder.app1Payload())], into: jpeg)
    }

    func testTheResponseCarriesTheFilesPropertiesAndTheHTTPResponse() async throws {
        let h = try LoaderHarness()
        let jpeg = try Self.cameraJPEG()
        h.server.respond("/camera.jpg") { connection in
            connection.respond(status: 200, headers: [("Content-Type", "image/jpeg"), ("X-Shot", "7")], body: jpeg)
        }
        h.server.respond("/moved") { connection in
            connection.respond(status: 302, headers: [("Location", "/camera.jpg")], body: Data())
        }
        let url = h.server.url(path: "/moved")
        let request = ImageRequest(url: url, targetSize: PixelSize(width: 50, height: 50))
        let response = try await h.loader.response(for: request)
        let properties = try XCTUnwrap(response.fileProperties)
        XCTAssertEqual(properties.format, .jpeg)
        XCTAssertEqual(properties.pixelSize, PixelSize(width: 200, height: 100))
        XCTAssertEqual(properties.colorType, .ycbcr)
        XCTAssertEqual(properties.exif?.make, "Acme")
        XCTAssertEqual(properties.exif?.model, "Snap 3")
        XCTAssertEqual(properties.exif?.exposureTime, EXIFRational(numerator: 1, denominator: 250))
        XCTAssertEqual(properties.exif?.isoSpeed, 200)
        let http = try XCTUnwrap(response.http)
        XCTAssertEqual(http.statusCode, 200)
        XCTAssertEqual(http.finalURL.path, "/camera.jpg", "after the redirect")
        XCTAssertEqual(http.headers["x-shot"], "7")
        XCTAssertEqual(response.source, .network)
        XCTAssertEqual(response.image.size, PixelSize(width: 50, height: 50))

        // A memory hit keeps the properties; there is no HTTP response.
        let hit = try await h.loader.response(for: request)
        XCTAssertEqual(hit.source, .memoryCache)
        XCTAssertEqual(hit.fileProperties, properties)
        XCTAssertNil(hit.http)
    }

    /// A response action and the notification get the same response.
    func testActionsAndNotificationsGetTheResponse() throws {
        let h = try LoaderHarness()
        let jpeg = try Self.cameraJPEG()
        h.server.serve("/camera.jpg", jpeg)
        let url = h.server.url(path: "/camera.jpg")
        let fromAction = Box<ImageResponse>()
        let fromNotification = Box<ImageResponse>()
        let both = expectation(description: "action and notification")
        both.expectedFulfillmentCount = 2
        let observer = h.center.addObserver(forName: .asyncImageLoadDidFinish, object: nil, queue: nil) { note in
            fromNotification.value = note.userInfo?[AsyncImageResponseKey] as? ImageResponse
            both.fulfill()
        }
        defer { h.center.removeObserver(observer) }
        let action = ImageAction("show", response: { _, response in
            fromAction.value = response
            both.fulfill()
        })
        h.loader.loadImage(ImageRequest(url: url), target: nil, success: action)
        wait(for: [both], timeout: 15)
        XCTAssertEqual(fromAction.value?.fileProperties?.exif?.model, "Snap 3")
        XCTAssertEqual(fromAction.value?.http?.statusCode, 200)
        XCTAssertEqual(fromNotification.value?.fileProperties?.exif?.make, "Acme")
        XCTAssertEqual(fromNotification.value?.source, .network)
    }

    /// A thumbnail read back from disk still knows the original file's properties.
    func testStoredThumbnailsKeepTheProperties() async throws {
        let h = try LoaderHarness()
        let jpeg = try Self.cameraJPEG()
        h.server.respond("/camera.jpg") { connection in
            connection.respond(status: 200, headers: [("Cache-Control", "max-age=60")], body: jpeg)
        }
        let url = h.server.url(path: "/camera.jpg")
        let disk = try DataCache(directory: temporaryFolder("response-metadata"))
        let request = ImageRequest(url: url, targetSize: PixelSize(width: 40, height: 40))
        let first = AsyncImageLoader(configuration: .init(cache: nil, deliveryQueue: h.queue, diskCache: disk))
        _ = try await first.response(for: request)
        await first.flushDiskWrites()
        let key = LoadRequest.diskKey(for: request)
        disk.removeData(for: ImageDiskStore.originalKey(key, generation: disk.entry(for: key)?.metadata.generation ?? ""))
        let second = AsyncImageLoader(configuration: .init(cache: nil, deliveryQueue: h.queue, diskCache: disk))
        let restored = try await second.response(for: request)
        XCTAssertEqual(restored.source, .diskCache)
        // A disk hit carries the stored response as a cache returns it (RFC 9111).
        let stored = try XCTUnwrap(restored.http, "a fresh disk hit: the stored response")
        XCTAssertEqual(stored.statusCode, 200)
        XCTAssertEqual(stored.headers["cache-control"], "max-age=60")
        XCTAssertNotNil(stored.headers["age"].flatMap { Int($0) }, "with an Age")
        XCTAssertFalse(stored.isRevalidated)
        XCTAssertEqual(restored.fileProperties?.exif?.model, "Snap 3")
        XCTAssertEqual(restored.fileProperties?.pixelSize, PixelSize(width: 200, height: 100))
        XCTAssertEqual(h.server.requestCount(url), 1)
    }
}
