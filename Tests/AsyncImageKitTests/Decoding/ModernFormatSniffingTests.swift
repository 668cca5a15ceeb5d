@testable import AsyncImageKit
import Foundation
import FuzzTargets
import TestSupport
import XCTest

/// The ISO BMFF formats (issue 32) are told by the brands of their leading
/// `ftyp` box, not by a name; and `irot`/`imir` map to EXIF orientations.
final class ModernFormatSniffingTests: XCTestCase {
    /// An `ftyp` box: its size, `ftyp`, the major brand, a minor version of
    /// 0, then the compatible brands.
    private func ftyp(_ major: String, _ compatible: [String], size: Int? = nil) -> Data {
        let body = Data(major.utf8) + Data([0, 0, 0, 0]) + Data(compatible.joined().utf8)
        let total = UInt32(size ?? (8 + body.count))
        return Data(withUnsafeBytes(of: total.bigEndian, Array.init)) + Data("ftyp".utf8) + body
    }

    func testAVIFBrands() {
        XCTAssertEqual(ImageFormat.sniff(ftyp("avif", ["mif1", "miaf"])), .avif)
        XCTAssertEqual(ImageFormat.sniff(ftyp("avis", ["avif", "msf1"])), .avif)
        XCTAssertEqual(ImageFormat.sniff(ftyp("mif1", ["avif", "miaf"])), .avif, "avif as a compatible brand")
        XCTAssertEqual(ImageFormat.sniff(Data(ftyp("avif", []).prefix(12))), .avif, "the major brand is enough")
        XCTAssertNil(ImageFormat.sniff(Data(ftyp("avif", []).prefix(11))), "cut inside the major brand")
        XCTAssertNil(ImageFormat.sniff(ftyp("isom", ["mp41", "iso2"])), "a video")
        XCTAssertNil(ImageFormat.sniff(ftyp("avif", [], size: 1)), "a 64-bit size never holds an ftyp")
        XCTAssertNil(ImageFormat.sniff(ftyp("avif", [], size: 0)))
        var wrongBox = ftyp("avif", ["mif1"])
        wrongBox.replaceSubrange(4..<8, with: Data("free".utf8))
        XCTAssertNil(ImageFormat.sniff(wrongBox))
        // A compatible brand past the box's declared end is not the box's
        // (the box says mif1 only: HEIF's own brand, read as HEIC).
        XCTAssertEqual(ImageFormat.sniff(ftyp("mif1", ["avif"], size: 16) + Data("avif".utf8)), .heic)
        XCTAssertEqual(ImageFormat.avif.mimeType, "image/avif")
        XCTAssertEqual(ImageFormat.avif.description, "avif")
    }

    func testHEICBrands() {
        XCTAssertEqual(ImageFormat.sniff(ftyp("heic", ["mif1", "heic"])), .heic)
        XCTAssertEqual(ImageFormat.sniff(ftyp("mif1", ["heic", "miaf"])), .heic)
        XCTAssertEqual(ImageFormat.sniff(ftyp("heix", [])), .heic)
        XCTAssertEqual(ImageFormat.sniff(ftyp("msf1", ["hevc"])), .heic)
        XCTAssertEqual(ImageFormat.sniff(ftyp("mif1", [])), .heic, "HEIF's own brand")
        XCTAssertEqual(ImageFormat.sniff(ftyp("mif1", ["avif", "miaf"])), .avif, "AV1 in HEIF is AVIF")
        XCTAssertNil(ImageFormat.sniff(ftyp("isom", ["mif1"])), "a generic ISO file that merely lists mif1")
        XCTAssertEqual(ImageFormat.heic.mimeType, "image/heic")
        let failure = assertDecodingFails { try ImageDecoder().decode(ftyp("heic", ["mif1"])) }
        XCTAssertEqual(failure?.format, .heic)
        XCTAssertEqual(failure?.stage, .header)
        XCTAssertNil(ImageFileProperties(data: ftyp("heic", ["mif1"])))
    }

    func testJXLSignatures() {
        XCTAssertEqual(ImageFormat.sniff(Data([0xFF, 0x0A])), .jxl, "a bare codestream")
        XCTAssertNil(ImageFormat.sniff(Data([0xFF, 0x0B])))
        XCTAssertNil(ImageFormat.sniff(Data([0xFF])))
        let container: [UInt8] = [0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]
        XCTAssertEqual(ImageFormat.sniff(Data(container)), .jxl, "the container's signature box")
        XCTAssertNil(ImageFormat.sniff(Data(container.prefix(11))))
        XCTAssertEqual(ImageFormat.jxl.mimeType, "image/jxl")
        let failure = assertDecodingFails { try ImageDecoder().decode(Data([0xFF, 0x0A, 0x00])) }
        XCTAssertEqual(failure?.format, .jxl)
        XCTAssertEqual(failure?.stage, .header)
        XCTAssertNil(ImageFileProperties(data: Data(container)))
    }

