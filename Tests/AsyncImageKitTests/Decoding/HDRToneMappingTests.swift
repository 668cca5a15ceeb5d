@testable import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// The HDR tone mapping (PQ and HLG to 8-bit sRGB) on samples, against the
/// formula written out again in ``HDRReference`` (Double math, no tables).
/// The files themselves (AVIF, HEIC) are in the integration target's
/// `HDRFileTests`.
final class HDRToneMappingTests: XCTestCase {
    /// 12-bit RGB samples (3 a pixel) through the mapper, RGBA 8 out.
    private func map(_ pixels: [[Int]], _ mapping: HDRToneMapping, primaries: Int = 9, depth: Int = 12) throws
        -> [[UInt8]]
    {
        let mapper = try XCTUnwrap(HDRToneMapper(mapping, primaries: primaries, bitDepth: depth))
        let samples = pixels.flatMap { $0.map(UInt16.init) }
        var out = [UInt8](repeating: 0, count: pixels.count * 4)
        samples.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                mapper.map(
                    input.baseAddress!, channels: 3, inputRowSamples: samples.count, width: pixels.count, height: 1,
                    into: output.baseAddress!, bytesPerRow: output.count)
            }
        }
        return (0..<pixels.count).map { Array(out[$0 * 4..<$0 * 4 + 4]) }
    }

    /// Every pixel within `tolerance` of the reference; the count of inexact ones.
    @discardableResult
    private func assertMatchesReference(
        _ pixels: [[Int]], _ mapping: HDRToneMapping, transfer: HDRReference.Transfer, tolerance: Int = 1,
        line: UInt = #line
    ) throws -> Int {
        let mapped = try map(pixels, mapping)
        var worst = 0, inexact = 0
        for (pixel, got) in zip(pixels, mapped) {
            let expected = HDRReference.sdr(pixel.map { Double($0) / 4095 }, transfer: transfer, peak: mapping.sourcePeak)
            let difference = (0..<3).map { abs(Int(got[$0]) - Int(expected[$0])) }.max()!
            if difference > 0 { inexact += 1 }
            if difference > worst {
                worst = difference
                if difference > tolerance {
                    XCTFail("\(pixel): \(got.prefix(3)) against \(expected)", line: line)
                }
            }
            XCTAssertEqual(got[3], 255, line: line)
        }
        return inexact
    }

    private let pq = HDRToneMapping(transfer: .pq, sourcePeak: 1000, peakSource: .assumed)
    private let hlg = HDRToneMapping(transfer: .hlg, sourcePeak: 1000, peakSource: .assumed)

    func testPQMatchesTheFormula() throws {
        // Float tables and the exact rounding against Double math: at most
        // one level off, where a value falls within a rounding error of a
        // code's boundary; almost always equal.
        let greys = (0..<4096).map { [$0, $0, $0] }
        let inexact = try assertMatchesReference(greys + HDRReference.chart(width: 256), pq, transfer: .pq)
        XCTAssertLessThan(inexact, 20)
    }

    func testHLGMatchesTheFormula() throws {
        let greys = (0..<4096).map { [$0, $0, $0] }
        let inexact = try assertMatchesReference(greys + HDRReference.chart(width: 256), hlg, transfer: .hlg)
        XCTAssertLessThan(inexact, 20)
    }

    func testSourcePeakChangesTheKnee() throws {
        for peak in [400.0, 4000, 10000] {
            let mapping = HDRToneMapping(transfer: .pq, sourcePeak: peak, peakSource: .contentLightLevel)
            try assertMatchesReference(HDRReference.chart(width: 128), mapping, transfer: .pq)
        }
        // A peak at or under reference white: no knee; light above it clipped.
        let dim = HDRToneMapping(transfer: .pq, sourcePeak: 150, peakSource: .masteringDisplay)
        let levels = [50.0, 100, 203, 1000].map { Int((HDRReference.lightToPQ($0) * 4095).rounded()) }
        let mapped = try map(levels.map { [$0, $0, $0] }, dim)
        for (index, light) in [50.0, 100, 203].enumerated() {
            let code = Int((255 * HDRReference.sRGB(HDRReference.pqToLight(Double(levels[index]) / 4095) / 203)).rounded())
            XCTAssertEqual(Int(mapped[index][0]), code, "\(light) cd/m²")
        }
        XCTAssertEqual(mapped[3][0], 255)
    }

    func testLandmarks() throws {
        func grey(_ light: Double, _ mapping: HDRToneMapping) throws -> UInt8 {
            let code = Int((HDRReference.lightToPQ(light) * 4095).rounded())
            return try map([[code, code, code]], mapping)[0][0]
        }
        XCTAssertEqual(try grey(0, pq), 0, "black stays black")
        XCTAssertEqual(try map([[0, 0, 0]], hlg)[0][0], 0, "HLG black")
        XCTAssertEqual(try grey(1000, pq), 255, "the source peak is SDR white")
        XCTAssertEqual(try grey(4000, pq), 255, "above the peak: clipped")
        // Reference white (203 cd/m²) lands at about 159 cd/m², code 229.
        XCTAssertEqual(Int(try grey(203, pq)), 229, accuracy: 1)
        // Below the knee (about 88 cd/m²) light is kept: 50 cd/m² is 50/203.
        XCTAssertEqual(Int(try grey(50, pq)), Int((255 * HDRReference.sRGB(50.0 / 203)).rounded()), accuracy: 1)
        // HLG: 75 % is reference white on the nominal 1000 cd/m² display.
        let hlg75 = Int((0.75 * 4095).rounded())
        XCTAssertEqual(Int(try map([[hlg75, hlg75, hlg75]], hlg)[0][0]), 229, accuracy: 1)
        XCTAssertEqual(try map([[4095, 4095, 4095]], hlg)[0][0], 255)
    }

    func testBrighterIsNeverDarker() throws {
        for mapping in [pq, hlg] {
            let greys = try map((0..<4096).map { [$0, $0, $0] }, mapping)
            for code in 1..<4096 {
                XCTAssertGreaterThanOrEqual(greys[code][0], greys[code - 1][0], "\(mapping), grey \(code)")
                XCTAssertEqual(greys[code][0], greys[code][1])
                XCTAssertEqual(greys[code][0], greys[code][2])
            }
            // One channel raised at a time, the others fixed: that channel never darkens.
            for base in [0, 1000, 2500] {
                for channel in 0..<3 {
                    let ramp = (0..<4096).map { code -> [Int] in
                        var pixel = [base, base, base]
                        pixel[channel] = code
                        return pixel
                    }
                    let mapped = try map(ramp, mapping)
                    for code in 1..<4096 where mapped[code][channel] < mapped[code - 1][channel] {
                        XCTFail("\(mapping): channel \(channel) over \(base) darkens at \(code)")
                        break
                    }
                }
            }
        }
    }

    func testAlphaAndEightBitSamples() throws {
        let mapper = try XCTUnwrap(HDRToneMapper(pq, primaries: 9, bitDepth: 10))
        let samples: [UInt16] = [0, 0, 0, 1023, 1023, 1023, 1023, 512, 300, 300, 300, 0]
        var out = [UInt8](repeating: 0, count: 12)
        mapper.map(samples, channels: 4, inputRowSamples: 12, width: 3, height: 1, into: &out, bytesPerRow: 12)
        XCTAssertEqual([out[3], out[7], out[11]], [255, 128, 0])
        XCTAssertEqual(Array(out[0..<3]), [0, 0, 0])
        XCTAssertEqual(Array(out[4..<7]), [255, 255, 255])
        let eight = try XCTUnwrap(HDRToneMapper(pq, primaries: 9, bitDepth: 8))
        let bytes: [UInt8] = [148, 148, 148, 255]  // 148/255: about 203 cd/m²
        var grey = [UInt8](repeating: 0, count: 4)
        eight.map(bytes, channels: 4, inputRowSamples: 4, width: 1, height: 1, into: &grey, bytesPerRow: 4)
        XCTAssertEqual(grey, HDRReference.sdr([148.0 / 255, 148.0 / 255, 148.0 / 255], transfer: .pq) + [255])
    }

    func testMatrixIsBT2087s() {
        let matrix = PrimariesMatrix.toBT709(from: NCLXColor.chromaticities[9]!)
        for (index, expected) in HDRReference.bt2020To709.flatMap({ $0 }).enumerated() {
            XCTAssertEqual(matrix[index], expected, accuracy: 2e-6, "element \(index)")
        }
        // BT.709 primaries: the identity; Display P3 keeps white white.
        let identity = PrimariesMatrix.toBT709(from: NCLXColor.chromaticities[1]!)
        for index in 0..<9 { XCTAssertEqual(identity[index], index % 4 == 0 ? 1 : 0, accuracy: 1e-9) }
        for primaries in [4, 11, 12] {
            let m = PrimariesMatrix.toBT709(from: NCLXColor.chromaticities[primaries]!)
            for row in 0..<3 { XCTAssertEqual(m[row * 3] + m[row * 3 + 1] + m[row * 3 + 2], 1, accuracy: 1e-9) }
        }
        // BT.2100's luminance weights.
        for (weight, expected) in zip(PrimariesMatrix.luminance(NCLXColor.chromaticities[9]!), [0.2627, 0.6780, 0.0593]) {
            XCTAssertEqual(weight, expected, accuracy: 5e-5)
        }
    }

    func testWhatIsReported() throws {
        func info(_ primaries: Int, _ transfer: Int, cll: Int? = nil, mastering: Double? = nil) -> ColorProfileInfo {
            ColorConversion.info(
                for: .nclx(
                    NCLXColor(
                        primaries: primaries, transfer: transfer,
                        lightLevel: ContentLightLevels(maxContentLightLevel: cll, masteringPeak: mastering))),
                layout: .rgba)
        }
        let assumed = info(9, 16)
        XCTAssertEqual(assumed.hdrToneMapping, HDRToneMapping(transfer: .pq, sourcePeak: 1000, peakSource: .assumed))
        XCTAssertNil(assumed.warning)
        XCTAssertEqual(assumed.source, .nclx)
        XCTAssertFalse(assumed.isSRGB)
        XCTAssertEqual(
            info(9, 16, cll: 4000, mastering: 1000).hdrToneMapping,
            HDRToneMapping(transfer: .pq, sourcePeak: 4000, peakSource: .contentLightLevel))
        XCTAssertEqual(
            info(9, 16, mastering: 600.5).hdrToneMapping,
            HDRToneMapping(transfer: .pq, sourcePeak: 600.5, peakSource: .masteringDisplay))
        // HLG is scene-referred: always the nominal 1000 cd/m².
        XCTAssertEqual(
            info(2, 18, cll: 4000).hdrToneMapping, HDRToneMapping(transfer: .hlg, sourcePeak: 1000, peakSource: .assumed))
        XCTAssertEqual(
            assumed.hdrToneMapping?.description, "PQ to SDR (BT.2408 EETF, source peak 1000 cd/m², assumed)")
        // Primaries with no matrix (XYZ): reported, not converted.
        let xyz = info(10, 16)
        XCTAssertNil(xyz.hdrToneMapping)
        XCTAssertNotNil(xyz.warning)
        XCTAssertNil(info(1, 13).hdrToneMapping)
        // Colour management off: no tone mapping.
        let source = ColorSource.nclx(NCLXColor(primaries: 9, transfer: 16))
        XCTAssertNotNil(ColorConversion.toneMapping(for: source, management: .default))
        XCTAssertNil(ColorConversion.toneMapping(for: source, management: .off))
    }

    /// JPEG XL: PQ's peak from the codestream's intensity target, unless
    /// it is one of libjxl's defaults; a mapper from chromaticities (the
    /// file's primaries and white) on 16-bit samples; what is reported.
    func testJPEGXLPeakChromaticitiesAndReport() throws {
        for (target, peak, source) in [
            (Float(4000), 4000.0, HDRToneMapping.PeakSource.intensityTarget), (150, 150, .intensityTarget),
            (10000, 1000, .assumed), (255, 1000, .assumed), (0, 1000, .assumed), (.nan, 1000, .assumed),
            (.infinity, 1000, .assumed),
        ] {
            XCTAssertEqual(
                HDRToneMapping(transferCode: 16, intensityTarget: target),
                HDRToneMapping(transfer: .pq, sourcePeak: peak, peakSource: source), "\(target)")
        }
        XCTAssertEqual(
            HDRToneMapping(transferCode: 18, intensityTarget: 4000),
            HDRToneMapping(transfer: .hlg, sourcePeak: 1000, peakSource: .assumed))
        XCTAssertNil(HDRToneMapping(transferCode: 13, intensityTarget: 4000))

        // 16-bit samples (the 12-bit codes with their bits repeated) through BT.2020's chromaticities.
        let bt2020 = try XCTUnwrap(NCLXColor.chromaticities[9])
        for (mapping, transfer) in [(pq, HDRReference.Transfer.pq), (hlg, .hlg)] {
            let mapper = try XCTUnwrap(HDRToneMapper(mapping, chromaticities: bt2020, bitDepth: 16))
            let pixels = HDRReference.chart(width: 64)
            let samples = pixels.flatMap { $0.map(HDRReference.sixteenBits) }
            var out = [UInt8](repeating: 0, count: pixels.count * 4)
            mapper.map(
                samples, channels: 3, inputRowSamples: samples.count, width: pixels.count, height: 1, into: &out,
                bytesPerRow: out.count)
            for (index, pixel) in pixels.enumerated() {
                let expected = HDRReference.sdr(pixel.map { Double($0) / 4095 }, transfer: transfer)
                for c in 0..<3 { XCTAssertEqual(Int(out[index * 4 + c]), Int(expected[c]), accuracy: 1, "\(pixel)") }
            }
        }
        // Chromaticities that make no matrix.
        XCTAssertNil(HDRToneMapper(pq, chromaticities: [0.3127, 0, 0.64, 0.33, 0.3, 0.6, 0.15, 0.06], bitDepth: 16))
        XCTAssertNil(HDRToneMapper(pq, chromaticities: [0.3127, 0.329, 0.2, 0.2, 0.3, 0.3, 0.4, 0.4], bitDepth: 16))
        XCTAssertNil(HDRToneMapper(pq, chromaticities: [0.3127, 0.329], bitDepth: 16))

        // Reported as libjxl's profile for the encoding, with the mapping
        // instead of a warning; not converted; off, not tone mapped.
        let encoding = HDREncoding(mapping: pq, chromaticities: bt2020, profile: nil)
        let info = ColorConversion.info(for: .hdrEncoding(encoding), layout: .rgba)
        XCTAssertEqual(info.hdrToneMapping, pq)
        XCTAssertEqual(info.source, .iccProfile)
        XCTAssertNil(info.warning)
        XCTAssertFalse(info.isSRGB)
        XCTAssertFalse(ColorSource.hdrEncoding(encoding).isEmbeddedProfile)
        XCTAssertNil(ColorConversion.transform(for: .hdrEncoding(encoding), layout: .rgba, management: .default))
        XCTAssertEqual(ColorConversion.toneMapping(for: .hdrEncoding(encoding), management: .default), pq)
        XCTAssertNil(ColorConversion.toneMapping(for: .hdrEncoding(encoding), management: .off))
    }

    func testCodable() throws {
        let info = ColorProfileInfo(
            source: .nclx, description: "nclx primaries 9, transfer 16", colorSpace: .rgb, byteCount: 0, isSRGB: false,
            hdrToneMapping: HDRToneMapping(transfer: .hlg, sourcePeak: 1000, peakSource: .assumed))
        let decoded = try JSONDecoder().decode(ColorProfileInfo.self, from: try JSONEncoder().encode(info))
        XCTAssertEqual(decoded, info)
        // Encoded before the field existed: nil.
        let old = #"{"source":"nclx","colorSpace":"rgb","byteCount":0,"isSRGB":false}"#
        XCTAssertNil(try JSONDecoder().decode(ColorProfileInfo.self, from: Data(old.utf8)).hdrToneMapping)
    }
}
