@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// AVIF, HEIC and JPEG XL through the loader, over loopback HTTP: decoded by
/// the registry's decoders with no special case in the engine, at full and
/// display size, with the file properties attached.
final class ModernFormatLoaderTests: XCTestCase {
    func testLoaderLoadsModernFormatsAtFullAndDisplaySize() throws {
        let tools = try CodecTools(["avifenc": "libavif-bin", "heif-enc": "libheif-examples", "cjxl": "libjxl-tools"])
        defer { tools.remove() }
        let source = SyntheticImage.quadrants(width: 320, height: 240)
        let files: [(path: String, data: Data, format: ImageFormat)] = [
            ("/photo.avif", try tools.avifenc([source], ["-l", "--irot", "3"]), .avif),
            ("/photo.heic", try tools.heifenc(source, CodecTools.losslessHEIC + ["--no-alpha"]), .heic),
            ("/photo.jxl", try tools.cjxl(source, ["-d", "0"]), .jxl),
        ]
        let h = try LoaderHarness()
        var requests: [ImageRequest] = []
        for file in files {
            h.server.serve(file.path, file.data)
            let url = h.server.url(path: file.path)
            h.load(url)
            let small = ImageRequest(url: url, targetSize: PixelSize(width: 80, height: 80))
            h.loader.loadImage(small, success: h.log.success, failure: h.log.failure)
            requests.append(small)
        }
        wait(for: [h.log.outcomes(2 * files.count, self)], timeout: 60)

        for (file, small) in zip(files, requests) {
            let url = h.server.url(path: file.path)
            // irot 3: a quarter turn clockwise, so the AVIF shows 240x320.
            let upright = file.format == .avif ? PixelSize(width: 240, height: 320) : source.size
            let full = try XCTUnwrap(h.cache.image(for: ImageCacheKey(url: url)), file.path)
            XCTAssertEqual(full.format, file.format)
            XCTAssertEqual(full.size, upright, file.path)
            XCTAssertEqual(full.fileProperties?.format, file.format)
            XCTAssertEqual(full.fileProperties?.uprightPixelSize, upright, file.path)
            let thumbnail = try XCTUnwrap(h.cache.image(for: small.cacheKey), file.path)
            XCTAssertEqual(thumbnail.size, PixelSize(width: 80, height: 80), file.path)
            XCTAssertEqual(thumbnail.originalSize, upright, file.path)
            XCTAssertTrue(thumbnail.isOpaque, file.path)
        }
    }

    /// Broken files through the loader: each request fails once, with a
    /// decoding error naming the format, and nothing is cached.
    func testLoaderFailsBrokenModernFilesCleanly() throws {
        let tools = try CodecTools(["avifenc": "libavif-bin", "heif-enc": "libheif-examples", "cjxl": "libjxl-tools"])
        defer { tools.remove() }
        let source = SyntheticImage.quadrants(width: 64, height: 48)
        let avif = try tools.avifenc([source])
        let heic = try tools.heifenc(source, CodecTools.losslessHEIC + ["--no-alpha"])
        var jxl = try tools.cjxl(source, ["-d", "1"])
        jxl.replaceSubrange(jxl.count / 2..<jxl.count, with: Data(repeating: 0x5A, count: jxl.count - jxl.count / 2))
        // (Not here: HEVC data scrambled inside intact boxes. libde265
        // conceals the damage and libheif 1.15 reports neither an error nor
        // a warning, so the garbled picture is a success: RELIABILITY.md.)
        var badHEIC = heic
        // The item locations (iloc) overwritten: the boxes cannot be read.
        if let iloc = badHEIC.range(of: Data("iloc".utf8)) {
            for index in iloc.upperBound..<min(iloc.upperBound + 24, badHEIC.count) { badHEIC[index] = 0xFF }
        }
        let files: [(path: String, data: Data, format: ImageFormat)] = [
            ("/cut.avif", avif.prefix(avif.count * 2 / 3), .avif), ("/cut.heic", heic.prefix(heic.count / 2), .heic),
            ("/bad-iloc.heic", badHEIC, .heic), ("/corrupt.jxl", jxl, .jxl),
        ]
        let h = try LoaderHarness()
        for file in files {
            h.server.serve(file.path, file.data)
            h.load(h.server.url(path: file.path))
        }
        wait(for: [h.log.outcomes(files.count, self)], timeout: 60)
        for file in files {
            guard case .decoding(let failure, _)? = h.log.errors[file.path] else {
                XCTFail("\(file.path): \(String(describing: h.log.errors[file.path])), image \(String(describing: h.log.images[file.path]))")
                continue
            }
            XCTAssertEqual(failure.format, file.format, file.path)
            XCTAssertNil(h.cache.image(for: ImageCacheKey(url: h.server.url(path: file.path))), file.path)
        }
    }
}
