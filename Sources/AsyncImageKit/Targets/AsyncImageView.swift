import Foundation

/// A headless image view: the model of AsyncImageView's view class, for
/// programs that draw pixels themselves (or draw nothing and only need the
/// state). Set ``imageURL``; it shows a placeholder while loading, an activity
/// indicator while it has no image, the image with a crossfade when it
/// arrives, and a failure image or state when the load fails.
///
/// ```swift
/// let view = AsyncImageView(displaySize: PixelSize(width: 256, height: 256))
/// view.placeholderImage = grey
/// view.onChange = { view in redraw(view.displayedImage) }
/// view.imageURL = url
/// ```
///
/// All properties may be read and written from any thread.
///
/// ## Animated images
///
/// An animated image (a GIF) plays: ``displayedImage(at:)`` gives the frame
/// shown `t` seconds after the image was set, following the browsers' rules
/// (``AnimationTimeline``: a delay of 10 ms or less is shown for 100 ms, the
/// NETSCAPE2.0 loop count `n` plays `n + 1` times, 0 forever, none once, and
/// the last frame stays up after the last loop). During a crossfade, both
/// pictures play: the new image at its frame for `t`, the old one at the frame
/// it would show had it stayed, so the blend mixes the right frames.
///
/// The view keeps no timer and no thread for this. Playback is a pure
/// function of time, so a program that draws asks for ``displayedImageNow``
/// (or ``displayedImage(at:)``) on each refresh, and
/// ``nextFrameChange(after:)`` tells it when the next refresh is due. These
/// calls copy the view's images and times under its lock and do the frame
/// lookup and blending outside it, so they never block a setter for long, and
/// each answer comes from one consistent state.
public final class AsyncImageView: ImageDisplaying, @unchecked Sendable {
    /// Where the view is in its life.
    public enum State: Sendable, Equatable {
        /// No URL set.
        case empty
        /// Loading this URL.
        case loading(URL)
        /// Showing the image of this URL.
        case loaded(URL)
        /// The load of this URL failed.
        case failed(URL, AsyncImageError)
    }

    /// The look of the activity indicator (a hint for whoever draws it).
    public enum ActivityIndicatorStyle: Sendable, Hashable {
        /// A small indicator.
        case medium
        /// A large indicator.
        case large
    }

    private struct Fields {
        var image: Image?
        var previous: Image?
        /// How long `previous` had been playing when it was replaced (0 for a
        /// placeholder or failure image), so it keeps playing in the crossfade.
        var previousElapsed = 0.0
        var transitionStart: Double?
        var state = State.empty
        /// How many times ``imageURL`` was set to nil (see ``ClearCount``),
        /// checked under the view's lock.
        var clears = ClearCount()
        var placeholderImage: Image?
        var failureImage: Image?
        var showActivityIndicator = true
        var activityIndicatorStyle = ActivityIndicatorStyle.medium
        var crossfadeDuration = 0.4
        var onChange: (@Sendable (AsyncImageView) -> Void)?
        var displaySize: PixelSize?
        var contentMode = ContentMode.aspectFill
        var scaling: ScalingOptions = []
    }

    private let fields = Locked(Fields())
    private let loader: AsyncImageLoader
    private let clock: @Sendable () -> Double

    /// Creates a view.
    ///
    /// - Parameters:
    ///   - loader: the loader ``imageURL`` uses.
    ///   - displaySize: the size it shows images at (they are decoded downsampled to it); nil for full size.
    ///   - contentMode: how images meet `displaySize`.
    ///   - scaling: how they are framed at it (default: exactly `displaySize`).
    ///   - clock: seconds on a monotonic clock (for the crossfade); the system uptime by default.
    public init(
        loader: AsyncImageLoader = .shared, displaySize: PixelSize? = nil, contentMode: ContentMode = .aspectFill,
        scaling: ScalingOptions = [],
        clock: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    ) {
        self.loader = loader
        self.clock = clock
        fields.withLock {
            $0.displaySize = displaySize
            $0.contentMode = contentMode
            $0.scaling = scaling
        }
    }

    /// The loader this view loads with.
    public var imageLoader: AsyncImageLoader { loader }

    /// The size images are decoded for.
    public var imageDisplaySize: PixelSize? { displaySize }

    /// How images meet ``displaySize``.
    public var imageContentMode: ContentMode { contentMode }

    /// How images are framed at ``displaySize``.
    public var imageScaling: ScalingOptions { scaling }

    /// The size it shows images at (nil: full size). A change loads the
    /// current URL again at the new size (the memory cache first; the image
    /// shown stays until the new one arrives).
    public var displaySize: PixelSize? {
        get { fields.withLock { $0.displaySize } }
        set { changeDisplay { $0.displaySize = newValue } }
    }

