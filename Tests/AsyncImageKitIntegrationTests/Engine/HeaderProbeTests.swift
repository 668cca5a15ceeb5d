import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// The header probe (the file's properties from a transfer's first bytes)
/// reports the whole file's properties, however the body arrives: a piece
/// that holds the size but not a later header the properties read (found by
/// the `probe` fuzz target, `Resources/fuzz/probe/`) must not fix them early.
final class HeaderProbeTests: XCTestCase {
    /// A PNG whose `eXIf` orientation (a quarter turn) comes after the first
    /// piece of the body: the server sends the signature and IHDR, waits
    /// until the test lets it go on, then sends the rest. The image, the
    /// response and the task report the upright size the decoder applied.
    func testPropertiesReadAfterTheFirstPieceAreTheWholeFiles() async throws {
        let h = try LoaderHarness()
        var builder = EXIFBuilder(bigEndian: true)
        builder.image = [(0x0112, .short([6]))]
        let png = RawPNGWriter.encode(SyntheticImage.quadrants(width: 40, height: 20), chunks: [("eXIf", Data(builder.tiff()))])
        let whole = try XCTUnwrap(ImageFileProperties(data: png))
        XCTAssertEqual(whole.uprightPixelSize, PixelSize(width: 20, height: 40))
        let firstPieceSent = expectation(description: "the first piece (signature and IHDR) is sent")
        let rest = Gate()
        h.server.respond("/turned.png") { connection in
            _ = connection.write("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: \(png.count)\r\n\r\n")
            _ = connection.write(png.prefix(33))
            firstPieceSent.fulfill()
            rest.wait()
            _ = connection.write(png.dropFirst(33))
        }
        let url = h.server.url(path: "/turned.png")
        let task = h.loader.loadImage(url)
        await fulfillment(of: [firstPieceSent], timeout: 15)
        rest.open()
        let response = try await h.loader.response(for: ImageRequest(url: url))
        XCTAssertEqual(response.image.size, PixelSize(width: 20, height: 40))
        XCTAssertEqual(response.fileProperties, whole)
        XCTAssertEqual(response.image.fileProperties, whole)
        XCTAssertEqual(task.fileProperties, whole)
    }
}
