import AsyncImageKit
import Foundation
import ImageFixtures
import XCTest

/// `AnimationTimeline` and `Image.frameIndex(at:)`: which frame shows at time t.
final class AnimationPlaybackTests: XCTestCase {
    /// An in-memory animation of `durations.count` 1x1 frames; frame i has red = i.
    private func animation(_ durations: [Double], loopCount: Int?) -> Image {
        let frames = durations.enumerated().map { index, duration in
            ImageFrame(pixels: Data([UInt8(index), 0, 0, 255]), duration: duration)
        }
        return Image(width: 1, height: 1, bytesPerRow: 4, frames: frames, loopCount: loopCount)
    }

    func testTimeBeforeZeroAndNaNShowTheFirstFrame() {
        let image = animation([0.1, 0.2, 0.3], loopCount: 0)
        XCTAssertEqual(image.frameIndex(at: -5), 0)
        XCTAssertEqual(image.frameIndex(at: -.infinity), 0)
        XCTAssertEqual(image.frameIndex(at: .nan), 0)
        XCTAssertEqual(image.frameIndex(at: 0), 0)
        XCTAssertEqual(image.animationTimeline.nextFrameChange(after: -5), 0.1)
    }

    /// A frame shows from its start time inclusive to the next one's
    /// exclusive; start times are exact sums (0.1 + 0.2 in floating point
    /// is 0.30000000000000004).
    func testExactFrameBoundaries() {
        let image = animation([0.1, 0.2, 0.3], loopCount: 0)
        let timeline = image.animationTimeline
        XCTAssertEqual(timeline.frameStartTimes, [0, 0.1, 0.3])
        XCTAssertEqual(timeline.loopDuration, 0.6)
        XCTAssertEqual(image.duration, 0.6)
        XCTAssertEqual(image.frameIndex(at: 0.1.nextDown), 0)
        XCTAssertEqual(image.frameIndex(at: 0.1), 1)
        XCTAssertEqual(image.frameIndex(at: 0.3.nextDown), 1)
        XCTAssertEqual(image.frameIndex(at: 0.3), 2)
        XCTAssertEqual(image.frameIndex(at: timeline.loopDuration.nextDown), 2)
        XCTAssertEqual(image.frameIndex(at: timeline.loopDuration), 0, "an endless loop starts again")
        XCTAssertEqual(image.frameIndex(at: timeline.loopDuration + 0.15), 1)
        XCTAssertEqual(image.frame(at: 0.35).pixels, Data([2, 0, 0, 255]))
        XCTAssertEqual(image.stillImage(at: 0.15).pixel(x: 0, y: 0), RGBA(r: 1, g: 0, b: 0))
        XCTAssertFalse(image.stillImage(at: 0.15).isAnimated)
        XCTAssertEqual(timeline.nextFrameChange(after: 0), 0.1)
        XCTAssertEqual(timeline.nextFrameChange(after: 0.1), 0.3)
        XCTAssertEqual(timeline.nextFrameChange(after: 0.5), 0.6, "the next loop's start")
    }

    /// No NETSCAPE2.0 block plays once; `n` plays n + 1 times; then the last frame stays.
    func testTheLastFrameStaysOnceTheLoopsEnd() {
        let once = animation([0.1, 0.1, 0.1], loopCount: nil)
        XCTAssertEqual(once.animationTimeline.playCount, 1)
        XCTAssertEqual(once.animationTimeline.totalDuration ?? 0, 0.3, accuracy: 1e-12)
        XCTAssertEqual(once.frameIndex(at: 0.25), 2)
        XCTAssertEqual(once.frameIndex(at: once.animationTimeline.loopDuration), 2, "held at the end, not frame 0")
        XCTAssertEqual(once.frameIndex(at: 1e9), 2)
        XCTAssertEqual(once.frameIndex(at: .infinity), 2)
        XCTAssertFalse(once.animationTimeline.isFinished(at: 0.29))
        XCTAssertTrue(once.animationTimeline.isFinished(at: 0.31))
        XCTAssertEqual(once.animationTimeline.nextFrameChange(after: 0.15), 0.2)
        XCTAssertNil(once.animationTimeline.nextFrameChange(after: 0.29), "the last frame stays up")
        XCTAssertNil(once.animationTimeline.nextFrameChange(after: 0.31))

        let twice = animation([0.1, 0.1, 0.1], loopCount: 1)
        XCTAssertEqual(twice.animationTimeline.playCount, 2)
        XCTAssertEqual(twice.frameIndex(at: 0.35), 0, "the repeat")
        XCTAssertEqual(twice.frameIndex(at: 0.45), 1)
        XCTAssertEqual(twice.frameIndex(at: 0.65), 2)
        XCTAssertEqual(twice.frameIndex(at: 100), 2)
        XCTAssertFalse(twice.animationTimeline.isFinished(at: 0.59))
        XCTAssertEqual(twice.animationTimeline.nextFrameChange(after: 0.25), twice.animationTimeline.loopDuration, "the repeat")
        XCTAssertNil(twice.animationTimeline.nextFrameChange(after: 0.55))
    }

