#if GTKSupport
import AsyncImageKit
import CAsyncImageGTK
import Foundation

/// A GTK 4 picture that loads itself: a `GtkPicture` driven by an
/// ``AsyncImageKit/AsyncImageView``, so it has that view's behaviour
/// (placeholder, thumbnail then full image, failure image, cross-fade,
/// animation timing) and the loader's guarantees (per-target order, one
/// outcome per request, cancellation by target), drawn by GTK.
///
/// ```swift
/// GLibMainQueue.attach()                       // once, before GTK's main loop runs
/// let picture = AsyncImagePicture(width: 160, height: 160, contentFit: GTK_CONTENT_FIT_COVER)
/// picture.placeholderImage = grey
/// gtk_window_set_child(window, picture.widget)
/// picture.imageURL = url                       // loads at 160x160 points times the scale factor
/// ```
///
/// - The display size it asks the loader for is its size in points times
///   `gtk_widget_get_scale_factor` (reloaded when the scale factor
///   changes), with the content mode and scaling that suit its content fit
///   (``requestSizing(for:)``): `GTK_CONTENT_FIT_COVER` asks for an aspect
///   fill cropped to the box, `GTK_CONTENT_FIT_CONTAIN` and
///   `GTK_CONTENT_FIT_SCALE_DOWN` for an aspect fit without margins, and
///   `GTK_CONTENT_FIT_FILL` (which stretches the picture to the box,
///   dropping its aspect ratio) for an aspect fill *not* cropped: the whole
///   image, at least the box on both sides, which GTK then only shrinks
///   along one axis.
/// - Pixels reach GTK as a `GdkMemoryTexture` in
///   `GDK_MEMORY_R8G8B8A8_PREMULTIPLIED` over the image's own bytes (opaque
///   images: not copied) or premultiplied once (images with transparency).
/// - The cross-fade from the placeholder or thumbnail to the image is drawn
///   by GTK (`gtk_snapshot_push_cross_fade`, in a small `GdkPaintable`), and
///   it and animated images advance on the widget's frame clock
///   (`gtk_widget_add_tick_callback`), which runs only while something moves.
///
/// Use it on the main thread, with the loader delivering there (its default
/// delivery queue, `DispatchQueue.main`, drained by GLib once
/// ``GLibMainQueue/attach()`` was called). A change made on another thread
/// (the view's properties are thread-safe) is drawn on the main thread.
public final class AsyncImagePicture: ImageDisplaying, @unchecked Sendable {
    /// The `GtkPicture` (this object holds a reference; add it to a window
    /// or a list item as any widget).
    public let widget: UnsafeMutablePointer<GtkWidget>
    /// The headless view whose state this picture draws (its placeholder,
    /// failure image, cross-fade duration and state are this picture's).
    public let view: AsyncImageView

    private let crossFade: OpaquePointer
    private let box: PictureBox
    private var logicalSize: PixelSize?
    private var fit: GtkContentFit

    // What is drawn (main thread only).
    private var shownKey: ImageKey?
    private var shownImage: Image?
    private var shownSince: Int64 = 0
    private var frameTextures: [Int: PictureTexture] = [:]
    private var onScreen: PictureTexture?
    private var fadeFrom: PictureTexture?
    private var fadeStart: Int64?
    private var drawn: (from: ObjectIdentifier?, to: ObjectIdentifier?, progress: Double)?
    private var tickID: guint = 0

