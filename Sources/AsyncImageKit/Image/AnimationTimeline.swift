import Foundation

/// When each frame of an animated image is shown: the frames' display
/// durations, their start times within one loop, and how many times the
/// loop plays. A pure value. Building it costs O(frames), and after that
/// ``frameIndex(at:)`` is an O(log frames) binary search.
///
/// Every ``Image`` carries one (``Image/animationTimeline``). Build your own
/// only for durations that don't come from an image.
///
/// ## How browsers play GIFs, and what the timeline does
///
/// - **Short delays.** A frame of 10 ms or less is shown for 100 ms
///   (``displayDuration(_:)``). Firefox does this (`FrameTimeout::FromRawMilliseconds`:
///   0 to 10 ms become 100 ms), and so do Chromium and WebKit (`<= 10 ms` becomes
///   100 ms, WebKit bug 36082). GIF delays are whole hundredths of a second, so
///   this is the rule "a delay under 20 ms is shown for 100 ms": delays of 0 and
///   1 hundredths become 0.1 s, and 2 hundredths (20 ms) plays as 20 ms.
///   ``GIFDecoder`` already stores these display durations. The timeline applies
///   the rule again so that frames made in memory play the same way. Applying it
///   twice changes nothing.
/// - **Loop count.** The GIF NETSCAPE2.0 loop count tells how many times the
///   animation *repeats* after it first plays. With no NETSCAPE2.0 block
///   (``Image/loopCount`` `nil`), it plays once. A count of 0 loops forever. A
///   count of `n` plays `n + 1` times. Chromium's `cc/paint/image_animation_count.h`
///   says "if the loop count is absent, the animation cycles once; if it is 0,
///   the animation cycles infinitely; otherwise the animation plays n + 1
///   cycles", and Firefox's `FrameAnimator::AdvanceFrame` counts the same way.
/// - **After the last loop** the last frame stays on screen.
///
/// Time `t` is seconds since playback started. At or before 0 (and for NaN)
/// the first frame shows. A frame shows from its start time, inclusive, up to
/// the next frame's start time. An endless animation takes `t` modulo the loop
/// duration (`fmod`, which is exact), so a `t` of years or more still gives the
/// right frame.
public struct AnimationTimeline: Sendable, Hashable {
    /// How long each frame is shown, in seconds, after the short-delay rule
    /// (``displayDuration(_:)``): never less than 10.5 ms in an animation.
    /// A still image has one entry, its own duration (normally 0).
    public let frameDurations: [Double]
    /// When each frame starts within one loop, in seconds. The first is 0.
    public let frameStartTimes: [Double]
    /// How long one loop takes: the sum of ``frameDurations`` (0 for a still image).
    public let loopDuration: Double
    /// How many times the animation plays: `nil` for forever, 1 for a still image.
    public let playCount: Int?

    /// A frame this short or shorter is shown for ``substituteDuration``:
    /// 10 ms, counted in whole milliseconds as browsers count (anything under
    /// 10.5 ms).
    public static let shortDurationLimit = 0.010
    /// What a frame of ``shortDurationLimit`` or less is shown for: 100 ms.
    public static let substituteDuration = 0.100

    /// The duration a frame is shown for: `duration` itself, or
    /// ``substituteDuration`` when it is ``shortDurationLimit`` or less.
    /// Negative and NaN durations count as 0. An infinite duration is kept:
    /// that frame stays up for good.
    public static func displayDuration(_ duration: Double) -> Double {
        // Whole milliseconds, as in Firefox and Chromium: under 10.5 ms is "10 ms or less".
        duration >= shortDurationLimit + 0.0005 ? duration : substituteDuration
    }

    /// Creates the timeline of frames shown for these durations (raw, before
    /// the short-delay rule), with a GIF loop count: `nil` plays once, 0 (or
    /// less) forever, `n` plays `n + 1` times. A single frame (or none) is a still
    /// image: it plays once and never changes.
    public init(frameDurations durations: [Double], loopCount: Int?) {
        guard durations.count > 1 else {
            frameDurations = durations.isEmpty ? [0] : [max(0, durations[0].isNaN ? 0 : durations[0])]
            frameStartTimes = [0]
            loopDuration = 0
            playCount = 1
            return
        }
        let shown = durations.map(Self.displayDuration)
        var starts: [Double] = []
        starts.reserveCapacity(shown.count)
        var total = 0.0
        for duration in shown {
            starts.append(total)
            total += duration
        }
        frameDurations = shown
        frameStartTimes = starts
        loopDuration = total
        switch loopCount {
        case nil: playCount = 1
        case let count? where count <= 0: playCount = nil
        case let count?: playCount = count < Int.max ? count + 1 : count
        }
    }

    /// The timeline of an image's frames and loop count.
    public init(_ image: Image) {
        self.init(frameDurations: image.frames.map(\.duration), loopCount: image.loopCount)
    }