    /// Loop count 0 loops forever: a t of centuries lands on the right frame
    /// (fmod on the loop duration, exact in floating point).
    func testAnEndlessLoopFarInTheFuture() {
        let image = animation([0.25, 0.5, 0.25], loopCount: 0)  // durations exact in binary
        let timeline = image.animationTimeline
        XCTAssertNil(timeline.playCount)
        XCTAssertNil(timeline.totalDuration)
        let century = 100 * 365.25 * 86_400.0  // a whole number of 1 s loops
        XCTAssertEqual(image.frameIndex(at: century), 0)
        XCTAssertEqual(image.frameIndex(at: century + 0.25), 1)
        XCTAssertEqual(image.frameIndex(at: century + 0.8), 2)
        XCTAssertEqual(image.frameIndex(at: 1e300), Int(0))  // 1e300 is a multiple of 0.25
        XCTAssertEqual(image.frameIndex(at: 4_503_599_627_370_495.5), 1, "2^52 - 0.5: phase 0.5")
        XCTAssertFalse(timeline.isFinished(at: 1e300))
        XCTAssertEqual(image.frameIndex(at: .infinity), 0)
        let next = timeline.nextFrameChange(after: 1e300)
        XCTAssertNotNil(next)
        XCTAssertGreaterThan(next ?? 0, 1e300)
        XCTAssertEqual(timeline.nextFrameChange(after: century + 0.3) ?? 0, century + 0.75, accuracy: 1e-6)
    }

    func testASingleFrameImageNeverChanges() {
        let still = SyntheticImage.solid(width: 2, height: 2, color: RGBA(r: 9, g: 9, b: 9))
        let timeline = still.animationTimeline
        XCTAssertFalse(timeline.isAnimated)
        XCTAssertEqual(timeline.frameCount, 1)
        XCTAssertEqual(timeline.loopDuration, 0)
        XCTAssertEqual(timeline.totalDuration, 0)
        for t in [-1, 0, 0.5, 1e12, .infinity, .nan] { XCTAssertEqual(still.frameIndex(at: t), 0) }
        XCTAssertNil(timeline.nextFrameChange(after: 0))
        XCTAssertTrue(timeline.isFinished(at: 0))
        // Even a one-frame image with a loop count and a long delay.
        let one = animation([5], loopCount: 0)
        XCTAssertEqual(one.frameIndex(at: 7), 0)
        XCTAssertNil(one.animationTimeline.nextFrameChange(after: 1))
        XCTAssertEqual(one.stillImage(at: 3).pixels, one.pixels)
    }

    /// Frames of 0 s (and anything up to 10 ms, negative, NaN) show for
    /// 100 ms, as in browsers: all-zero frames play at 10 frames a second.
    func testAllZeroDurationFramesPlayAtTheBrowsersHundredMilliseconds() {
        let image = animation([0, 0, 0, 0], loopCount: 0)
        XCTAssertEqual(image.duration, 0, "the stored durations")
        let timeline = image.animationTimeline
        XCTAssertEqual(timeline.frameDurations, [0.1, 0.1, 0.1, 0.1])
        XCTAssertEqual(timeline.loopDuration, 0.4, accuracy: 1e-12)
        XCTAssertEqual(image.frameIndex(at: 0.05), 0)
        XCTAssertEqual(image.frameIndex(at: 0.15), 1)
        XCTAssertEqual(image.frameIndex(at: 0.35), 3)
        XCTAssertEqual(image.frameIndex(at: 0.45), 0)

        XCTAssertEqual(AnimationTimeline.displayDuration(0), 0.1)
        XCTAssertEqual(AnimationTimeline.displayDuration(0.01), 0.1)
        XCTAssertEqual(AnimationTimeline.displayDuration(0.0104), 0.1, "10 ms in whole milliseconds")
        XCTAssertEqual(AnimationTimeline.displayDuration(0.011), 0.011)
        XCTAssertEqual(AnimationTimeline.displayDuration(0.02), 0.02)
        XCTAssertEqual(AnimationTimeline.displayDuration(-1), 0.1)
        XCTAssertEqual(AnimationTimeline.displayDuration(.nan), 0.1)
        XCTAssertEqual(AnimationTimeline.displayDuration(.infinity), .infinity)
    }

