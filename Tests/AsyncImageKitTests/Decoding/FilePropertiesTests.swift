@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// ``ImageFileProperties`` and ``EXIFProperties`` read from generated files,
/// hand-built EXIF blocks in both byte orders, every corpus file (checked
/// against the manifest and its header notes) and damaged input; and the PNG
/// decoder applying an `eXIf` orientation.
final class FilePropertiesTests: XCTestCase {
    private let red = RGBA(r: 255, g: 0, b: 0)
    private let green = RGBA(r: 0, g: 255, b: 0)
    private let blue = RGBA(r: 0, g: 0, b: 255)
    private let white = RGBA(r: 255, g: 255, b: 255)

    /// The colour at the centre of each quadrant, in reading order.
    private func quadrants(_ image: Image) -> [RGBA] {
        let (w, h) = (image.width, image.height)
        return [(w / 4, h / 4), (w * 3 / 4, h / 4), (w / 4, h * 3 / 4), (w * 3 / 4, h * 3 / 4)].map {
            image.pixel(x: $0.0, y: $0.1)
        }
    }

    /// Where the quadrants (red, green, blue, white) land for each orientation.
    private var expectedQuadrants: [ImageOrientation: [RGBA]] {
        [
            .up: [red, green, blue, white],
            .upMirrored: [green, red, white, blue],
            .down: [white, blue, green, red],
            .downMirrored: [blue, white, red, green],
            .leftMirrored: [red, blue, green, white],
            .right: [blue, red, white, green],
            .rightMirrored: [white, green, blue, red],
            .left: [green, white, red, blue],
        ]
    }

    /// A camera's EXIF: IFD0, Exif and GPS directories.
    private func cameraEXIF(bigEndian: Bool, south: Bool, west: Bool) -> EXIFBuilder {
        var builder = EXIFBuilder(bigEndian: bigEndian)
        builder.image = [
            (0x010F, .ascii("Canon")), (0x0110, .ascii("Canon EOS 5D Mark IV ")), (0x0112, .short([6])),
            (0x011A, .rational([(72, 1)])),
        ]
        builder.exif = [
            (0x829A, .rational([(1, 250)])), (0x829D, .rational([(28, 10)])), (0x8827, .short([400])),
            (0x9003, .ascii("2021:07:14 16:32:05")), (0x9011, .ascii("+02:00")), (0x920A, .rational([(35, 1)])),
            (0x9201, .srational([(-8, 1)])),
        ]
        builder.gps = [
            (0x0000, .byte([2, 3, 0, 0])),
            (0x0001, .ascii(south ? "S" : "N")), (0x0002, .rational([(33, 1), (51, 1), (3564, 100)])),
            (0x0003, .ascii(west ? "W" : "E")), (0x0004, .rational([(151, 1), (12, 1), (3312, 100)])),
            (0x0005, .byte([1])), (0x0006, .rational([(125, 10)])),
        ]
        return builder
    }

    private func assertCameraEXIF(
        _ exif: EXIFProperties?, bigEndian: Bool, south: Bool, west: Bool, file: StaticString = #filePath,
        line: UInt = #line
    ) {
        guard let exif else { return XCTFail("no EXIF", file: file, line: line) }
        XCTAssertEqual(exif.isBigEndian, bigEndian, file: file, line: line)
        XCTAssertEqual(exif.orientation, .right, file: file, line: line)
        XCTAssertEqual(exif.make, "Canon", file: file, line: line)
        XCTAssertEqual(exif.model, "Canon EOS 5D Mark IV", file: file, line: line)
        XCTAssertEqual(exif.dateTimeOriginal, "2021:07:14 16:32:05", file: file, line: line)
        XCTAssertEqual(exif.offsetTimeOriginal, "+02:00", file: file, line: line)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let utc = calendar.date(from: DateComponents(year: 2021, month: 7, day: 14, hour: 14, minute: 32, second: 5))
        XCTAssertEqual(exif.dateTaken, utc, file: file, line: line)
        XCTAssertEqual(exif.exposureTime, EXIFRational(numerator: 1, denominator: 250), file: file, line: line)
        XCTAssertEqual(exif.exposureTime?.value ?? 0, 0.004, accuracy: 1e-12, file: file, line: line)
        XCTAssertEqual(exif.fNumber ?? 0, 2.8, accuracy: 1e-12, file: file, line: line)
        XCTAssertEqual(exif.isoSpeed, 400, file: file, line: line)
        XCTAssertEqual(exif.focalLength, 35, file: file, line: line)
        let latitude = 33 + 51.0 / 60 + 35.64 / 3600
        let longitude = 151 + 12.0 / 60 + 33.12 / 3600
        XCTAssertEqual(exif.gpsLatitude ?? 0, south ? -latitude : latitude, accuracy: 1e-9, file: file, line: line)
        XCTAssertEqual(exif.gpsLongitude ?? 0, west ? -longitude : longitude, accuracy: 1e-9, file: file, line: line)
        XCTAssertEqual(exif.gpsAltitude, -12.5, file: file, line: line)
        let expectedTags: Set<EXIFTag> = [
            .make, .model, .orientation, EXIFTag(.image, 0x011A), .exifDirectory, .gpsDirectory,
            .exposureTime, .fNumber, .isoSpeed, .dateTimeOriginal, .offsetTimeOriginal, .focalLength,
            EXIFTag(.exif, 0x9201), EXIFTag(.gps, 0x0000), .gpsLatitudeRef, .gpsLatitude, .gpsLongitudeRef,
            .gpsLongitude, .gpsAltitudeRef, .gpsAltitude,
        ]
        XCTAssertEqual(exif.tagsPresent, expectedTags, file: file, line: line)
    }