    /// How images meet ``displaySize`` (default ``ContentMode/aspectFill``);
    /// a change reloads as for ``displaySize``.
    public var contentMode: ContentMode {
        get { fields.withLock { $0.contentMode } }
        set { changeDisplay { $0.contentMode = newValue } }
    }

    /// How images are framed at ``displaySize`` (see ``ScalingOptions``); a
    /// change reloads as for ``displaySize``.
    public var scaling: ScalingOptions {
        get { fields.withLock { $0.scaling } }
        set { changeDisplay { $0.scaling = newValue } }
    }

    /// Loads the current URL again for the current display size, content
    /// mode and scaling (the memory cache first; the image shown stays).
    public func imageDisplayDidChange() {
        // Read and set again as one step against other threads' `imageURL` sets.
        ImageURLRegistry.shared.ordered {
            guard let url = imageURL else { return }
            imageURL = url
        }
    }

    /// Applies a change of display size, content mode or scaling; reloads
    /// the current URL when it changed something.
    private func changeDisplay(_ body: (inout Fields) -> Void) {
        let changed = fields.withLock { fields -> Bool in
            let before = (fields.displaySize, fields.contentMode, fields.scaling)
            body(&fields)
            return before != (fields.displaySize, fields.contentMode, fields.scaling)
        }
        if changed { imageDisplayDidChange() }
    }

    /// The loaded image. Setting it starts a crossfade from what was shown.
    public var image: Image? {
        get { fields.withLock { $0.image } }
        set {
            let now = clock()
            change { fields in
                Self.retire(&fields, now: now)
                fields.image = newValue
                fields.transitionStart = newValue == nil ? nil : now
            }
        }
    }

    /// The URL most recently set. Setting it loads (keeping the current image,
    /// or the placeholder, until the new one arrives); nil cancels and clears.
    public var imageURL: URL? {
        get { fields.withLock { fields in
            switch fields.state {
            case .empty: return nil
            case .loading(let url), .loaded(let url), .failed(let url, _): return url
            }
        } }
        set {
            // The view's record and the loader call as one step against other
            // threads' sets, so the loader's latest URL is the view's.
            // `onChange` runs after, outside that step.
            let observer = ImageURLRegistry.shared.ordered { () -> (@Sendable (AsyncImageView) -> Void)? in
                // Built in the same step: the display size it is made for is the latest.
                let request = newValue.map { imageRequest(for: $0) }
                let (observer, clears) = fields.withLock { fields in
                    fields.state = newValue.map { .loading($0) } ?? .empty
                    if newValue == nil {
                        fields.clears.clear()
                        fields.previous = nil
                        fields.previousElapsed = 0
                        fields.image = nil
                        fields.transitionStart = nil
                    }
                    return (fields.onChange, fields.clears.token)
                }
                // Cleared above at once; no later clear that could erase an image set meanwhile.
                ImageURLRegistry.shared.set(newValue, for: self) { _ in
                    guard let request else {
                        loader.cancelLoadingImages(target: self, action: ImageURLActions.show)
                        return
                    }
                    loader.loadImage(
                        request, target: self,
                        success: ImageAction(ImageURLActions.show.name) { target, image, url in
                            (target as? AsyncImageView)?.show(image, url: url, since: clears)
                        },
                        failure: ImageFailureAction(ImageURLActions.fail.name) { target, error, url in
                            (target as? AsyncImageView)?.fail(error, url: url, since: clears)
                        })
                }
                return observer
            }
            observer?(self)
        }
    }

    /// Where the view is in its life.
    public var state: State { fields.withLock { $0.state } }

    /// Shown while there is no image yet.
    public var placeholderImage: Image? {
        get { fields.withLock { $0.placeholderImage } }
        set { change { $0.placeholderImage = newValue } }
    }

    /// Shown when the load failed (the state says ``State/failed(_:_:)`` either way).
    public var failureImage: Image? {
        get { fields.withLock { $0.failureImage } }
        set { change { $0.failureImage = newValue } }
    }

    /// Whether to show an activity indicator while loading with no image (default true).
    public var showActivityIndicator: Bool {
        get { fields.withLock { $0.showActivityIndicator } }
        set { change { $0.showActivityIndicator = newValue } }
    }

    /// The activity indicator's look.
    public var activityIndicatorStyle: ActivityIndicatorStyle {
        get { fields.withLock { $0.activityIndicatorStyle } }
        set { change { $0.activityIndicatorStyle = newValue } }
    }

