import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

final class AsyncImageViewTests: XCTestCase {
    private let grey = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 100, g: 100, b: 100))

    func testCrossfadeBlendsOldIntoNew() {
        let clock = Box<Double>(100)
        let view = AsyncImageView(loader: AsyncImageLoader(cache: nil, deliveryQueue: DispatchQueue(label: "unused")), clock: { clock.value ?? 0 })
        let black = SyntheticImage.solid(width: 8, height: 8, color: RGBA(r: 0, g: 0, b: 0))
        let white = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 255, g: 255, b: 255))
        view.image = black
        view.image = white
        XCTAssertEqual(view.displayedImage(at: 0)?.pixel(x: 1, y: 1), RGBA(r: 0, g: 0, b: 0), "starts as the old picture")
        let middle = view.displayedImage(at: 0.2)
        XCTAssertEqual(middle?.size, white.size, "the old picture is resized to the new one")
        XCTAssertEqual(Int(middle?.pixel(x: 1, y: 1).r ?? 0), 128, accuracy: 1)
        XCTAssertEqual(view.displayedImage(at: 0.4)?.pixel(x: 1, y: 1), RGBA(r: 255, g: 255, b: 255))
        clock.value = 100.25
        XCTAssertEqual(view.timeSinceImageSet ?? 0, 0.25, accuracy: 1e-9)
        view.crossfadeDuration = 0
        XCTAssertEqual(view.displayedImage(at: 0)?.pixel(x: 1, y: 1), RGBA(r: 255, g: 255, b: 255))
    }

    /// The first image (no placeholder) fades in from transparent (the
    /// original's 1.3); with a placeholder it crossfades from it.
    func testTheFirstImageFadesInFromTransparent() {
        let view = AsyncImageView(loader: AsyncImageLoader(cache: nil, deliveryQueue: DispatchQueue(label: "unused")))
        let red = SyntheticImage.solid(width: 4, height: 4, color: RGBA(r: 255, g: 0, b: 0))
        view.image = red
        XCTAssertEqual(view.displayedImage(at: 0)?.pixel(x: 1, y: 1).a, 0, "transparent at first")
        XCTAssertEqual(Int(view.displayedImage(at: 0.2)?.pixel(x: 1, y: 1).a ?? 0), 128, accuracy: 1)
        XCTAssertEqual(view.displayedImage(at: 0.2)?.pixel(x: 1, y: 1).r, 255, "its own colour, half transparent")
        XCTAssertEqual(view.displayedImage(at: 0.4)?.pixel(x: 1, y: 1), RGBA(r: 255, g: 0, b: 0))
        let placeholderView = AsyncImageView(loader: AsyncImageLoader(cache: nil, deliveryQueue: DispatchQueue(label: "unused")))
        placeholderView.placeholderImage = grey
        placeholderView.image = red
        XCTAssertEqual(placeholderView.displayedImage(at: 0)?.pixel(x: 1, y: 1), grey.pixel(x: 1, y: 1), "from the placeholder")
    }

    func testStyleAndNilClears() {
        let view = AsyncImageView(loader: AsyncImageLoader(cache: nil, deliveryQueue: DispatchQueue(label: "unused")))
        view.activityIndicatorStyle = .large
        XCTAssertEqual(view.activityIndicatorStyle, .large)
        view.image = grey
        view.imageURL = nil
        XCTAssertNil(view.image)
        XCTAssertEqual(view.state, .empty)
    }
    // MARK: Animated images

    /// A 1x1 animation: frame i's colour is `colors[i]`, each shown `seconds`.
    private func animation(_ colors: [RGBA], seconds: Double, loopCount: Int? = nil) -> Image {
        let frames = colors.map { ImageFrame(pixels: Data([$0.r, $0.g, $0.b, $0.a]), duration: seconds) }
        return Image(width: 1, height: 1, bytesPerRow: 4, frames: frames, loopCount: loopCount)
    }

    private func unusedLoader() -> AsyncImageLoader {
        AsyncImageLoader(cache: nil, deliveryQueue: DispatchQueue(label: "unused"))
    }

    private let reds = [0, 1, 2].map { RGBA(r: UInt8($0 * 100), g: 0, b: 0) }
    private let greens = [0, 1, 2].map { RGBA(r: 0, g: UInt8($0 * 100 + 50), b: 0) }

    /// The view shows the frame for the time since the image was set (its
    /// injected clock), holds the last frame once the loops are over, and
    /// says when the next frame is due.
    func testAnAnimatedImagePlaysFromWhenItWasSet() {
        let clock = Box<Double>(100)
        let view = AsyncImageView(loader: unusedLoader(), clock: { clock.value ?? 0 })
        view.crossfadeDuration = 0
        let image = animation(reds, seconds: 0.1, loopCount: 1)  // plays twice
        view.image = image
        XCTAssertEqual(view.displayedImage(at: 0)?.pixel(x: 0, y: 0), reds[0])
        XCTAssertEqual(view.displayedImage(at: 0.15)?.pixel(x: 0, y: 0), reds[1])
        XCTAssertEqual(view.displayedImage(at: 0.35)?.pixel(x: 0, y: 0), reds[0], "the second play")
        XCTAssertEqual(view.displayedImage(at: 0.15)?.isAnimated, false, "a still image of the frame")
        XCTAssertEqual(view.displayedImage?.frames.count, 3, "displayedImage is the whole animation")
        XCTAssertEqual(view.displayedImageNow?.pixel(x: 0, y: 0), reds[0])
        clock.value = 100.25
        XCTAssertEqual(view.displayedImageNow?.pixel(x: 0, y: 0), reds[2])
        XCTAssertEqual(view.nextFrameChange(after: 0.25) ?? 0, 0.3, accuracy: 1e-9)
        clock.value = 1_000
        XCTAssertEqual(view.displayedImageNow?.pixel(x: 0, y: 0), reds[2], "the last frame stays")
        XCTAssertNil(view.nextFrameChange(after: 900))
        // A new image starts from its own first frame.
        view.image = animation(greens, seconds: 0.1, loopCount: 0)
        XCTAssertEqual(view.displayedImageNow?.pixel(x: 0, y: 0), greens[0])
        clock.value = 1_000 + 3_600 + 0.15
        XCTAssertEqual(view.displayedImageNow?.pixel(x: 0, y: 0), greens[1], "an endless loop an hour on")
    }

    /// In the crossfade the new image plays from its first frame and the old
    /// one keeps playing from where it was: the blend mixes those frames.
    func testTheCrossfadeMixesTheRightFrames() {
        let clock = Box<Double>(100)
        let view = AsyncImageView(loader: unusedLoader(), clock: { clock.value ?? 0 })
        view.crossfadeDuration = 0.4
        view.image = animation(reds, seconds: 0.1, loopCount: 0)
        clock.value = 100.15  // the old animation is on frame 1
        view.image = animation(greens, seconds: 0.1, loopCount: 0)
        // At t = 0.1: old at 0.25 (frame 2, r 200), new at 0.1 (frame 1, g 150), a quarter in.
        let mixed = view.displayedImage(at: 0.1)?.pixel(x: 0, y: 0)
        XCTAssertEqual(Int(mixed?.r ?? 0), 150, accuracy: 1)
        XCTAssertEqual(Int(mixed?.g ?? 0), 38, accuracy: 1)
        XCTAssertEqual(view.displayedImage(at: 0)?.pixel(x: 0, y: 0), reds[1], "the old picture as it was")
        XCTAssertEqual(view.displayedImage(at: 0.45)?.pixel(x: 0, y: 0), greens[1], "after the crossfade, frame 1 of the second loop")
        // The next change: the old animation's next frame (at its 0.3, the view's 0.15), then the new one's.
        XCTAssertEqual(view.nextFrameChange(after: 0.1) ?? 0, 0.15, accuracy: 1e-9)
        XCTAssertEqual(view.nextFrameChange(after: 0.16) ?? 0, 0.2, accuracy: 1e-9)
        XCTAssertEqual(view.nextFrameChange(after: 0.35) ?? 0, 0.4, accuracy: 1e-9)

        // The first image (no placeholder) fades in from transparent at its right frame.
        let fresh = AsyncImageView(loader: unusedLoader(), clock: { clock.value ?? 0 })
        fresh.image = animation(greens, seconds: 0.1, loopCount: 0)
        let fading = fresh.displayedImage(at: 0.2)?.pixel(x: 0, y: 0)
        XCTAssertEqual(fading?.g, greens[2].g, "frame 2's colour")
        XCTAssertEqual(Int(fading?.a ?? 0), 128, accuracy: 1, "half in")
    }

    /// A still image after its crossfade never changes again; clearing stops playback.
    func testStillImagesAndClearingHaveNoNextFrame() {
        let view = AsyncImageView(loader: unusedLoader(), clock: { 5 })
        XCTAssertNil(view.nextFrameChange(after: 0))
        XCTAssertNil(view.displayedImageNow)
        view.image = grey
        XCTAssertEqual(view.nextFrameChange(after: 0.1), 0.4, "the crossfade's end")
        XCTAssertNil(view.nextFrameChange(after: 0.4))
        view.image = animation(reds, seconds: 0.1, loopCount: 0)
        view.imageURL = nil
        XCTAssertNil(view.nextFrameChange(after: 1))
        XCTAssertNil(view.displayedImageNow)
    }

    /// Setting images on one thread while others draw: every picture drawn
    /// is one frame of one of the images (no torn state; run under TSan).
    func testPlaybackWhileImagesChangeOnAnotherThread() {
        let clock = Box<Double>(0)
        let view = AsyncImageView(loader: unusedLoader(), clock: { clock.value ?? 0 })
        view.crossfadeDuration = 0
        let images = [animation(reds, seconds: 0.1, loopCount: 0), animation(greens, seconds: 0.1, loopCount: 0)]
        let allowed = Set((reds + greens).map(\.description))
        let bad = Counter()
        DispatchQueue.concurrentPerform(iterations: 3) { thread in
            for step in 0..<500 {
                if thread == 0 {
                    view.image = images[step % 2]
                } else if let pixel = view.displayedImage(at: Double(step) * 0.07)?.pixel(x: 0, y: 0),
                    !allowed.contains(pixel.description) {
                    bad.increment()
                }
            }
        }
        XCTAssertEqual(bad.value, 0)
    }
}
