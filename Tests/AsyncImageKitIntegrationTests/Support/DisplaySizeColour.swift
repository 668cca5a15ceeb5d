import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The display-size colour check for the formats that return whole images
/// (AVIF, HEIC, JPEG XL): a tagged file decoded at half size with
/// ``ResizeQuality/high``, where a matrix-shaper profile's transform runs
/// inside the resize, against the reference of issue 41: the file decoded
/// and converted at full size, then the same resampler. Within two levels
/// (the reference rounds to bytes between the transform and the filter;
/// the fused path does not) and mean ΔE00 at most 0.2; and not the
/// unconverted values resized (the transform ran). The measured figures
/// are printed.
func assertDisplaySizeConverts(
    _ data: Data, _ name: String, file: StaticString = #filePath, line: UInt = #line
) throws {
    let full = try ImageDecoder().decode(data)
    let target = PixelSize(width: full.width / 2, height: full.height / 2)
    let expected = try ImageResizer.resize(full, to: target, quality: .high)
    var options = DecodingOptions()
    options.targetSize = target
    options.resizeQuality = .high
    let small = try ImageDecoder().decode(data, options: options)
    XCTAssertEqual(small.size, target, name, file: file, line: line)
    let levels = ImageComparison.maxColourDifference(small, expected)
    let difference = ImageComparison.ciede2000(small, expected)
    XCTAssertLessThanOrEqual(levels, 2, name, file: file, line: line)
    XCTAssertLessThanOrEqual(difference.mean, 0.2, name, file: file, line: line)
    var unconverted = options
    unconverted.colorManagement = .off
    let naive = try ImageDecoder().decode(data, options: unconverted)
    XCTAssertGreaterThan(ImageComparison.maxColourDifference(small, naive), 5, name, file: file, line: line)
    print(String(format: "display size %@: %d level(s), mean ΔE00 %.3f, max %.3f", name, levels, difference.mean, difference.max))
}

/// The display-size check's source for the encoders that read a PNG's
/// `iCCP` (heif-enc, cjxl): a 96x72 photo tagged Adobe RGB (Ghostscript's
/// a98.icc); skipped without the profile.
func adobeRGBTaggedPNG() throws -> Data {
    let path = "/usr/share/color/icc/ghostscript/a98.icc"
    guard let profile = FileManager.default.contents(atPath: path) else {
        throw XCTSkip("\(path) missing (Debian's libgs-common)")
    }
    let source = SyntheticImage.photo(width: 96, height: 72, seed: 41)
    return ColourFixtures.png(source, chunks: [("iCCP", ColourFixtures.iCCPPayload(profile))])
}
