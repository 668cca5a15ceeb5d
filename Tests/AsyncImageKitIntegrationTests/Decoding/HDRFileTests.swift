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
final class HDRFileTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools(["avifenc": "libavif-bin", "heif-enc": "libheif-examples"])
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

    /// The worst difference between `image` and the reference, failing past `tolerance`.
    @discardableResult
    private func assertMatchesReference(
        _ image: Image, transfer: HDRReference.Transfer, peak: Double = 1000, tolerance: Int = 1, _ message: String,
        line: UInt = #line
    ) -> Int {
        XCTAssertEqual(image.size, PixelSize(width: width, height: chart.count / width), message, line: line)
        var worst = 0
        for (index, pixel) in chart.enumerated() {
            let got = image.pixel(x: index % width, y: index / width)
            let expected = HDRReference.sdr(pixel.map { Double($0) / 4095 }, transfer: transfer, peak: peak)
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
    /// comes first, the area-averaging after it.
    func testDownsampledHDRIsToneMappedFirst() throws {
        let data = try avif(transfer: 16)
        let full = try ImageDecoder().decode(data)
        let half = try ImageDecoder().decode(
            data, options: DecodingOptions(targetSize: PixelSize(width: width / 2, height: 4)))
        XCTAssertEqual(half.size, PixelSize(width: width / 2, height: 4))
        let again = try ImageResizer.resize(full, to: PixelSize(width: width / 2, height: 4))
        for y in 0..<4 {
            for x in 0..<width / 2 { XCTAssertEqual(half.pixel(x: x, y: y), again.pixel(x: x, y: y)) }
        }
    }
}
