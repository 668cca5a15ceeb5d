@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// JPEG XL through libjxl: files made at test time by `cjxl` (Debian's
/// libjxl-tools; see ``CodecTools``) from PNGs, PPMs, GIFs and JPEGs the
/// library and its fixtures write, plus truncated and corrupted files.
final class JXLDecoderTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools(["cjxl": "libjxl-tools"])
    }

    override func tearDown() {
        tools?.remove()
        tools = nil
    }

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

    private func worstDifference(_ image: Image, _ expected: Image, frame: Int = 0) -> Int {
        XCTAssertEqual(image.size, expected.size)
        guard image.size == expected.size else { return .max }
        var worst = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let a = image.pixel(x: x, y: y, frame: frame)
                let b = expected.pixel(x: x, y: y)
                worst = max(
                    worst, abs(Int(a.a) - Int(b.a)), abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)),
                    abs(Int(a.b) - Int(b.b)))
            }
        }
        return worst
    }

    func testLosslessIsExact() throws {
        let source = pattern(width: 37, height: 23, alpha: false)
        let jxl = try tools.cjxl(source, ["-d", "0"])
        XCTAssertEqual(ImageFormat.sniff(jxl), .jxl)
        let image = try ImageDecoder().decode(jxl)
        XCTAssertEqual(image.format, .jxl)
        XCTAssertEqual(image.frames.count, 1)
        XCTAssertNil(image.loopCount)
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertEqual(worstDifference(image, source), 0)
        let properties = try XCTUnwrap(ImageFileProperties(data: jxl))
        XCTAssertEqual(properties.format, .jxl)
        XCTAssertEqual(properties.pixelSize, source.size)
        XCTAssertEqual(properties.bitDepth, 8)
        XCTAssertEqual(properties.frameCount, 1)
        XCTAssertEqual(properties.orientation, .up)
    }

    func testLossyIsCloseAndSRGB() throws {
        let source = SyntheticImage.quadrants(width: 64, height: 48)
        let jxl = try tools.cjxl(source, ["-d", "0.5"])
        let image = try JXLDecoder().decode(jxl)
        XCTAssertTrue(image.isOpaque)
        for (x, y) in [(8, 8), (56, 8), (8, 40), (56, 40)] {
            let got = image.pixel(x: x, y: y)
            let want = source.pixel(x: x, y: y)
            for (a, b) in [(got.r, want.r), (got.g, want.g), (got.b, want.b)] {
                XCTAssertLessThanOrEqual(abs(Int(a) - Int(b)), 8, "(\(x),\(y)): \(got) for \(want)")
            }
        }
        // An sRGB image says so: no profile to convert.
        XCTAssertFalse(try XCTUnwrap(ImageFileProperties(data: jxl)).hasICCProfile)
    }

    func testAlphaIsStraight() throws {
        let source = pattern(width: 30, height: 20, alpha: true)
        let jxl = try tools.cjxl(source, ["-d", "0"])
        let image = try ImageDecoder().decode(jxl)
        XCTAssertFalse(image.isOpaque)
        XCTAssertEqual(worstDifference(image, source), 0)
        XCTAssertTrue(try XCTUnwrap(ImageFileProperties(data: jxl)).hasTransparency)
    }

    /// 16-bit samples (a 16-bit PNG), and the same stored as 10 and 12 bits
    /// (`--override_bitdepth`), come out as 8 bits. (`cjxl` 0.7 misreads
    /// PPMs of 10 and 12 bits, so they cannot be the source.)
    func testHighBitDepthsBecomeEightBits() throws {
        let source = pattern(width: 24, height: 12, alpha: false)
        var samples: [UInt16] = []
        for y in 0..<source.height {
            for x in 0..<source.width {
                let p = source.pixel(x: x, y: y)
                samples += [p.r, p.g, p.b].map { UInt16($0) * 257 }
            }
        }
        let png = RawPNGWriter.encode(width: source.width, height: source.height, colorType: .rgb, bitDepth: 16, samples: samples)
        for depth in [16, 12, 10] {
            let jxl = try tools.cjxl(file: png, "png", ["-d", "0"] + (depth == 16 ? [] : ["--override_bitdepth=\(depth)"]))
            XCTAssertEqual(ImageFileProperties(data: jxl)?.bitDepth, depth)
            XCTAssertLessThanOrEqual(worstDifference(try ImageDecoder().decode(jxl), source), 1, "\(depth) bits")
        }
    }

    /// A JPEG's EXIF orientation is carried into the codestream by `cjxl`'s
    /// lossless JPEG transcoding (its default for a JPEG), reported and
    /// applied (libjxl's decoding of the DCT coefficients differs from
    /// libjpeg-turbo's by a few levels).
    func testOrientationIsApplied() throws {
        let source = SyntheticImage.photo(width: 24, height: 16)
        for orientation in [ImageOrientation.right, .left, .down, .upMirrored, .leftMirrored] {
            let jpeg = try JPEGEncoder(quality: 100, orientation: orientation).encode(source)
            let reference = try ImageDecoder().decode(jpeg)  // the JPEG decoder turns it upright
            let jxl = try tools.cjxl(file: jpeg, "jpg", ["--lossless_jpeg=1"])
            let properties = try XCTUnwrap(ImageFileProperties(data: jxl))
            XCTAssertEqual(properties.orientation, orientation)
            XCTAssertEqual(properties.exif?.orientation, orientation, "the JPEG's Exif box")
            XCTAssertEqual(properties.pixelSize, source.size)
            let image = try ImageDecoder().decode(jxl)
            XCTAssertEqual(image.size, reference.size, "\(orientation)")
            XCTAssertLessThanOrEqual(worstDifference(image, reference), 8, "\(orientation)")
        }
    }

    func testAnimationFramesDurationsAndLoop() throws {
        let palette = [RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255), RGBA(r: 0, g: 0, b: 0)]
        let gif = try GIFWriter.encode(
            width: 20, height: 10, globalPalette: palette,
            frames: [
                .filled(0, width: 20, height: 10, delay: 10), .filled(1, width: 20, height: 10, delay: 25),
                .filled(2, width: 20, height: 10, delay: 4),
            ], loopCount: 0)
        let jxl = try tools.cjxl(file: gif, "gif", ["-d", "0"])
        let properties = try XCTUnwrap(ImageFileProperties(data: jxl))
        XCTAssertEqual(properties.frameCount, 3)
        XCTAssertEqual(properties.loopCount, 0)
        let image = try ImageDecoder().decode(jxl)
        XCTAssertEqual(image.frames.count, 3)
        XCTAssertEqual(image.loopCount, 0)
        XCTAssertEqual(image.frames.map(\.duration), [0.1, 0.25, 0.04])
        for (index, color) in palette.prefix(3).enumerated() {
            XCTAssertEqual(image.pixel(x: 10, y: 5, frame: index), color, "frame \(index)")
        }
        XCTAssertEqual(image.decodeInfo.countedPixels, 3 * max(200, JXLDecoder.minimumFramePixels))
        // Limits, frame by frame, before each frame's pixels.
        XCTAssertNoThrow(try JXLDecoder().decode(jxl, options: DecodingOptions(maxFrames: 3)))
        XCTAssertEqual(assertDecodingFails { try JXLDecoder().decode(jxl, options: DecodingOptions(maxFrames: 2)) }?.stage, .limits)
        let counted = 3 * max(200, JXLDecoder.minimumFramePixels)
        XCTAssertNoThrow(try JXLDecoder().decode(jxl, options: DecodingOptions(maxPixels: counted)))
        XCTAssertEqual(
            assertDecodingFails { try JXLDecoder().decode(jxl, options: DecodingOptions(maxPixels: counted - 1)) }?.stage,
            .limits)
        // Downsampled: every frame.
        let small = try ImageDecoder().decode(jxl, options: DecodingOptions(targetSize: PixelSize(width: 10, height: 5)))
        XCTAssertEqual(small.size, PixelSize(width: 10, height: 5))
        XCTAssertEqual(small.frames.count, 3)
        // The header probe counts the frames to the last: a prefix has the
        // whole file's properties, or none yet.
        for length in stride(from: 1, to: jxl.count, by: max(1, jxl.count / 20)) {
            if let prefix = ImageFileProperties(prefix: Data(jxl.prefix(length))) {
                XCTAssertEqual(prefix, properties, "cut to \(length)")
            }
        }
        XCTAssertEqual(ImageFileProperties(prefix: jxl), properties)
    }

    func testDownsampledAndPixelLimit() throws {
        let source = SyntheticImage.photo(width: 120, height: 80)
        let jxl = try tools.cjxl(source, ["-d", "0"])
        let image = try ImageDecoder().decode(
            jxl, options: DecodingOptions(targetSize: PixelSize(width: 30, height: 20), contentMode: .aspectFit))
        XCTAssertEqual(image.size, PixelSize(width: 30, height: 20))
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertLessThanOrEqual(worstDifference(image, try ImageResizer.resize(source, to: image.size, quality: .high)), 1)
        XCTAssertNoThrow(try JXLDecoder().decode(jxl, options: DecodingOptions(maxPixels: 9600)))
        let failure = assertDecodingFails { try JXLDecoder().decode(jxl, options: DecodingOptions(maxPixels: 9599)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
    }

    /// A still image's header probe works on its first bytes.
    func testHeaderProbeReadsABodysFirstBytes() throws {
        let jxl = try tools.cjxl(SyntheticImage.photo(width: 200, height: 120), ["-d", "1"])
        let properties = try XCTUnwrap(ImageFileProperties(data: jxl))
        XCTAssertEqual(ImageFileProperties(prefix: Data(jxl.prefix(min(jxl.count - 1, 200)))), properties)
        XCTAssertNil(ImageFileProperties(prefix: Data(jxl.prefix(3))))
    }

    func testTruncatedFilesFailTyped() throws {
        for (index, data) in [
            try tools.cjxl(SyntheticImage.photo(width: 64, height: 48), ["-d", "1"]),
            try tools.cjxl(pattern(width: 30, height: 20, alpha: true), ["-d", "0"]),
        ].enumerated() {
            var lengths = Set([1, 2, 4, 8, 12, 16, data.count / 2, data.count - 1])
            lengths.formUnion(stride(from: 2, to: data.count, by: max(1, data.count / 30)))
            var stages: Set<DecodingFailure.Stage> = []
            for length in lengths.sorted() where length < data.count {
                let cut = Data(data.prefix(length))
                guard ImageFormat.sniff(cut) == .jxl else { continue }
                let failure = assertDecodingFails { try JXLDecoder().decode(cut) }
                XCTAssertEqual(failure?.format, .jxl, "file \(index) cut to \(length)")
                XCTAssertTrue(
                    [.header, .pixels].contains(failure?.stage), "file \(index) cut to \(length): \(failure?.description ?? "")")
                if let stage = failure?.stage { stages.insert(stage) }
            }
            XCTAssertEqual(stages, [.header, .pixels], "file \(index)")
        }
    }

    func testCorruptFilesFailTypedOrDecodeWhole() throws {
        let data = try tools.cjxl(SyntheticImage.photo(width: 64, height: 48), ["-d", "1"])
        var random = SplitMix64(seed: 34)
        for _ in 0..<60 {
            var damaged = [UInt8](data)
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let offset = 2 + Int(random.next() % UInt64(data.count - 2))
                damaged[offset] = UInt8(truncatingIfNeeded: random.next())
            }
            do {
                let image = try ImageDecoder().decode(Data(damaged))
                XCTAssertGreaterThan(image.width, 0)
            } catch {
                guard case .decoding(let failure, _) = error else { return XCTFail("\(error)") }
                XCTAssertTrue([.header, .pixels, .sniffing, .limits].contains(failure.stage), failure.description)
            }
        }
    }

    /// A lossless image with an ICC profile goes through the colour management.
    func testICCProfileIsConverted() throws {
        let path = "/usr/share/color/icc/ghostscript/a98.icc"
        guard let profile = FileManager.default.contents(atPath: path) else {
            throw XCTSkip("\(path) missing (Debian's libgs-common)")
        }
        let source = SyntheticImage.photo(width: 16, height: 16)
        let png = ColourFixtures.png(source, chunks: [("iCCP", ColourFixtures.iCCPPayload(profile))])
        let jxl = try tools.cjxl(file: png, "png", ["-d", "0"])
        let properties = try XCTUnwrap(ImageFileProperties(data: jxl))
        XCTAssertTrue(properties.hasICCProfile)
        XCTAssertEqual(properties.colorProfile?.isSRGB, false)
        let off = try ImageDecoder().decode(jxl, options: DecodingOptions(colorManagement: .off))
        XCTAssertEqual(worstDifference(off, source), 0)
        XCTAssertGreaterThan(worstDifference(try ImageDecoder().decode(jxl), source), 10)
    }

    /// At display size the profile's transform runs inside the resize
    /// (issue 41): against the full-size conversion resized.
    func testICCProfileAtDisplaySize() throws {
        let png = try adobeRGBTaggedPNG()
        try assertDisplaySizeConverts(try tools.cjxl(file: png, "png", ["-d", "0"]), "JPEG XL Adobe RGB")
    }

    func testRegistered() {
        XCTAssertTrue(ImageDecoderRegistry.default.formats.contains(.jxl))
        XCTAssertEqual(ImageDecoder().decoder(for: .jxl).format, .jxl)
        XCTAssertEqual(ImageFormat.sniff(Data([0xFF, 0x0A, 0xFA])), .jxl)
        XCTAssertEqual(ImageFormat.jxl.mimeType, "image/jxl")
    }
}
