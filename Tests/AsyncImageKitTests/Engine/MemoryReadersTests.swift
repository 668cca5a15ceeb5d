@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Every reader of the memory cache goes through the loader's one lookup
/// (`lookUp(_:in:)`, issue 42 item 4): a load, a sequence's member,
/// `cachedImage`, `hasCachedImage`, `encodedImage`, the image model and the
/// photo album. Each is held to the lookup's three effects:
///
/// - the key resolved with the loader's defaults (a loader that decodes
///   with colour management off finds what it stored under that key, for a
///   request that does not say);
/// - the URL policy (a refused URL is not served from memory either);
/// - the request's pixel limit (an image kept for another request, over
///   this one's limit, is not shown; a load fails with the limits error).
///
/// The transport is the fake one. For the readers that wait for an outcome
/// it answers at once: one that went to the network would get another
/// image (and the transport would have started its URL), not hang. For the
/// image model and the album, which answer at once from memory, it holds
/// every transfer, so that only memory can answer (the album starts the
/// original of a thumbnail it shows: another URL).
final class MemoryReadersTests: XCTestCase {
    enum Reader: String, CaseIterable {
        case load, sequence, cachedImage, hasCachedImage, encodedImage, imageModel, photoAlbum
    }

    /// What a reader gave: an image (`hasCachedImage`: the cached one when
    /// true), or a failure, or neither.
    struct Reading {
        var image: Image?
        var error: AsyncImageError?
    }

    private let cached = Image(width: 64, height: 64, rgba: Data(repeating: 0x5A, count: 64 * 64 * 4))

    /// The key comes from the loader's defaults: stored under the key of
    /// colour management off, found by every reader of a loader whose
    /// default is off, with a request that does not say.
    func testEveryReaderResolvesTheKeyWithTheLoadersDefaults() async throws {
        for reader in Reader.allCases {
            let h = FakeHarness { $0.colorManagement = .off }
            h.transport.isSuspended = false
            var request = request(reader, h)
            XCTAssertNil(request.colorManagement, "the request does not say")
            let plainKey = request.cacheKey
            request.colorManagement = .off
            XCTAssertNotEqual(request.cacheKey, plainKey, "colour management is part of the key")
            h.cache.setImage(cached, for: request.cacheKey)
            let reading = try await read(reader, h)
            XCTAssertNil(reading.error, reader.rawValue)
            XCTAssertEqual(reading.image?.pixels, cached.pixels, "\(reader): the image stored under the resolved key")
            XCTAssertFalse(h.transport.startedPaths.contains(h.url(1).path), "\(reader): no transfer of its URL")
        }
    }

    /// A URL the policy refuses is not served from memory by any reader;
    /// the ones that report failures report the refusal.
    func testNoReaderServesARefusedURLFromMemory() async throws {
        for reader in Reader.allCases {
            let h = FakeHarness { $0.urlPolicy = URLPolicy(allowsURL: { _ in false }) }
            h.transport.isSuspended = false
            h.cache.setImage(cached, for: request(reader, h).cacheKey)
            let reading = try await read(reader, h)
            XCTAssertNil(reading.image, "\(reader) served a refused URL from memory")
            if [.load, .sequence, .encodedImage].contains(reader) {
                guard case .refused = reading.error else { return XCTFail("\(reader): \(String(describing: reading.error))") }
            }
            XCTAssertFalse(h.transport.startedPaths.contains(h.url(1).path), "\(reader): no transfer of its URL")
        }
    }

    /// An image over the request's pixel limit (kept for another request:
    /// the limit is not part of the key) is not shown by any reader; a load
    /// fails with the limits error, without the network. (The photo
    /// album's requests carry the default limit: not applicable.)
    func testNoReaderShowsAnImageOverTheRequestsPixelLimit() async throws {
        for reader in Reader.allCases where reader != .photoAlbum {
            let h = FakeHarness()
            h.transport.isSuspended = false
            let request = request(reader, h, maxPixels: 1_000)
            XCTAssertEqual(request.cacheKey, ImageRequest(url: request.url).cacheKey, "the limit is not part of the key")
            h.cache.setImage(cached, for: request.cacheKey)
            let reading = try await read(reader, h, maxPixels: 1_000)
            XCTAssertNil(reading.image, "\(reader) showed an image over its pixel limit")
            if [.load, .sequence, .encodedImage].contains(reader) {
                guard case .decoding(let failure, _) = reading.error, failure.isPixelLimit else {
                    return XCTFail("\(reader): \(String(describing: reading.error))")
                }
            }
            XCTAssertFalse(h.transport.startedPaths.contains(h.url(1).path), "\(reader): no transfer of its URL")
        }
    }

    // MARK: The readers

    private func album(_ h: FakeHarness) -> PhotoAlbum {
        PhotoAlbum(
            photos: [PhotoAlbum.Photo(thumbnailURL: h.url(1), originalURL: h.url(2))],
            thumbnailSize: PixelSize(width: 32, height: 32), loader: h.loader)
    }

    /// The request `reader` makes (the album's: its thumbnail's).
    private func request(_ reader: Reader, _ h: FakeHarness, maxPixels: Int = DecodingOptions.defaultMaxPixels)
        -> ImageRequest
    {
        reader == .photoAlbum ? album(h).thumbnailRequest(at: 0) : ImageRequest(url: h.url(1), maxPixels: maxPixels)
    }

    private func read(_ reader: Reader, _ h: FakeHarness, maxPixels: Int = DecodingOptions.defaultMaxPixels)
        async throws -> Reading
    {
        let request = request(reader, h, maxPixels: maxPixels)
        switch reader {
        case .load:
            do { return Reading(image: try await h.loader.image(for: request)) } catch let error as AsyncImageError {
                return Reading(error: error)
            }
        case .encodedImage:
            do {
                // PNG: lossless, so its pixels are the image's.
                let encoded = try await h.loader.encodedImage(for: request, encoding: .png)
                XCTAssertEqual(encoded.source, .memoryCache)
                return Reading(image: try ImageDecoder().decode(encoded.data))
            } catch let error as AsyncImageError {
                return Reading(error: error)
            }
        case .sequence:
            let outcome = Locked(Reading())
            let done = expectation(description: "the sequence's member")
            _ = h.loader.loadImages(
                [request],
                success: ImageAction("success") { _, image, _ in
                    outcome.withLock { $0.image = image }
                    done.fulfill()
                },
                failure: ImageFailureAction("failure") { _, error, _ in
                    outcome.withLock { $0.error = error }
                    done.fulfill()
                })
            await fulfillment(of: [done], timeout: 10)
            return outcome.withLock { $0 }
        case .cachedImage:
            return Reading(image: h.loader.cachedImage(for: request))
        case .hasCachedImage:
            return Reading(image: h.loader.hasCachedImage(for: request) ? cached : nil)
        case .imageModel:
            // What it shows at once; a load it starts is held (nothing but
            // memory can answer before the read).
            h.transport.isSuspended = true
            return Reading(image: ImageModel(request: request, loader: h.loader).image)
        case .photoAlbum:
            // Held too: the album starts the original of a thumbnail it has,
            // and would show the original once it arrived.
            h.transport.isSuspended = true
            return Reading(image: album(h).photo(at: 0).image)
        }
    }
}