    /// A frame that lasts forever stays up for good, even in an endless loop.
    func testAnEndlessFrameStaysUp() {
        let image = animation([0.1, .infinity, 0.1], loopCount: 0)
        XCTAssertEqual(image.frameIndex(at: 0.05), 0)
        XCTAssertEqual(image.frameIndex(at: 1e12), 1)
        XCTAssertNil(image.animationTimeline.nextFrameChange(after: 5))
        XCTAssertEqual(image.animationTimeline.nextFrameChange(after: 0), 0.1)
    }

    /// The lookup is a binary search over many frames: it agrees with a linear scan.
    func testManyFramesAgreeWithALinearScan() {
        var durations: [Double] = []
        var random = SystemRandomNumberGenerator()
        for _ in 0..<1000 { durations.append(Double(Int.random(in: 0...12, using: &random)) / 100) }
        let timeline = AnimationTimeline(frameDurations: durations, loopCount: 3)
        let shown = durations.map(AnimationTimeline.displayDuration)
        for _ in 0..<2000 {
            let t = Double.random(in: -1...(timeline.loopDuration * 4.5), using: &random)
            var expected = shown.count - 1
            if t < timeline.loopDuration * 4 {
                let phase = t <= 0 ? 0 : fmod(t, timeline.loopDuration)
                var start = 0.0
                for (index, duration) in shown.enumerated() {
                    if phase < start + duration { expected = index; break }
                    start += duration
                }
            }
            XCTAssertEqual(timeline.frameIndex(at: t), expected, "t = \(t)")
        }
    }

    // MARK: Through the GIF decoder

    private func decodedGIF(delays: [Int], loopCount: Int?) throws -> Image {
        let palette = (0..<4).map { RGBA(r: UInt8($0 * 60), g: 0, b: 0) }
        let frames = delays.enumerated().map { index, delay in
            GIFFrameSpec.filled(UInt8(index % 4), width: 2, height: 2, delay: delay)
        }
        let data = try GIFWriter.encode(width: 2, height: 2, globalPalette: palette, frames: frames, loopCount: loopCount)
        return try GIFDecoder().decode(data, options: DecodingOptions())
    }

    /// Delays under 20 ms (0 and 1 hundredths) show for 100 ms, 20 ms as
    /// itself, as in Firefox, Chromium and WebKit.
    func testTheTwentyMillisecondRuleThroughTheGIFDecoder() throws {
        let image = try decodedGIF(delays: [0, 1, 2, 7], loopCount: 0)
        XCTAssertEqual(image.frames.map(\.duration), [0.1, 0.1, 0.02, 0.07])
        XCTAssertEqual(image.animationTimeline.frameDurations, [0.1, 0.1, 0.02, 0.07])
        XCTAssertEqual(image.frameIndex(at: 0.05), 0)
        XCTAssertEqual(image.frameIndex(at: 0.15), 1)
        XCTAssertEqual(image.frameIndex(at: 0.21), 2)
        XCTAssertEqual(image.frameIndex(at: 0.25), 3)
        XCTAssertEqual(image.frameIndex(at: 0.30), 0, "the loop is 0.29 s")
        XCTAssertEqual(image.stillImage(at: 0.25).pixel(x: 1, y: 1), RGBA(r: 180, g: 0, b: 0))
    }