    /// Creates a picture.
    ///
    /// - Parameters:
    ///   - loader: the loader ``imageURL`` uses.
    ///   - width: its width in points (also its minimum size); nil with
    ///     `height` nil: no size of its own, images load at full size.
    ///   - height: its height in points.
    ///   - contentFit: how the image meets its box (`GTK_CONTENT_FIT_COVER` by default).
    public init(
        loader: AsyncImageLoader = .shared, width: Int? = nil, height: Int? = nil,
        contentFit: GtkContentFit = GTK_CONTENT_FIT_COVER
    ) {
        dispatchPrecondition(condition: .onQueue(.main))
        let size = width.flatMap { w in height.map { PixelSize(width: w, height: $0) } }
        logicalSize = size
        fit = contentFit
        crossFade = aik_cross_fade_new()
        let widget = gtk_picture_new_for_paintable(aik_paintable(UnsafeMutableRawPointer(crossFade)))!
        g_object_ref_sink(UnsafeMutableRawPointer(widget))
        self.widget = widget
        gtk_picture_set_content_fit(aik_picture(widget), contentFit)
        if let size { gtk_widget_set_size_request(widget, Int32(size.width), Int32(size.height)) }
        let scale = Int(gtk_widget_get_scale_factor(widget))
        let sizing = Self.requestSizing(for: contentFit)
        view = AsyncImageView(
            loader: loader, displaySize: size.map { PixelSize(width: $0.width * scale, height: $0.height * scale) },
            contentMode: sizing.contentMode, scaling: sizing.scaling)
        // The widget owns the box (released when it is finalized); signals
        // and ticks reach this object through it, weakly.
        box = PictureBox()
        box.picture = self
        g_object_set_data_full(
            UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GObject.self), "asyncimage-picture",
            Unmanaged.passRetained(box).toOpaque(), { Unmanaged<AnyObject>.fromOpaque($0!).release() })
        aik_cross_fade_set_scale(crossFade, Int32(scale))
        _ = aik_connect_notify(
            UnsafeMutableRawPointer(widget), "scale-factor",
            { _, data in Unmanaged<PictureBox>.fromOpaque(data!).takeUnretainedValue().picture?.scaleFactorChanged() },
            Unmanaged.passUnretained(box).toOpaque())
        view.onChange = { [weak self] _ in
            guard let self else { return }
            if Thread.isMainThread { self.refresh(now: Int64(g_get_monotonic_time())) } else {
                DispatchQueue.main.async { [weak self] in self?.refresh(now: Int64(g_get_monotonic_time())) }
            }
        }
    }

    deinit {
        view.onChange = nil
        imageLoader.cancelLoadingImages(target: view)
        let held = WidgetReference(widget: widget, paintable: crossFade, tickID: tickID)
        if Thread.isMainThread { held.release() } else { DispatchQueue.main.async { held.release() } }
    }

    // MARK: ImageDisplaying

    /// The loaded image (the view's).
    public var image: Image? {
        get { view.image }
        set { view.image = newValue }
    }

    /// The URL most recently set; setting it loads at the picture's display
    /// size (keeping the current image, or the placeholder, until the new one
    /// arrives), nil cancels this picture's loads and clears it (what a grid
    /// does when a cell is unbound).
    public var imageURL: URL? {
        get { view.imageURL }
        set { view.imageURL = newValue }
    }

    /// The view's loader.
    public var imageLoader: AsyncImageLoader { view.imageLoader }
    /// Its size in points times the scale factor (nil: full size).
    public var imageDisplaySize: PixelSize? { view.displaySize }
    /// What its content fit asks for (``requestSizing(for:)``).
    public var imageContentMode: ContentMode { view.contentMode }
    /// What its content fit asks for (``requestSizing(for:)``).
    public var imageScaling: ScalingOptions { view.scaling }
    /// Reloads the current URL for the current size (the view does).
    public func imageDisplayDidChange() { view.imageDisplayDidChange() }
    /// Shows the image (the view's behaviour).
    public func imageLoadDidFinish(_ image: Image, url: URL) { view.imageLoadDidFinish(image, url: url) }
    /// Shows the failure image (the view's behaviour).
    public func imageLoadDidFail(_ error: AsyncImageError, url: URL) { view.imageLoadDidFail(error, url: url) }

    // MARK: Appearance

    /// Shown while there is no image yet.
    public var placeholderImage: Image? {
        get { view.placeholderImage }
        set { view.placeholderImage = newValue }
    }

    /// Shown when the load failed.
    public var failureImage: Image? {
        get { view.failureImage }
        set { view.failureImage = newValue }
    }

    /// Seconds the new image takes to fade in over the old (default 0.4; 0 for none).
    public var crossfadeDuration: Double {
        get { view.crossfadeDuration }
        set { view.crossfadeDuration = newValue }
    }

    /// How the image meets the picture's box; a change reloads the current
    /// URL for the content mode it asks for.
    public var contentFit: GtkContentFit {
        get { fit }
        set {
            fit = newValue
            gtk_picture_set_content_fit(aik_picture(widget), newValue)
            let sizing = Self.requestSizing(for: newValue)
            view.contentMode = sizing.contentMode
            view.scaling = sizing.scaling
        }
    }

    /// The picture's size in points (nil: none, full-size images); a change
    /// sets its minimum size and reloads at the new display size.
    public var size: PixelSize? {
        get { logicalSize }
        set {
            logicalSize = newValue
            gtk_widget_set_size_request(widget, Int32(newValue?.width ?? -1), Int32(newValue?.height ?? -1))
            scaleFactorChanged()
        }
    }

    /// The content mode and scaling a content fit asks the loader for.
    ///
    /// | `GtkContentFit` | content mode | scaling | what GTK then does |
    /// |---|---|---|---|
    /// | `COVER` | aspect fill | ``AsyncImageKit/ScalingOptions/cropsSmallImagesToShape`` | nothing: the image is the box |
    /// | `CONTAIN` | aspect fit | ``AsyncImageKit/ScalingOptions/fitWithoutMargins`` | centres it (enlarges a small source) |
    /// | `SCALE_DOWN` | aspect fit | ``AsyncImageKit/ScalingOptions/fitWithoutMargins`` | centres it |
    /// | `FILL` | aspect fill | ``AsyncImageKit/ScalingOptions/fillWithoutCropping`` | stretches it to the box, shrinking one axis |
    public static func requestSizing(for fit: GtkContentFit) -> (contentMode: ContentMode, scaling: ScalingOptions) {
        switch fit {
        case GTK_CONTENT_FIT_COVER: return (.aspectFill, .cropsSmallImagesToShape)
        case GTK_CONTENT_FIT_FILL: return (.aspectFill, .fillWithoutCropping)
        default: return (.aspectFit, .fitWithoutMargins)
        }
    }

    // MARK: Drawing (main thread)

    /// How many times the picture handed GTK a new frame or fade step (tests and benchmarks).
    public var drawCount: UInt64 { UInt64(aik_cross_fade_set_count(crossFade)) }

    /// Whether the frame clock is ticking for this picture (a cross-fade or an animation is under way).
    public var isTicking: Bool { tickID != 0 }

    private func scaleFactorChanged() {
        let scale = Int(gtk_widget_get_scale_factor(widget))
        aik_cross_fade_set_scale(crossFade, Int32(scale))
        view.displaySize = logicalSize.map { PixelSize(width: $0.width * scale, height: $0.height * scale) }
    }

    /// Brings the paintable up to date with the view at `now` (µs, GLib's monotonic clock).
    fileprivate func refresh(now: Int64) {
        let target = view.displayedImage
        let key = target.map(ImageKey.init)
        if key != shownKey {
            let previous = onScreen
            shownKey = key
            shownImage = target
            shownSince = now
            frameTextures = [:]
            // Only a loaded image fades in (over what was shown, or from
            // transparent); a placeholder, a failure image or a clear shows at once.
            if target != nil, view.image != nil, view.crossfadeDuration > 0 {
                fadeFrom = previous
                fadeStart = now
            } else {
                fadeFrom = nil
                fadeStart = nil
            }
        }
        let t = Double(now - shownSince) / 1e6
        var texture: PictureTexture?
        if let image = shownImage {
            let frame = image.frameIndex(at: t)
            if let made = frameTextures[frame] {
                texture = made
            } else if let made = PictureTexture(image, frame: frame) {
                // Only the frames of an animation are kept; a still has one.
                frameTextures[frame] = made
                texture = made
            }
        }
        var progress = 1.0
        if let start = fadeStart {
            progress = min(1, Double(now - start) / 1e6 / max(view.crossfadeDuration, 0.001))
            if progress >= 1 {
                fadeFrom = nil
                fadeStart = nil
            }
        }
        onScreen = texture
        let state = (from: fadeFrom.map { ObjectIdentifier($0) }, to: texture.map { ObjectIdentifier($0) }, progress: progress)
        if drawn == nil || drawn!.from != state.from || drawn!.to != state.to || drawn!.progress != state.progress {
            drawn = state
            aik_cross_fade_set(crossFade, fadeFrom?.paintable, texture?.paintable, progress)
        }
        let moving = fadeStart != nil || (shownImage.map { $0.isAnimated && $0.animationTimeline.nextFrameChange(after: t) != nil } ?? false)
        if moving && tickID == 0 {
            tickID = gtk_widget_add_tick_callback(
                widget,
                { _, clock, data in
                    guard let picture = Unmanaged<PictureBox>.fromOpaque(data!).takeUnretainedValue().picture
                    else { return gboolean(0) }
                    return picture.tick(frameTime: Int64(gdk_frame_clock_get_frame_time(clock))) ? gboolean(1) : gboolean(0)
                }, Unmanaged.passUnretained(box).toOpaque(), nil)
        }
    }

    /// Microseconds all pictures have spent in their frame-clock ticks so
    /// far (cross-fade steps, animation frames, textures made for them), on
    /// the main thread. For frame-time budgets.
    public static var tickMicroseconds: UInt64 { tickTime }
    nonisolated(unsafe) private static var tickTime: UInt64 = 0
    /// ``tickMicroseconds`` in the main thread's CPU time (see
    /// ``GLibMainQueue/busyCPUMicroseconds``).
    public static var tickCPUMicroseconds: UInt64 { tickCPUTime }
    nonisolated(unsafe) private static var tickCPUTime: UInt64 = 0

    /// One frame of the frame clock: true to keep ticking.
    private func tick(frameTime: Int64) -> Bool {
        let start = Int64(g_get_monotonic_time())
        let cpu = aik_thread_cpu_microseconds()
        defer {
            Self.tickTime += UInt64(max(0, Int64(g_get_monotonic_time()) - start))
            Self.tickCPUTime += UInt64(aik_thread_cpu_microseconds() - cpu)
        }
        refresh(now: frameTime)
        let t = Double(frameTime - shownSince) / 1e6
        let moving = fadeStart != nil || (shownImage.map { $0.isAnimated && $0.animationTimeline.nextFrameChange(after: t) != nil } ?? false)
        if !moving { tickID = 0 }
        return moving
    }
}

