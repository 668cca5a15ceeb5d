@testable import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// Processors (issue: display size and processing, items 3 and 4): the
/// built-ins pixel by pixel, chains through the loader under keys that name
/// them, once per key on the decode queue, failures typed; a request's own
/// cache key for URLs that differ only by a token.
final class ProcessingTests: XCTestCase {
    private static let grey = RGBA(r: 128, g: 128, b: 128)

    func testCropTakesARectangleClippedToTheImage() throws {
        let image = SyntheticImage.quadrants(width: 40, height: 20)
        let crop = try ImageProcessors.Crop(x: 15, y: 5, size: PixelSize(width: 10, height: 10)).process(image)
        XCTAssertEqual(crop.size, PixelSize(width: 10, height: 10))
        XCTAssertEqual(crop.pixel(x: 0, y: 0), image.pixel(x: 15, y: 5))
        XCTAssertEqual(crop.pixel(x: 9, y: 9), image.pixel(x: 24, y: 14))
        let clipped = try ImageProcessors.Crop(x: 30, y: -5, size: PixelSize(width: 50, height: 10)).process(image)
        XCTAssertEqual(clipped.size, PixelSize(width: 10, height: 5))
        XCTAssertThrowsError(try ImageProcessors.Crop(x: 50, y: 0, size: PixelSize(width: 5, height: 5)).process(image)) {
            guard case .processing(let name, _) = $0 as? AsyncImageError else { return XCTFail("\($0)") }
            XCTAssertEqual(name, "crop(50,0,5x5)")
        }
    }

    func testCircleAndRoundedCornersMaskWithSoftEdges() throws {
        let image = SyntheticImage.solid(width: 60, height: 40, color: Self.grey)
        let circle = try ImageProcessors.Circle().process(image)
        XCTAssertEqual(circle.size, PixelSize(width: 40, height: 40), "the centred square")
        XCTAssertEqual(circle.pixel(x: 0, y: 0).a, 0)
        XCTAssertEqual(circle.pixel(x: 39, y: 39).a, 0)
        XCTAssertEqual(circle.pixel(x: 20, y: 20), Self.grey)
        XCTAssertEqual(circle.pixel(x: 20, y: 1).a, 255, "inside, near the top")
        let edge = circle.pixel(x: 6, y: 5).a  // its centre 0.19 px inside the circle
        XCTAssertTrue(edge > 100 && edge < 255, "a soft edge: \(edge)")

        let rounded = try ImageProcessors.RoundedCorners(radius: 8).process(image)
        XCTAssertEqual(rounded.size, image.size)
        XCTAssertEqual(rounded.pixel(x: 0, y: 0).a, 0)
        XCTAssertEqual(rounded.pixel(x: 59, y: 39).a, 0)
        XCTAssertEqual(rounded.pixel(x: 30, y: 0), Self.grey, "the middle of an edge is untouched")
        XCTAssertEqual(rounded.pixel(x: 8, y: 8), Self.grey)
        let ramp = rounded.pixel(x: 2, y: 2).a
        XCTAssertLessThan(ramp, 255)
    }

    func testResizeProcessorMatchesADisplaySizeDecode() throws {
        let photo = SyntheticImage.photo(width: 300, height: 200)
        let png = try PNGEncoder().encode(photo)
        let decoded = try ImageDecoder().decode(
            png, options: DecodingOptions(targetSize: PixelSize(width: 64, height: 64), contentMode: .aspectFit))
        let processed = try ImageProcessors.Resize(size: PixelSize(width: 64, height: 64), contentMode: .aspectFit)
            .process(ImageDecoder().decode(png))
        XCTAssertEqual(processed.size, decoded.size)
        XCTAssertEqual(processed.pixels, decoded.pixels)
    }
}