    // MARK: - JPEG

    func testJPEGFramePropertiesOfEncodedFiles() throws {
        let source = SyntheticImage.quadrants(width: 96, height: 64)
        let cases: [(JPEGEncoder, ImageColorType, UInt8)] = [
            (JPEGEncoder(), .ycbcr, 0xC0),
            (JPEGEncoder(progressive: true), .ycbcr, 0xC2),
            (JPEGEncoder(colorModel: .grayscale), .grayscale, 0xC0),
            (JPEGEncoder(colorModel: .cmyk), .cmyk, 0xC0),
        ]
        for (encoder, colorType, marker) in cases {
            let jpeg = try encoder.encode(source)
            let properties = try XCTUnwrap(ImageFileProperties(data: jpeg))
            XCTAssertEqual(properties.format, .jpeg)
            XCTAssertEqual(properties.pixelSize, PixelSize(width: 96, height: 64))
            XCTAssertEqual(properties.uprightPixelSize, PixelSize(width: 96, height: 64))
            XCTAssertEqual(properties.orientation, .up)
            XCTAssertEqual(properties.bitDepth, 8)
            XCTAssertEqual(properties.colorType, colorType, "\(encoder.colorModel)")
            XCTAssertEqual(properties.frameCount, 1)
            XCTAssertNil(properties.loopCount)
            XCTAssertFalse(properties.hasICCProfile)
            XCTAssertFalse(properties.hasTransparency)
            XCTAssertNil(properties.exif)
            XCTAssertEqual(properties.jpeg?.startOfFrameMarker, marker)
            XCTAssertEqual(properties.isInterlaced, encoder.progressive)
            XCTAssertEqual(properties.jpeg?.process, encoder.progressive ? .progressive : .baseline)
            XCTAssertEqual(properties.jpeg?.isArithmeticCoded, false)
            if encoder.colorModel == .cmyk { XCTAssertEqual(properties.jpeg?.adobeTransform, 0) }
            XCTAssertEqual(properties.jpeg?.componentCount, [.grayscale: 1, .cmyk: 4][colorType] ?? 3)
        }
    }

    func testJPEGOrientationGivesTheUprightSize() throws {
        let source = SyntheticImage.quadrants(width: 80, height: 48)
        for orientation in ImageOrientation.allCases {
            let jpeg = try JPEGEncoder(orientation: orientation).encode(source)
            let properties = try XCTUnwrap(ImageFileProperties(data: jpeg))
            XCTAssertEqual(properties.orientation, orientation)
            XCTAssertEqual(properties.exif?.orientation, orientation)
            XCTAssertEqual(properties.exif?.tagsPresent, [.orientation])
            XCTAssertEqual(properties.pixelSize, PixelSize(width: 80, height: 48))
            XCTAssertEqual(properties.uprightPixelSize, try JPEGDecoder().decode(jpeg).originalSize)
        }
    }

    func testCameraEXIFInJPEGInBothByteOrders() throws {
        let jpeg = try JPEGEncoder().encode(SyntheticImage.quadrants(width: 40, height: 30))
        for (bigEndian, south, west) in [(false, true, false), (true, false, true)] {
            let builder = cameraEXIF(bigEndian: bigEndian, south: south, west: west)
            let tagged = EXIFBuilder.insertingSegments([(0xE1, builder.app1Payload())], into: jpeg)
            let properties = try XCTUnwrap(ImageFileProperties(data: tagged))
            assertCameraEXIF(properties.exif, bigEndian: bigEndian, south: south, west: west)
            XCTAssertEqual(properties.orientation, .right)
            XCTAssertEqual(properties.uprightPixelSize, PixelSize(width: 30, height: 40))
            // The decoder reads the same orientation.
            let image = try JPEGDecoder().decode(tagged)
            XCTAssertEqual(image.orientation, .right)
            XCTAssertEqual(image.size, PixelSize(width: 30, height: 40))
            // The block on its own, as a PNG eXIf payload would hold it.
            assertCameraEXIF(
                EXIFProperties(tiff: Data(builder.tiff())), bigEndian: bigEndian, south: south, west: west)
        }
    }

