@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// HEIC through libheif: files made at test time by `heif-enc` (Debian's
/// libheif-examples, x265; see ``CodecTools``) from PNGs and JPEGs the
/// library writes, `irot`/`imir` added by ``HEIFEditor``, plus truncated and
/// corrupted files.
final class HEIFDecoderTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools(["heif-enc": "libheif-examples"])
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

    private func worstDifference(_ image: Image, _ expected: Image, ignoringColorOfTransparent: Bool = false) -> Int {
        XCTAssertEqual(image.size, expected.size)
        guard image.size == expected.size else { return .max }
        var worst = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let a = image.pixel(x: x, y: y)
                let b = expected.pixel(x: x, y: y)
                worst = max(worst, abs(Int(a.a) - Int(b.a)))
                if !(ignoringColorOfTransparent && b.a == 0) {
                    worst = max(worst, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
                }
            }
        }
        return worst
    }

    /// Lossless x265 in RGB (matrix 0), 4:4:4: every sample within a level
    /// (libheif's conversion to 8-bit RGBA rounds).
    func testLosslessIsExact() throws {
        let source = pattern(width: 64, height: 48, alpha: false)
        let heic = try tools.heifenc(source, CodecTools.losslessHEIC + ["--no-alpha"])
        XCTAssertEqual(ImageFormat.sniff(heic), .heic)
        let image = try ImageDecoder().decode(heic)
        XCTAssertEqual(image.format, .heic)
        XCTAssertEqual(image.frames.count, 1)
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertTrue(image.isOpaque)
        XCTAssertLessThanOrEqual(worstDifference(image, source), 1)
        let properties = try XCTUnwrap(ImageFileProperties(data: heic))
        XCTAssertEqual(properties.format, .heic)
        XCTAssertEqual(properties.pixelSize, source.size)
        XCTAssertEqual(properties.bitDepth, 8)
        XCTAssertEqual(properties.frameCount, 1)
        XCTAssertEqual(properties.orientation, .up)
        XCTAssertFalse(properties.hasTransparency)
    }

    /// Odd sizes: `heif-enc` codes 8x8-aligned tiles and crops them with a grid.
    func testLossyOddSizeIsCloseAndOpaque() throws {
        let source = SyntheticImage.quadrants(width: 61, height: 37)
        let image = try HEIFDecoder().decode(try tools.heifenc(source, ["-q", "95"]))
        XCTAssertEqual(image.size, source.size)
        XCTAssertTrue(image.isOpaque)
        for (x, y) in [(8, 8), (52, 8), (8, 30), (52, 30)] {
            let got = image.pixel(x: x, y: y)
            let want = source.pixel(x: x, y: y)
            for (a, b) in [(got.r, want.r), (got.g, want.g), (got.b, want.b)] {
                XCTAssertLessThanOrEqual(abs(Int(a) - Int(b)), 12, "(\(x),\(y)): \(got) for \(want)")
            }
        }
    }

    func testAlphaIsStraight() throws {
        let source = pattern(width: 30, height: 20, alpha: true)
        let heic = try tools.heifenc(source, CodecTools.losslessHEIC)
        let image = try ImageDecoder().decode(heic)
        XCTAssertFalse(image.isOpaque)
        XCTAssertLessThanOrEqual(worstDifference(image, source), 1)
        let properties = try XCTUnwrap(ImageFileProperties(data: heic))
        XCTAssertTrue(properties.hasTransparency)
        XCTAssertEqual(properties.colorType, .rgba)
    }

    /// 16-bit PNGs become 10- and 12-bit HEICs (`heif-enc -b`), decoded to 8 bits.
    func testTenAndTwelveBitsBecomeEightBits() throws {
        let (width, height) = (32, 16)
        var samples: [UInt16] = []
        var expected: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                for c in 0..<3 {
                    let value = UInt8((x * 8 + y * 3 + c * 60) % 256)
                    samples.append(UInt16(value) * 257)
                    expected.append(value)
                }
                expected.append(255)
            }
        }
        let png = RawPNGWriter.encode(width: width, height: height, colorType: .rgb, bitDepth: 16, samples: samples)
        let reference = Image(width: width, height: height, rgba: Data(expected))
        for depth in [10, 12] {
            let heic = try tools.heifenc(file: png, "png", CodecTools.losslessHEIC + ["-b", String(depth)])
            XCTAssertEqual(ImageFileProperties(data: heic)?.bitDepth, depth)
            let image = try ImageDecoder().decode(heic)
            XCTAssertLessThanOrEqual(worstDifference(image, reference), 1, "\(depth) bits")
        }
    }

    /// `irot` and `imir` (added to the file) are applied by libheif and
    /// reported by the properties, checked against the HEIF definitions.
    func testRotationAndMirroringAreApplied() throws {
        let source = pattern(width: 16, height: 8, alpha: false)
        let plain = try tools.heifenc(source, CodecTools.losslessHEIC)
        for rotation in 0..<4 {
            for mirror in [nil, 0, 1] as [Int?] {
                let label = "irot \(rotation) imir \(String(describing: mirror))"
                let heic = try HEIFEditor.addingTransforms(plain, rotation: rotation, mirror: mirror)
                let expected = OrientationReference.apply(source, rotation: rotation, mirror: mirror)
                let properties = try XCTUnwrap(ImageFileProperties(data: heic), label)
                XCTAssertEqual(properties.pixelSize, source.size, label)
                XCTAssertEqual(properties.orientation, AVIFHeader.orientation(rotation: rotation, mirror: mirror.map(UInt8.init)), label)
                let image = try ImageDecoder().decode(heic)
                XCTAssertEqual(image.originalSize, expected.size, label)
                XCTAssertLessThanOrEqual(worstDifference(image, expected), 1, label)
            }
        }
    }

    func testDownsampled() throws {
        let source = SyntheticImage.photo(width: 120, height: 80)
        let heic = try tools.heifenc(source, CodecTools.losslessHEIC)
        let image = try ImageDecoder().decode(
            heic, options: DecodingOptions(targetSize: PixelSize(width: 30, height: 20), contentMode: .aspectFit))
        XCTAssertEqual(image.size, PixelSize(width: 30, height: 20))
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertLessThanOrEqual(worstDifference(image, try ImageResizer.resize(source, to: image.size, quality: .high)), 1)
    }

    func testPixelLimitIsCheckedFromTheBoxes() throws {
        let heic = try tools.heifenc(SyntheticImage.photo(width: 40, height: 30), ["-q", "80"])
        XCTAssertNoThrow(try HEIFDecoder().decode(heic, options: DecodingOptions(maxPixels: 1200)))
        let failure = assertDecodingFails { try HEIFDecoder().decode(heic, options: DecodingOptions(maxPixels: 1199)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
        XCTAssertEqual(failure?.format, .heic)
    }

    func testTruncatedFilesFailTyped() throws {
        for (index, data) in [
            try tools.heifenc(SyntheticImage.photo(width: 64, height: 48), ["-q", "80"]),
            try tools.heifenc(pattern(width: 30, height: 20, alpha: true), CodecTools.losslessHEIC),
        ].enumerated() {
            var lengths = Set([1, 4, 8, 12, 16, 24, 32, 64, data.count / 2, data.count - 10, data.count - 1])
            lengths.formUnion(stride(from: 12, to: data.count, by: max(1, data.count / 30)))
            var stages: Set<DecodingFailure.Stage> = []
            for length in lengths.sorted() where length < data.count {
                let failure = assertDecodingFails { try HEIFDecoder().decode(Data(data.prefix(length))) }
                XCTAssertEqual(failure?.format, .heic, "file \(index) cut to \(length)")
                XCTAssertTrue(
                    [.header, .pixels].contains(failure?.stage), "file \(index) cut to \(length): \(failure?.description ?? "")")
                if let stage = failure?.stage { stages.insert(stage) }
            }
            XCTAssertEqual(stages, [.header, .pixels], "file \(index)")
        }
    }

    func testCorruptFilesFailTypedOrDecodeWhole() throws {
        let data = try tools.heifenc(SyntheticImage.photo(width: 64, height: 48), ["-q", "80"])
        let meta = try XCTUnwrap(data.firstRange(of: Data("meta".utf8)))
        var badMeta = data
        badMeta.replaceSubrange(meta, with: Data("mexa".utf8))
        let failure = assertDecodingFails { try ImageDecoder().decode(badMeta) }
        XCTAssertEqual(failure?.stage, .header)
        XCTAssertEqual(failure?.format, .heic)
        XCTAssertNil(ImageFileProperties(data: badMeta))

        var random = SplitMix64(seed: 33)
        for _ in 0..<60 {
            var damaged = [UInt8](data)
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let offset = 12 + Int(random.next() % UInt64(data.count - 12))
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

    /// libheif 1.15 reads no file cut short (its `iloc` extents must lie
    /// inside the bytes): the header probe has the properties once the body
    /// is whole, and a file cut in its HEVC data fails at stage `pixels`.
    func testHeaderProbeNeedsTheWholeBody() throws {
        let heic = try HEIFEditor.addingTransforms(
            try tools.heifenc(pattern(width: 60, height: 40, alpha: true), ["-q", "80"]), rotation: 1, mirror: nil)
        let mdat = try XCTUnwrap(heic.firstRange(of: Data("mdat".utf8)))
        let prefix = Data(heic.prefix(mdat.upperBound + 8))
        XCTAssertNil(ImageFileProperties(prefix: prefix))
        XCTAssertNil(ImageFileProperties(data: prefix))
        let properties = try XCTUnwrap(ImageFileProperties(prefix: heic))
        XCTAssertEqual(properties, ImageFileProperties(data: heic))
        XCTAssertEqual(properties.uprightPixelSize, PixelSize(width: 40, height: 60))
        XCTAssertEqual(properties.orientation, .left)
        XCTAssertTrue(properties.hasTransparency)
        XCTAssertNil(ImageFileProperties(prefix: Data(heic.prefix(40))))
        XCTAssertEqual(assertDecodingFails { try ImageDecoder().decode(prefix) }?.stage, .pixels)
    }

    /// A JPEG's EXIF goes into an `Exif` item: reported, its orientation not applied.
    func testExifIsReportedNotApplied() throws {
        let source = SyntheticImage.photo(width: 24, height: 16)
        let jpeg = try JPEGEncoder(quality: 95, orientation: .right).encode(source)
        let heic = try tools.heifenc(file: jpeg, "jpg", ["-q", "90"])
        let properties = try XCTUnwrap(ImageFileProperties(data: heic))
        XCTAssertEqual(properties.exif?.orientation, .right)
        XCTAssertEqual(properties.orientation, .up)
        XCTAssertEqual(try ImageDecoder().decode(heic).size, source.size)
    }

    /// An ICC profile (from the PNG's `iCCP`) goes through the colour management.
    func testICCProfileIsConverted() throws {
        let path = "/usr/share/color/icc/ghostscript/a98.icc"
        guard let profile = FileManager.default.contents(atPath: path) else {
            throw XCTSkip("\(path) missing (Debian's libgs-common)")
        }
        let source = SyntheticImage.photo(width: 16, height: 16)
        let png = ColourFixtures.png(source, chunks: [("iCCP", ColourFixtures.iCCPPayload(profile))])
        let heic = try tools.heifenc(file: png, "png", CodecTools.losslessHEIC)
        let properties = try XCTUnwrap(ImageFileProperties(data: heic))
        XCTAssertTrue(properties.hasICCProfile)
        XCTAssertEqual(properties.colorProfile?.isSRGB, false)
        let off = try ImageDecoder().decode(heic, options: DecodingOptions(colorManagement: .off))
        XCTAssertLessThanOrEqual(worstDifference(off, source), 1)
        XCTAssertGreaterThan(worstDifference(try ImageDecoder().decode(heic), source), 10)
    }

    /// At display size the profile's transform runs inside the resize
    /// (issue 41): against the full-size conversion resized.
    func testICCProfileAtDisplaySize() throws {
        let png = try adobeRGBTaggedPNG()
        try assertDisplaySizeConverts(try tools.heifenc(file: png, "png", CodecTools.losslessHEIC), "HEIC Adobe RGB")
    }

    func testRegistered() {
        XCTAssertTrue(ImageDecoderRegistry.default.formats.contains(.heic))
        XCTAssertEqual(ImageDecoder().decoder(for: .heic).format, .heic)
    }
}