    /// How many frames the timeline has.
    public var frameCount: Int { frameDurations.count }

    /// Whether anything ever changes: more than one frame.
    public var isAnimated: Bool { frameDurations.count > 1 }

    /// How long the whole playback takes before the last frame stays up:
    /// `nil` when it loops forever, 0 for a still image.
    public var totalDuration: Double? {
        guard isAnimated else { return 0 }
        return playCount.map { Double($0) * loopDuration }
    }

    /// Whether playback has ended at time `t`, so the last frame stays up.
    /// Always true for a still image, and never for an endless loop.
    public func isFinished(at t: Double) -> Bool {
        guard isAnimated else { return true }
        guard let total = totalDuration else { return false }
        return t >= total
    }

    /// The index of the frame shown at `t` seconds after playback started.
    ///
    /// - At or before 0, and for NaN: frame 0.
    /// - At a frame's start time exactly: that frame.
    /// - Once every play has ended (``isFinished(at:)``): the last frame, for good.
    /// - In an endless loop: the frame at `fmod(t, loopDuration)`. For `t = +infinity` that is frame 0.
    public func frameIndex(at t: Double) -> Int {
        guard isAnimated, t > 0 else { return 0 }
        if isFinished(at: t) { return frameDurations.count - 1 }
        guard t.isFinite else { return 0 }  // +infinity in an endless loop has no phase
        let phase = loopDuration.isFinite ? fmod(t, loopDuration) : t
        return Self.lastIndex(in: frameStartTimes, atOrBefore: phase)
    }

    /// The time at which the shown frame next changes after `t` (the start
    /// of the next frame, or of the next loop). `nil` when it never changes
    /// again: a still image, the last frame of the last play (it stays up),
    /// or a frame that lasts forever.
    /// A view that draws itself needs only this to schedule its next redraw.
    public func nextFrameChange(after t: Double) -> Double? {
        guard isAnimated, !t.isNaN, !isFinished(at: t), t.isFinite || t < 0 else { return nil }
        guard t >= 0 else { return frameDurations[0].isFinite ? frameDurations[0] : nil }
        guard loopDuration.isFinite else {
            let index = Self.lastIndex(in: frameStartTimes, atOrBefore: t)
            let end = frameStartTimes[index] + frameDurations[index]
            return end.isFinite ? end : nil
        }
        let phase = fmod(t, loopDuration)
        let loopStart = t - phase
        let index = Self.lastIndex(in: frameStartTimes, atOrBefore: phase)
        let isLast = index + 1 == frameStartTimes.count
        let end = isLast ? loopDuration : frameStartTimes[index + 1]
        // The last frame of the last play stays up: no change at the end.
        // (Compared with half a loop's slack: `t - phase + loopDuration` may
        // round an ulp away from `playCount * loopDuration`.)
        if isLast, let total = totalDuration, total - (loopStart + end) < loopDuration / 2 { return nil }
        // When t is so large that adding the rest of the frame gets lost in
        // rounding, the next representable time is still after t.
        let next = loopStart + end
        return next > t ? next : t.nextUp
    }

    /// The largest index whose start time is `<= time` (0 when none is).
    private static func lastIndex(in starts: [Double], atOrBefore time: Double) -> Int {
        var low = 0
        var high = starts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= time { low = middle } else { high = middle - 1 }
        }
        return low
    }
}

extension Image {
    /// When each frame shows, and how many times the animation plays (see
    /// ``AnimationTimeline`` for the rules, which are the browsers' rules).
    /// Computed once, when the image is made.
    public var animationTimeline: AnimationTimeline { timeline }

    /// The index of the frame shown `t` seconds after playback started:
    /// frame 0 at or before 0, the last frame once every loop has played.
    /// O(log frames); see ``AnimationTimeline/frameIndex(at:)``.
    public func frameIndex(at t: Double) -> Int { timeline.frameIndex(at: t) }

    /// The frame shown `t` seconds after playback started.
    public func frame(at t: Double) -> ImageFrame { frames[frameIndex(at: t)] }

    /// The frame shown `t` seconds after playback started, as a still image
    /// (one frame, which shares this image's pixel storage, so nothing is
    /// copied). A still image returns itself.
    public func stillImage(at t: Double) -> Image { stillImage(frame: frameIndex(at: t)) }

    /// One frame as a still image, sharing this image's pixel storage. A
    /// still image returns itself.
    ///
    /// - Precondition: `index` is a valid frame index.
    public func stillImage(frame index: Int) -> Image {
        precondition(frames.indices.contains(index), "frame index out of range")
        guard isAnimated else { return self }
        return Image(
            width: width, height: height, bytesPerRow: bytesPerRow,
            frames: [ImageFrame(pixels: frames[index].pixels, duration: 0)], format: format,
            originalSize: originalSize, orientation: orientation, loopCount: nil, decodeInfo: decodeInfo)
    }
}
