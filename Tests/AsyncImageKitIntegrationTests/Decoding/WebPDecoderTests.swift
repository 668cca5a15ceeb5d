@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// WebP through libwebp: files made at test time by libwebp's own tools
/// (`cwebp`, `img2webp`, `webpmux`; see ``WebPTools``) from PNGs the library
/// writes, plus hand-made, truncated and corrupted ones.
final class WebPDecoderTests: XCTestCase {
    private var tools: WebPTools!

    override func setUpWithError() throws {
        tools = try WebPTools()
    }

    override func tearDown() {
        tools?.remove()
        tools = nil
    }

    /// Every pixel different: x and y in red and green, their sum in blue, a
    /// checkerboard of alpha values.
    private func pattern(width: Int, height: Int, alpha: Bool) -> Image {
        SyntheticImage.make(width: width, height: height) { out in
            for y in 0..<height {
                for x in 0..<width {
                    let p = out + (y * width + x) * 4
                    p[0] = UInt8(x * 255 / (width - 1))
                    p[1] = UInt8(y * 255 / (height - 1))
                    p[2] = UInt8((x * 7 + y * 13) % 256)
                    p[3] = alpha ? UInt8([255, 200, 128, 1, 0][(x / 3 + y / 3) % 5]) : 255
                }
            }
        }
    }

