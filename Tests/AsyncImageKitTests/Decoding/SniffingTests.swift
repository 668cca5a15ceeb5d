import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

final class SniffingTests: XCTestCase {
    func testSignatures() throws {
        XCTAssertEqual(ImageFormat.sniff(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0])), .png)
        XCTAssertEqual(ImageFormat.sniff(Data([0xFF, 0xD8, 0xFF, 0xE0])), .jpeg)
        XCTAssertEqual(ImageFormat.sniff(Data("GIF89a".utf8)), .gif)
        XCTAssertEqual(ImageFormat.sniff(Data("GIF87a".utf8)), .gif)
        XCTAssertNil(ImageFormat.sniff(Data("GIF88a".utf8)))
        XCTAssertEqual(ImageFormat.sniff(Data("RIFF\u{1A}\0\0\0WEBPVP8 ".utf8)), .webp)
        XCTAssertEqual(ImageFormat.sniff(Data("RIFF\0\0\0\0WEBP".utf8)), .webp, "the size is not checked here")
        XCTAssertNil(ImageFormat.sniff(Data("RIFF\u{1A}\0\0\0WAVEfmt ".utf8)), "another RIFF form")
        XCTAssertNil(ImageFormat.sniff(Data("RIFF\u{1A}\0\0\0WEB".utf8)), "cut before the form type")
        XCTAssertNil(ImageFormat.sniff(Data([0xFF, 0xD8])))
        XCTAssertNil(ImageFormat.sniff(Data()))
        XCTAssertNil(ImageFormat.sniff(Data("<html>".utf8)))
    }

    /// The bytes decide, not a name: a PNG handed over as anything is decoded as PNG.
    func testFormatComesFromBytesNotNames() throws {
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 3, height: 2, color: RGBA(r: 1, g: 2, b: 3)))
        let folder = FileManager.default.temporaryDirectory
        let misnamed = folder.appendingPathComponent("sniff-\(UUID().uuidString).jpg")
        try png.write(to: misnamed)
        defer { try? FileManager.default.removeItem(at: misnamed) }
        let image = try ImageDecoder().decode(try Data(contentsOf: misnamed))
        XCTAssertEqual(image.format, .png)
        XCTAssertEqual(image.size, PixelSize(width: 3, height: 2))
    }

    func testUnknownDataFailsAtSniffing() {
        let failure = assertDecodingFails { try ImageDecoder().decode(Data("<html>not an image</html>".utf8)) }
        XCTAssertEqual(failure?.stage, .sniffing)
        XCTAssertNil(failure?.format)
        let empty = assertDecodingFails { try ImageDecoder().decode(Data()) }
        XCTAssertEqual(empty?.reason, "empty data")
    }
}
