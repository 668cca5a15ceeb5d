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
/// the next frame's start time.
///
/// **Exact times.** Durations are counted in whole microseconds (GIF delays
/// are whole hundredths of a second and WebP's whole milliseconds, so theirs
/// are exact) and summed as integers: the start times of frames of 10, 20,
/// 10 and 20 hundredths are exactly `[0, 0.1, 0.3, 0.4]` (a sum in floating
/// point gives `0.30000000000000004`), and `frameIndex(at: 0.3)` is the frame
/// that starts at 0.3 s, in the first loop and in every later one (at
/// `0.3 + n` loop durations, each taken as the `Double` nearest the exact
/// time). Beyond about 285 years (2^53 microseconds), an endless animation
/// takes `t` modulo the loop duration (`fmod`, which is exact), so a `t` of
/// any size still gives a frame.
public struct AnimationTimeline: Sendable, Hashable {
    /// How long each frame is shown, in seconds, after the short-delay rule
    /// (``displayDuration(_:)``), in whole microseconds: never less than
    /// 11 ms in an animation. A still image has one entry, its own duration
    /// (normally 0).
    public let frameDurations: [Double]
    /// When each frame starts within one loop, in seconds: the exact sum of
    /// the durations before it (in whole microseconds), so frames of 10 and
    /// 20 hundredths start at exactly `0.1` and `0.3`. The first is 0.
    public let frameStartTimes: [Double]
    /// How long one loop takes: the exact sum of ``frameDurations`` (0 for a still image).
    public let loopDuration: Double
    /// How many times the animation plays: `nil` for forever, 1 for a still image.
    public let playCount: Int?