    func testJPEGICCProfileAndAdobeYCCK() throws {
        let jpeg = try JPEGEncoder(colorModel: .cmyk).encode(SyntheticImage.quadrants(width: 16, height: 16))
        let icc = Array("ICC_PROFILE".utf8) + [0, 1, 1] + [UInt8](repeating: 7, count: 64)
        let withICC = EXIFBuilder.insertingSegments([(0xE2, icc)], into: jpeg)
        XCTAssertEqual(ImageFileProperties(data: withICC)?.hasICCProfile, true)
        XCTAssertEqual(ImageFileProperties(data: jpeg)?.hasICCProfile, false)
        // The encoder's Adobe segment (transform 0) replaced by one with transform 2: YCCK.
        let adobe = Array("Adobe".utf8) + [0, 100, 0, 0, 0, 0, 2]
        let ycck = EXIFBuilder.insertingSegments([(0xEE, adobe)], into: try stripAdobe(jpeg))
        XCTAssertEqual(ImageFileProperties(data: ycck)?.colorType, .ycck)
        XCTAssertEqual(ImageFileProperties(data: ycck)?.jpeg?.adobeTransform, 2)
    }

    /// `jpeg` without its APP14 segments.
    private func stripAdobe(_ jpeg: Data) throws -> Data {
        let bytes = [UInt8](jpeg)
        var out: [UInt8] = [0xFF, 0xD8]
        var offset = 2
        while offset + 4 <= bytes.count, bytes[offset] == 0xFF, bytes[offset + 1] != 0xDA {
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if bytes[offset + 1] != 0xEE { out += bytes[offset..<(offset + 2 + length)] }
            offset += 2 + length
        }
        return Data(out + bytes[offset...])
    }

    // MARK: - PNG

    func testPNGHeaderProperties() throws {
        let cases: [(RawPNGWriter.ColorType, Int, ImageColorType)] = [
            (.gray, 1, .grayscale), (.gray, 16, .grayscale), (.rgb, 8, .rgb), (.rgb, 16, .rgb),
            (.palette, 2, .palette), (.palette, 8, .palette), (.grayAlpha, 8, .grayscaleAlpha), (.rgba, 16, .rgba),
        ]
        for (type, depth, colorType) in cases {
            for interlaced in [false, true] {
                let channels = [RawPNGWriter.ColorType.gray: 1, .palette: 1, .grayAlpha: 2, .rgb: 3][type] ?? 4
                let palette = type == .palette ? (0..<(1 << depth)).map { RGBA(r: UInt8($0), g: 0, b: 0) } : []
                let png = RawPNGWriter.encode(
                    width: 7, height: 5, colorType: type, bitDepth: depth,
                    samples: [UInt16](repeating: 1, count: 35 * channels), palette: palette, interlaced: interlaced)
                let properties = try XCTUnwrap(ImageFileProperties(data: png))
                XCTAssertEqual(properties.format, .png)
                XCTAssertEqual(properties.pixelSize, PixelSize(width: 7, height: 5))
                XCTAssertEqual(properties.bitDepth, depth)
                XCTAssertEqual(properties.colorType, colorType)
                XCTAssertEqual(properties.isInterlaced, interlaced)
                XCTAssertEqual(properties.frameCount, 1)
                XCTAssertEqual(properties.hasTransparency, type == .rgba || type == .grayAlpha)
                XCTAssertFalse(properties.hasICCProfile)
                XCTAssertNil(properties.exif)
                XCTAssertNil(properties.jpeg)
                XCTAssertNil(properties.animatedPNGFrameCount)
            }
        }
    }

