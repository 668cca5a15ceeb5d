@testable import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

final class GIFDecoderTests: XCTestCase {
    private let palette = [
        RGBA(r: 0, g: 0, b: 0), RGBA(r: 255, g: 0, b: 0), RGBA(r: 0, g: 255, b: 0), RGBA(r: 0, g: 0, b: 255),
    ]
    private let clear = RGBA(r: 0, g: 0, b: 0, a: 0)

    func testFramesDelaysAndLoopCount() throws {
        let gif = try GIFWriter.encode(
            width: 8, height: 8, globalPalette: palette,
            frames: [
                .filled(1, width: 8, height: 8, delay: 10), .filled(2, width: 8, height: 8, delay: 25),
                .filled(3, width: 8, height: 8, delay: 0),
            ], loopCount: 3)
        let image = try GIFDecoder().decode(gif)
        XCTAssertEqual(image.frames.count, 3)
        XCTAssertTrue(image.isAnimated)
        XCTAssertEqual(image.frames.map(\.duration), [0.1, 0.25, 0.1])  // 0 cs is shown for 0.1 s
        XCTAssertEqual(image.loopCount, 3)
        XCTAssertEqual(image.pixel(x: 3, y: 3, frame: 0), palette[1])
        XCTAssertEqual(image.pixel(x: 3, y: 3, frame: 1), palette[2])
        XCTAssertEqual(image.pixel(x: 3, y: 3, frame: 2), palette[3])
        XCTAssertEqual(image.cost, 3 * (8 * 8 * 4 + Image.frameOverhead))
    }

    /// Frame 1 fills the screen; frame 2 covers the top-left 4x4 with the
    /// disposal under test; frame 3 is a 1x1 dot at (7,7) that shows what
    /// frame 2's disposal left behind.
    private func disposalResult(_ disposal: Int) throws -> Image {
        let gif = try GIFWriter.encode(
            width: 8, height: 8, globalPalette: palette,
            frames: [
                .filled(1, width: 8, height: 8),
                .filled(2, width: 4, height: 4, disposal: disposal),
                .filled(3, left: 7, top: 7, width: 1, height: 1),
            ])
        return try GIFDecoder().decode(gif)
    }