    /// The start times in whole microseconds, for the frames that start at
    /// all (none after a frame shown for good).
    private let startMicroseconds: [Int]
    /// One loop in whole microseconds; nil when a frame is shown for good
    /// (the loop never ends).
    private let loopMicroseconds: Int?

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
        (duration * 1000).rounded() > 10 ? duration : substituteDuration
    }

    /// Times are counted in whole microseconds up to this many (2^53, about
    /// 285 years): every such count is exact in a `Double`.
    private static let microsecondLimit = 1 << 53

    /// The microseconds a frame of `duration` seconds is shown for, after
    /// the short-delay rule; nil when it is shown for good (an infinite
    /// duration, or one of ``microsecondLimit`` or more).
    private static func displayMicroseconds(_ duration: Double) -> Int? {
        guard (duration * 1000).rounded() > 10 else { return 100_000 }
        let microseconds = (duration * 1_000_000).rounded()
        return microseconds < Double(microsecondLimit) ? Int(microseconds) : nil
    }

    /// `microseconds` in seconds: the `Double` nearest the exact value, so
    /// 300,000 is exactly `0.3`.
    private static func seconds(_ microseconds: Int) -> Double { Double(microseconds) / 1_000_000 }

    /// Creates the timeline of frames shown for these durations (raw, before
    /// the short-delay rule), with a GIF loop count: `nil` plays once, 0 (or
    /// less) forever, `n` plays `n + 1` times. A single frame (or none) is a still
    /// image: it plays once and never changes.
    ///
    /// Durations are counted in whole microseconds (GIF's hundredths and
    /// WebP's milliseconds are whole numbers of them), and start times are
    /// their exact sums. A frame of 285 years or more (2^53 microseconds)
    /// is shown for good, as an infinite one is.
    public init(frameDurations durations: [Double], loopCount: Int?) {
        guard durations.count > 1 else {
            frameDurations = durations.isEmpty ? [0] : [max(0, durations[0].isNaN ? 0 : durations[0])]
            frameStartTimes = [0]
            loopDuration = 0
            playCount = 1
            startMicroseconds = [0]
            loopMicroseconds = 0
            return
        }
        let shown = durations.map(Self.displayMicroseconds)
        var starts: [Int] = []
        starts.reserveCapacity(shown.count)
        var total: Int? = 0
        for duration in shown {
            guard let sum = total else { break }
            starts.append(sum)
            // Past the limit, the frame is shown for good.
            total = duration.flatMap { $0 < Self.microsecondLimit - sum ? sum + $0 : nil }
        }
        frameDurations = shown.map { $0.map(Self.seconds) ?? .infinity }
        frameStartTimes = starts.map(Self.seconds) + Array(repeating: .infinity, count: shown.count - starts.count)
        loopDuration = total.map(Self.seconds) ?? .infinity
        startMicroseconds = starts
        loopMicroseconds = total
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
        guard let plays = playCount else { return nil }
        if let loop = loopMicroseconds, plays < Self.microsecondLimit / loop { return Self.seconds(plays * loop) }
        return Double(plays) * loopDuration
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
    /// - At a frame's start time exactly: that frame. Start times are exact
    ///   sums (see ``frameStartTimes``), in every loop: the frame that starts
    ///   at 0.3 s shows at `t = 0.3`, and in a loop of 0.7 s, again at `t = 1.0`.
    /// - Once every play has ended (``isFinished(at:)``): the last frame, for good.
    /// - In an endless loop: the frame at `t` modulo the loop duration. For `t = +infinity` that is frame 0.
    public func frameIndex(at t: Double) -> Int {
        guard isAnimated, t > 0 else { return 0 }
        if isFinished(at: t) { return frameDurations.count - 1 }
        guard t.isFinite else { return 0 }  // +infinity in an endless loop has no phase
        if let position = exactPosition(at: t) { return position.frame }
        let phase = loopDuration.isFinite ? fmod(t, loopDuration) : t
        return Self.lastIndex(frameStartTimes.count) { frameStartTimes[$0] <= phase }
    }

    /// The time at which the shown frame next changes after `t` (the start
    /// of the next frame, or of the next loop). `nil` when it never changes
    /// again: a still image, the last frame of the last play (it stays up),
    /// or a frame that lasts forever.
    /// A view that draws itself needs only this to schedule its next redraw.
    public func nextFrameChange(after t: Double) -> Double? {
        guard isAnimated, !t.isNaN, !isFinished(at: t), t.isFinite || t < 0 else { return nil }
        guard t >= 0 else { return frameDurations[0].isFinite ? frameDurations[0] : nil }
        guard let loop = loopMicroseconds else {
            // A frame is shown for good: one pass, and the frames after it never start.
            let index = Self.lastIndex(startMicroseconds.count) { Self.seconds(startMicroseconds[$0]) <= t }
            return index + 1 < startMicroseconds.count ? Self.seconds(startMicroseconds[index + 1]) : nil
        }
        if let position = exactPosition(at: t) {
            let (play, frame) = position
            guard frame + 1 == startMicroseconds.count else {
                return Self.seconds(play * loop + startMicroseconds[frame + 1])
            }
            // The last frame of the last play stays up: no change at the end.
            if let plays = playCount, play + 1 >= plays { return nil }
            return Self.seconds((play + 1) * loop)
        }
        let phase = fmod(t, loopDuration)
        let loopStart = t - phase
        let index = Self.lastIndex(frameStartTimes.count) { frameStartTimes[$0] <= phase }
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

    /// The play (counted from 0) and the frame showing at `t` (finite,
    /// positive), found by comparing `t` with exact start times: the frame
    /// that starts at `play * loop + start` microseconds shows from the
    /// `Double` nearest that time on. Nil when a frame is shown for good,
    /// or when `t` is too far out for whole microseconds (about 285 years);
    /// the caller then takes `t` modulo the loop duration.
    private func exactPosition(at t: Double) -> (play: Int, frame: Int)? {
        guard let loop = loopMicroseconds, loop > 0 else { return nil }
        // The estimate is off by at most one play either way; room for two more.
        let estimate = (t / loopDuration).rounded(.down)
        guard estimate >= 0, estimate + 3 < Double(Self.microsecondLimit / loop) else { return nil }
        var play = Int(estimate)
        func start(_ play: Int, _ frame: Int) -> Double { Self.seconds(play * loop + startMicroseconds[frame]) }
        while play > 0, start(play, 0) > t { play -= 1 }
        while start(play + 1, 0) <= t { play += 1 }
        return (play, Self.lastIndex(startMicroseconds.count) { start(play, $0) <= t })
    }

    /// The largest index below `count` for which `isAtOrBefore` holds (0
    /// when none does); `isAtOrBefore` holds for a prefix of the indices.
    private static func lastIndex(_ count: Int, where isAtOrBefore: (Int) -> Bool) -> Int {
        var low = 0
        var high = count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if isAtOrBefore(middle) { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// The exact sum of `durations` (seconds): in whole microseconds when
    /// every one is a finite number of them within range (a decoded GIF's
    /// or WebP's always are), otherwise in floating point.
    static func sum(_ durations: [Double]) -> Double {
        var total = 0
        for duration in durations {
            let microseconds = (duration * 1_000_000).rounded()
            guard microseconds.magnitude < Double(microsecondLimit), seconds(Int(microseconds)) == duration else {
                return durations.reduce(0, +)
            }
            total += Int(microseconds)
            guard total.magnitude < microsecondLimit else { return durations.reduce(0, +) }
        }
        return seconds(total)
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
            originalSize: originalSize, orientation: orientation, loopCount: nil, decodeInfo: decodeInfo,
            opacity: isOpaque ? .opaque : .unknown)
    }
}
