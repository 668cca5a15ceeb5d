@testable import AsyncImageKit
import ImageFixtures
import XCTest

/// The engine's out-of-line optionals: one pointer in their owner, the value as set.
final class OutOfLineTests: XCTestCase {
    private struct Holder {
        @OutOfLine var properties: ImageFileProperties?
    }

    func testAnAbsentValueCostsItsOwnerOnePointer() {
        // Inline, the optional properties are hundreds of bytes in every pending request and job.
        XCTAssertGreaterThan(MemoryLayout<ImageFileProperties?>.size, 100)
        XCTAssertEqual(MemoryLayout<Holder>.size, MemoryLayout<UnsafeRawPointer>.size)
    }

    func testItKeepsWhatWasSetAndCopiesAsAValue() throws {
        let png = try PNGEncoder().encode(SyntheticImage.photo(width: 40, height: 30, seed: 3))
        let properties = try XCTUnwrap(ImageFileProperties(data: png))
        var holder = Holder()
        XCTAssertNil(holder.properties)
        holder.properties = properties
        XCTAssertEqual(holder.properties, properties)
        let copy = holder
        holder.properties = nil
        XCTAssertNil(holder.properties)
        XCTAssertEqual(copy.properties, properties, "a copy keeps its own value")
        XCTAssertEqual(Holder(properties: properties).properties?.pixelSize, properties.pixelSize)
    }
}