    func testPNGAncillaryChunks() throws {
        let builder = cameraEXIF(bigEndian: true, south: true, west: true)
        let iccp = Data("sRGB".utf8) + Data([0, 0]) + Data(repeating: 1, count: 16)  // (not a real profile: only its presence is read)
        let actl = Data([0, 0, 0, 12, 0, 0, 0, 3])
        let png = RawPNGWriter.encode(
            width: 4, height: 2, colorType: .palette, bitDepth: 1, samples: [UInt16](repeating: 0, count: 8),
            palette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)], transparency: Data([0]),
            chunks: [("iCCP", iccp), ("acTL", actl), ("eXIf", Data(builder.tiff()))])
        let properties = try XCTUnwrap(ImageFileProperties(data: png))
        XCTAssertTrue(properties.hasICCProfile)
        XCTAssertTrue(properties.hasTransparency)
        XCTAssertEqual(properties.animatedPNGFrameCount, 12)
        XCTAssertEqual(properties.animatedPNGPlayCount, 3)
        XCTAssertEqual(properties.frameCount, 1)
        XCTAssertEqual(properties.orientation, .right)
        XCTAssertEqual(properties.pixelSize, PixelSize(width: 4, height: 2))
        XCTAssertEqual(properties.uprightPixelSize, PixelSize(width: 2, height: 4))
        assertCameraEXIF(properties.exif, bigEndian: true, south: true, west: true)
    }

    /// Every orientation in an `eXIf` chunk is applied, pixel for pixel (PNG is lossless).
    func testPNGEXIFOrientationIsApplied() throws {
        let source = SyntheticImage.quadrants(width: 80, height: 48)
        for orientation in ImageOrientation.allCases {
            var builder = EXIFBuilder(bigEndian: orientation.rawValue % 2 == 0)
            builder.image = [(0x0112, .short([UInt16(orientation.rawValue)]))]
            let png = RawPNGWriter.encode(source, chunks: [("eXIf", Data(builder.tiff()))])
            let image = try PNGDecoder().decode(png)
            let upright = orientation.swapsDimensions ? PixelSize(width: 48, height: 80) : PixelSize(width: 80, height: 48)
            XCTAssertEqual(image.orientation, orientation)
            XCTAssertEqual(image.size, upright, "\(orientation)")
            XCTAssertEqual(image.originalSize, upright, "\(orientation)")
            XCTAssertEqual(image.decodeInfo.decodedSize, PixelSize(width: 80, height: 48))
            XCTAssertEqual(quadrants(image), expectedQuadrants[orientation], "\(orientation)")
            // Every pixel, against the transform's definition.
            for y in 0..<upright.height {
                for x in 0..<upright.width {
                    let (sx, sy) = OrientationTransform.sourcePoint(orientation, x: x, y: y, width: 80, height: 48)
                    let want = SyntheticImage.quadrantColor(x: sx, y: sy, width: 80, height: 48)
                    guard image.pixel(x: x, y: y) == want else {
                        return XCTFail("\(orientation): pixel (\(x),\(y)) is \(image.pixel(x: x, y: y)), want \(want)")
                    }
                }
            }
            XCTAssertEqual(ImageFileProperties(data: png)?.uprightPixelSize, image.size)
        }
    }

    /// The target size is for the upright image, as for JPEG.
    func testPNGEXIFOrientationWithATargetSize() throws {
        var builder = EXIFBuilder(bigEndian: false)
        builder.image = [(0x0112, .short([6]))]
        let png = RawPNGWriter.encode(
            SyntheticImage.quadrants(width: 200, height: 100), chunks: [("eXIf", Data(builder.tiff()))])
        let target = PixelSize(width: 50, height: 50)

        let filled = try PNGDecoder().decode(png, options: DecodingOptions(targetSize: target))
        XCTAssertEqual(filled.size, PixelSize(width: 50, height: 100))
        XCTAssertEqual(filled.originalSize, PixelSize(width: 100, height: 200))
        XCTAssertEqual(filled.orientation, .right)
        XCTAssertEqual(quadrants(filled), [blue, red, white, green])

        let fitted = try PNGDecoder().decode(png, options: DecodingOptions(targetSize: target, contentMode: .aspectFit))
        XCTAssertEqual(fitted.size, PixelSize(width: 25, height: 50))
        XCTAssertEqual(fitted.originalSize, PixelSize(width: 100, height: 200))
        XCTAssertEqual(quadrants(fitted), [blue, red, white, green])

        // Through the registry: the natural 50x100, framed (Nimbus' fill crops the excess).
        let viaRegistry = try ImageDecoder().decode(png, options: DecodingOptions(targetSize: target))
        XCTAssertEqual(viaRegistry.size, PixelSize(width: 50, height: 50))
        let uncropped = try ImageDecoder().decode(png, options: DecodingOptions(targetSize: target, scaling: .fillLeavesExcess))
        XCTAssertEqual(uncropped.size, PixelSize(width: 50, height: 100))
    }

    /// An `eXIf` after the image data (allowed by the 2017 extension, not by
    /// PNG's third edition) is reported but its orientation is not applied,
    /// as browsers do; an invalid orientation value or damaged block is ignored.
    func testPNGEXIFAfterImageDataAndInvalidOrientation() throws {
        let source = SyntheticImage.quadrants(width: 8, height: 4)
        var samples: [UInt16] = []
        for y in 0..<4 {
            for x in 0..<8 {
                let p = source.pixel(x: x, y: y)
                samples += [UInt16(p.r), UInt16(p.g), UInt16(p.b), UInt16(p.a)]
            }
        }
        var builder = EXIFBuilder(bigEndian: true)
        builder.image = [(0x0112, .short([6]))]
        let late = RawPNGWriter.encode(
            width: 8, height: 4, colorType: .rgba, bitDepth: 8, samples: samples,
            trailingChunks: [("eXIf", Data(builder.tiff()))])
        let image = try PNGDecoder().decode(late)
        XCTAssertEqual(image.orientation, .up)
        XCTAssertEqual(image.size, PixelSize(width: 8, height: 4))
        XCTAssertEqual(image.pixel(x: 0, y: 0), red)
        let properties = try XCTUnwrap(ImageFileProperties(data: late))
        XCTAssertEqual(properties.orientation, .up)
        XCTAssertEqual(properties.uprightPixelSize, PixelSize(width: 8, height: 4))
        XCTAssertEqual(properties.exif?.orientation, .right)

        builder.image = [(0x0112, .short([9]))]
        for payload in [Data(builder.tiff()), Data([0x4D, 0x4D, 0, 42, 0xFF, 0xFF, 0xFF, 0xFF]), Data()] {
            let png = RawPNGWriter.encode(source, chunks: [("eXIf", payload)])
            let decoded = try PNGDecoder().decode(png)
            XCTAssertEqual(decoded.orientation, .up)
            XCTAssertEqual(decoded.pixel(x: 0, y: 0), red)
        }
    }

    // MARK: - GIF

    func testGIFProperties() throws {
        let palette = [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255)]
        let frames = [
            GIFFrameSpec(width: 8, height: 6, indices: [UInt8](repeating: 1, count: 48), interlaced: true),
            GIFFrameSpec.filled(2, left: 2, top: 1, width: 4, height: 4, transparentIndex: 0),
            GIFFrameSpec.filled(3, width: 8, height: 6),
        ]
        for loop in [nil, 0, 5] as [Int?] {
            let gif = try GIFWriter.encode(width: 8, height: 6, globalPalette: palette, frames: frames, loopCount: loop)
            let properties = try XCTUnwrap(ImageFileProperties(data: gif))
            XCTAssertEqual(properties.format, .gif)
            XCTAssertEqual(properties.pixelSize, PixelSize(width: 8, height: 6))
            XCTAssertEqual(properties.frameCount, 3)
            XCTAssertEqual(properties.loopCount, loop)
            XCTAssertEqual(properties.colorType, .palette)
            XCTAssertEqual(properties.bitDepth, 2)
            XCTAssertTrue(properties.isInterlaced)
            XCTAssertTrue(properties.hasTransparency)
            XCTAssertFalse(properties.hasICCProfile)
            XCTAssertNil(properties.exif)
            let image = try GIFDecoder().decode(gif)
            XCTAssertEqual(image.frames.count, properties.frameCount)
            XCTAssertEqual(image.loopCount, properties.loopCount)
        }
        // A single opaque frame with only a local palette.
        let still = try GIFWriter.encode(
            width: 3, height: 3, globalPalette: nil,
            frames: [GIFFrameSpec(width: 3, height: 3, indices: [UInt8](repeating: 1, count: 9), localPalette: palette + palette)],
            loopCount: nil)
        let properties = try XCTUnwrap(ImageFileProperties(data: still))
        XCTAssertEqual(properties.frameCount, 1)
        XCTAssertEqual(properties.bitDepth, 3)
        XCTAssertFalse(properties.hasTransparency)
        XCTAssertFalse(properties.isInterlaced)
        XCTAssertNil(properties.loopCount)
    }

    // MARK: - Corpus

    /// Every corpus file: format, size and frame count as the manifest says
    /// for the files that decode, the header facts its notes give (PNG colour
    /// type, bit depth and interlacing; JPEG SOF kind, precision and
    /// components; GIF interlacing), agreement with the decoded image, and
    /// no crash on any file.
    func testEveryCorpusFileMatchesTheManifest() throws {
        let corpus = try Corpus.load()
        XCTAssertFalse(corpus.entries.isEmpty)
        var checked = 0
        for entry in corpus.entries {
            let data = try corpus.data(entry)
            let properties = ImageFileProperties(data: data)
            for length in [0, 1, 7, 8, 12, 33, data.count / 2, data.count - 1] where length >= 0 && length < data.count {
                _ = ImageFileProperties(data: data.prefix(length))
            }
            guard entry.expectsSuccess else { continue }
            guard let properties else {
                XCTFail("\(entry.path): no properties")
                continue
            }
            XCTAssertEqual(properties.format.rawValue, entry.format, entry.path)
            XCTAssertEqual(properties.pixelSize.width, entry.width, entry.path)
            XCTAssertEqual(properties.pixelSize.height, entry.height, entry.path)
            XCTAssertEqual(properties.frameCount, entry.frames, entry.path)
            assertHeaderFacts(properties, note: entry.note, path: entry.path)
            let image = try ImageDecoder().decode(data)
            XCTAssertEqual(image.originalSize, properties.uprightPixelSize, entry.path)
            XCTAssertEqual(image.orientation, properties.orientation, entry.path)
            XCTAssertEqual(image.frames.count, properties.frameCount, entry.path)
            XCTAssertEqual(image.loopCount, properties.loopCount, entry.path)
            checked += 1
        }
        XCTAssertGreaterThan(checked, 100)
    }

    /// Files whose notes name a fact the properties must report.
    func testCorpusFilesWithICCProfilesAnimationAndArithmeticCoding() throws {
        let corpus = try Corpus.load()
        func properties(_ path: String) throws -> ImageFileProperties {
            let entry = try XCTUnwrap(corpus.entries.first { $0.path == path }, path)
            return try XCTUnwrap(ImageFileProperties(data: try corpus.data(entry)), path)
        }
        XCTAssertTrue(try properties("valid/jpeg/gen-gray-1x1-icc.jpg").hasICCProfile)
        XCTAssertTrue(try properties("valid/jpeg/icc_chunk_order.jpeg").hasICCProfile)
        XCTAssertFalse(try properties("valid/jpeg/testorig.jpg").hasICCProfile)
        XCTAssertTrue(try properties("valid/png/broken_iccp.png").hasICCProfile)
        XCTAssertEqual(try properties("valid/png/basic_f20.png").animatedPNGFrameCount, 20)
        XCTAssertEqual(try properties("valid/jpeg/testimgari.jpg").jpeg?.isArithmeticCoded, true)
        XCTAssertEqual(try properties("valid/jpeg/gen-cmyk-adobe-32x32.jpg").colorType, .cmyk)
        // Four components and no Adobe marker: libjpeg reads CMYK.
        XCTAssertEqual(try properties("valid/jpeg/gen-4-components-baseline-restarts.jpg").colorType, .cmyk)
        XCTAssertEqual(try properties("valid/jpeg/testorig.jpg").colorType, .ycbcr)
        XCTAssertEqual(try properties("valid/gif/animated_loop.gif").loopCount, 0)
        XCTAssertEqual(try properties("valid/gif/fire.gif").isInterlaced, true)
        // libpng's pngtest.png has an eXIf (orientation 5) after its IDAT: reported, not applied.
        let pngtest = try properties("valid/png/pngtest.png")
        XCTAssertEqual(pngtest.exif?.orientation, .leftMirrored)
        XCTAssertEqual(pngtest.exif?.tagsPresent.contains(.exifDirectory), true)
        XCTAssertEqual(pngtest.orientation, .up)
        XCTAssertEqual(pngtest.uprightPixelSize, PixelSize(width: 91, height: 69))
    }

    /// The facts a manifest note states about a file's header.
    private func assertHeaderFacts(_ properties: ImageFileProperties, note: String, path: String) {
        if let ihdr = note.firstMatch(of: /IHDR: (grayscale\+alpha|grayscale|palette|RGBA|RGB), (\d+)-bit, (Adam7 interlaced|non-interlaced)/) {
            let types: [Substring: ImageColorType] = [
                "grayscale": .grayscale, "grayscale+alpha": .grayscaleAlpha, "palette": .palette, "RGB": .rgb,
                "RGBA": .rgba,
            ]
            XCTAssertEqual(properties.colorType, types[ihdr.1], path)
            XCTAssertEqual(properties.bitDepth, Int(ihdr.2), path)
            XCTAssertEqual(properties.isInterlaced, ihdr.3 == "Adam7 interlaced", path)
        } else if let sof = note.firstMatch(of: /SOF(\d+) [A-Za-z ]+, (\d+)-bit, (\d) component/) {
            XCTAssertEqual(properties.jpeg.map { Int($0.startOfFrameMarker) - 0xC0 }, Int(sof.1), path)
            XCTAssertEqual(properties.bitDepth, Int(sof.2), path)
            XCTAssertEqual(properties.jpeg?.componentCount, Int(sof.3), path)
            XCTAssertEqual(properties.isInterlaced, properties.jpeg?.process == .progressive, path)
            XCTAssertEqual(properties.jpeg?.adobeTransform != nil, note.contains("Adobe APP14"), path)
        } else if let gif = note.firstMatch(of: /GIF8[79]a, (\d+) image descriptor\(s\) \((\d+) interlaced\)/) {
            let (count, interlaced) = (Int(gif.1) ?? -1, Int(gif.2) ?? -1)
            XCTAssertEqual(properties.frameCount, count, path)
            if interlaced == 0 || interlaced == count { XCTAssertEqual(properties.isInterlaced, interlaced > 0, path) }
        } else {
            XCTFail("\(path): the note names no header facts")
        }
    }

    // MARK: - Damaged input

    /// Damaged EXIF blocks yield partial data or nil, never a crash.
    func testMalformedEXIF() throws {
        let good = cameraEXIF(bigEndian: false, south: true, west: false).tiff()

        // Truncated at every length: nil below a whole header, then partial data.
        for length in 0..<good.count {
            let exif = EXIFProperties(tiff: Data(good.prefix(length)))
            if length < 10 { XCTAssertNil(exif, "\(length)") }
        }
        // Cut inside the data area: IFD0's inline orientation survives, the make does not.
        let ifd0End = 8 + 2 + 6 * 12 + 4
        let cut = try XCTUnwrap(EXIFProperties(tiff: Data(good.prefix(ifd0End))))
        XCTAssertEqual(cut.orientation, .right)
        XCTAssertNil(cut.make)
        XCTAssertTrue(cut.tagsPresent.contains(.make))

        // Not TIFF: wrong byte order mark, wrong magic number, IFD0 out of range.
        XCTAssertNil(EXIFProperties(tiff: Data([0x49, 0x4D, 42, 0, 8, 0, 0, 0, 0, 0])))
        XCTAssertNil(EXIFProperties(tiff: Data([0x49, 0x49, 43, 0, 8, 0, 0, 0, 0, 0])))
        XCTAssertNil(EXIFProperties(tiff: Data([0x49, 0x49, 42, 0, 0xF0, 0xFF, 0xFF, 0xFF, 0, 0])))
        XCTAssertNil(EXIFProperties(tiff: Data([0x4D, 0x4D, 0, 42, 0x7F, 0xFF, 0xFF, 0xFF])))

        // Value offsets out of range, and counts of 2^31 and 2^32 - 1.
        var builder = EXIFBuilder(bigEndian: true)
        builder.image = [(0x010F, .ascii("Make")), (0x0110, .ascii("Model")), (0x0112, .short([8]))]
        var bytes = builder.tiff()
        func patch(entry: Int, field: Int, _ value: UInt32) {
            let at = 8 + 2 + entry * 12 + field
            bytes[at..<(at + 4)] = [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)][...]
        }
        patch(entry: 0, field: 8, 0xFFFF_FFF0)  // make's offset
        patch(entry: 1, field: 4, 0x8000_0000)  // model's count
        patch(entry: 2, field: 4, 0xFFFF_FFFF)  // orientation's count: the value no longer fits inline
        let damaged = try XCTUnwrap(EXIFProperties(tiff: Data(bytes)))
        XCTAssertNil(damaged.make)
        XCTAssertNil(damaged.model)
        XCTAssertNil(damaged.orientation)
        XCTAssertEqual(damaged.tagsPresent, [.make, .model, .orientation])

        // A directory claiming 65535 entries holds as many as fit.
        var many = builder.tiff()
        many[8] = 0xFF
        many[9] = 0xFF
        XCTAssertEqual(EXIFProperties(tiff: Data(many))?.orientation, .left)

        // Sub-IFDs pointing at IFD0, at each other, and out of range.
        var loops = EXIFBuilder(bigEndian: false)
        loops.image = [(0x0112, .short([3])), (0x8769, .long([8])), (0x8825, .long([8]))]
        let selfReferencing = try XCTUnwrap(EXIFProperties(tiff: Data(loops.tiff())))
        XCTAssertEqual(selfReferencing.orientation, .down)
        XCTAssertEqual(selfReferencing.tagsPresent.filter { $0.directory != .image }, [])
        var builderWithSubIFDs = cameraEXIF(bigEndian: false, south: false, west: false)
        builderWithSubIFDs.image.removeAll { $0.0 == 0x0112 }
        var shared = builderWithSubIFDs.tiff()
        // Point the GPS pointer (IFD0's last entry) at the Exif IFD.
        let ifd0Count = Int(shared[8])
        let exifPointer = 8 + 2 + (ifd0Count - 2) * 12 + 8
        let gpsPointer = exifPointer + 12
        shared[gpsPointer..<(gpsPointer + 4)] = shared[exifPointer..<(exifPointer + 4)]
        let sharedResult = try XCTUnwrap(EXIFProperties(tiff: Data(shared)))
        XCTAssertEqual(sharedResult.isoSpeed, 400)
        XCTAssertNil(sharedResult.gpsLatitude)
        shared[gpsPointer..<(gpsPointer + 4)] = [0xFF, 0xFF, 0xFF, 0x7F][...]
        XCTAssertNil(EXIFProperties(tiff: Data(shared))?.gpsLatitude)

        // Zero denominators, out-of-range coordinates, unknown types, an unset date.
        var odd = EXIFBuilder(bigEndian: false)
        odd.exif = [(0x829A, .rational([(1, 0)])), (0x829D, .long([28])), (0x9003, .ascii("0000:00:00 00:00:00"))]
        odd.gps = [(0x0002, .rational([(95, 1), (0, 1), (0, 1)])), (0x0004, .rational([(10, 0), (0, 1), (0, 1)]))]
        let oddResult = try XCTUnwrap(EXIFProperties(tiff: Data(odd.tiff())))
        XCTAssertEqual(oddResult.exposureTime, EXIFRational(numerator: 1, denominator: 0))
        XCTAssertNil(oddResult.exposureTime?.value)
        XCTAssertNil(oddResult.fNumber)
        XCTAssertEqual(oddResult.dateTimeOriginal, "0000:00:00 00:00:00")
        XCTAssertNil(oddResult.dateTaken)
        XCTAssertNil(oddResult.gpsLatitude)
        XCTAssertNil(oddResult.gpsLongitude)
    }

    /// Random damage to every kind of file, EXIF included: properties or nil,
    /// never a crash; and whenever the damaged file still decodes, the
    /// properties give the decoded image's size, orientation, frames and loops.
    func testMutatedFilesNeverCrash() throws {
        let quadrants = SyntheticImage.quadrants(width: 24, height: 16)
        let exif = cameraEXIF(bigEndian: true, south: false, west: true)
        let jpeg = EXIFBuilder.insertingSegments(
            [(0xE1, exif.app1Payload())], into: try JPEGEncoder(progressive: true).encode(quadrants))
        let png = RawPNGWriter.encode(quadrants, chunks: [("eXIf", Data(exif.tiff()))])
        let gif = try GIFWriter.encode(
            width: 4, height: 4, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 9, g: 9, b: 9)],
            frames: [.filled(1, width: 4, height: 4), .filled(0, width: 2, height: 2)], loopCount: 2)
        var random = SplitMix64(seed: 6)
        var decoded = 0
        for file in [jpeg, png, gif, Data(exif.tiff())] {
            for length in 0..<min(file.count, 600) { _ = ImageFileProperties(data: file.prefix(length)) }
            var bytes = [UInt8](file)
            for _ in 0..<1500 {
                var mutated = bytes
                for _ in 0..<(1 + Int(random.next() % 4)) {
                    let at = Int(random.next() % UInt64(mutated.count))
                    mutated[at] = random.next() % 3 == 0 ? 0xFF : UInt8(truncatingIfNeeded: random.next())
                }
                let properties = ImageFileProperties(data: Data(mutated))
                _ = EXIFProperties(tiff: Data(mutated))
                // Whatever decodes, the header properties describe.
                if let image = try? ImageDecoder().decode(Data(mutated)) {
                    decoded += 1
                    XCTAssertEqual(properties?.uprightPixelSize, image.originalSize)
                    XCTAssertEqual(properties?.orientation, image.orientation)
                    XCTAssertEqual(properties?.frameCount, image.frames.count)
                    XCTAssertEqual(properties?.loopCount, image.loopCount)
                }
                if random.next() % 50 == 0 { bytes = mutated }  // let damage accumulate now and then
            }
        }
        XCTAssertGreaterThan(decoded, 100, "few mutated files decoded: the agreement check checked little")
        XCTAssertNil(ImageFileProperties(data: Data()))
        XCTAssertNil(ImageFileProperties(data: Data("not an image".utf8)))
        XCTAssertNil(ImageFileProperties(data: Data([0xFF, 0xD8, 0xFF])))
        XCTAssertNil(ImageFileProperties(data: CraftedFiles.gifScreen(width: 1, height: 1).prefix(9)))
    }

    /// The fuzzer's findings (Resources/fuzz) and their every prefix.
    func testFuzzFindingsDoNotCrashThePropertiesReader() throws {
        let files = try FileManager.default.contentsOfDirectory(
            at: FuzzRegressionTests.directory, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent != "README.md" && !FuzzRegressionTests.isDirectory($0) }
        XCTAssertFalse(files.isEmpty)
        for file in files {
            let data = try Data(contentsOf: file)
            let properties = ImageFileProperties(data: data)
            if ImageFormat.sniff(data) == .png { XCTAssertNotNil(properties, file.lastPathComponent) }
            for length in stride(from: 0, to: data.count, by: max(1, data.count / 97)) {
                _ = ImageFileProperties(data: data.prefix(length))
            }
        }
    }
}
