import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Colour management against Little CMS's own conversion, with files made
/// at test time by `make-colour-fixtures.py` (Pillow's ImageCms, Debian's
/// python3-pil; ICC profiles from Debian's libgs-common, and those Pillow
/// cannot build, Display P3 among them, built here with Little CMS).
///
/// - Every tagged file decodes within mean ΔE00 0.2 and max 1.0 of the
///   reference: `ImageCms.profileToProfile`, intent 1 (relative
///   colorimetric), no black-point compensation, of the same file (the
///   matrix-shaper ones through the fast path, `MatrixShaperKernel`).
/// - sRGB-tagged files (and a PNG `sRGB` chunk, a `gAMA` of 1/2.2) decode
///   to the bytes of their untagged twin; untagged files decode the same
///   with conversion on or off.
/// - Malformed and mismatched profiles decode as the untagged twin, with
///   a warning in the file properties.
///
/// The table of ΔE is printed (and written to `colour-table.txt` in the
/// fixtures' folder). Under CI a missing python3-pil or libgs-common fails
/// the test; elsewhere it is skipped.
final class ColourConversionTests: XCTestCase {
    private struct Entry: Decodable {
        var name: String
        var file: String
        var kind: String
        var reference: String?
        var twin: String?
        var pressReference: String?
    }

    private static let ghostscriptProfiles = "/usr/share/color/icc/ghostscript"

    /// The fixtures, made once for the class.
    private nonisolated(unsafe) static var made: (folder: URL, entries: [Entry])?

