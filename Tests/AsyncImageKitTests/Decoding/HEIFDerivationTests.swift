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

    func testDeepDerivationsAreRefused() {
        let chain = (1...40).map { (type: "dimg", from: $0, to: [$0 + 1]) }
        XCTAssertEqual(fault(file(primary: 1, references: chain)), "derived images nested deeper than 16 levels")
        let shallow = (1..<16).map { (type: "dimg", from: $0, to: [$0 + 1]) }
        XCTAssertNil(fault(file(primary: 1, references: shallow)))
    }

    /// The fuzzer's file, through the decoder: a typed error at `header`,
    /// before libheif (which overflowed its stack on it).
    func testTheFuzzersGridFailsAtHeader() throws {
        let url = FuzzRegressionTests.directory.appendingPathComponent("heic/grid-that-lists-itself-as-a-tile.heic")
        XCTAssertThrowsError(try HEIFDecoder().decode(try Data(contentsOf: url))) { error in
            guard case .decoding(let failure, _) = error as? AsyncImageError else { return XCTFail("\(error)") }
            XCTAssertEqual(failure.stage, .header)
            XCTAssertTrue(failure.reason.contains("cycle"), failure.reason)
        }
    }
}