    /// Seconds the new image takes to fade in over the old (default 0.4; 0 for none).
    public var crossfadeDuration: Double {
        get { fields.withLock { $0.crossfadeDuration } }
        set { change { $0.crossfadeDuration = max(0, newValue) } }
    }

    /// Whether the activity indicator is spinning: shown, loading, and no image yet.
    public var isActivityIndicatorAnimating: Bool { fields.withLock(Self.animating) }

    /// Called (on the thread that made the change) whenever what the view shows changes.
    public var onChange: (@Sendable (AsyncImageView) -> Void)? {
        get { fields.withLock { $0.onChange } }
        set { fields.withLock { $0.onChange = newValue } }
    }

    /// What the view shows once any crossfade has ended: the image, else the
    /// failure image after a failure, else the placeholder. An animated
    /// image comes whole, with all its frames. ``displayedImage(at:)`` gives
    /// the frame on screen.
    public var displayedImage: Image? { fields.withLock(Self.shown) }

    /// The pixels shown `t` seconds after the current image was set (see
    /// ``timeSinceImageSet``), as a still image.
    ///
    /// - An animated image shows its frame for `t` (``Image/stillImage(at:)``).
    ///   Frame 0 shows at or before 0, and the last frame once its loops have
    ///   played. The rules are in ``AnimationTimeline``.
    /// - Over ``crossfadeDuration``, the old picture (the placeholder, or the
    ///   previous image, still playing from where it was) blends into the new
    ///   one, resized to the new image's size. With no old picture (the first
    ///   image, no placeholder), the new one fades in from transparent, as the
    ///   original's 1.3 did.
    ///
    /// With no image, the failure image or placeholder plays from `t` the same way.
    public func displayedImage(at t: Double) -> Image? {
        Self.picture(at: t, fields.withLock(Self.playback))
    }

    /// What the view shows now: ``displayedImage(at:)`` at ``timeSinceImageSet``
    /// (0 with no image), read in one step, so an image set meanwhile on
    /// another thread can't pair with the old one's time.
    public var displayedImageNow: Image? {
        let now = clock()
        let playback = fields.withLock(Self.playback)
        return Self.picture(at: playback.start.map { now - $0 } ?? 0, playback)
    }

    /// When, after `t` (seconds since the image was set, as for
    /// ``displayedImage(at:)``), the picture next changes: the next frame of
    /// the animation (or of the old picture during the crossfade), or the end
    /// of the crossfade, whichever comes first. `nil` when nothing changes
    /// after `t`: a still image after its crossfade, or an animation whose
    /// loops are over.
    ///
    /// During a crossfade the blend changes at every instant. Redraw at the
    /// display's rate until it ends (`t < crossfadeDuration`), then at the
    /// times this gives.
    public func nextFrameChange(after t: Double) -> Double? {
        let playback = fields.withLock(Self.playback)
        guard let current = playback.current else { return nil }
        let next = current.animationTimeline.nextFrameChange(after: t)
        guard playback.duration > 0, t < playback.duration else { return next }
        var crossfade = min(next ?? playback.duration, playback.duration)
        if let previous = playback.previous,
            let old = previous.animationTimeline.nextFrameChange(after: playback.previousElapsed + max(0, t)) {
            crossfade = min(crossfade, max(t, 0) + (old - (playback.previousElapsed + max(0, t))))
        }
        return crossfade
    }

    /// Seconds since the current image was set (for ``displayedImage(at:)``), nil when there is none.
    public var timeSinceImageSet: Double? {
        fields.withLock { $0.transitionStart }.map { clock() - $0 }
    }

    /// Shows the image (with a crossfade); the state becomes ``State/loaded(_:)``
    /// when it is the image of the URL most recently set.
    public func imageLoadDidFinish(_ image: Image, url: URL) {
        show(image, url: url, since: nil)
    }

    /// Records the failure (``State/failed(_:_:)``) and shows the failure image.
    public func imageLoadDidFail(_ error: AsyncImageError, url: URL) {
        fail(error, url: url, since: nil)
    }

    /// Shows `image` unless ``imageURL`` was set to nil since its load
    /// started (`clears` is the count of its time; nil: no check).
    private func show(_ image: Image, url: URL, since clears: UInt64?) {
        let now = clock()
        change { fields in
            guard clears.map(fields.clears.admits) ?? true else { return }
            Self.retire(&fields, now: now)
            fields.image = image
            fields.transitionStart = now
            if case .loading(let loading) = fields.state, loading == url { fields.state = .loaded(url) }
        }
    }

