import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// Nimbus' scaling rules (issue: display size and processing, item 1): by
/// default exactly the display size (fit leaves transparent margins, fill
/// crops the excess, both centred); `fitCropsExcess` and `fillLeavesExcess`
/// keep the natural size. Checked pixel by pixel at the edges on a 500x375
/// source whose border columns and rows have colours of their own.
final class DisplayScalingTests: XCTestCase {
    private static let red = RGBA(r: 255, g: 0, b: 0)
    private static let blue = RGBA(r: 0, g: 0, b: 255)
    private static let green = RGBA(r: 0, g: 255, b: 0)
    private static let yellow = RGBA(r: 255, g: 255, b: 0)
    private static let grey = RGBA(r: 128, g: 128, b: 128)
    private static let box = PixelSize(width: 100, height: 100)

    /// `width` x `height`, grey inside; the leftmost and rightmost `band`
    /// columns red and blue, the top and bottom `band` rows green and yellow
    /// (columns win at the corners).
    private static func banded(width: Int, height: Int, band: Int) -> Image {
        SyntheticImage.make(width: width, height: height) { out in
            for y in 0..<height {
                for x in 0..<width {
                    let c: RGBA =
                        x < band ? red : x >= width - band ? blue : y < band ? green : y >= height - band ? yellow : grey
                    let p = out + (y * width + x) * 4
                    (p[0], p[1], p[2], p[3]) = (c.r, c.g, c.b, 255)
                }
            }
        }
    }

    private func decode(_ image: Image, _ mode: ContentMode, _ scaling: ScalingOptions = [], target: PixelSize = box)
        throws -> Image
    {
        // PNG: lossless, so edge colours are exact after the area average
        // (`.fast`: these tests are about geometry, and a wider filter
        // blends a 2.66-pixel band's edge pixels with its neighbours; the
        // high path's geometry is the same, see testBothQualitiesFrameAlike).
        let png = try PNGEncoder().encode(image)
        var options = DecodingOptions(targetSize: target, contentMode: mode, scaling: scaling)
        options.resizeQuality = .fast
        return try ImageDecoder().decode(png, options: options)
    }

    /// Framing does not depend on the filter: sizes, margins and opacity
    /// under ``ResizeQuality/high`` are those of ``ResizeQuality/fast``,
    /// and the band colours land in the same places, within what the
    /// wider kernel mixes at an edge.
    func testBothQualitiesFrameAlike() throws {
        let png = try PNGEncoder().encode(Self.banded(width: 500, height: 375, band: 40))
        for (mode, scaling) in [(ContentMode.aspectFit, ScalingOptions()), (.aspectFill, []),
                                (.aspectFit, .fitCropsExcess), (.aspectFill, .fillLeavesExcess),
                                (.aspectFill, .cropsSmallImagesToShape)] {
            var options = DecodingOptions(targetSize: Self.box, contentMode: mode, scaling: scaling)
            options.resizeQuality = .fast
            let fast = try ImageDecoder().decode(png, options: options)
            options.resizeQuality = .high
            let high = try ImageDecoder().decode(png, options: options)
            XCTAssertEqual(high.size, fast.size, "\(mode) \(scaling)")
            XCTAssertEqual(high.isOpaque, fast.isOpaque, "\(mode) \(scaling)")
            for (x, y) in [(0, 0), (high.width / 2, 0), (0, high.height / 2), (high.width / 2, high.height / 2),
                           (high.width - 1, high.height / 2), (high.width / 2, high.height - 1)] {
                let a = fast.pixel(x: x, y: y), b = high.pixel(x: x, y: y)
                XCTAssertLessThanOrEqual(abs(Int(a.r) - Int(b.r)) + abs(Int(a.g) - Int(b.g)) + abs(Int(a.b) - Int(b.b)), 24,
                                         "\(mode) \(scaling) at (\(x), \(y)): \(a) against \(b)")
                XCTAssertEqual(a.a, b.a, "\(mode) \(scaling) at (\(x), \(y))")
            }
        }
    }

