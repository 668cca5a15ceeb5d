@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The display-size presets that say what they do (issue 28, item 4):
/// `fitInside` (no padding, never enlarged), `fillAndCrop` (the box's
/// shape, no margins, never enlarged) and `exact` (Nimbus' default), each
/// with a 500x375 and a 50x40 JPEG, at a display-size decode and as a
/// `Resize` processor, with the sizes of `ImageSizing`'s table.
final class ScalingPresetTests: XCTestCase {
    private static let box = PixelSize(width: 100, height: 100)
    private static let large = PixelSize(width: 500, height: 375)
    private static let small = PixelSize(width: 50, height: 40)

    /// A JPEG of `size`: four flat quadrants (red, green, blue, white), so a crop shows where it was taken.
    private static func jpeg(_ size: PixelSize) throws -> Data {
        try JPEGEncoder(quality: 95).encode(SyntheticImage.quadrants(width: size.width, height: size.height))
    }

    /// `source` at `sizing`: decoded at display size, and decoded whole
    /// then resized by the processor; both must agree on the size and opacity.
    private func results(_ source: PixelSize, _ sizing: ImageSizing) throws -> [Image] {
        let data = try Self.jpeg(source)
        let decoded = try ImageDecoder().decode(
            data,
            options: DecodingOptions(
                targetSize: sizing.size, contentMode: sizing.contentMode, scaling: sizing.scaling))
        let processed = try ImageProcessors.Resize(sizing).process(ImageDecoder().decode(data))
        return [decoded, processed]
    }

    private func assertPreset(
        _ sizing: ImageSizing, _ source: PixelSize, size expected: PixelSize, opaque: Bool,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        for (index, image) in try results(source, sizing).enumerated() {
            let how = index == 0 ? "decoded at display size" : "resized by the processor"
            XCTAssertEqual(image.size, expected, "\(source) \(how)", file: file, line: line)
            XCTAssertEqual(image.isOpaque, opaque, "\(source) \(how)", file: file, line: line)
            XCTAssertEqual(image.originalSize, source, file: file, line: line)
            if opaque {
                // No transparent pixel anywhere: the corners are the image's own.
                for (x, y) in [(0, 0), (image.width - 1, 0), (0, image.height - 1), (image.width - 1, image.height - 1)] {
                    XCTAssertEqual(image.pixel(x: x, y: y).a, 255, "(\(x), \(y)) \(how)", file: file, line: line)
                }
            }
        }
    }

    func testFitInsideNeverPadsNorEnlarges() throws {
        try assertPreset(.fitInside(Self.box), Self.large, size: PixelSize(width: 100, height: 75), opaque: true)
        try assertPreset(.fitInside(Self.box), Self.small, size: Self.small, opaque: true)
        try assertPreset(.fitInside(PixelSize(width: 256, height: 64)), Self.large, size: PixelSize(width: 85, height: 64), opaque: true)
    }

    func testFillAndCropIsTheBoxShapeWithoutMarginsNorEnlarging() throws {
        try assertPreset(.fillAndCrop(Self.box), Self.large, size: Self.box, opaque: true)
        // Too small to cover: its centre, the box's shape, at its own scale.
        try assertPreset(.fillAndCrop(Self.box), Self.small, size: PixelSize(width: 40, height: 40), opaque: true)
        try assertPreset(.fillAndCrop(PixelSize(width: 256, height: 128)), Self.small, size: PixelSize(width: 50, height: 25), opaque: true)
        // Covering one side only (500 wide, 200 high, for 256x256): not enlarged, 200x200 of its centre.
        try assertPreset(.fillAndCrop(PixelSize(width: 256, height: 256)), PixelSize(width: 500, height: 200), size: PixelSize(width: 200, height: 200), opaque: true)
        // The small source's crop is its centre: 5 columns off each side, all four quadrants kept.
        let image = try results(Self.small, .fillAndCrop(Self.box))[0]
        XCTAssertLessThan(distance(image.pixel(x: 2, y: 2), RGBA(r: 255, g: 0, b: 0)), 40, "red top-left")
        XCTAssertLessThan(distance(image.pixel(x: 37, y: 2), RGBA(r: 0, g: 255, b: 0)), 40, "green top-right")
        XCTAssertLessThan(distance(image.pixel(x: 2, y: 37), RGBA(r: 0, g: 0, b: 255)), 40, "blue bottom-left")
        XCTAssertLessThan(distance(image.pixel(x: 37, y: 37), RGBA(r: 255, g: 255, b: 255)), 40, "white bottom-right")
    }