    private func fixtures() throws -> (folder: URL, entries: [Entry]) {
        if let made = Self.made { return made }
        let python = try Self.python()
        guard FileManager.default.fileExists(atPath: Self.ghostscriptProfiles + "/a98.icc") else {
            throw Self.missing("ICC profiles in \(Self.ghostscriptProfiles) (apt-get install libgs-common)")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("colour-fixtures-\(UUID().uuidString)")
        let extra = folder.appendingPathComponent("built")
        try FileManager.default.createDirectory(at: extra, withIntermediateDirectories: true)
        let sRGBPrimaries = [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]
        let built: [(String, Data?)] = [
            ("display-p3.icc", ColorProfiles.displayP3()),
            ("gray-gamma-1.8.icc", ColorProfiles.grayProfile(gamma: 1.8, description: "Grey, gamma 1.8")),
            // What the PNG chunks stand for: the decoder's own construction
            // (white and primaries from cHRM or sRGB's, the curve 1 / gAMA).
            ("chunks-gamma-1.8.icc", ColorProfiles.matrixProfile(chromaticities: sRGBPrimaries, gamma: 1 / 0.55556, description: "gAMA")),
            (
                "chunks-p3-gamma-2.2.icc",
                ColorProfiles.matrixProfile(chromaticities: ColorProfiles.displayP3Chromaticities, gamma: 1 / 0.45455, description: "cHRM")
            ),
        ]
        for (name, data) in built { try XCTUnwrap(data, name).write(to: extra.appendingPathComponent(name)) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("make-colour-fixtures.py")
        let result = try ProcessRun.run(
            URL(fileURLWithPath: python), [script.path, folder.path, Self.ghostscriptProfiles, extra.path])
        guard result.status == 0 else {
            throw NSError(
                domain: "make-colour-fixtures", code: Int(result.status),
                userInfo: [NSLocalizedDescriptionKey: result.errorText])
        }
        let entries = try JSONDecoder().decode(
            [Entry].self, from: Data(contentsOf: folder.appendingPathComponent("manifest.json")))
        Self.made = (folder, entries)
        return (folder, entries)
    }

    override class func tearDown() {
        if let folder = made?.folder { try? FileManager.default.removeItem(at: folder) }
        made = nil
        super.tearDown()
    }

    /// Debian's python3 with Pillow (python3-pil): /usr/bin/python3 first,
    /// as a python3 earlier on the PATH may have no Pillow.
    private static func python() throws -> String {
        let candidates = ["/usr/bin/python3"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/python3" }
        for path in candidates where FileManager.default.isExecutableFile(atPath: path) {
            let check = try? ProcessRun.run(
                URL(fileURLWithPath: path), ["-c", "from PIL import ImageCms, features; assert features.check('webp')"],
                timeLimit: 60)
            if let check {
                if check.status == 0 { return path }
            }
        }
        throw missing("python3 with Pillow's ImageCms (apt-get install python3-pil)")
    }

    private static func missing(_ what: String) -> Error {
        let message = "\(what) not found"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail(message)
            return XCTSkip("failed: \(message)")
        }
        return XCTSkip(message + "; colour conversion tests skipped")
    }

    private func read(_ folder: URL, _ name: String) throws -> Data {
        try Data(contentsOf: folder.appendingPathComponent(name))
    }

    /// Every tagged file against Little CMS: mean ΔE00 ≤ 0.2, max ≤ 1.0;
    /// and, for the table, what the same files gave unconverted.
    func testTaggedFilesMatchLittleCMS() throws {
        let (folder, entries) = try fixtures()
        var table = ["file | converted mean | converted max | unconverted mean | unconverted max", "--- | --- | --- | --- | ---"]
        let tagged = entries.filter { $0.kind == "tagged" }
        XCTAssertGreaterThanOrEqual(tagged.count, 17)
        for entry in tagged {
            let data = try read(folder, entry.file)
            let reference = try read(folder, try XCTUnwrap(entry.reference))
            let converted = try ImageDecoder().decode(data)
            let unconverted = try ImageDecoder().decode(data, options: DecodingOptions(colorManagement: .off))
            let after = try XCTUnwrap(ColourDifference.compare(rgba: converted.pixels, rgb: reference), entry.name)
            let before = try XCTUnwrap(ColourDifference.compare(rgba: unconverted.pixels, rgb: reference), entry.name)
            XCTAssertLessThanOrEqual(after.mean, 0.2, entry.name)
            XCTAssertLessThanOrEqual(after.max, 1.0, entry.name)
            let properties = try XCTUnwrap(ImageFileProperties(data: data)?.colorProfile, entry.name)
            XCTAssertNil(properties.warning, entry.name)
            XCTAssertFalse(properties.isSRGB, entry.name)
            table.append(
                String(format: "%@ | %.3f | %.3f | %.2f | %.2f", entry.name, after.mean, after.max, before.mean, before.max))
        }
        // Untagged CMYK: the simple formula, against the press profile (for the table only).
        for entry in entries where entry.pressReference != nil {
            let image = try ImageDecoder().decode(try read(folder, entry.file))
            let press = try XCTUnwrap(
                ColourDifference.compare(rgba: image.pixels, rgb: try read(folder, entry.pressReference!)))
            table.append(String(format: "%@ (simple formula vs the press profile) | %.2f | %.2f | | ", entry.name, press.mean, press.max))
        }
        let text = table.joined(separator: "\n")
        print("ΔE00 against Little CMS (relative colorimetric, no BPC):\n" + text)
        try? text.write(to: folder.appendingPathComponent("colour-table.txt"), atomically: true, encoding: .utf8)
    }

    /// At display size (``ResizeQuality/high``), a tagged PNG or WebP
    /// against the reference: Little CMS's conversion of the file
    /// (Pillow's), then the same resampler. Matrix-shaper profiles are
    /// converted inside the resize (in floats, no rounding to bytes between
    /// the transform and the filter), the others before it: within two
    /// levels of the reference (which rounds twice) and mean ΔE00 at most
    /// 0.2. (`MatrixShaperKernelTests` holds the fused path against the
    /// same reference computed exactly.)
    func testDisplaySizeDecodesMatchTheReferenceResized() throws {
        let (folder, entries) = try fixtures()
        var checked = 0
        for entry in entries where entry.kind == "tagged" && (entry.file.hasSuffix(".png") || entry.file.hasSuffix(".webp")) {
            let data = try read(folder, entry.file)
            let full = try ImageDecoder().decode(data)
            let reference = try read(folder, try XCTUnwrap(entry.reference))
            var rgba = Data(capacity: reference.count / 3 * 4)
            for index in stride(from: 0, to: reference.count, by: 3) {
                rgba.append(contentsOf: reference[index..<index + 3])
                rgba.append(255)
            }
            let target = PixelSize(width: full.width / 2, height: full.height / 2)
            let expected = try ImageResizer.resize(
                Image(width: full.width, height: full.height, rgba: rgba), to: target, quality: .high)
            var options = DecodingOptions()
            options.targetSize = target
            options.resizeQuality = .high
            let small = try ImageDecoder().decode(data, options: options)
            XCTAssertEqual(small.size, target, entry.name)
            let levels = ImageComparison.maxColourDifference(small, expected)
            let difference = ImageComparison.ciede2000(small, expected)
            XCTAssertLessThanOrEqual(levels, 2, entry.name)
            XCTAssertLessThanOrEqual(difference.mean, 0.2, entry.name)
            print(String(format: "display size %@: %d level(s), mean ΔE00 %.3f, max %.3f", entry.name, levels, difference.mean, difference.max))
            checked += 1
        }
        XCTAssertGreaterThanOrEqual(checked, 4)
    }

    /// sRGB-tagged files decode to their untagged twin's bytes; untagged
    /// files the same with conversion on or off.
    func testSRGBAndUntaggedFilesAreUnchanged() throws {
        let (folder, entries) = try fixtures()
        let sRGB = entries.filter { $0.kind == "srgb" }
        XCTAssertGreaterThanOrEqual(sRGB.count, 7)
        for entry in sRGB {
            let tagged = try ImageDecoder().decode(try read(folder, entry.file))
            let twin = try ImageDecoder().decode(try read(folder, try XCTUnwrap(entry.twin)))
            XCTAssertEqual(tagged.pixels, twin.pixels, entry.name)
            XCTAssertEqual(ImageFileProperties(data: try read(folder, entry.file))?.colorProfile?.isSRGB, true, entry.name)
        }
        for entry in entries where entry.kind.hasPrefix("untagged") {
            let data = try read(folder, entry.file)
            XCTAssertEqual(
                try ImageDecoder().decode(data).pixels,
                try ImageDecoder().decode(data, options: DecodingOptions(colorManagement: .off)).pixels, entry.name)
            XCTAssertNil(ImageFileProperties(data: data)?.colorProfile, entry.name)
        }
    }

    /// Malformed or mismatched profiles: the untagged twin's pixels, and a warning.
    func testMalformedProfilesDecodeUnconvertedWithAWarning() throws {
        let (folder, entries) = try fixtures()
        let malformed = entries.filter { $0.kind == "malformed" }
        XCTAssertGreaterThanOrEqual(malformed.count, 13)
        for entry in malformed {
            let data = try read(folder, entry.file)
            let image = try ImageDecoder().decode(data)
            let twin = try ImageDecoder().decode(try read(folder, try XCTUnwrap(entry.twin)))
            XCTAssertEqual(image.pixels, twin.pixels, entry.name)
            let info = try XCTUnwrap(ImageFileProperties(data: data)?.colorProfile, entry.name)
            XCTAssertNotNil(info.warning, entry.name)
        }
    }

    /// The press-profile CMYK JPEG: three APP2 segments, Adobe inverted inks,
    /// and the profile's description and colour space reported.
    func testCMYKPressProfile() throws {
        let (folder, entries) = try fixtures()
        let entry = try XCTUnwrap(entries.first { $0.name.hasPrefix("CMYK JPEG (press") })
        let data = try read(folder, entry.file)
        let properties = try XCTUnwrap(ImageFileProperties(data: data))
        XCTAssertEqual(properties.colorType, .cmyk)
        XCTAssertEqual(properties.jpeg?.adobeTransform, 0)
        let info = try XCTUnwrap(properties.colorProfile)
        XCTAssertEqual(info.colorSpace, .cmyk)
        XCTAssertGreaterThan(info.byteCount, 2 * 65519)
        XCTAssertNotNil(info.description)
        // Counted: three APP2 ICC_PROFILE segments.
        let marker = Data([0xFF, 0xE2])
        var count = 0
        var at = data.startIndex
        while let found = data.range(of: marker, in: at..<data.endIndex) {
            if data[found.upperBound + 2..<found.upperBound + 13] == Data("ICC_PROFILE".utf8) { count += 1 }
            at = found.upperBound
        }
        XCTAssertEqual(count, 3)
    }
}