    private func assertColor(
        _ image: Image, _ x: Int, _ y: Int, _ expected: RGBA, _ note: String = "", file: StaticString = #filePath,
        line: UInt = #line
    ) {
        let p = image.pixel(x: x, y: y)
        let close = abs(Int(p.r) - Int(expected.r)) <= 2 && abs(Int(p.g) - Int(expected.g)) <= 2
            && abs(Int(p.b) - Int(expected.b)) <= 2 && abs(Int(p.a) - Int(expected.a)) <= 2
        XCTAssertTrue(close, "(\(x), \(y)) is \(p), expected \(expected) \(note)", file: file, line: line)
    }

    private static let clear = RGBA(r: 0, g: 0, b: 0, a: 0)

    /// Fit, by default: 100x100, the image 100x75 in rows 12...86, transparent above and below.
    func testFitLeavesTransparentMarginsCentred() throws {
        let image = try decode(Self.banded(width: 500, height: 375, band: 10), .aspectFit)
        XCTAssertEqual(image.size, Self.box)
        XCTAssertEqual(image.originalSize, PixelSize(width: 500, height: 375))
        for x in [0, 50, 99] {
            assertColor(image, x, 0, Self.clear)
            assertColor(image, x, 11, Self.clear)
            assertColor(image, x, 87, Self.clear)
            assertColor(image, x, 99, Self.clear)
        }
        assertColor(image, 0, 50, Self.red)  // the image's left edge at column 0
        assertColor(image, 99, 50, Self.blue)
        assertColor(image, 50, 12, Self.green)  // its first row
        assertColor(image, 50, 86, Self.yellow)  // its last row
        assertColor(image, 50, 50, Self.grey)
    }

    /// Fill, by default: 100x100 cut from 133x100, 16 columns off the left
    /// (the 10 red source columns become 2.66 columns: all cropped).
    func testFillCropsTheExcessCentred() throws {
        let image = try decode(Self.banded(width: 500, height: 375, band: 10), .aspectFill)
        XCTAssertEqual(image.size, Self.box)
        assertColor(image, 0, 50, Self.grey, "the red edge was cropped")
        assertColor(image, 99, 50, Self.grey, "the blue edge too")
        assertColor(image, 50, 0, Self.green, "top and bottom are whole")
        assertColor(image, 50, 99, Self.yellow)
        XCTAssertEqual(image.pixel(x: 0, y: 0).a, 255, "no margins")
    }

    func testFitCropsExcessKeepsTheFittedImage() throws {
        let image = try decode(Self.banded(width: 500, height: 375, band: 10), .aspectFit, .fitCropsExcess)
        XCTAssertEqual(image.size, PixelSize(width: 100, height: 75))
        assertColor(image, 0, 37, Self.red)
        assertColor(image, 99, 37, Self.blue)
        assertColor(image, 50, 0, Self.green)
        assertColor(image, 50, 74, Self.yellow)
    }

    func testFillLeavesExcessKeepsTheCoveringImage() throws {
        let image = try decode(Self.banded(width: 500, height: 375, band: 10), .aspectFill, .fillLeavesExcess)
        XCTAssertEqual(image.size, PixelSize(width: 133, height: 100))
        assertColor(image, 0, 50, Self.red)
        assertColor(image, 132, 50, Self.blue)
        assertColor(image, 66, 0, Self.green)
        assertColor(image, 66, 99, Self.yellow)
    }

