@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// AVIF through libavif: files made at test time by libavif's own encoder
/// (`avifenc`, Debian's libavif-bin; see ``CodecTools``) from PNGs the
/// library writes, plus truncated and corrupted ones.
final class AVIFDecoderTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools(["avifenc": "libavif-bin"])
    }

    override func tearDown() {
        tools?.remove()
        tools = nil
    }

    /// Every pixel different: x and y in red and green, a mix in blue, a
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

    /// The largest difference of any channel between two images of the same size.
    private func worstDifference(_ image: Image, _ expected: Image, frame: Int = 0, ignoringColorOfTransparent: Bool = false)
        -> Int
    {
        XCTAssertEqual(image.size, expected.size)
        guard image.size == expected.size else { return .max }
        var worst = 0
        for y in 0..<image.height {
            for x in 0..<image.width {
                let a = image.pixel(x: x, y: y, frame: frame)
                let b = expected.pixel(x: x, y: y)
                worst = max(worst, abs(Int(a.a) - Int(b.a)))
                if !(ignoringColorOfTransparent && b.a == 0) {
                    worst = max(worst, abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
                }
            }
        }
        return worst
    }

    // MARK: Still images

    func testLosslessIsExact() throws {
        let source = pattern(width: 37, height: 23, alpha: false)
        let avif = try tools.avifenc([source], ["-l"])
        XCTAssertEqual(ImageFormat.sniff(avif), .avif)
        let image = try ImageDecoder().decode(avif)
        XCTAssertEqual(image.format, .avif)
        XCTAssertEqual(image.frames.count, 1)
        XCTAssertEqual(image.frames[0].duration, 0)
        XCTAssertNil(image.loopCount)
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertEqual(image.decodeInfo, DecodeInfo(scaleDenominator: 1, decodedSize: source.size))
        XCTAssertTrue(image.isOpaque)
        XCTAssertEqual(worstDifference(image, source), 0)

        let properties = try XCTUnwrap(ImageFileProperties(data: avif))
        XCTAssertEqual(properties.format, .avif)
        XCTAssertEqual(properties.pixelSize, source.size)
        XCTAssertEqual(properties.bitDepth, 8)
        XCTAssertEqual(properties.frameCount, 1)
        XCTAssertNil(properties.loopCount)
        XCTAssertFalse(properties.hasTransparency)
        XCTAssertEqual(properties.orientation, .up)
        XCTAssertEqual(properties.colorType, .ycbcr)
    }

    func testLossyIsCloseAndOpaque() throws {
        let source = SyntheticImage.quadrants(width: 64, height: 48)
        let image = try AVIFDecoder().decode(try tools.avifenc([source], ["--min", "0", "--max", "10"]))
        XCTAssertEqual(image.size, source.size)
        XCTAssertTrue(image.isOpaque)
        for (x, y) in [(8, 8), (56, 8), (8, 40), (56, 40), (20, 16), (44, 30)] {
            let got = image.pixel(x: x, y: y)
            let want = source.pixel(x: x, y: y)
            XCTAssertEqual(got.a, 255)
            for (a, b) in [(got.r, want.r), (got.g, want.g), (got.b, want.b)] {
                XCTAssertLessThanOrEqual(abs(Int(a) - Int(b)), 12, "(\(x),\(y)): \(got) for \(want)")
            }
        }
    }

    /// Alpha comes back straight (not premultiplied) and exact when coded
    /// losslessly, also from a file whose colour is stored premultiplied.
    func testAlphaIsStraight() throws {
        let source = pattern(width: 30, height: 20, alpha: true)
        let avif = try tools.avifenc([source], ["-l"])
        let image = try ImageDecoder().decode(avif)
        XCTAssertFalse(image.isOpaque)
        XCTAssertEqual(worstDifference(image, source), 0)
        let properties = try XCTUnwrap(ImageFileProperties(data: avif))
        XCTAssertTrue(properties.hasTransparency)
        XCTAssertEqual(properties.colorType, .rgba)

        let flat = SyntheticImage.make(width: 48, height: 32) { out in
            for i in 0..<(48 * 32) {
                let x = i % 48
                out[i * 4] = 200
                out[i * 4 + 1] = 40
                out[i * 4 + 2] = 90
                out[i * 4 + 3] = x < 16 ? 255 : x < 32 ? 128 : 0
            }
        }
        for options in [["--min", "0", "--max", "0", "--minalpha", "0", "--maxalpha", "0"], ["-l", "-p"]] {
            let decoded = try AVIFDecoder().decode(try tools.avifenc([flat], options))
            XCTAssertEqual(decoded.pixel(x: 24, y: 16).a, 128, "\(options)")
            XCTAssertGreaterThan(decoded.pixel(x: 24, y: 16).r, 180, "\(options): premultiplied would be about 100")
            XCTAssertEqual(decoded.pixel(x: 40, y: 16).a, 0, "\(options)")
            XCTAssertLessThanOrEqual(worstDifference(decoded, flat, ignoringColorOfTransparent: true), 4, "\(options)")
        }
    }

    /// 10- and 12-bit files come out as 8-bit RGBA: a lossless file of 8-bit
    /// samples scaled up by the encoder comes back to the same 8-bit values
    /// (within a level of rounding).
    func testTenAndTwelveBitsBecomeEightBits() throws {
        let source = pattern(width: 33, height: 17, alpha: true)
        for depth in [10, 12] {
            let avif = try tools.avifenc([source], ["-l", "-d", String(depth)])
            XCTAssertEqual(ImageFileProperties(data: avif)?.bitDepth, depth)
            let image = try ImageDecoder().decode(avif)
            XCTAssertEqual(image.bytesPerRow, 33 * 4)
            XCTAssertLessThanOrEqual(worstDifference(image, source), 1, "\(depth) bits")
        }
    }

    /// `irot` (quarter turns anticlockwise) then `imir` (0: top to bottom,
    /// 1: left to right) are applied, checked against a reference written
    /// from the HEIF definitions, not from the decoder's own table.
    func testRotationAndMirroringAreApplied() throws {
        let source = pattern(width: 9, height: 5, alpha: false)
        for rotation in 0..<4 {
            for mirror in [nil, 0, 1] as [Int?] {
                var options = ["-l", "--irot", String(rotation)]
                if let mirror { options += ["--imir", String(mirror)] }
                let avif = try tools.avifenc([source], options)
                let expected = OrientationReference.apply(source, rotation: rotation, mirror: mirror)
                let properties = try XCTUnwrap(ImageFileProperties(data: avif))
                XCTAssertEqual(properties.pixelSize, source.size)
                XCTAssertEqual(properties.uprightPixelSize, expected.size, "irot \(rotation) imir \(String(describing: mirror))")
                let image = try ImageDecoder().decode(avif)
                XCTAssertEqual(image.originalSize, expected.size)
                XCTAssertEqual(worstDifference(image, expected), 0, "irot \(rotation) imir \(String(describing: mirror))")
                // Downsampled to an upright target: the rotation still applies.
                let small = try ImageDecoder().decode(
                    avif, options: DecodingOptions(targetSize: PixelSize(width: expected.width, height: expected.height)))
                XCTAssertEqual(worstDifference(small, expected), 0)
            }
        }
    }

    /// `clap` (clean aperture, written by `avifenc --crop`) crops the
    /// decoded image before `irot` and `imir` (MIAF's order); the header's
    /// size is the cropped one, while the pixel limit counts the decoded frame.
    func testCleanApertureCropsBeforeRotation() throws {
        let source = pattern(width: 21, height: 13, alpha: true)
        let (x, y, w, h) = (3, 2, 11, 7)
        let cropped = SyntheticImage.make(width: w, height: h) { out in
            for row in 0..<h {
                for column in 0..<w {
                    let p = source.pixel(x: x + column, y: y + row)
                    (out + (row * w + column) * 4).update(from: [p.r, p.g, p.b, p.a], count: 4)
                }
            }
        }
        for (rotation, mirror) in [(0, nil), (1, nil), (3, 0), (2, 1)] as [(Int, Int?)] {
            var options = ["-l", "--crop", "\(x),\(y),\(w),\(h)", "--irot", String(rotation)]
            if let mirror { options += ["--imir", String(mirror)] }
            let avif = try tools.avifenc([source], options)
            let expected = OrientationReference.apply(cropped, rotation: rotation, mirror: mirror)
            let label = "irot \(rotation) imir \(String(describing: mirror))"
            let properties = try XCTUnwrap(ImageFileProperties(data: avif))
            XCTAssertEqual(properties.pixelSize, PixelSize(width: w, height: h), label)
            XCTAssertEqual(properties.uprightPixelSize, expected.size, label)
            let mdat = try XCTUnwrap(avif.firstRange(of: Data("mdat".utf8)))
            XCTAssertEqual(ImageFileProperties(prefix: Data(avif.prefix(mdat.upperBound + 8))), properties, label)
            let image = try ImageDecoder().decode(avif)
            XCTAssertEqual(image.originalSize, expected.size, label)
            XCTAssertEqual(image.decodeInfo.decodedSize, source.size, label)
            XCTAssertEqual(worstDifference(image, expected), 0, label)
            let small = try ImageDecoder().decode(
                avif, options: DecodingOptions(targetSize: PixelSize(width: expected.width, height: expected.height)))
            XCTAssertEqual(worstDifference(small, expected), 0, label)
        }
        // The limit counts the decoded frame, not the crop.
        let avif = try tools.avifenc([source], ["-l", "--crop", "\(x),\(y),\(w),\(h)"])
        let failure = assertDecodingFails {
            try ImageDecoder().decode(avif, options: DecodingOptions(maxPixels: w * h + 1))
        }
        XCTAssertEqual(failure?.stage, .limits)
        let image = try ImageDecoder().decode(avif, options: DecodingOptions(maxPixels: source.width * source.height))
        XCTAssertNotNil(DecodingOptions(maxPixels: w * h + 1).limitFailure(for: image), "a shared image is checked the same")
    }

    /// AV1 has no reduced-size decode: the full image is decoded, then
    /// resized to the display size (the default `.high`: boxed, then Lanczos3).
    func testDownsampled() throws {
        let source = SyntheticImage.photo(width: 120, height: 80)
        let avif = try tools.avifenc([source], ["-l"])
        let image = try ImageDecoder().decode(
            avif, options: DecodingOptions(targetSize: PixelSize(width: 30, height: 20), contentMode: .aspectFit))
        XCTAssertEqual(image.size, PixelSize(width: 30, height: 20))
        XCTAssertEqual(image.originalSize, source.size)
        XCTAssertTrue(image.isOpaque)
        let reference = try ImageResizer.resize(source, to: PixelSize(width: 30, height: 20), quality: .high)
        XCTAssertLessThanOrEqual(worstDifference(image, reference), 1)
    }

    // MARK: Sequences

    func testSequenceFramesAndDurations() throws {
        let red = SyntheticImage.solid(width: 20, height: 10, color: RGBA(r: 255, g: 0, b: 0))
        let green = SyntheticImage.solid(width: 20, height: 10, color: RGBA(r: 0, g: 255, b: 0))
        let blue = SyntheticImage.solid(width: 20, height: 10, color: RGBA(r: 0, g: 0, b: 255))
        let avif = try tools.avifSequence([(red, 100), (green, 250), (blue, 40)], ["-l"])
        let properties = try XCTUnwrap(ImageFileProperties(data: avif))
        XCTAssertEqual(properties.frameCount, 3)
        XCTAssertEqual(properties.loopCount, 0)
        // The header probe has them once the `moov` box is in, before the AV1 data.
        let mdat = try XCTUnwrap(avif.firstRange(of: Data("mdat".utf8)))
        XCTAssertEqual(ImageFileProperties(prefix: Data(avif.prefix(mdat.upperBound + 4))), properties)
        let image = try ImageDecoder().decode(avif)
        XCTAssertEqual(image.frames.count, 3)
        XCTAssertTrue(image.isAnimated)
        XCTAssertEqual(image.loopCount, 0)
        XCTAssertEqual(image.frames.map(\.duration), [0.1, 0.25, 0.04])
        for (index, color) in [red, green, blue].enumerated() {
            XCTAssertEqual(worstDifference(image, color, frame: index), 0, "frame \(index)")
        }
        XCTAssertEqual(image.decodeInfo.countedPixels, 3 * max(200, AVIFDecoder.minimumFramePixels))

        let small = try ImageDecoder().decode(avif, options: DecodingOptions(targetSize: PixelSize(width: 10, height: 5)))
        XCTAssertEqual(small.size, PixelSize(width: 10, height: 5))
        XCTAssertEqual(small.frames.count, 3)
        XCTAssertEqual(small.pixel(x: 5, y: 2, frame: 1), RGBA(r: 0, g: 255, b: 0))
    }

    // MARK: Limits

    func testLimitsAreCheckedFromTheBoxes() throws {
        let source = SyntheticImage.photo(width: 40, height: 30)
        let still = try tools.avifenc([source])
        XCTAssertNoThrow(try AVIFDecoder().decode(still, options: DecodingOptions(maxPixels: 1200)))
        let failure = assertDecodingFails { try AVIFDecoder().decode(still, options: DecodingOptions(maxPixels: 1199)) }
        XCTAssertEqual(failure?.stage, .limits)
        XCTAssertEqual(failure?.isPixelLimit, true)
        XCTAssertEqual(failure?.format, .avif)

        let frame = SyntheticImage.solid(width: 40, height: 30, color: RGBA(r: 9, g: 9, b: 9))
        let sequence = try tools.avifSequence([(frame, 100), (source, 100), (frame, 100)])
        let counted = 3 * max(1200, AVIFDecoder.minimumFramePixels)
        XCTAssertNoThrow(try AVIFDecoder().decode(sequence, options: DecodingOptions(maxPixels: counted)))
        XCTAssertEqual(
            assertDecodingFails { try AVIFDecoder().decode(sequence, options: DecodingOptions(maxPixels: counted - 1)) }?.stage,
            .limits)
        XCTAssertNoThrow(try AVIFDecoder().decode(sequence, options: DecodingOptions(maxFrames: 3)))
        let frames = assertDecodingFails { try AVIFDecoder().decode(sequence, options: DecodingOptions(maxFrames: 2)) }
        XCTAssertEqual(frames?.stage, .limits)
        XCTAssertEqual(frames?.reason.contains("3 frames"), true)
    }

    // MARK: Damage

    /// A file cut anywhere fails with a typed AVIF error (`header` while its
    /// boxes are cut, `pixels` once its AV1 data is), never a crash or a
    /// half-decoded image.
    func testTruncatedFilesFailTyped() throws {
        let files = [
            try tools.avifenc([SyntheticImage.photo(width: 64, height: 48)]),
            try tools.avifenc([pattern(width: 30, height: 20, alpha: true)], ["-l"]),
            try tools.avifSequence([
                (SyntheticImage.photo(width: 32, height: 16), 100), (SyntheticImage.quadrants(width: 32, height: 16), 100),
            ]),
        ]
        for (index, data) in files.enumerated() {
            var lengths = Set([1, 4, 8, 12, 16, 24, 32, 64, data.count / 2, data.count - 10, data.count - 1])
            lengths.formUnion(stride(from: 12, to: data.count, by: max(1, data.count / 30)))
            var stages: Set<DecodingFailure.Stage> = []
            for length in lengths.sorted() where length < data.count {
                let failure = assertDecodingFails { try AVIFDecoder().decode(Data(data.prefix(length))) }
                XCTAssertEqual(failure?.format, .avif, "file \(index) cut to \(length)")
                XCTAssertTrue(
                    [.header, .pixels].contains(failure?.stage), "file \(index) cut to \(length): \(failure?.description ?? "")")
                if let stage = failure?.stage { stages.insert(stage) }
            }
            XCTAssertEqual(stages, [.header, .pixels], "file \(index)")
        }
    }

    /// Damaged boxes fail at stage `header`; damage anywhere ends in a typed
    /// error or a whole image of the right size, never a crash.
    func testCorruptFilesFailTypedOrDecodeWhole() throws {
        let data = try tools.avifenc([SyntheticImage.photo(width: 64, height: 48)])
        var badType = data
        badType.replaceSubrange(4..<8, with: Data("ftyq".utf8))
        XCTAssertNil(ImageFormat.sniff(badType))
        // The `meta` box's type, wherever it is.
        let meta = try XCTUnwrap(data.firstRange(of: Data("meta".utf8)))
        var badMeta = data
        badMeta.replaceSubrange(meta, with: Data("mexa".utf8))
        let failure = assertDecodingFails { try ImageDecoder().decode(badMeta) }
        XCTAssertEqual(failure?.stage, .header)
        XCTAssertEqual(failure?.format, .avif)
        XCTAssertNil(ImageFileProperties(data: badMeta))

        var random = SplitMix64(seed: 32)
        for _ in 0..<60 {
            var damaged = [UInt8](data)
            for _ in 0..<(1 + Int(random.next() % 4)) {
                let offset = 12 + Int(random.next() % UInt64(data.count - 12))
                damaged[offset] = UInt8(truncatingIfNeeded: random.next())
            }
            do {
                let image = try ImageDecoder().decode(Data(damaged))
                XCTAssertEqual(image.size, PixelSize(width: 64, height: 48))
            } catch {
                guard case .decoding(let failure, _) = error else { return XCTFail("\(error)") }
                XCTAssertTrue([.header, .pixels, .sniffing].contains(failure.stage), failure.description)
            }
        }
    }

    // MARK: Metadata and colour

    /// The header probe: size, orientation, depth and alpha from the first
    /// bytes, before the AV1 data (an `avifenc` file puts `mdat` last).
    func testHeaderProbeReadsABodysFirstBytes() throws {
        let source = pattern(width: 60, height: 40, alpha: true)
        let avif = try tools.avifenc([source], ["-l", "-d", "10", "--irot", "1"])
        let mdat = try XCTUnwrap(avif.firstRange(of: Data("mdat".utf8)))
        let prefix = Data(avif.prefix(mdat.upperBound + 8))
        let properties = try XCTUnwrap(ImageFileProperties(prefix: prefix))
        XCTAssertEqual(properties, ImageFileProperties(data: avif))
        XCTAssertEqual(properties.pixelSize, PixelSize(width: 60, height: 40))
        XCTAssertEqual(properties.uprightPixelSize, PixelSize(width: 40, height: 60))
        XCTAssertEqual(properties.orientation, .left)
        XCTAssertEqual(properties.bitDepth, 10)
        XCTAssertTrue(properties.hasTransparency)
        XCTAssertNil(ImageFileProperties(prefix: Data(avif.prefix(40))))
        // Cut in its AV1 data, the file still has its properties, and fails at stage `pixels`.
        XCTAssertEqual(ImageFileProperties(data: prefix), properties)
        XCTAssertEqual(assertDecodingFails { try ImageDecoder().decode(prefix) }?.stage, .pixels)
    }

    /// An `Exif` item is read into the properties. `avifenc` turns its
    /// orientation into `irot`/`imir` (here 6, a quarter turn clockwise:
    /// `irot` 3), which the decoder applies.
    func testExifIsReported() throws {
        let exif = EXIFBuilder(bigEndian: false, image: [(0x0112, .short([6])), (0x0110, .ascii("AVIF camera"))])
        let path = try tools.file(Data(exif.tiff()), "exif.bin")
        let source = pattern(width: 12, height: 8, alpha: false)
        let avif = try tools.avifenc([source], ["-l", "--exif", path])
        let properties = try XCTUnwrap(ImageFileProperties(data: avif))
        XCTAssertEqual(properties.exif?.model, "AVIF camera")
        XCTAssertEqual(properties.exif?.orientation, .right)
        XCTAssertEqual(properties.orientation, .right)
        let image = try ImageDecoder().decode(avif)
        XCTAssertEqual(image.size, source.size.transposed)
        XCTAssertEqual(worstDifference(image, try OrientationTransform.apply(.right, to: source)), 0)
    }

    /// A `colr` ICC profile goes through the colour management: Adobe RGB's
    /// saturated green becomes a different sRGB green, and nothing changes
    /// with colour management off.
    func testICCProfileIsConverted() throws {
        let profile = "/usr/share/color/icc/ghostscript/a98.icc"
        guard FileManager.default.fileExists(atPath: profile) else {
            throw XCTSkip("\(profile) missing (Debian's libgs-common)")
        }
        // Mid-range colours: Adobe RGB's primaries would clip to sRGB's.
        let source = SyntheticImage.photo(width: 16, height: 16)
        let avif = try tools.avifenc([source], ["-l", "--icc", profile])
        let properties = try XCTUnwrap(ImageFileProperties(data: avif))
        XCTAssertTrue(properties.hasICCProfile)
        XCTAssertEqual(properties.colorProfile?.isSRGB, false)
        XCTAssertNil(properties.colorProfile?.warning)
        let off = try ImageDecoder().decode(avif, options: DecodingOptions(colorManagement: .off))
        XCTAssertEqual(worstDifference(off, source), 0)
        let converted = try ImageDecoder().decode(avif)
        XCTAssertGreaterThan(worstDifference(converted, source), 10)
    }

    /// At display size the profile's transform runs inside the resize
    /// (issue 41): against the full-size conversion resized.
    func testICCProfileAtDisplaySize() throws {
        let profile = "/usr/share/color/icc/ghostscript/a98.icc"
        guard FileManager.default.fileExists(atPath: profile) else {
            throw XCTSkip("\(profile) missing (Debian's libgs-common)")
        }
        let source = SyntheticImage.photo(width: 96, height: 72, seed: 41)
        try assertDisplaySizeConverts(try tools.avifenc([source], ["-l", "--icc", profile]), "AVIF Adobe RGB")
    }

    func testRegisteredAndAccepted() {
        XCTAssertTrue(ImageDecoderRegistry.default.formats.contains(.avif))
        XCTAssertTrue(ImageDecoderRegistry.default.acceptHeader.contains("image/avif"))
        XCTAssertEqual(ImageDecoder().decoder(for: .avif).format, .avif)
    }
}