    private func assertSamePixels(
        _ image: Image, _ expected: Image, frame: Int = 0, tolerance: Int = 0, ignoringColorOfTransparent: Bool = false,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertEqual(image.size, expected.size, file: file, line: line)
        guard image.size == expected.size else { return }
        var worst = 0
        var worstAt = (0, 0)
        for y in 0..<image.height {
            for x in 0..<image.width {
                let a = image.pixel(x: x, y: y, frame: frame)
                let b = expected.pixel(x: x, y: y)
                var difference = abs(Int(a.a) - Int(b.a))
                if !(ignoringColorOfTransparent && b.a == 0) {
                    difference = max(
                        difference, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
                }
                if difference > worst { (worst, worstAt) = (difference, (x, y)) }
            }
        }
        XCTAssertLessThanOrEqual(
            worst, tolerance,
            "pixel (\(worstAt.0),\(worstAt.1)): \(image.pixel(x: worstAt.0, y: worstAt.1, frame: frame)) for \(expected.pixel(x: worstAt.0, y: worstAt.1))",
            file: file, line: line)
    }

    // MARK: Still images

    func testLosslessIsExact() throws {
        let source = pattern(width: 37, height: 23, alpha: false)
        let webp = try tools.cwebp(source, ["-lossless"])
        XCTAssertEqual(ImageFormat.sniff(webp), .webp)
        let image = try ImageDecoder().decode(webp)
        XCTAssertEqual(image.format, .webp)
        XCTAssertEqual(image.frames.count, 1)
        XCTAssertEqual(image.frames[0].duration, 0)
        XCTAssertNil(image.loopCount)
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertEqual(image.bytesPerRow, 37 * 4)
        XCTAssertEqual(image.decodeInfo, DecodeInfo(scaleDenominator: 1, decodedSize: source.size))
        assertSamePixels(image, source)
    }

    func testLossyIsCloseAndOpaque() throws {
        let source = SyntheticImage.quadrants(width: 64, height: 48)
        let webp = try tools.cwebp(source, ["-q", "95"])
        let image = try WebPDecoder().decode(webp)
        XCTAssertEqual(image.size, source.size)
        // Away from the quadrants' edges (chroma is subsampled and blocks are 4x4 and up).
        for (x, y) in [(8, 8), (56, 8), (8, 40), (56, 40), (20, 16), (44, 30)] {
            let got = image.pixel(x: x, y: y)
            let want = source.pixel(x: x, y: y)
            XCTAssertEqual(got.a, 255)
            for (a, b) in [(got.r, want.r), (got.g, want.g), (got.b, want.b)] {
                XCTAssertLessThanOrEqual(abs(Int(a) - Int(b)), 12, "(\(x),\(y)): \(got) for \(want)")
            }
        }
        for y in 0..<image.height {
            for x in 0..<image.width where image.pixel(x: x, y: y).a != 255 {
                return XCTFail("a lossy WebP without alpha decoded a transparent pixel at (\(x),\(y))")
            }
        }
    }

    /// `Image.isOpaque` (issue 28, item 3): a still without alpha is opaque
    /// by its header (libwebp writes alpha 255 everywhere); with alpha, the
    /// pixels say (an alpha channel of 255 only is opaque after all); an
    /// animation is scanned, or measured by its resize at display size.
    func testOpacity() throws {
        let photo = SyntheticImage.photo(width: 64, height: 48)
        let translucent = pattern(width: 30, height: 20, alpha: true)
        for options in [["-q", "90"], ["-lossless"]] {
            XCTAssertTrue(try ImageDecoder().decode(try tools.cwebp(photo, options)).isOpaque, "\(options)")
            XCTAssertTrue(
                try ImageDecoder().decode(
                    try tools.cwebp(photo, options), options: DecodingOptions(targetSize: PixelSize(width: 16, height: 16))
                ).isOpaque)
        }
        XCTAssertFalse(try ImageDecoder().decode(try tools.cwebp(translucent, ["-lossless", "-exact"])).isOpaque)
        XCTAssertFalse(try ImageDecoder().decode(try tools.cwebp(translucent, ["-q", "90", "-alpha_q", "100"])).isOpaque)
        let red = SyntheticImage.solid(width: 20, height: 10, color: RGBA(r: 255, g: 0, b: 0))
        let clear = SyntheticImage.solid(width: 20, height: 10, color: RGBA(r: 0, g: 0, b: 0, a: 0))
        let opaque = try tools.img2webp([(red, 100), (SyntheticImage.photo(width: 20, height: 10), 100)], loop: 0)
        XCTAssertTrue(try ImageDecoder().decode(opaque).isOpaque)
        let seeThrough = try tools.img2webp([(red, 100), (clear, 100)], loop: 0)
        XCTAssertFalse(try ImageDecoder().decode(seeThrough).isOpaque)
        XCTAssertFalse(
            try ImageDecoder().decode(seeThrough, options: DecodingOptions(targetSize: PixelSize(width: 10, height: 5))).isOpaque)
    }

    /// Alpha comes back straight (not premultiplied): lossless with `-exact`
    /// keeps every value, even the colour of fully transparent pixels.
    func testLosslessAlphaIsExactAndStraight() throws {
        let source = pattern(width: 30, height: 20, alpha: true)
        let image = try WebPDecoder().decode(try tools.cwebp(source, ["-lossless", "-exact"]))
        assertSamePixels(image, source)
        // The PNG encoder's ramp too, through the registry.
        let ramp = SyntheticImage.alphaRamp(width: 64, height: 8)
        assertSamePixels(try ImageDecoder().decode(try tools.cwebp(ramp, ["-lossless", "-exact"])), ramp)
    }

    /// A lossy image with an `ALPH` chunk (alpha coded losslessly with
    /// `-alpha_q 100`): the alpha is exact, and the colour of half-transparent
    /// pixels is the colour itself, not the colour times alpha.
    func testLossyAlphaIsStraight() throws {
        let source = SyntheticImage.make(width: 48, height: 32) { out in
            for i in 0..<(48 * 32) {
                let x = i % 48
                out[i * 4] = 200
                out[i * 4 + 1] = 40
                out[i * 4 + 2] = 90
                out[i * 4 + 3] = x < 16 ? 255 : x < 32 ? 128 : 0
            }
        }
        let webp = try tools.cwebp(source, ["-q", "95", "-alpha_q", "100", "-exact"])
        let image = try WebPDecoder().decode(webp)
        assertSamePixels(image, source, tolerance: 10, ignoringColorOfTransparent: true)
        XCTAssertEqual(image.pixel(x: 24, y: 16).a, 128)
        XCTAssertGreaterThan(image.pixel(x: 24, y: 16).r, 180, "premultiplied would be about 100")
        XCTAssertEqual(image.pixel(x: 40, y: 16).a, 0)
        let properties = try XCTUnwrap(ImageFileProperties(data: webp))
        XCTAssertTrue(properties.hasTransparency)
        XCTAssertEqual(properties.webPCompression, .lossy)
        XCTAssertEqual(properties.colorType, .ycbcr)
    }

    // MARK: Animation

    /// WebP durations are whole milliseconds: the start times are their
    /// exact sums, and a frame shows at its start time exactly.
    func testAnimationStartTimesAreExactSums() throws {
        let frames = [100, 200, 100, 200, 100].enumerated().map { index, milliseconds in
            (image: SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: UInt8(index * 50), g: 0, b: 0)),
             milliseconds: milliseconds)
        }
        let image = try ImageDecoder().decode(try tools.img2webp(frames, loop: 0))
        let timeline = image.animationTimeline
        XCTAssertEqual(timeline.frameStartTimes, [0, 0.1, 0.3, 0.4, 0.6])
        XCTAssertEqual(timeline.loopDuration, 0.7)
        XCTAssertEqual(image.duration, 0.7)
        for (frame, start) in timeline.frameStartTimes.enumerated() {
            XCTAssertEqual(image.frameIndex(at: start), frame, "at \(start)")
            if frame > 0 { XCTAssertEqual(image.frameIndex(at: start.nextDown), frame - 1, "just before \(start)") }
        }
        XCTAssertEqual(image.frameIndex(at: 1.0), 2, "the second loop: 0.7 + 0.3")
    }

    func testAnimationFramesDurationsAndLoopCount() throws {
        let red = SyntheticImage.solid(width: 20, height: 10, color: RGBA(r: 255, g: 0, b: 0))
        let green = SyntheticImage.quadrants(width: 20, height: 10)
        // Half transparent: the composited canvas must be transparent there too.
        let blue = SyntheticImage.make(width: 20, height: 10) { out in
            for i in 0..<200 {
                out[i * 4 + 2] = 255
                out[i * 4 + 3] = i % 20 < 10 ? 255 : 0
            }
        }
        let webp = try tools.img2webp([(red, 100), (green, 250), (blue, 40), (red, 5)], loop: 3)
        let image = try ImageDecoder().decode(webp)
        XCTAssertEqual(image.format, .webp)
        XCTAssertEqual(image.size, PixelSize(width: 20, height: 10))
        XCTAssertEqual(image.frames.count, 4)
        XCTAssertTrue(image.isAnimated)
        XCTAssertEqual(image.frames.map(\.duration), [0.1, 0.25, 0.04, 0.1], "5 ms is shown for 0.1 s")
        XCTAssertEqual(image.loopCount, 2, "3 plays are 2 repeats after the first")
        XCTAssertEqual(image.animationTimeline.playCount, 3)
        assertSamePixels(image, red, frame: 0)
        assertSamePixels(image, green, frame: 1)
        assertSamePixels(image, blue, frame: 2, ignoringColorOfTransparent: true)
        assertSamePixels(image, red, frame: 3)
        XCTAssertEqual(image.decodeInfo.countedPixels, 4 * 256, "each 200-pixel frame counts at least 256")
        XCTAssertEqual(image.cost, 4 * (20 * 10 * 4 + Image.frameOverhead))

        let properties = try XCTUnwrap(ImageFileProperties(data: webp))
        XCTAssertEqual(properties.format, .webp)
        XCTAssertEqual(properties.frameCount, 4)
        XCTAssertEqual(properties.loopCount, 2)
        XCTAssertEqual(properties.animatedWebPPlayCount, 3)
        XCTAssertEqual(properties.webPCompression, .mixed)
        XCTAssertEqual(properties.pixelSize, image.size)
    }

    /// WebP counts plays (0 = forever); ``Image/loopCount`` counts repeats, as GIF does.
    func testLoopCountsBecomeRepeats() throws {
        let a = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 2, b: 3))
        let b = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 200, g: 2, b: 3))
        for (plays, repeats, timelinePlays) in [(0, 0 as Int?, nil as Int?), (1, nil, 1), (2, 1, 2), (65535, 65534, 65535)] {
            let webp = try tools.img2webp([(a, 50), (b, 50)], loop: plays)
            let image = try WebPDecoder().decode(webp)
            XCTAssertEqual(image.loopCount, repeats, "loop \(plays)")
            XCTAssertEqual(image.animationTimeline.playCount, timelinePlays, "loop \(plays)")
            let properties = try XCTUnwrap(ImageFileProperties(data: webp))
            XCTAssertEqual(properties.loopCount, repeats)
            XCTAssertEqual(properties.animatedWebPPlayCount, plays)
        }
        XCTAssertEqual(WebPDecoder.loopCount(forPlayCount: 0), 0)
        XCTAssertNil(WebPDecoder.loopCount(forPlayCount: 1))
        XCTAssertEqual(WebPDecoder.loopCount(forPlayCount: 7), 6)
    }

    /// Lossy frames, one of them with alpha, come back close to their sources.
    func testLossyAnimation() throws {
        let frames = [
            SyntheticImage.quadrants(width: 32, height: 32), SyntheticImage.solid(width: 32, height: 32, color: RGBA(r: 20, g: 200, b: 40)),
        ]
        let image = try WebPDecoder().decode(try tools.img2webp([(frames[0], 70), (frames[1], 30)], loop: 0, ["-lossy", "-q", "95"]))
        XCTAssertEqual(image.frames.map(\.duration), [0.07, 0.03])
        XCTAssertEqual(image.loopCount, 0)
        XCTAssertEqual(image.animationTimeline.playCount, nil)
        for (x, y) in [(8, 8), (24, 8), (8, 24), (24, 24)] {
            let got = image.pixel(x: x, y: y, frame: 0)
            let want = frames[0].pixel(x: x, y: y)
            XCTAssertLessThanOrEqual(abs(Int(got.r) - Int(want.r)) + abs(Int(got.g) - Int(want.g)) + abs(Int(got.b) - Int(want.b)), 24, "\(got) for \(want)")
        }
        assertSamePixels(image, frames[1], frame: 1, tolerance: 8)
    }

    // MARK: Downsampled decodes

    /// A still image is scaled by libwebp while it decodes, to twice the
    /// natural size (ShrinkOnLoad's margin; `.fast`: straight to it): the
    /// largest buffer is the scaled one; the resize and the registry's frame
    /// do the rest.
    func testDownsampledStillDecodesStraightToTheDisplaySize() throws {
        let source = SyntheticImage.quadrants(width: 400, height: 300)
        for options in [["-q", "90"], ["-lossless"]] {
            let webp = try tools.cwebp(source, options)
            let fill = try ImageDecoder().decode(webp, options: DecodingOptions(targetSize: PixelSize(width: 100, height: 100)))
            XCTAssertEqual(fill.size, PixelSize(width: 100, height: 100), "133x100, cropped to the target")
            XCTAssertEqual(fill.originalSize, PixelSize(width: 400, height: 300))
            XCTAssertEqual(fill.decodeInfo.decodedSize, PixelSize(width: 267, height: 200), "no full-size buffer")

            let natural = try WebPDecoder().decode(webp, options: DecodingOptions(targetSize: PixelSize(width: 100, height: 100)))
            XCTAssertEqual(natural.size, PixelSize(width: 133, height: 100))

            let fit = try ImageDecoder().decode(
                webp,
                options: DecodingOptions(
                    targetSize: PixelSize(width: 100, height: 100), contentMode: .aspectFit, scaling: .fitCropsExcess))
            XCTAssertEqual(fit.size, PixelSize(width: 100, height: 75))
            XCTAssertEqual(fit.decodeInfo.decodedSize, PixelSize(width: 200, height: 150))
            var fast = DecodingOptions(targetSize: PixelSize(width: 100, height: 100), contentMode: .aspectFit, scaling: .fitCropsExcess)
            fast.resizeQuality = .fast
            XCTAssertEqual(try ImageDecoder().decode(webp, options: fast).decodeInfo.decodedSize, PixelSize(width: 100, height: 75))
            for (x, y) in [(20, 15), (80, 15), (20, 60), (80, 60)] {
                let got = fit.pixel(x: x, y: y)
                let want = SyntheticImage.quadrantColor(x: x, y: y, width: 100, height: 75)
                XCTAssertLessThanOrEqual(abs(Int(got.r) - Int(want.r)) + abs(Int(got.g) - Int(want.g)) + abs(Int(got.b) - Int(want.b)), 30, "\(options) (\(x),\(y)): \(got) for \(want)")
            }
        }
    }

    /// With ``ScalingOptions/enlargesSmallImages`` a small still is scaled
    /// up: by libwebp while it decodes with `.fast`; decoded at its own size
    /// and filtered up with `.high` (the same filter as shrinking).
    func testEnlargedStillIsScaledUpByLibwebp() throws {
        let source = SyntheticImage.quadrants(width: 20, height: 10)
        let webp = try tools.cwebp(source, ["-lossless"])
        var options = DecodingOptions(
            targetSize: PixelSize(width: 40, height: 40), contentMode: .aspectFit,
            scaling: [.fitCropsExcess, .enlargesSmallImages])
        let high = try ImageDecoder().decode(webp, options: options)
        XCTAssertEqual(high.size, PixelSize(width: 40, height: 20))
        XCTAssertEqual(high.decodeInfo.decodedSize, PixelSize(width: 20, height: 10))
        XCTAssertEqual(high.pixel(x: 2, y: 2), RGBA(r: 255, g: 0, b: 0))
        XCTAssertEqual(high.pixel(x: 37, y: 17), RGBA(r: 255, g: 255, b: 255))
        options.resizeQuality = .fast
        let image = try ImageDecoder().decode(webp, options: options)
        XCTAssertEqual(image.size, PixelSize(width: 40, height: 20))
        XCTAssertEqual(image.originalSize, PixelSize(width: 20, height: 10))
        XCTAssertEqual(image.decodeInfo.decodedSize, PixelSize(width: 40, height: 20))
        XCTAssertEqual(image.pixel(x: 2, y: 2), RGBA(r: 255, g: 0, b: 0))
        XCTAssertEqual(image.pixel(x: 37, y: 17), RGBA(r: 255, g: 255, b: 255))
        // Without the option a small image keeps its own size, centred in the target.
        let centred = try ImageDecoder().decode(
            webp, options: DecodingOptions(targetSize: PixelSize(width: 40, height: 40), contentMode: .aspectFit))
        XCTAssertEqual(centred.size, PixelSize(width: 40, height: 40))
        XCTAssertEqual(centred.decodeInfo.decodedSize, PixelSize(width: 20, height: 10))
    }

    /// Scaling keeps alpha straight: a half-transparent colour stays that colour.
    func testDownsampledAlphaStaysStraight() throws {
        let source = SyntheticImage.solid(width: 64, height: 64, color: RGBA(r: 240, g: 100, b: 20, a: 100))
        let image = try WebPDecoder().decode(
            try tools.cwebp(source, ["-lossless", "-exact"]), options: DecodingOptions(targetSize: PixelSize(width: 16, height: 16)))
        XCTAssertEqual(image.size, PixelSize(width: 16, height: 16))
        let pixel = image.pixel(x: 8, y: 8)
        XCTAssertLessThanOrEqual(abs(Int(pixel.a) - 100), 1)
        XCTAssertLessThanOrEqual(abs(Int(pixel.r) - 240), 3, "\(pixel)")
        XCTAssertLessThanOrEqual(abs(Int(pixel.g) - 100), 3, "\(pixel)")
    }

    func testDownsampledAnimationResizesEveryFrame() throws {
        let a = SyntheticImage.quadrants(width: 80, height: 60)
        let b = SyntheticImage.solid(width: 80, height: 60, color: RGBA(r: 9, g: 99, b: 199))
        let webp = try tools.img2webp([(a, 120), (b, 80)], loop: 2)
        let image = try ImageDecoder().decode(
            webp,
            options: DecodingOptions(targetSize: PixelSize(width: 40, height: 40), contentMode: .aspectFit, scaling: .fitCropsExcess))
        XCTAssertEqual(image.size, PixelSize(width: 40, height: 30))
        XCTAssertEqual(image.originalSize, PixelSize(width: 80, height: 60))
        XCTAssertEqual(image.frames.count, 2)
        XCTAssertEqual(image.frames.map(\.duration), [0.12, 0.08])
        XCTAssertEqual(image.loopCount, 1)
        XCTAssertEqual(image.pixel(x: 5, y: 5, frame: 0), RGBA(r: 255, g: 0, b: 0))
        XCTAssertEqual(image.pixel(x: 35, y: 25, frame: 0), RGBA(r: 255, g: 255, b: 255))
        XCTAssertEqual(image.pixel(x: 20, y: 15, frame: 1), RGBA(r: 9, g: 99, b: 199))
        // Framed to exactly the target by default (transparent margins).
        let framed = try ImageDecoder().decode(
            webp, options: DecodingOptions(targetSize: PixelSize(width: 40, height: 40), contentMode: .aspectFit))
        XCTAssertEqual(framed.size, PixelSize(width: 40, height: 40))
        XCTAssertEqual(framed.frames.count, 2)
    }

    // MARK: Limits and hostile files

    /// A header claiming 16383x16383 (a gigabyte of RGBA) is refused from
    /// the header: no pixel buffer is taken from the pool.
    func testPixelLimitIsCheckedFromTheHeader() throws {
        let bomb = Data.webPLosslessHeader(width: 16383, height: 16383)
        XCTAssertEqual(ImageFormat.sniff(bomb), .webp)
        XCTAssertEqual(ImageFileProperties(data: bomb)?.pixelSize, PixelSize(width: 16383, height: 16383))
        let before = PixelBufferPool.shared.statistics
        for options in [DecodingOptions(), DecodingOptions(maxPixels: 10_000), DecodingOptions(maxPixels: 10_000, targetSize: PixelSize(width: 10, height: 10))] {
            let failure = assertDecodingFails { try ImageDecoder().decode(bomb, options: options) }
            XCTAssertEqual(failure?.format, .webp)
            XCTAssertEqual(failure?.stage, .limits)
            XCTAssertEqual(failure?.isPixelLimit, true)
            XCTAssertTrue(failure?.reason.contains("16383x16383") ?? false, failure?.reason ?? "")
        }
        let after = PixelBufferPool.shared.statistics
        XCTAssertEqual(after.mapped + after.reused, before.mapped + before.reused, "a pooled buffer was taken")
        // The same header under the limit goes on to the (missing) image data.
        let small = assertDecodingFails { try ImageDecoder().decode(Data.webPLosslessHeader(width: 10, height: 10)) }
        XCTAssertEqual(small?.format, .webp)
        XCTAssertNotEqual(small?.stage, .limits)
    }

    func testPixelLimitIsInclusiveAndCountsEveryFrame() throws {
        let still = try tools.cwebp(SyntheticImage.quadrants(width: 40, height: 30), ["-lossless"])
        XCTAssertNoThrow(try WebPDecoder().decode(still, options: DecodingOptions(maxPixels: 1200)))
        XCTAssertEqual(assertDecodingFails { try WebPDecoder().decode(still, options: DecodingOptions(maxPixels: 1199)) }?.stage, .limits)

        let frame = SyntheticImage.solid(width: 40, height: 30, color: RGBA(r: 1, g: 1, b: 1))
        let other = SyntheticImage.solid(width: 40, height: 30, color: RGBA(r: 99, g: 1, b: 1))
        let animation = try tools.img2webp([(frame, 10), (other, 10), (frame, 10)], loop: 0)
        let image = try WebPDecoder().decode(animation, options: DecodingOptions(maxPixels: 3600))
        XCTAssertEqual(image.frames.count, 3)
        XCTAssertNil(DecodingOptions(maxPixels: 3600).limitFailure(for: image))
        XCTAssertNotNil(DecodingOptions(maxPixels: 3599).limitFailure(for: image))
        let failure = assertDecodingFails { try WebPDecoder().decode(animation, options: DecodingOptions(maxPixels: 3599)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
        XCTAssertTrue(failure?.reason.contains("3 frames") ?? false, failure?.reason ?? "")
    }

    /// The files every hostile-input test starts from.
    private func sampleFiles() throws -> [(name: String, data: Data)] {
        let photo = SyntheticImage.photo(width: 64, height: 48)
        let alpha = pattern(width: 40, height: 30, alpha: true)
        return [
            ("lossy", try tools.cwebp(photo, ["-q", "80"])),
            ("lossless", try tools.cwebp(photo, ["-lossless"])),
            ("lossy+alpha", try tools.cwebp(alpha, ["-q", "80"])),
            ("lossless+alpha", try tools.cwebp(alpha, ["-lossless", "-exact"])),
            ("animated", try tools.img2webp([(photo, 50), (SyntheticImage.quadrants(width: 64, height: 48), 50), (photo, 50)], loop: 0, ["-lossy"])),
        ]
    }

    /// A file cut anywhere fails with a typed WebP error, never a crash or a
    /// half-decoded image. With the RIFF and chunk sizes rewritten to match
    /// the cut, libwebp itself must notice, except where the cut only took
    /// bytes the image does not need (the RIFF pad byte, the coder's last
    /// flushed bits): then the image must be the whole one.
    func testTruncatedFilesFailTyped() throws {
        for (name, data) in try sampleFiles() {
            let whole = try ImageDecoder().decode(data)
            var lengths = Set([12, 16, 20, 21, 25, 30, 34, 40, 50, data.count / 4, data.count / 2, data.count - 10, data.count - 2, data.count - 1])
            lengths.formUnion(stride(from: 12, to: data.count, by: max(1, data.count / 40)))
            for length in lengths.sorted() where length < data.count {
                let cut = Data(data.prefix(length))
                let failure = assertDecodingFails { try ImageDecoder().decode(cut) }
                XCTAssertEqual(failure?.format, .webp, "\(name) cut to \(length)")
                XCTAssertTrue([.header, .pixels].contains(failure?.stage), "\(name) cut to \(length): \(failure?.description ?? "")")
                XCTAssertFalse(failure?.reason.isEmpty ?? true)

                // The same cut with the RIFF size (and, for a simple file, the
                // image chunk's size) rewritten to match: libwebp must notice.
                var patched = [UInt8](cut)
                guard length >= 20 else { continue }
                Self.putLittleEndian(&patched, at: 4, UInt32(length - 8))
                let chunk = String(decoding: patched[12..<16], as: UTF8.self)
                if chunk == "VP8 " || chunk == "VP8L" { Self.putLittleEndian(&patched, at: 16, UInt32(length - 20)) }
                do {
                    let image = try ImageDecoder().decode(Data(patched))
                    XCTAssertGreaterThanOrEqual(length, data.count - 4, "\(name) cut to \(length) with patched sizes decoded")
                    XCTAssertEqual(image.frames.count, whole.frames.count)
                    for index in whole.frames.indices {
                        XCTAssertEqual(image.frames[index].pixels, whole.frames[index].pixels, "\(name) cut to \(length): frame \(index) is not whole")
                    }
                } catch {
                    guard case .decoding(let failure, _) = error else { return XCTFail("\(error)") }
                    XCTAssertEqual(failure.format, .webp)
                }
            }
        }
    }

    private static func putLittleEndian(_ bytes: inout [UInt8], at offset: Int, _ value: UInt32) {
        for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    /// Damaged headers fail at stage `header`; damage anywhere else ends in a
    /// typed error or a whole image of the right size (lossy VP8 data has no
    /// checksum: flipped bits can decode to other colours), never a crash.
    func testCorruptFilesFailTypedOrDecodeWhole() throws {
        let files = try sampleFiles()
        let lossy = files[0].data
        let lossless = files[1].data
        XCTAssertEqual(String(decoding: lossy[12..<16], as: UTF8.self), "VP8 ")
        XCTAssertEqual(String(decoding: lossless[12..<16], as: UTF8.self), "VP8L")

        var badStartCode = lossy
        badStartCode[23] ^= 0xFF  // 9D 01 2A after the 3-byte frame tag
        XCTAssertEqual(assertDecodingFails { try ImageDecoder().decode(badStartCode) }?.stage, .header)
        var badSignature = lossless
        badSignature[20] = 0x00  // the VP8L signature 0x2F
        XCTAssertEqual(assertDecodingFails { try ImageDecoder().decode(badSignature) }?.stage, .header)
        var badChunk = lossy
        badChunk.replaceSubrange(12..<16, with: Data("XYZ ".utf8))
        XCTAssertEqual(assertDecodingFails { try ImageDecoder().decode(badChunk) }?.format, .webp)
        var zeroSize = lossless
        zeroSize.replaceSubrange(21..<25, with: [0, 0, 0, 0])  // 1x1 still decodes or fails, never traps
        _ = try? ImageDecoder().decode(zeroSize)

        var random = SplitMix64(seed: 16)
        for (name, data) in files {
            let expected = try ImageDecoder().decode(data)
            for _ in 0..<60 {
                var damaged = [UInt8](data)
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    let offset = 12 + Int(random.next() % UInt64(data.count - 12))
                    damaged[offset] = UInt8(truncatingIfNeeded: random.next())
                }
                do {
                    let image = try ImageDecoder().decode(Data(damaged))
                    XCTAssertEqual(image.format, .webp, name)
                    XCTAssertEqual(image.frames.first?.pixels.count ?? 0, image.bytesPerRow * image.height, name)
                    if ImageFileProperties(data: Data(damaged))?.frameCount == expected.frames.count {
                        XCTAssertEqual(image.frames.count, expected.frames.count, name)
                    }
                } catch {
                    guard case .decoding(let failure, _) = error else { return XCTFail("\(name): \(error)") }
                    XCTAssertEqual(failure.format, .webp, name)
                    XCTAssertFalse(failure.reason.isEmpty, name)
                }
            }
        }
    }

    // MARK: Properties, registry, loader

    /// What the headers say matches what the decoder produces, and ICC and
    /// EXIF chunks added by `webpmux` are reported (the EXIF orientation is
    /// not applied).
    func testFilePropertiesMatchTheDecodedImages() throws {
        for (name, data) in try sampleFiles() {
            let properties = try XCTUnwrap(ImageFileProperties(data: data), name)
            let image = try ImageDecoder().decode(data)
            XCTAssertEqual(properties.format, .webp, name)
            XCTAssertEqual(properties.uprightPixelSize, image.originalSize, name)
            XCTAssertEqual(properties.frameCount, image.frames.count, name)
            XCTAssertEqual(properties.loopCount, image.loopCount, name)
            XCTAssertEqual(properties.bitDepth, 8, name)
            XCTAssertEqual(properties.orientation, .up, name)
            XCTAssertFalse(properties.hasICCProfile, name)
            XCTAssertNil(properties.exif, name)
            XCTAssertNil(properties.jpeg, name)
            XCTAssertEqual(properties.hasTransparency, name.contains("alpha"), name)
        }
        let files = try sampleFiles()
        XCTAssertEqual(ImageFileProperties(data: files[0].data)?.colorType, .ycbcr)
        XCTAssertEqual(ImageFileProperties(data: files[1].data)?.colorType, .rgb)
        XCTAssertEqual(ImageFileProperties(data: files[1].data)?.webPCompression, .lossless)
        XCTAssertEqual(ImageFileProperties(data: files[3].data)?.colorType, .rgba)
        XCTAssertNil(ImageFileProperties(data: files[0].data)?.animatedWebPPlayCount)

        var builder = EXIFBuilder(bigEndian: false)
        builder.image = [(0x0112, .short([6])), (0x0110, .ascii("WebP Camera"))]
        var muxed = try tools.webpmux(files[0].data, set: "exif", Data(builder.tiff()))
        muxed = try tools.webpmux(muxed, set: "icc", Data(repeating: 0x42, count: 132))
        let properties = try XCTUnwrap(ImageFileProperties(data: muxed))
        XCTAssertTrue(properties.hasICCProfile)
        XCTAssertEqual(properties.exif?.model, "WebP Camera")
        XCTAssertEqual(properties.exif?.orientation, .right)
        XCTAssertEqual(properties.orientation, .up, "WebP's EXIF orientation is reported, not applied")
        XCTAssertEqual(properties.pixelSize, PixelSize(width: 64, height: 48))
        let image = try ImageDecoder().decode(muxed)
        XCTAssertEqual(image.size, PixelSize(width: 64, height: 48))
        XCTAssertEqual(image.orientation, .up)

        // Codable, the new fields included.
        let decoded = try JSONDecoder().decode(ImageFileProperties.self, from: try JSONEncoder().encode(properties))
        XCTAssertEqual(decoded, properties)
        // Cut inside the first frame: the header is still read.
        XCTAssertEqual(ImageFileProperties(data: files[4].data.prefix(files[4].data.count / 2))?.pixelSize, PixelSize(width: 64, height: 48))
        XCTAssertNil(ImageFileProperties(data: files[0].data.prefix(20)))
    }

    func testRegisteredAndAccepted() {
        XCTAssertTrue(ImageDecoderRegistry.default.formats.contains(.webp))
        XCTAssertEqual(ImageDecoderRegistry.default.decoder(for: .webp)?.format, .webp)
        XCTAssertTrue(ImageDecoder().decoder(for: .webp) is WebPDecoder)
        XCTAssertTrue(ImageDecoderRegistry.default.acceptHeader.contains("image/webp"))
        XCTAssertTrue(TransportConfiguration.defaultAccept.contains("image/webp"), TransportConfiguration.defaultAccept)
        XCTAssertEqual(ImageFormat.webp.mimeType, "image/webp")
        XCTAssertTrue(ImageFormat.allCases.contains(.webp))
        // Without the decoder, a WebP fails at sniffing with its format named.
        let failure = assertDecodingFails { try ImageDecoderRegistry().decode(Data.webPLosslessHeader(width: 1, height: 1)) }
        XCTAssertEqual(failure?.stage, .sniffing)
        XCTAssertEqual(failure?.format, .webp)
    }

    /// End to end: the loader fetches a WebP from the loopback server, at
    /// full size and at a display size (cached apart).
    func testLoaderLoadsWebPAtFullAndDisplaySize() throws {
        let source = SyntheticImage.quadrants(width: 320, height: 240)
        let webp = try tools.cwebp(source, ["-lossless"])
        let animated = try tools.img2webp(
            [(SyntheticImage.quadrants(width: 32, height: 24), 60), (SyntheticImage.solid(width: 32, height: 24, color: RGBA(r: 5, g: 6, b: 7)), 90)],
            loop: 4)
        let h = try LoaderHarness()
        h.server.serve("/photo.webp", webp)
        h.server.serve("/anim.webp", animated)
        let url = h.server.url(path: "/photo.webp")
        h.load(url)
        h.load(h.server.url(path: "/anim.webp"))
        let small = ImageRequest(url: url, targetSize: PixelSize(width: 80, height: 80))
        h.loader.loadImage(small, success: h.log.success, failure: h.log.failure)
        wait(for: [h.log.outcomes(3, self)], timeout: 30)

        let full = try XCTUnwrap(h.cache.image(for: ImageCacheKey(url: url)))
        XCTAssertEqual(full.format, .webp)
        XCTAssertEqual(full.size, PixelSize(width: 320, height: 240))
        assertSamePixels(full, source)
        XCTAssertEqual(full.fileProperties?.format, .webp)
        XCTAssertEqual(full.fileProperties?.webPCompression, .lossless)

        let thumbnail = try XCTUnwrap(h.cache.image(for: small.cacheKey))
        XCTAssertEqual(thumbnail.size, PixelSize(width: 80, height: 80))
        XCTAssertEqual(thumbnail.originalSize, PixelSize(width: 320, height: 240))
        XCTAssertEqual(thumbnail.decodeInfo.decodedSize, PixelSize(width: 214, height: 161), "twice 107x80, rounded up")
        XCTAssertEqual(thumbnail.pixel(x: 10, y: 10), RGBA(r: 255, g: 0, b: 0))

        let animation = try XCTUnwrap(h.log.images["/anim.webp"])
        XCTAssertEqual(animation.frames.map(\.duration), [0.06, 0.09])
        XCTAssertEqual(animation.loopCount, 3)
        XCTAssertEqual(animation.fileProperties?.animatedWebPPlayCount, 4)
    }
}