/// Reaches a picture from GLib's callbacks without keeping it alive: the
/// widget owns the box, the box refers to the picture weakly.
private final class PictureBox {
    weak var picture: AsyncImagePicture?
}

/// The picture's references (its widget and its paintable, which the
/// widget also holds) and tick callback, let go on the main thread.
private struct WidgetReference: @unchecked Sendable {
    let widget: UnsafeMutablePointer<GtkWidget>
    let paintable: OpaquePointer
    let tickID: guint

    func release() {
        if tickID != 0 { gtk_widget_remove_tick_callback(widget, tickID) }
        g_object_unref(UnsafeMutableRawPointer(widget))
        g_object_unref(UnsafeMutableRawPointer(paintable))
    }
}

/// An image's identity: its first frame's storage (alive while the image
/// is shown, so no other image can have it) and its size. Data of a few
/// bytes is stored inline, with no storage of its own to point at: a tiny
/// image is known by its bytes instead.
private struct ImageKey: Equatable {
    let address: UInt
    let smallBytes: [UInt8]
    let width: Int
    let height: Int
    let frames: Int

    init(_ image: Image) {
        let pixels = image.frames[0].pixels
        if pixels.count <= 64 {
            address = 0
            smallBytes = [UInt8](pixels)
        } else {
            address = pixels.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
            smallBytes = []
        }
        width = image.width
        height = image.height
        frames = image.frames.count
    }
}
#endif