    /// GIF delays are whole hundredths: the start times are their exact
    /// sums, so a frame shows at its start time exactly, and the frame
    /// before it just before, in the first loop and in later ones (summed in
    /// floating point, 10, 20, 10 and 20 hundredths started frame 2 at
    /// 0.30000000000000004, and `frameIndex(at: 0.3)` was 1).
    func testStartTimesAreExactSumsOfTheGIFDelays() throws {
        let image = try decodedGIF(delays: [10, 20, 10, 20, 10], loopCount: 0)
        let timeline = image.animationTimeline
        XCTAssertEqual(timeline.frameStartTimes, [0, 0.1, 0.3, 0.4, 0.6])
        XCTAssertEqual(timeline.frameDurations, [0.1, 0.2, 0.1, 0.2, 0.1])
        XCTAssertEqual(timeline.loopDuration, 0.7)
        XCTAssertEqual(image.duration, 0.7)
        XCTAssertEqual(image.frameIndex(at: 0.3), 2)
        assertFramesStartExactly(image, at: [0, 0.1, 0.3, 0.4, 0.6], nextLoop: 0.7)
        assertFramesStartExactly(image, at: [0.7, 0.8, 1.0, 1.1, 1.3], nextLoop: 1.4, "the second loop")
        assertFramesStartExactly(image, at: [70, 70.1, 70.3, 70.4, 70.6], nextLoop: 70.7, "the 101st loop")

        // Three plays: the last frame of the third stays up.
        let thrice = try decodedGIF(delays: [10, 20, 10, 20, 10], loopCount: 2)
        XCTAssertEqual(thrice.animationTimeline.totalDuration, 2.1)
        assertFramesStartExactly(thrice, at: [1.4, 1.5, 1.7, 1.8, 2.0], nextLoop: nil, "the third play")
        XCTAssertEqual(thrice.frameIndex(at: 2.1), 4)

        // Stored on disk (a processed animation) and read back: the same times.
        let stored = try StoredImage.encode(image, encoding: .automatic)
        let restored = try XCTUnwrap(StoredImage.decode(stored, decoders: .default))
        XCTAssertEqual(restored.animationTimeline, timeline)
    }

    /// At each of `starts` (one play's frame start times) exactly, that
    /// frame; just before it, the frame before; and the next change after
    /// each start is exactly the next start (`nextLoop`: the next play's
    /// first, nil when the last frame stays up).
    private func assertFramesStartExactly(
        _ image: Image, at starts: [Double], nextLoop: Double?, _ message: String = "",
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let timeline = image.animationTimeline
        for (frame, start) in starts.enumerated() {
            XCTAssertEqual(image.frameIndex(at: start), frame, "at \(start) \(message)", file: file, line: line)
            let before = frame == 0 ? starts.count - 1 : frame - 1
            if start > 0 {
                XCTAssertEqual(
                    image.frameIndex(at: start.nextDown), before, "just before \(start) \(message)", file: file, line: line)
            }
            let next = frame + 1 < starts.count ? starts[frame + 1] : nextLoop
            XCTAssertEqual(timeline.nextFrameChange(after: start), next, "after \(start) \(message)", file: file, line: line)
        }
    }

    /// The NETSCAPE2.0 loop count through the decoder: none plays once, 0
    /// forever, 2 three times.
    func testLoopCountsThroughTheGIFDecoder() throws {
        let none = try decodedGIF(delays: [10, 10], loopCount: nil)
        XCTAssertNil(none.loopCount)
        XCTAssertEqual(none.animationTimeline.playCount, 1)
        XCTAssertEqual(none.frameIndex(at: 0.25), 1, "held after one play")

        let forever = try decodedGIF(delays: [10, 10], loopCount: 0)
        XCTAssertEqual(forever.loopCount, 0)
        XCTAssertNil(forever.animationTimeline.playCount)
        XCTAssertEqual(forever.frameIndex(at: 1000.05), 0)

        let thrice = try decodedGIF(delays: [10, 10], loopCount: 2)
        XCTAssertEqual(thrice.loopCount, 2)
        XCTAssertEqual(thrice.animationTimeline.playCount, 3)
        XCTAssertEqual(thrice.frameIndex(at: 0.45), 0, "third play")
        XCTAssertEqual(thrice.frameIndex(at: 0.55), 1)
        XCTAssertEqual(thrice.frameIndex(at: 0.65), 1, "held after the third play")
        XCTAssertEqual(thrice.animationTimeline.totalDuration ?? 0, 0.6, accuracy: 1e-12)
    }

    /// Resizing (as a request with a target size does) keeps the timeline.
    func testResizingKeepsTheTimeline() throws {
        let image = try decodedGIF(delays: [0, 30], loopCount: 1)
        let small = try ImageResizer.resize(image, to: PixelSize(width: 1, height: 1))
        XCTAssertEqual(small.animationTimeline, image.animationTimeline)
    }

    /// Timelines are values: read from many threads at once (run under TSan).
    func testConcurrentLookups() {
        let image = animation((0..<64).map { Double($0 % 5) / 100 }, loopCount: 0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for step in 0..<2000 {
                let t = Double(step * (thread + 1)) * 0.013
                let index = image.frameIndex(at: t)
                precondition(image.frame(at: t).pixels == image.frames[index].pixels)
            }
        }
    }
}
