@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// The frame limit on a GIF and on a WebP animation made by `img2webp` (a
/// child process, see ``WebPTools``); the other limits: PixelLimitTests in
/// AsyncImageKitTests.
final class WebPPixelLimitTests: XCTestCase {
    /// `maxFrames`: an animation of exactly the limit decodes; one frame
    /// more fails at stage `limits`, GIF before that frame is decoded, WebP
    /// from its container before any is; so does a decoded image checked
    /// against a lower limit (a request sharing the decode).
    func testFrameLimitIsInclusive() throws {
        XCTAssertEqual(DecodingOptions().maxFrames, 10_000)
        let frames = (0..<5).map { n in GIFFrameSpec.filled(UInt8(n % 2), width: 2, height: 2) }
        let gif = try GIFWriter.encode(
            width: 2, height: 2, globalPalette: [RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 255, b: 255)], frames: frames)
        let tools = try WebPTools()
        defer { tools.remove() }
        let a = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 1, g: 1, b: 1))
        let b = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 99, g: 1, b: 1))
        let webp = try tools.img2webp([(a, 10), (b, 10), (a, 10), (b, 10), (a, 10)], loop: 0)
        for data in [gif, webp] {
            let image = try ImageDecoder().decode(data, options: DecodingOptions(maxFrames: 5))
            XCTAssertEqual(image.frames.count, 5)
            XCTAssertNil(DecodingOptions(maxFrames: 5).limitFailure(for: image))
            XCTAssertEqual(DecodingOptions(maxFrames: 4).limitFailure(for: image)?.stage, .limits)
            let failure = assertDecodingFails { try ImageDecoder().decode(data, options: DecodingOptions(maxFrames: 4)) }
            XCTAssertEqual(failure?.stage, .limits)
            XCTAssertEqual(failure?.isPixelLimit, true, "a request with a higher limit decodes again")
            XCTAssertTrue(failure?.reason.contains("frames") ?? false, failure?.reason ?? "")
        }
    }
}