    private func fail(_ error: AsyncImageError, url: URL, since clears: UInt64?) {
        change { fields in
            guard clears.map(fields.clears.admits) ?? true else { return }
            guard case .loading(let loading) = fields.state, loading == url else { return }
            fields.state = .failed(url, error)
        }
    }

    private func change(_ body: (inout Fields) -> Void) {
        let observer = fields.withLock { fields -> (@Sendable (AsyncImageView) -> Void)? in
            body(&fields)
            return fields.onChange
        }
        observer?(self)
    }

    private static func animating(_ fields: inout Fields) -> Bool {
        guard fields.showActivityIndicator, fields.image == nil else { return false }
        if case .loading = fields.state { return true }
        return false
    }

    /// Records what was shown as the old picture of the crossfade to come,
    /// with how long it had been playing.
    private static func retire(_ fields: inout Fields, now: Double) {
        fields.previous = shown(&fields)
        fields.previousElapsed = fields.image == nil ? 0 : max(0, now - (fields.transitionStart ?? now))
    }

    /// What ``displayedImage(at:)`` needs, copied under the lock.
    private struct Playback {
        var current: Image?
        var previous: Image?
        var previousElapsed: Double
        var duration: Double
        var start: Double?
    }

    private static func playback(_ fields: inout Fields) -> Playback {
        Playback(
            current: shown(&fields), previous: fields.previous,
            previousElapsed: fields.previousElapsed, duration: fields.crossfadeDuration, start: fields.transitionStart)
    }

    /// The picture at `t`, from a copy of the fields (outside the lock).
    private static func picture(at t: Double, _ playback: Playback) -> Image? {
        guard let current = playback.current else { return nil }
        let shown = current.stillImage(at: t)
        let duration = playback.duration
        guard duration > 0, t < duration else { return shown }
        let fraction = max(0, t) / duration
        // The first image (no placeholder, nothing shown before) fades in from transparent.
        guard let previous = playback.previous else { return Crossfade.fadeIn(shown, fraction: fraction) }
        let old = previous.stillImage(at: playback.previousElapsed + max(0, t))
        return Crossfade.blend(from: old, to: shown, fraction: fraction)
    }

    private static func shown(_ fields: inout Fields) -> Image? {
        if let image = fields.image { return image }
        if case .failed = fields.state, let failure = fields.failureImage { return failure }
        return fields.placeholderImage
    }
}

/// Blends two images (the first frames: ``AsyncImageView`` passes the frames
/// on screen, as still images) for a crossfade.
enum Crossfade {
    /// `new` fading in from transparent: the blend from a transparent
    /// picture of its size.
    static func fadeIn(_ new: Image, fraction: Double) -> Image {
        let transparent = Image(width: new.width, height: new.height, rgba: Data(count: new.width * new.height * 4))
        return blend(from: transparent, to: new, fraction: fraction)
    }

    /// `old` (resized to `new`'s size) blended into `new`; `new` itself when
    /// `old` cannot be resized (out of memory): no crossfade is better than
    /// blending pixels of the wrong size.
    static func blend(
        from old: Image, to new: Image, fraction: Double,
        resize: (Image, PixelSize) throws(AsyncImageError) -> Image = ImageResizer.resize
    ) -> Image {
        guard let source = try? resize(old, new.size), source.size == new.size else { return new }
        let f = Float(min(1, max(0, fraction)))
        var out = Data(count: new.width * new.height * 4)
        out.withUnsafeMutableBytes { raw in
            let dst = raw.bindMemory(to: UInt8.self).baseAddress!
            source.pixels.withUnsafeBytes { a in
                new.pixels.withUnsafeBytes { b in
                    let pa = a.bindMemory(to: UInt8.self).baseAddress!
                    let pb = b.bindMemory(to: UInt8.self).baseAddress!
                    for y in 0..<new.height {
                        for x in 0..<new.width {
                            let ia = y * source.bytesPerRow + x * 4
                            let ib = y * new.bytesPerRow + x * 4
                            let alphaA = Float(pa[ia + 3]) * (1 - f)
                            let alphaB = Float(pb[ib + 3]) * f
                            let alpha = alphaA + alphaB
                            let o = dst + (y * new.width + x) * 4
                            guard alpha > 0 else { continue }
                            for c in 0..<3 {
                                let value = (Float(pa[ia + c]) * alphaA + Float(pb[ib + c]) * alphaB) / alpha
                                o[c] = UInt8(min(255, value + 0.5))
                            }
                            o[3] = UInt8(min(255, alpha + 0.5))
                        }
                    }
                }
            }
        }
        return Image(width: new.width, height: new.height, rgba: out)
    }
}