    /// The HEIF box walker never traps on cut or damaged boxes.
    func testHEIFBoxWalkerIsBounded() {
        let boxes = ftyp("heic", ["mif1"]) + Data([0, 0, 0, 40]) + Data("meta".utf8) + Data(repeating: 0xFF, count: 20)
        for length in 0...boxes.count {
            let prefix = Data(boxes.prefix(length))
            _ = prefix.withUnsafeBytes { HEIFHeader.orientation(ByteView(bytes: $0)) }
        }
        XCTAssertEqual(HEIFHeader.Matrix.anticlockwise.orientation, .left)
        XCTAssertEqual((HEIFHeader.Matrix.leftToRight * HEIFHeader.Matrix.anticlockwise).orientation, .rightMirrored)
        XCTAssertEqual((HEIFHeader.Matrix.topToBottom * HEIFHeader.Matrix.anticlockwise).orientation, .leftMirrored)
    }

    /// Brands and damaged boxes never trap and never decode as anything but a typed failure.
    func testTruncatedBoxesFailTyped() {
        let failure = assertDecodingFails { try ImageDecoder().decode(ftyp("avif", ["mif1", "miaf"])) }
        XCTAssertEqual(failure?.format, .avif)
        XCTAssertEqual(failure?.stage, .header)
        XCTAssertNil(ImageFileProperties(data: ftyp("avif", ["mif1", "miaf"])))
    }

    /// `irot` turns anticlockwise, then `imir` mirrors (mode 0: top to
    /// bottom, EXIF 4; mode 1: left to right, EXIF 2), as libavif documents.
    func testRotationAndMirrorAsOrientation() {
        XCTAssertEqual(AVIFHeader.orientation(rotation: 0, mirror: nil), .up)
        XCTAssertEqual(AVIFHeader.orientation(rotation: 0, mirror: 0), .downMirrored)
        XCTAssertEqual(AVIFHeader.orientation(rotation: 0, mirror: 1), .upMirrored)
        XCTAssertEqual(AVIFHeader.orientation(rotation: 1, mirror: nil), .left, "90° anticlockwise is EXIF 8")
        XCTAssertEqual(AVIFHeader.orientation(rotation: 2, mirror: nil), .down)
        XCTAssertEqual(AVIFHeader.orientation(rotation: 3, mirror: nil), .right, "270° anticlockwise is EXIF 6")
        XCTAssertEqual(AVIFHeader.orientation(rotation: 1, mirror: 0), .leftMirrored, "transpose")
        XCTAssertEqual(AVIFHeader.orientation(rotation: 3, mirror: 1), .leftMirrored, "transpose")
        XCTAssertEqual(AVIFHeader.orientation(rotation: 1, mirror: 1), .rightMirrored, "transverse")
        XCTAssertEqual(AVIFHeader.orientation(rotation: 3, mirror: 0), .rightMirrored, "transverse")
        XCTAssertEqual(AVIFHeader.orientation(rotation: 2, mirror: 0), .upMirrored)
        XCTAssertEqual(AVIFHeader.orientation(rotation: 2, mirror: 1), .downMirrored)
    }

    /// The fuzzing seeds of the modern formats (Fuzz/seeds/images, made with
    /// avifenc, heif-enc and cjxl) pass their own decoder's target, the
    /// registry's (`image`) and the header probe's, and every other
    /// modern decoder refuses them: so the fast suite decodes each format
    /// without the encoders installed.
    func testSeedsPassTheirFuzzTargets() throws {
        let folder = Corpus.packageRoot.appendingPathComponent("Fuzz/seeds/images")
        let targets: [String: FuzzTarget] = ["avif": .avif, "heic": .heic, "jxl": .jxl]
        var checked = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
            let ext = (name as NSString).pathExtension
            guard let own = targets[ext] else { continue }
            let data = try Data(contentsOf: folder.appendingPathComponent(name))
            XCTAssertEqual(ImageFormat.sniff(data)?.rawValue, ext, name)
            XCTAssertNoThrow(try ImageDecoder().decode(data), name)
            XCTAssertNotNil(ImageFileProperties(data: data), name)
            for target in [own, .image, .probe] { XCTAssertNil(target.run(data), "\(name) through \(target)") }
            for (otherExt, other) in targets where otherExt != ext {
                XCTAssertNil(other.run(data), "\(name) through \(other)")
                XCTAssertThrowsError(try ImageDecoder().decoder(for: ImageFormat(rawValue: otherExt)!).decode(data), name)
            }
            checked += 1
        }
        XCTAssertEqual(checked, 8)
    }
}