    /// A source smaller than the display size: not enlarged by default
    /// (centred with margins, or its own size with the keep options); scaled
    /// up with `enlargesSmallImages`.
    func testSmallSourcesAreEnlargedOnlyWhenAsked() throws {
        let small = Self.banded(width: 40, height: 30, band: 4)
        let fit = try decode(small, .aspectFit)
        XCTAssertEqual(fit.size, Self.box)
        assertColor(fit, 30, 35, Self.red, "the 40x30 image at (30, 35)")
        assertColor(fit, 29, 50, Self.clear)
        assertColor(fit, 69, 64, Self.blue)
        assertColor(fit, 70, 50, Self.clear)
        XCTAssertEqual(try decode(small, .aspectFit, .fitCropsExcess).size, PixelSize(width: 40, height: 30))
        XCTAssertEqual(try decode(small, .aspectFill, .fillLeavesExcess).size, PixelSize(width: 40, height: 30))

        let enlarged = try decode(small, .aspectFit, .enlargesSmallImages)
        XCTAssertEqual(enlarged.size, Self.box)
        assertColor(enlarged, 0, 50, Self.red, "100x75: edge to edge")
        assertColor(enlarged, 99, 50, Self.blue)
        assertColor(enlarged, 50, 11, Self.clear)
        assertColor(enlarged, 50, 13, Self.green)
        let filled = try decode(small, .aspectFill, [.enlargesSmallImages, .fillLeavesExcess])
        XCTAssertEqual(filled.size, PixelSize(width: 133, height: 100))
    }

    /// An EXIF-rotated JPEG: the rules apply to the upright image. Stored
    /// 375x500 with orientation 6 (rotate 90° clockwise to show) is upright
    /// 500x375: fit gives margins above and below, not left and right.
    func testRotatedSourcesAreScaledUpright() throws {
        // Stored sideways: the upright image's top (green) is the stored image's right side.
        let upright = Self.banded(width: 500, height: 375, band: 10)
        let stored = SyntheticImage.make(width: 375, height: 500) { out in
            for y in 0..<500 {
                for x in 0..<375 {
                    // Orientation 6 shows stored (x, y) at upright (375 - 1 - y... ): upright(ux, uy) = stored(uy, 499 - ux).
                    let c = upright.pixel(x: 499 - y, y: x)
                    let p = out + (y * 375 + x) * 4
                    (p[0], p[1], p[2], p[3]) = (c.r, c.g, c.b, 255)
                }
            }
        }
        let jpeg = try JPEGEncoder(quality: 95, orientation: .right).encode(stored)
        let fit = try ImageDecoder().decode(jpeg, options: DecodingOptions(targetSize: Self.box, contentMode: .aspectFit))
        XCTAssertEqual(fit.size, Self.box)
        XCTAssertEqual(fit.originalSize, PixelSize(width: 500, height: 375))
        XCTAssertEqual(fit.pixel(x: 50, y: 5).a, 0, "margins above")
        XCTAssertEqual(fit.pixel(x: 5, y: 50).a, 255, "none at the sides")
        let p = fit.pixel(x: 50, y: 13)
        XCTAssertTrue(p.g > 200 && p.r < 60 && p.b < 60, "the upright top is green: \(p)")
        let fill = try ImageDecoder().decode(
            jpeg, options: DecodingOptions(targetSize: Self.box, contentMode: .aspectFill, scaling: .fillLeavesExcess))
        XCTAssertEqual(fill.size, PixelSize(width: 133, height: 100))
    }

    /// The options are part of the cache key.
    func testScalingOptionsAreInTheCacheKey() {
        let url = URL(string: "http://127.0.0.1/a.jpg")!
        let keys = [
            ImageRequest(url: url, targetSize: Self.box),
            ImageRequest(url: url, targetSize: Self.box, scaling: .fillLeavesExcess),
            ImageRequest(url: url, targetSize: Self.box, contentMode: .aspectFit),
            ImageRequest(url: url, targetSize: Self.box, contentMode: .aspectFit, scaling: .fitCropsExcess),
            ImageRequest(url: url, targetSize: Self.box, scaling: .enlargesSmallImages),
        ].map(\.cacheKey)
        XCTAssertEqual(Set(keys).count, keys.count)
    }
}