    func testExactIsNimbusDefaultWithTransparentMargins() throws {
        try assertPreset(.exact(Self.box, contentMode: .aspectFit), Self.large, size: Self.box, opaque: false)
        try assertPreset(.exact(Self.box, contentMode: .aspectFill), Self.large, size: Self.box, opaque: true)
        try assertPreset(.exact(Self.box, contentMode: .aspectFit), Self.small, size: Self.box, opaque: false)
        try assertPreset(.exact(Self.box), Self.small, size: Self.box, opaque: false)
        // The margins are transparent: the small source centred, 25 columns and 30 rows around it.
        let image = try results(Self.small, .exact(Self.box))[0]
        XCTAssertEqual(image.pixel(x: 10, y: 50).a, 0)
        XCTAssertEqual(image.pixel(x: 50, y: 10).a, 0)
        XCTAssertEqual(image.pixel(x: 50, y: 50).a, 255)
    }

    /// With `enlargesSmallImages`, fill-and-crop gives exactly the box even
    /// for a small source (its shape option then has nothing to do).
    func testEnlargingFillsTheBoxExactly() throws {
        let enlarging = ImageSizing(
            size: Self.box, contentMode: .aspectFill, scaling: [.cropsSmallImagesToShape, .enlargesSmallImages])
        try assertPreset(enlarging, Self.small, size: Self.box, opaque: true)
    }

    /// What each preset is made of, and the request it makes: the same as
    /// the explicit initializer's (the same cache key).
    func testPresetsAreTheirOptionsAndKeyTheCacheAsThem() {
        let url = URL(string: "https://example.com/a.jpg")!
        XCTAssertEqual(ImageSizing.fitInside(Self.box), ImageSizing(size: Self.box, contentMode: .aspectFit, scaling: .fitCropsExcess))
        XCTAssertEqual(ImageSizing.fillAndCrop(Self.box).contentMode, .aspectFill)
        XCTAssertEqual(ImageSizing.exact(Self.box).scaling, [])
        XCTAssertEqual(ScalingOptions.fitWithoutMargins, .fitCropsExcess)
        XCTAssertEqual(ScalingOptions.fillWithoutCropping, .fillLeavesExcess)
        for preset in [ImageSizing.fitInside(Self.box), .fillAndCrop(Self.box), .exact(Self.box, contentMode: .aspectFit)] {
            let request = ImageRequest(url: url, sizing: preset, priority: .high)
            let explicit = ImageRequest(
                url: url, targetSize: preset.size, contentMode: preset.contentMode, scaling: preset.scaling, priority: .high)
            XCTAssertEqual(request, explicit)
            XCTAssertEqual(request.cacheKey, explicit.cacheKey)
        }
        let keys = Set([ImageSizing.fitInside(Self.box), .fillAndCrop(Self.box), .exact(Self.box), .exact(Self.box, contentMode: .aspectFit)]
            .map { ImageRequest(url: url, sizing: $0).cacheKey.processing })
        XCTAssertEqual(keys.count, 4, "each preset keys the caches apart: \(keys)")
        XCTAssertEqual(ImageRequest(url: url, sizing: .fillAndCrop(Self.box)).cacheKey.processing, "100x100-fill-shape-hq")
    }
}
