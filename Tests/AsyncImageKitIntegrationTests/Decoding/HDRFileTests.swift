@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// HDR files (PQ and HLG `nclx`) made at test time: a 16-bit PNG of known
/// 12-bit BT.2020 code values (``HDRReference/chart(width:)``) encoded
/// losslessly at 12 bits by `avifenc -l -d 12 --cicp 9/16/0` (RGB stored as
/// is: identity matrix) or `heif-enc -b 12` (lossless, RGB; its `colr` box
/// added by ``HEIFEditor``), decoded and compared pixel by pixel with the
/// formula computed again in Double (``HDRReference``).
///
/// The tolerance is one level: the decoder's tables are Float, the
/// reference Double, so a value within a rounding error of the boundary
/// between two codes may land on either side. The samples themselves are
/// exact (lossless, at their own depth).
///
/// JPEG XL: the same PNG through `cjxl -x color_space=RGB_D65_202_Rel_PeQ`
/// (or `_HLG`): `cjxl` 0.7 reads the PNG's samples as that enumerated
/// colour encoding (BT.2100 primaries, D65, relative intent, PQ or HLG),
/// lossless with `-d 0` (16-bit samples, exact), lossy with `-d 1` (XYB).
final class HDRFileTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools([
            "avifenc": "libavif-bin", "heif-enc": "libheif-examples", "cjxl": "libjxl-tools", "djxl": "libjxl-tools",
        ])
    }

    override func tearDown() {
        tools?.remove()
        tools = nil
    }

    private let width = 64
    private var chart: [[Int]] { HDRReference.chart(width: width) }

    /// The chart as a 16-bit RGB PNG (each 12-bit code with its bits
    /// repeated, so that an encoder's rounding or shifting to 12 bits gives it back).
    private func png() -> Data {
        RawPNGWriter.encode(
            width: width, height: chart.count / width, colorType: .rgb, bitDepth: 16,
            samples: chart.flatMap { $0.map(HDRReference.sixteenBits) })
    }

    private func avif(transfer: Int) throws -> Data {
        try tools.avifenc(file: png(), "png", ["-l", "-d", "12", "--cicp", "9/\(transfer)/0"])
    }

    /// `cjxl` of the chart (or `png`) in the BT.2100 (or `primaries`: `DCI`
    /// is P3) PQ (16) or HLG (18) colour encoding, with `options` (`-d 0`,
    /// `-d 1`, `--intensity_target=4000`...).
    private func jxl(transfer: Int, _ options: [String], png: Data? = nil, primaries: String = "202") throws -> Data {
        let encoding = "RGB_D65_\(primaries)_Rel_" + (transfer == 16 ? "PeQ" : "HLG")
        return try tools.cjxl(file: png ?? self.png(), "png", options + ["-x", "color_space=\(encoding)"])
    }

    /// The worst difference between `image` and the reference, failing past `tolerance`.
    @discardableResult
    private func assertMatchesReference(
        _ image: Image, transfer: HDRReference.Transfer, peak: Double = 1000,
        primaries: HDRReference.Primaries = .bt2020, tolerance: Int = 1, _ message: String, line: UInt = #line
    ) -> Int {
        XCTAssertEqual(image.size, PixelSize(width: width, height: chart.count / width), message, line: line)
        var worst = 0
        for (index, pixel) in chart.enumerated() {
            let got = image.pixel(x: index % width, y: index / width)
            let expected = HDRReference.sdr(
                pixel.map { Double($0) / 4095 }, transfer: transfer, peak: peak, primaries: primaries)
            let difference = max(
                abs(Int(got.r) - Int(expected[0])), abs(Int(got.g) - Int(expected[1])), abs(Int(got.b) - Int(expected[2])))
            if difference > tolerance, difference > worst {
                XCTFail("\(message): \(pixel) gives \(got), the formula \(expected)", line: line)
            }
            worst = max(worst, difference)
            XCTAssertEqual(got.a, 255, message, line: line)
        }
        return worst
    }

    func testPQAVIFMatchesTheFormula() throws {
        let data = try avif(transfer: 16)
        let properties = try XCTUnwrap(ImageFileProperties(data: data))
        XCTAssertEqual(properties.bitDepth, 12)
        let profile = try XCTUnwrap(properties.colorProfile)
        XCTAssertEqual(profile.source, .nclx)
        XCTAssertEqual(profile.description, "nclx primaries 9, transfer 16")
        XCTAssertNil(profile.warning)
        XCTAssertFalse(profile.isSRGB)
        XCTAssertEqual(profile.hdrToneMapping, HDRToneMapping(transfer: .pq, sourcePeak: 1000, peakSource: .assumed))
        let image = try ImageDecoder().decode(data)
        assertMatchesReference(image, transfer: .pq, "PQ AVIF")
        // The landmarks, read off the chart: black, and 1000 and 4000 cd/m² at SDR white.
        XCTAssertEqual(image.pixel(x: 0, y: 5).r, 0)
        XCTAssertEqual(image.pixel(x: 3 * width / 8, y: 5).g, 255)
        XCTAssertEqual(image.pixel(x: 4 * width / 8, y: 5).b, 255)
    }

    func testHLGAVIFMatchesTheFormula() throws {
        let data = try avif(transfer: 18)
        XCTAssertEqual(
            ImageFileProperties(data: data)?.colorProfile?.hdrToneMapping,
            HDRToneMapping(transfer: .hlg, sourcePeak: 1000, peakSource: .assumed))
        assertMatchesReference(try ImageDecoder().decode(data), transfer: .hlg, "HLG AVIF")
    }

    /// The source peak from the `clli` property (MaxCLL), else `mdcv`'s
    /// (avifenc 0.11 writes neither: added as non-essential properties).
    func testPQSourcePeakFromTheFile() throws {
        let plain = try avif(transfer: 16)
        let cases: [([[UInt8]], Double, HDRToneMapping.PeakSource)] = [
            ([HEIFEditor.clli(maxCLL: 4000, maxFALL: 400)], 4000, .contentLightLevel),
            ([HEIFEditor.mdcv(maxLuminance: 600, minLuminance: 0.005)], 600, .masteringDisplay),
            ([HEIFEditor.mdcv(maxLuminance: 2000, minLuminance: 0), HEIFEditor.clli(maxCLL: 10000, maxFALL: 0)], 10000,
             .contentLightLevel),
            // MaxCLL 0 is "unknown".
            ([HEIFEditor.clli(maxCLL: 0, maxFALL: 0)], 1000, .assumed),
        ]
        for (boxes, peak, source) in cases {
            let data = try HEIFEditor.addingProperties(plain, boxes, essential: false)
            let mapping = try XCTUnwrap(ImageFileProperties(data: data)?.colorProfile?.hdrToneMapping)
            XCTAssertEqual(mapping, HDRToneMapping(transfer: .pq, sourcePeak: peak, peakSource: source))
            assertMatchesReference(try ImageDecoder().decode(data), transfer: .pq, peak: peak, "peak \(peak)")
        }
        // A brighter source peak keeps more of the highlights apart: 1000 cd/m² is no longer white.
        let bright = try ImageDecoder().decode(
            HEIFEditor.addingProperties(plain, [HEIFEditor.clli(maxCLL: 4000, maxFALL: 0)], essential: false))
        XCTAssertLessThan(bright.pixel(x: 3 * width / 8, y: 5).g, 255)
        XCTAssertEqual(bright.pixel(x: 4 * width / 8, y: 5).g, 255)
    }

    /// With colour management off, the samples as stored, brought to 8 bits
    /// (the PQ signal, read as sRGB), as for every other tagged file.
    func testColourManagementOffGivesTheStoredSamples() throws {
        for transfer in [16, 18] {
            let image = try ImageDecoder().decode(try avif(transfer: transfer), options: DecodingOptions(colorManagement: .off))
            var worst = 0
            for (index, pixel) in chart.enumerated() {
                let got = image.pixel(x: index % width, y: index / width)
                let expected = pixel.map { Int((Double($0) * 255 / 4095).rounded()) }
                worst = max(
                    worst, abs(Int(got.r) - expected[0]), abs(Int(got.g) - expected[1]), abs(Int(got.b) - expected[2]))
            }
            XCTAssertLessThanOrEqual(worst, 1, "transfer \(transfer)")
        }
    }

    /// HEIC: two levels of tolerance, not one. The round trip through
    /// `heif-enc` 1.15 (x265 lossless, RGB) and libheif is not exact: about
    /// half the coloured 12-bit samples come back one level off (greys are
    /// exact), and the BT.2020-to-BT.709 matrix, which subtracts channels,
    /// can make that two 8-bit levels.
    func testHEICPQAndHLGMatchTheFormula() throws {
        let plain = try tools.heifenc(file: png(), "png", CodecTools.losslessHEIC + ["-b", "12"])
        for (transfer, reference) in [(16, HDRReference.Transfer.pq), (18, .hlg)] {
            let data = try HEIFEditor.addingProperties(
                plain, [HEIFEditor.nclx(primaries: 9, transfer: UInt16(transfer), matrix: 0)])
            let properties = try XCTUnwrap(ImageFileProperties(data: data))
            XCTAssertEqual(properties.bitDepth, 12)
            XCTAssertEqual(properties.colorProfile?.hdrToneMapping?.transfer, reference == .pq ? .pq : .hlg)
            XCTAssertNil(properties.colorProfile?.warning)
            assertMatchesReference(
                try ImageDecoder().decode(data), transfer: reference, tolerance: 2, "HEIC transfer \(transfer)")
        }
        let withPeak = try HEIFEditor.addingProperties(plain, [HEIFEditor.nclx(primaries: 9, transfer: 16, matrix: 0)])
        let peaked = try HEIFEditor.addingProperties(withPeak, [HEIFEditor.clli(maxCLL: 2000, maxFALL: 0)], essential: false)
        XCTAssertEqual(ImageFileProperties(data: peaked)?.colorProfile?.hdrToneMapping?.sourcePeak, 2000)
        assertMatchesReference(
            try ImageDecoder().decode(peaked), transfer: .pq, peak: 2000, tolerance: 2, "HEIC with clli")
    }

    /// Downsampled and through the loader's decode path: the tone mapping
    /// comes first, the resize after it.
    func testDownsampledHDRIsToneMappedFirst() throws {
        let data = try avif(transfer: 16)
        let full = try ImageDecoder().decode(data)
        let half = try ImageDecoder().decode(
            data, options: DecodingOptions(targetSize: PixelSize(width: width / 2, height: 4)))
        XCTAssertEqual(half.size, PixelSize(width: width / 2, height: 4))
        let again = try ImageResizer.resize(full, to: PixelSize(width: width / 2, height: 4), quality: .high)
        for y in 0..<4 {
            for x in 0..<width / 2 { XCTAssertEqual(half.pixel(x: x, y: y), again.pixel(x: x, y: y)) }
        }
    }

    // MARK: JPEG XL

    /// Lossless: the 16-bit samples as stored, tone mapped. `cjxl` writes
    /// libjxl's default intensity target for PQ, 10000 cd/m² (the whole PQ
    /// range, no measurement): the peak is the assumed 1000 cd/m², as for a
    /// PQ AVIF without `clli` or `mdcv`.
    func testLosslessPQAndHLGJPEGXLMatchTheFormula() throws {
        for (transfer, reference) in [(16, HDRReference.Transfer.pq), (18, .hlg)] {
            let data = try jxl(transfer: transfer, ["-d", "0"])
            let properties = try XCTUnwrap(ImageFileProperties(data: data))
            XCTAssertEqual(properties.bitDepth, 16)
            let profile = try XCTUnwrap(properties.colorProfile)
            XCTAssertEqual(
                profile.hdrToneMapping,
                HDRToneMapping(transfer: reference == .pq ? .pq : .hlg, sourcePeak: 1000, peakSource: .assumed))
            XCTAssertNil(profile.warning)
            XCTAssertFalse(profile.isSRGB)
            XCTAssertEqual(profile.source, .iccProfile, "libjxl's profile for the encoding, as for JPEG XL's others")
            XCTAssertEqual(profile.description, "RGB_D65_202_Rel_" + (transfer == 16 ? "PeQ" : "HLG"))
            XCTAssertTrue(properties.hasICCProfile)
            let image = try ImageDecoder().decode(data)
            XCTAssertTrue(image.isOpaque)
            assertMatchesReference(image, transfer: reference, "lossless JPEG XL transfer \(transfer)")
        }
        // Display P3 (JPEG XL's P3 primaries with D65 white): its own matrix and luminance weights.
        for (transfer, reference) in [(16, HDRReference.Transfer.pq), (18, .hlg)] {
            let data = try jxl(transfer: transfer, ["-d", "0"], primaries: "DCI")
            XCTAssertNotNil(ImageFileProperties(data: data)?.colorProfile?.hdrToneMapping)
            assertMatchesReference(
                try ImageDecoder().decode(data), transfer: reference, primaries: .displayP3,
                "Display P3, transfer \(transfer)")
        }
        // The landmarks: black, and 1000 and 4000 cd/m² at SDR white.
        let image = try ImageDecoder().decode(try jxl(transfer: 16, ["-d", "0"]))
        XCTAssertEqual(image.pixel(x: 0, y: 5).r, 0)
        XCTAssertEqual(image.pixel(x: 3 * width / 8, y: 5).g, 255)
        XCTAssertEqual(image.pixel(x: 4 * width / 8, y: 5).b, 255)
    }

    /// PQ's source peak is the codestream's intensity target unless it is a
    /// default (10000 for PQ, 255 when not written); HLG ignores it.
    func testJPEGXLSourcePeakFromTheIntensityTarget() throws {
        for (target, peak, source) in [
            (4000, 4000.0, HDRToneMapping.PeakSource.intensityTarget), (600, 600, .intensityTarget),
            (10000, 1000, .assumed),
        ] {
            let data = try jxl(transfer: 16, ["-d", "0", "--intensity_target=\(target)"])
            XCTAssertEqual(
                ImageFileProperties(data: data)?.colorProfile?.hdrToneMapping,
                HDRToneMapping(transfer: .pq, sourcePeak: peak, peakSource: source), "intensity target \(target)")
            assertMatchesReference(
                try ImageDecoder().decode(data), transfer: .pq, peak: peak, "intensity target \(target)")
        }
        let hlg = try jxl(transfer: 18, ["-d", "0", "--intensity_target=4000"])
        XCTAssertEqual(
            ImageFileProperties(data: hlg)?.colorProfile?.hdrToneMapping,
            HDRToneMapping(transfer: .hlg, sourcePeak: 1000, peakSource: .assumed))
        assertMatchesReference(try ImageDecoder().decode(hlg), transfer: .hlg, "HLG, intensity target 4000")
    }

    /// Flat 32x32 patches of known 12-bit codes (greys from 0 to 1000 cd/m²
    /// in PQ, colours), 8 a row, 2 rows.
    private let patches: [[Int]] =
        [0.0, 5, 50, 100, 203, 400, 600, 1000].map { light -> [Int] in
            let code = Int((HDRReference.lightToPQ(light) * 4095).rounded())
            return [code, code, code]
        } + [
            [2400, 1800, 1200], [1200, 2400, 1800], [1800, 1200, 2400], [2600, 2600, 1400], [1500, 2000, 2600],
            [2200, 1500, 2000], [3000, 2000, 1000], [0, 2500, 0],
        ]

    private func patchPNG() -> Data {
        var samples: [UInt16] = []
        for y in 0..<64 {
            for x in 0..<256 { samples += patches[y / 32 * 8 + x / 32].map(HDRReference.sixteenBits) }
        }
        return RawPNGWriter.encode(width: 256, height: 64, colorType: .rgb, bitDepth: 16, samples: samples)
    }

    /// The mean of each channel over a patch's central 16x16.
    private func patchMeans(_ image: Image, _ index: Int) -> [Double] {
        var sums = [0.0, 0.0, 0.0]
        for y in (index / 8 * 32 + 8)..<(index / 8 * 32 + 24) {
            for x in (index % 8 * 32 + 8)..<(index % 8 * 32 + 24) {
                let p = image.pixel(x: x, y: y)
                for (c, v) in [p.r, p.g, p.b].enumerated() { sums[c] += Double(v) }
            }
        }
        return sums.map { $0 / 256 }
    }

    /// Lossy (XYB): libjxl asked for the image's own PQ or HLG encoding,
    /// then tone mapped.
    ///
    /// Every pixel is held to the formula, within one level, applied to the
    /// samples libjxl decodes (`djxl` at 16 bits in the same encoding, read
    /// from its PPM): that is the decoder's part. The coding noise is
    /// `cjxl`'s: each patch's mean is held to the formula of the codes
    /// that were encoded only within what distance 1 ("visually lossless")
    /// moves them. Measured with `cjxl` 0.7 on these patches (flat, so each
    /// comes back flat): a grey at most 6 of 4095 codes off, the weakest
    /// channel of a colour up to 130 (and 465 for a 0 beside a bright
    /// channel, which the mapping clips to 0 anyway); once mapped, greys
    /// within a level, colours within 4. The bounds are 1 and 5.
    func testLossyPQAndHLGJPEGXLMatchTheFormula() throws {
        for (transfer, reference) in [(16, HDRReference.Transfer.pq), (18, .hlg)] {
            let data = try jxl(transfer: transfer, ["-d", "1"], png: patchPNG())
            let properties = try XCTUnwrap(ImageFileProperties(data: data))
            XCTAssertEqual(
                properties.colorProfile?.hdrToneMapping,
                HDRToneMapping(transfer: reference == .pq ? .pq : .hlg, sourcePeak: 1000, peakSource: .assumed),
                "cjxl 0.7 leaves a lossy image's intensity target at 255, the default")
            let image = try ImageDecoder().decode(data)
            XCTAssertEqual(image.size, PixelSize(width: 256, height: 64))
            XCTAssertTrue(image.isOpaque)

            let encoding = "RGB_D65_202_Rel_" + (transfer == 16 ? "PeQ" : "HLG")
            let decoded = try tools.djxl16(data, ["--color_space=\(encoding)"])
            XCTAssertEqual(decoded.width * decoded.height, image.width * image.height)
            var worst = 0
            for index in 0..<(decoded.width * decoded.height) {
                let signal = decoded.samples[(index * 3)..<(index * 3 + 3)].map { Double($0) / 65535 }
                let expected = HDRReference.sdr(signal, transfer: reference)
                let got = image.pixel(x: index % 256, y: index / 256)
                let difference = max(
                    abs(Int(got.r) - Int(expected[0])), abs(Int(got.g) - Int(expected[1])),
                    abs(Int(got.b) - Int(expected[2])))
                if difference > 1, difference > worst {
                    XCTFail("transfer \(transfer): \(signal) gives \(got), the formula \(expected)")
                }
                worst = max(worst, difference)
            }

            for (index, patch) in patches.enumerated() {
                let expected = HDRReference.sdr(patch.map { Double($0) / 4095 }, transfer: reference)
                let mean = patchMeans(image, index)
                let tolerance = patch[0] == patch[1] && patch[1] == patch[2] ? 1.0 : 5
                for c in 0..<3 {
                    XCTAssertEqual(mean[c], Double(expected[c]), accuracy: tolerance, "transfer \(transfer), \(patch)")
                }
            }
        }
    }

    /// Colour management off: the samples as stored (lossless), or as
    /// libjxl decodes them in the file's encoding (lossy), brought to 8
    /// bits: no tone mapping.
    func testJPEGXLColourManagementOffGivesTheStoredSamples() throws {
        let off = DecodingOptions(colorManagement: .off)
        for transfer in [16, 18] {
            let image = try ImageDecoder().decode(try jxl(transfer: transfer, ["-d", "0"]), options: off)
            var worst = 0
            for (index, pixel) in chart.enumerated() {
                let got = image.pixel(x: index % width, y: index / width)
                let expected = pixel.map { Int((Double($0) * 255 / 4095).rounded()) }
                worst = max(
                    worst, abs(Int(got.r) - expected[0]), abs(Int(got.g) - expected[1]), abs(Int(got.b) - expected[2]))
            }
            XCTAssertLessThanOrEqual(worst, 1, "transfer \(transfer)")
            XCTAssertNil(ImageFileProperties(data: try jxl(transfer: transfer, ["-d", "0"]))?.colorProfile?.warning)

            let lossyData = try jxl(transfer: transfer, ["-d", "1"], png: patchPNG())
            let lossy = try ImageDecoder().decode(lossyData, options: off)
            let decoded = try tools.djxl16(lossyData)
            worst = 0
            for index in 0..<(decoded.width * decoded.height) {
                let got = lossy.pixel(x: index % 256, y: index / 256)
                for (c, value) in [got.r, got.g, got.b].enumerated() {
                    let expected = Int((Double(decoded.samples[index * 3 + c]) * 255 / 65535).rounded())
                    worst = max(worst, abs(Int(value) - expected))
                }
            }
            XCTAssertLessThanOrEqual(worst, 1, "lossy, transfer \(transfer)")
        }
    }

    /// Grey (`Gra_D65_Rel_PeQ`, from a 16-bit grey PNG) comes out grey;
    /// alpha (a 16-bit RGBA PNG, lossless) is kept; every frame of an
    /// animation (8-bit codes from a GIF, read by `cjxl` as PQ) is tone mapped.
    func testJPEGXLGreyAlphaAndAnimationFrames() throws {
        let ramp = (0..<64).map { $0 * 4095 / 63 }
        let greyPNG = RawPNGWriter.encode(
            width: 64, height: 1, colorType: .gray, bitDepth: 16, samples: ramp.map(HDRReference.sixteenBits))
        for (name, reference) in [("PeQ", HDRReference.Transfer.pq), ("HLG", .hlg)] {
            let grey = try tools.cjxl(file: greyPNG, "png", ["-d", "0", "-x", "color_space=Gra_D65_Rel_\(name)"])
            XCTAssertNotNil(ImageFileProperties(data: grey)?.colorProfile?.hdrToneMapping)
            let image = try ImageDecoder().decode(grey)
            for (x, code) in ramp.enumerated() {
                let signal = Double(code) / 4095
                let expected = HDRReference.sdr([signal, signal, signal], transfer: reference)
                let got = image.pixel(x: x, y: 0)
                XCTAssertEqual(got.r, got.g)
                XCTAssertEqual(got.g, got.b)
                XCTAssertLessThanOrEqual(
                    abs(Int(got.r) - Int(expected[0])), 1, "grey \(name) \(code): \(got), the formula \(expected)")
            }
        }

        var samples: [UInt16] = []
        for (index, pixel) in chart.enumerated() {
            samples += pixel.map(HDRReference.sixteenBits) + [UInt16(index % width * 65535 / (width - 1))]
        }
        let rgba = RawPNGWriter.encode(width: width, height: 8, colorType: .rgba, bitDepth: 16, samples: samples)
        let image = try ImageDecoder().decode(try jxl(transfer: 16, ["-d", "0"], png: rgba))
        XCTAssertFalse(image.isOpaque)
        for (index, pixel) in chart.enumerated() where index % width > 0 {
            let got = image.pixel(x: index % width, y: index / width)
            XCTAssertEqual(Int(got.a), (index % width * 255 + (width - 1) / 2) / (width - 1), "alpha at \(index)")
            let expected = HDRReference.sdr(pixel.map { Double($0) / 4095 }, transfer: .pq)
            let difference = max(
                abs(Int(got.r) - Int(expected[0])), abs(Int(got.g) - Int(expected[1])), abs(Int(got.b) - Int(expected[2])))
            XCTAssertLessThanOrEqual(difference, 1, "\(pixel) under alpha \(got.a)")
        }

        let colours = [
            RGBA(r: 140, g: 140, b: 140), RGBA(r: 200, g: 120, b: 60), RGBA(r: 60, g: 180, b: 230), RGBA(r: 0, g: 0, b: 0),
        ]
        let gif = try GIFWriter.encode(
            width: 16, height: 8, globalPalette: colours,
            frames: (0..<3).map { GIFFrameSpec.filled(UInt8($0), width: 16, height: 8, delay: 10) }, loopCount: 0)
        let animation = try tools.cjxl(file: gif, "gif", ["-d", "0", "-x", "color_space=RGB_D65_202_Rel_PeQ"])
        let decoded = try ImageDecoder().decode(animation)
        XCTAssertEqual(decoded.frames.count, 3)
        for (frame, colour) in colours.prefix(3).enumerated() {
            let expected = HDRReference.sdr([colour.r, colour.g, colour.b].map { Double($0) / 255 }, transfer: .pq)
            let got = decoded.pixel(x: 8, y: 4, frame: frame)
            for (a, b) in zip([got.r, got.g, got.b], expected) {
                XCTAssertLessThanOrEqual(abs(Int(a) - Int(b)), 1, "frame \(frame): \(got) for \(expected)")
            }
        }
    }
}
