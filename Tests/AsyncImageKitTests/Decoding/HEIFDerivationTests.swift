@testable import AsyncImageKit
import Foundation
import XCTest

/// `ISOBox.derivationFault`: the check HEIFDecoder makes before libheif
/// decodes, because libheif 1.15 follows derived images (`dimg`) and their
/// auxiliary images (`auxl`) by recursion without looking for cycles (the
/// fuzzer's grid that lists itself as a tile killed the process).
final class HEIFDerivationTests: XCTestCase {
    private func box(_ type: String, _ body: [UInt8]) -> [UInt8] {
        let size = UInt32(body.count + 8)
        return withUnsafeBytes(of: size.bigEndian, Array.init) + Array(type.utf8) + body
    }

    private func u16(_ value: Int) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    /// A file with just the boxes the check reads: `ftyp`, then `meta`
    /// with `pitm` and an `iref` (version 0: 16-bit item IDs).
    private func file(primary: Int, references: [(type: String, from: Int, to: [Int])]) -> [UInt8] {
        let pitm = box("pitm", [0, 0, 0, 0] + u16(primary))
        let refs = references.flatMap { box($0.type, u16($0.from) + u16($0.to.count) + $0.to.flatMap(u16)) }
        let iref = box("iref", [0, 0, 0, 0] + refs)
        return box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8))
            + box("meta", [0, 0, 0, 0] + pitm + iref)
    }

    private func fault(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { ISOBox.derivationFault(ByteView(bytes: $0)) }
    }

    func testGridsOverlaysAndAlphaPass() {
        // A grid of four tiles, with an alpha grid of four tiles (auxl of the grid).
        let references: [(type: String, from: Int, to: [Int])] = [
            ("dimg", 1, [2, 3, 4, 5]), ("dimg", 6, [7, 8, 9, 10]), ("auxl", 6, [1]), ("thmb", 11, [1]),
        ]
        XCTAssertNil(fault(file(primary: 1, references: references)))
        // Tiles shared by two derived images are no cycle.
        XCTAssertNil(fault(file(primary: 1, references: [("dimg", 1, [2, 3]), ("dimg", 2, [4]), ("dimg", 3, [4])])))
        XCTAssertNil(fault(file(primary: 1, references: [])))
        XCTAssertNil(fault([0, 0, 0, 8] + Array("ftyp".utf8)), "no meta: nothing to check")
    }

    func testCyclesAreRefused() {
        XCTAssertEqual(
            fault(file(primary: 2, references: [("dimg", 2, [2])])),
            "item 2 refers back to item 2 (a cycle of derived images)")
        XCTAssertNotNil(fault(file(primary: 1, references: [("dimg", 1, [2]), ("dimg", 2, [3]), ("dimg", 3, [1])])))
        // Through an alpha image: the grid's alpha is a grid that uses the grid.
        XCTAssertNotNil(fault(file(primary: 1, references: [("dimg", 1, [2]), ("auxl", 5, [1]), ("dimg", 5, [1])])))
    }

    /// libheif 1.15 reads an `iref`'s references one after another,
    /// whatever their sizes say: a reference with a garbage size still
    /// counts (the fuzzer's second file hid the `auxl` that closes a cycle
    /// behind a size of 2 GB).
    func testAReferenceWithAGarbageSizeStillCounts() {
        var bytes = file(primary: 2, references: [("dimg", 2, [1]), ("dimg", 4, [2]), ("auxl", 4, [2])])
        let auxl = bytes.count - 14  // the last reference: 8-byte header, from, count, one ID
        XCTAssertEqual(Array(bytes[auxl + 4..<auxl + 8]), Array("auxl".utf8))
        bytes.replaceSubrange(auxl..<auxl + 4, with: [0x85, 0x06, 0x3B, 0x0E])
        XCTAssertNotNil(fault(bytes), "the alpha of 2 is grid 4, made of 2")
        XCTAssertNil(fault(file(primary: 2, references: [("dimg", 2, [1]), ("dimg", 4, [2])])), "without the auxl: no cycle")
    }

    func testDeepDerivationsAreRefused() {
        let chain = (1...40).map { (type: "dimg", from: $0, to: [$0 + 1]) }
        XCTAssertEqual(fault(file(primary: 1, references: chain)), "derived images nested deeper than 16 levels")
        let shallow = (1..<16).map { (type: "dimg", from: $0, to: [$0 + 1]) }
        XCTAssertNil(fault(file(primary: 1, references: shallow)))
    }

    /// A `meta` with `iinf` (items of the given types), `iloc` (version 1,
    /// each item's data in `idat`, construction method 1) and `idat`.
    private func derivedFile(_ items: [(type: String, data: [UInt8])]) -> [UInt8] {
        let infes = items.enumerated().flatMap { index, item in
            box("infe", [2, 0, 0, 0] + u16(index + 1) + u16(0) + Array(item.type.utf8) + [0])
        }
        let iinf = box("iinf", [0, 0, 0, 0] + u16(items.count) + infes)
        var idatBody: [UInt8] = []
        var entries: [UInt8] = []
        for (index, item) in items.enumerated() {
            // ID, construction method 1, data reference 0, no base (size 0), one extent: offset, length (4 bytes each).
            entries += u16(index + 1) + u16(1) + u16(0) + u16(1)
            entries += withUnsafeBytes(of: UInt32(idatBody.count).bigEndian, Array.init)
            entries += withUnsafeBytes(of: UInt32(item.data.count).bigEndian, Array.init)
            idatBody += item.data
        }
        let iloc = box("iloc", [1, 0, 0, 0, 0x44, 0x00] + u16(items.count) + entries)
        return box("ftyp", Array("heic".utf8) + [0, 0, 0, 0] + Array("mif1heic".utf8))
            + box("meta", [0, 0, 0, 0] + box("pitm", [0, 0, 0, 0] + u16(1)) + iinf + iloc + box("idat", idatBody))
    }

    /// A grid's or an overlay's canvas counts against the pixel limit,
    /// from the item's data (16- or 32-bit sizes), whatever `ispe` says.
    func testDerivedCanvasesCountAgainstThePixelLimit() {
        func check(_ items: [(type: String, data: [UInt8])], _ maxPixels: Int = 1_000_000) -> String? {
            derivedFile(items).withUnsafeBytes { ISOBox.derivedCanvasFault(ByteView(bytes: $0), maxPixels: maxPixels) }
        }
        let smallGrid: [UInt8] = [0, 0, 1, 1] + u16(1000) + u16(1000)
        XCTAssertNil(check([("grid", smallGrid), ("hvc1", [])]))
        XCTAssertNotNil(check([("grid", smallGrid)], 999_999))
        let wideGrid: [UInt8] = [0, 1, 0, 0, 0, 1, 0x11, 0x70, 0, 0, 0, 16]  // 32-bit: 70000x16
        XCTAssertNil(check([("grid", wideGrid)], 70_000 * 16))
        XCTAssertEqual(
            check([("grid", wideGrid)], 70_000 * 16 - 1),
            "item 1 (grid) has a 70000x16 canvas: 1120000 pixels, over the limit of 1119999")
        let overlay: [UInt8] = [0, 0] + [0, 0, 0, 0, 0, 0, 0xFF, 0xFF] + u16(60_000) + u16(60_000)
        XCTAssertNotNil(check([("hvc1", []), ("iovl", overlay)]))
        XCTAssertNil(check([("hvc1", []), ("iovl", [0, 0, 0, 0])]), "data too short to say: left to libheif")
    }

    /// The fuzzer's file, through the decoder: a typed error at `header`,
    /// before libheif (which overflowed its stack on it).
    /// The fuzzer's overlay whose canvas is 2.5 GB: a pixel-limit failure,
    /// before libheif allocates it.
    func testTheFuzzersOverlayFailsAtLimits() throws {
        let url = FuzzRegressionTests.directory.appendingPathComponent("heic/overlay-canvas-of-2.5GB.heic")
        XCTAssertThrowsError(try HEIFDecoder().decode(try Data(contentsOf: url))) { error in
            guard case .decoding(let failure, _) = error as? AsyncImageError else { return XCTFail("\(error)") }
            XCTAssertEqual(failure.stage, .limits)
            XCTAssertTrue(failure.reason.contains("(iovl) has a"), failure.reason)
        }
    }

    /// Two grids made of each other (the first finding, edited): libheif
    /// 1.15 overflowed its stack already when asked the primary image's bit
    /// depth, so the file's properties (read for every HEIC body the loader
    /// receives, and by the header probe) are refused the same way: none,
    /// rather than a dead process.
    func testACycleHasNoFileProperties() throws {
        let url = FuzzRegressionTests.directory.appendingPathComponent("heic/two-grids-made-of-each-other.heic")
        let data = try Data(contentsOf: url)
        XCTAssertEqual(ImageFormat.sniff(data), .heic)
        XCTAssertNil(ImageFileProperties(data: data)?.pixelSize)
        XCTAssertThrowsError(try ImageDecoder().decode(data))
    }

    func testTheFuzzersFilesFailAtHeader() throws {
        for name in [
            "grid-that-lists-itself-as-a-tile.heic", "alpha-grid-behind-a-2GB-reference-size.heic",
            "two-grids-made-of-each-other.heic",
        ] {
            let url = FuzzRegressionTests.directory.appendingPathComponent("heic/\(name)")
            XCTAssertThrowsError(try HEIFDecoder().decode(try Data(contentsOf: url)), name) { error in
                guard case .decoding(let failure, _) = error as? AsyncImageError else { return XCTFail("\(error)") }
                XCTAssertEqual(failure.stage, .header, name)
                XCTAssertTrue(failure.reason.contains("cycle"), failure.reason)
            }
        }
    }
}
