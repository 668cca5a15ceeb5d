@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The fuzz targets' WebP seeds (`Fuzz/seeds/images`, see `Fuzz/run`) keep their invariants.
final class WebPFuzzSeedTests: XCTestCase {
    func testSeedsDecodeAndAgreeWithTheirProperties() throws {
        let folder = Corpus.packageRoot.appendingPathComponent("Fuzz/seeds/images")
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "webp" }
        XCTAssertGreaterThanOrEqual(files.count, 5)
        for file in files {
            let data = try Data(contentsOf: file)
            let properties = try XCTUnwrap(ImageFileProperties(data: data), file.lastPathComponent)
            for options in [DecodingOptions(maxPixels: 4_000_000), DecodingOptions(maxPixels: 4_000_000, targetSize: PixelSize(width: 7, height: 9), contentMode: .aspectFit)] {
                let image = try ImageDecoder().decode(data, options: options)
                XCTAssertEqual(image.format, .webp)
                XCTAssertEqual(properties.uprightPixelSize, image.originalSize, file.lastPathComponent)
                XCTAssertEqual(properties.frameCount, image.frames.count, file.lastPathComponent)
            }
        }
    }
}