    func testDisposalNoneKeepsTheFrame() throws {
        let image = try disposalResult(1)
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 1), palette[2])
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 2), palette[2])
        XCTAssertEqual(image.pixel(x: 6, y: 6, frame: 2), palette[1])
        XCTAssertEqual(image.pixel(x: 7, y: 7, frame: 2), palette[3])
    }

    func testDisposalBackgroundClearsTheFrameArea() throws {
        let image = try disposalResult(2)
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 1), palette[2])
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 2), clear)
        XCTAssertEqual(image.pixel(x: 5, y: 1, frame: 2), palette[1])
    }

    func testDisposalPreviousRestoresTheCanvas() throws {
        let image = try disposalResult(3)
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 1), palette[2])
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 2), palette[1])
    }

    func testTransparentPixelsShowWhatIsBeneath() throws {
        var indices = [UInt8](repeating: 2, count: 16)
        indices[0] = 0  // transparent
        let gif = try GIFWriter.encode(
            width: 4, height: 4, globalPalette: palette,
            frames: [
                GIFFrameSpec(width: 4, height: 4, indices: indices, transparentIndex: 0),
                GIFFrameSpec(width: 4, height: 4, indices: [UInt8](repeating: 0, count: 16), transparentIndex: 0),
            ])
        let image = try GIFDecoder().decode(gif)
        XCTAssertEqual(image.pixel(x: 0, y: 0, frame: 0), clear)
        XCTAssertEqual(image.pixel(x: 1, y: 0, frame: 0), palette[2])
        XCTAssertEqual(image.pixel(x: 1, y: 0, frame: 1), palette[2], "an all-transparent frame changes nothing")
    }

    func testInterlacedRowsLandInPlace() throws {
        let height = 19
        let indices = (0..<height).flatMap { row in [UInt8](repeating: UInt8(row % 4), count: 5) }
        let gif = try GIFWriter.encode(
            width: 5, height: height, globalPalette: palette,
            frames: [GIFFrameSpec(width: 5, height: height, indices: indices, interlaced: true)])
        let image = try GIFDecoder().decode(gif)
        for row in 0..<height { XCTAssertEqual(image.pixel(x: 2, y: row), palette[row % 4], "row \(row)") }
        XCTAssertEqual(GIFDecoder.interlacedRows(10), [0, 8, 4, 2, 6, 1, 3, 5, 7, 9])
    }

    func testLocalPaletteOverridesGlobal() throws {
        let local = [RGBA(r: 10, g: 20, b: 30), RGBA(r: 40, g: 50, b: 60)]
        let gif = try GIFWriter.encode(
            width: 2, height: 1, globalPalette: palette,
            frames: [GIFFrameSpec(width: 2, height: 1, indices: [0, 1], localPalette: local)])
        let image = try GIFDecoder().decode(gif)
        XCTAssertEqual(image.pixel(x: 0, y: 0), local[0])
        XCTAssertEqual(image.pixel(x: 1, y: 0), local[1])
        XCTAssertFalse(image.isAnimated)
        XCTAssertEqual(image.frames[0].duration, 0)
    }

    func testFramesReachingPastTheScreenAreClipped() throws {
        let gif = try GIFWriter.encode(
            width: 4, height: 4, globalPalette: palette,
            frames: [.filled(1, width: 4, height: 4), .filled(3, left: 2, top: 2, width: 6, height: 6)])
        let image = try GIFDecoder().decode(gif)
        XCTAssertEqual(image.size, PixelSize(width: 4, height: 4))
        XCTAssertEqual(image.pixel(x: 3, y: 3, frame: 1), palette[3])
        XCTAssertEqual(image.pixel(x: 1, y: 1, frame: 1), palette[1])
    }

    /// The documented rule: a damaged later frame fails the whole GIF, naming how far it got.
    func testDamagedLaterFrameFailsTheWholeImage() throws {
        var random = SplitMix64(seed: 9)
        let noisy = (0..<(32 * 32)).map { _ in UInt8(random.next() % 4) }
        let gif = try GIFWriter.encode(
            width: 32, height: 32, globalPalette: palette,
            frames: [
                .filled(1, width: 32, height: 32), .filled(2, width: 32, height: 32),
                GIFFrameSpec(width: 32, height: 32, indices: noisy),
            ])
        XCTAssertEqual(try GIFDecoder().decode(gif).frames.count, 3)
        let failure = assertDecodingFails { try GIFDecoder().decode(gif.prefix(gif.count - 60)) }
        XCTAssertEqual(failure?.stage, .pixels)
        XCTAssertTrue(failure?.reason.contains("after 2 good frame(s)") ?? false, failure?.reason ?? "")
    }

    func testHeaderOnlyFails() {
        let failure = assertDecodingFails { try GIFDecoder().decode(Data("GIF89a".utf8)) }
        XCTAssertEqual(failure?.format, .gif)
        XCTAssertEqual(failure?.stage, .header)
    }

    // MARK: A still of an animation, and a stopped decode

    /// `firstFrameOnly` decodes the first frame alone, as a still: the same
    /// pixels as the animation's frame 0, counted alone against the frame
    /// and pixel limits, and nothing after it read (a damaged second frame
    /// does not fail it).
    func testFirstFrameOnlyDecodesTheFirstFrameAlone() throws {
        let frames: [GIFFrameSpec] = (0..<40).map { .filled(UInt8(1 + $0 % 3), width: 8, height: 8) }
        let gif = try GIFWriter.encode(width: 8, height: 8, globalPalette: palette, frames: frames, loopCount: 0)
        var options = DecodingOptions(maxFrames: 5)
        options.firstFrameOnly = true
        let still = try GIFDecoder().decode(gif, options: options)
        XCTAssertEqual(still.frames.count, 1)
        XCTAssertFalse(still.isAnimated)
        let all = try GIFDecoder().decode(gif)
        XCTAssertEqual(still.frames[0].pixels, all.frames[0].pixels)
        // The first frame whole, the rest garbage: still decodes.
        let firstEnds = try GIFWriter.encode(width: 8, height: 8, globalPalette: palette, frames: [frames[0]]).count - 1
        var damaged = gif.prefix(firstEnds)
        damaged.append(Data(repeating: 0x2C, count: 40))
        XCTAssertEqual(try GIFDecoder().decode(damaged, options: options).frames.count, 1)
        XCTAssertNil(try? GIFDecoder().decode(damaged), "the animation itself is damaged")
    }

    /// A still's cache key names it (`first-frame`), apart from the
    /// animation's, and a still at full size is not the original.
    func testFirstFrameOnlyIsPartOfTheCacheKey() {
        let url = URL(string: "https://example.com/a.gif")!
        var request = ImageRequest(url: url)
        XCTAssertEqual(request.cacheKey.processing, "")
        request.firstFrameOnly = true
        XCTAssertEqual(request.cacheKey.processing, "first-frame")
        XCTAssertFalse(ImageCacheKey.isFullSize(request.cacheKey.processing))
        request.colorManagement = .off
        XCTAssertEqual(request.cacheKey.processing, "first-frame-colour-off")
        var thumbnail = ImageRequest(url: url, sizing: .fitInside(PixelSize(width: 64, height: 64)))
        thumbnail.firstFrameOnly = true
        XCTAssertEqual(thumbnail.cacheKey.processing, "64x64-fit-fitcrops-hq-first-frame")
    }

    /// A decode asked to stop (nobody waits for it) stops between frames,
    /// with a failure that says so.
    func testAStoppedDecodeStopsBetweenFrames() throws {
        let frames: [GIFFrameSpec] = (0..<10).map { _ in .filled(1, width: 8, height: 8) }
        let gif = try GIFWriter.encode(width: 8, height: 8, globalPalette: palette, frames: frames)
        var options = DecodingOptions()
        options.stop = DecodeStop()
        options.stop?.stop()
        let failure = assertDecodingFails { try GIFDecoder().decode(gif, options: options) }
        XCTAssertEqual(failure?.isStopped, true)
        XCTAssertTrue(failure?.reason.hasPrefix("stopped") == true)
    }
}
