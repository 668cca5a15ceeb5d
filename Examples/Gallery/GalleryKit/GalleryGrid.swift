#if GTKSupport
import AsyncImageGTK
import AsyncImageKit
import Foundation

/// A recycling `GtkGridView` over a ``GalleryOrigin``: a
/// `GtkSignalListItemFactory` whose cells are ``AsyncImageGTK/AsyncImagePicture``s;
/// `bind` sets a cell's URL, `unbind` sets it to nil (which cancels the
/// cell's loads by target and clears it), and an overlay label shows the
/// loader's requests in flight, queued, delivered, cancelled and cached.
///
/// GTK 4.8's grid keeps `GTK_GRID_VIEW_MAX_VISIBLE_ROWS` (30) rows of
/// `max-columns` cells bound around the viewport (with the default 7
/// columns, 210 cells; with 64, 1,920), most of them far off screen. With a
/// LIFO loader the last bound, off screen, would load first. So `bind`
/// sets the URL at once only for a cell within ``margin`` points of the
/// viewport (once laid out); the others get theirs when a pass after layout
/// (an idle after each bind burst and each scroll) finds them near, and an
/// unbind before that costs nothing. ``maxColumns`` is set to what fits.
///
/// It also keeps the books a test needs: every delivery whose URL is not the
/// receiving cell's current one (a recycled cell's old URL) is counted in
/// ``staleDeliveries``, which must stay 0.
///
/// Main thread only.
public final class GalleryGrid: @unchecked Sendable {
    /// The root widget (an overlay over the scrolled grid); this object holds a reference.
    public let widget: UnsafeMutablePointer<GtkWidget>
    /// The grid view.
    public let gridView: UnsafeMutablePointer<GtkWidget>
    /// The scrolled window around it.
    public let scrolledWindow: UnsafeMutablePointer<GtkWidget>
    /// The stats label.
    public let label: UnsafeMutablePointer<GtkWidget>
    /// The loader the cells load with.
    public let loader: AsyncImageLoader
    /// The origin.
    public let origin: GalleryOrigin
    /// The cells' side in points.
    public let cellSide: Int

    /// Microseconds spent in the factory's handlers and the placing pass
    /// (setting and clearing URLs, which calls the loader), on the main thread.
    public private(set) var handlerMicroseconds: UInt64 = 0
    /// The same in the main thread's CPU time (``GLibMainQueue/busyCPUMicroseconds`` says why both).
    public private(set) var handlerCPUMicroseconds: UInt64 = 0

    /// Adds a handler's wall and CPU time since `start` and `cpu`.
    private func account(since start: Int64, cpu: UInt64) {
        handlerMicroseconds += UInt64(max(0, Int64(g_get_monotonic_time()) - start))
        handlerCPUMicroseconds += GLibMainQueue.threadCPUMicroseconds - cpu
    }
    /// Whether `bind` loads at all (false: placeholders only, to measure GTK alone).
    public var loads = true
    /// Seconds each picture cross-fades to its image (0.2; 0: none), set on the cells made after.
    public var crossfadeDuration = 0.2
    /// Bound cells by list item: the picture and the item's position.
    public private(set) var bound: [UInt: (picture: AsyncImagePicture, index: Int)] = [:]
    /// Deliveries to a cell whose current URL was another (must stay 0).
    public private(set) var staleDeliveries = 0
    /// Deliveries to cells (successful loads reaching a bound cell).
    public private(set) var deliveries = 0
    /// How many times a cell was bound and unbound.
    public private(set) var binds = 0, unbinds = 0
    /// URLs set on cells (at bind, or when a waiting cell comes near).
    public private(set) var started = 0
    /// URLs a cell was unbound from, with that cell's view (for the tests' books).
    public private(set) var unboundURLs: [(target: ObjectIdentifier, url: URL)] = []

    /// Bound cells waiting for their URL (not yet near the viewport).
    private var waiting: [UInt: (picture: AsyncImagePicture, index: Int)] = [:]
    private var passSource: guint = 0
    private var unplacedFrames = 0
    /// Whether the frame clock is ticking to place waiting cells (false once the grid is still).
    public var isPlacingCells: Bool { passSource != 0 }
    /// Bound cells not yet given their URL (off screen).
    public var waitingCount: Int { waiting.count }
    /// How far from the viewport, in points, a bound cell gets its URL (default: one cell).
    public var margin: Double
    /// At most this many URLs set per frame (default 4, half a row of 8;
    /// 0: no limit). A fast scroll brings a whole row near at once; setting
    /// its URLs over two frames halves the longest frame's share of the
    /// loader's work on the main loop. Cells inside the viewport go first,
    /// then the nearest; the rest wait for the next frame (a cell a row
    /// ahead of the viewport still starts before it shows).
    public var startsPerFrame = 4
    private var startsFrame: Int64 = -1
    private var startsInFrame = 0
    private var cells: [UInt: AsyncImagePicture] = [:]
    /// The cells' views, for the books' lookup by a notification's object.
    private var cellViews: Set<ObjectIdentifier> = []
    private let placeholder: Image
    private let box = GridBox()
    private var statsSource: guint = 0
    private var observer: NSObjectProtocol?

    /// Builds the grid.
    ///
    /// - Parameters:
    ///   - loader: the loader (its notification center is observed for the books).
    ///   - origin: the pictures.
    ///   - cellSide: each cell's side in points.
    public init(loader: AsyncImageLoader, origin: GalleryOrigin, cellSide: Int = 96) {
        dispatchPrecondition(condition: .onQueue(.main))
        self.loader = loader
        self.origin = origin
        self.cellSide = cellSide
        margin = Double(cellSide)
        placeholder = Image(width: 1, height: 1, rgba: Data([200, 200, 200, 255]))

        let list = gtk_string_list_new(nil)
        for index in 0..<origin.count { gtk_string_list_append(list, String(index)) }
        let selection = gtk_no_selection_new(aik_list_model(UnsafeMutableRawPointer(list)))
        let factory = gtk_signal_list_item_factory_new()!
        gridView = gtk_grid_view_new(aik_selection_model(UnsafeMutableRawPointer(selection)), factory)!
        gtk_grid_view_set_max_columns(aik_grid_view(gridView), 8)
        scrolledWindow = gtk_scrolled_window_new()!
        gtk_scrolled_window_set_child(aik_scrolled_window(scrolledWindow), gridView)
        gtk_scrolled_window_set_policy(aik_scrolled_window(scrolledWindow), GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC)
        label = gtk_label_new("")!
        gtk_widget_add_css_class(label, "osd")
        gtk_widget_set_halign(label, GTK_ALIGN_END)
        gtk_widget_set_valign(label, GTK_ALIGN_START)
        gtk_widget_set_margin_top(label, 8)
        gtk_widget_set_margin_end(label, 8)
        gtk_widget_set_can_target(label, 0)
        widget = gtk_overlay_new()!
        g_object_ref_sink(UnsafeMutableRawPointer(widget))
        gtk_overlay_set_child(aik_overlay(widget), scrolledWindow)
        gtk_overlay_add_overlay(aik_overlay(widget), label)

        box.grid = self
        let data = Unmanaged.passUnretained(box).toOpaque()
        // The widget owns the box; the factory's handlers reach the grid through it.
        g_object_set_data_full(
            UnsafeMutableRawPointer(widget).assumingMemoryBound(to: GObject.self), "asyncimage-grid",
            Unmanaged.passRetained(box).toOpaque(), { Unmanaged<AnyObject>.fromOpaque($0!).release() })
        let signalFactory = factory
        _ = aik_connect_list_item(signalFactory, "setup", { _, item, data in GridBox.grid(data)?.setup(item) }, data)
        _ = aik_connect_list_item(signalFactory, "bind", { _, item, data in GridBox.grid(data)?.bind(item) }, data)
        _ = aik_connect_list_item(signalFactory, "unbind", { _, item, data in GridBox.grid(data)?.unbind(item) }, data)
        _ = aik_connect_list_item(signalFactory, "teardown", { _, item, data in GridBox.grid(data)?.teardown(item) }, data)

        _ = aik_connect_object(
            UnsafeMutableRawPointer(verticalAdjustment), "value-changed", { _, data in GridBox.grid(data)?.schedulePass() }, data)
        _ = aik_connect_notify(
            UnsafeMutableRawPointer(gridView), "width", { _, data in GridBox.grid(data)?.schedulePass() }, data)

        statsSource = g_timeout_add(250, { data in
            GridBox.grid(data)?.updateLabel()
            return gboolean(1)
        }, data)

        // The books: on the delivery queue (the main queue), where `bind` and
        // `unbind` also run, so a cell's current URL is read in order.
        observer = (loader.notificationCenter ?? .default).addObserver(
            forName: .asyncImageLoadDidFinish, object: nil, queue: nil
        ) { [weak self] note in
            guard let url = note.userInfo?[AsyncImageURLKey] as? URL, let view = note.object as? AsyncImageView else { return }
            dispatchPrecondition(condition: .onQueue(.main))
            guard let self, self.cellViews.contains(ObjectIdentifier(view)) else { return }
            self.deliveries += 1
            if view.imageURL != url { self.staleDeliveries += 1 }
        }
        updateLabel()
    }

    deinit {
        if statsSource != 0 { g_source_remove(statsSource) }
        if passSource != 0 { gtk_widget_remove_tick_callback(gridView, passSource) }
        if let observer { (loader.notificationCenter ?? .default).removeObserver(observer) }
        g_object_unref(UnsafeMutableRawPointer(widget))
    }

    /// The vertical adjustment (to scroll by script).
    public var verticalAdjustment: UnsafeMutablePointer<GtkAdjustment> {
        gtk_scrolled_window_get_vadjustment(aik_scrolled_window(scrolledWindow))!
    }

    /// The stats line the label shows.
    public var statsText: String {
        let activity = loader.activity
        let cached = (loader.cache as? ImageCache)?.count ?? 0
        return "in flight \(activity.inFlight) · queued \(activity.queued) · delivered \(activity.delivered) · cancelled \(activity.cancelled) · cached \(cached)"
    }

    fileprivate func updateLabel() {
        gtk_label_set_text(aik_label(label), statsText)
    }

    private static func key(_ item: UnsafeMutablePointer<GObject>?) -> UInt { UInt(bitPattern: item) }

    fileprivate func setup(_ item: UnsafeMutablePointer<GObject>?) {
        let start = Int64(g_get_monotonic_time()), cpu = GLibMainQueue.threadCPUMicroseconds
        defer { account(since: start, cpu: cpu) }
        let picture = AsyncImagePicture(loader: loader, width: cellSide, height: cellSide, contentFit: GTK_CONTENT_FIT_COVER)
        picture.placeholderImage = placeholder
        picture.crossfadeDuration = crossfadeDuration
        gtk_widget_set_margin_start(picture.widget, 2)
        gtk_widget_set_margin_end(picture.widget, 2)
        gtk_widget_set_margin_top(picture.widget, 2)
        gtk_widget_set_margin_bottom(picture.widget, 2)
        cells[Self.key(item)] = picture
        cellViews.insert(ObjectIdentifier(picture.view))
        gtk_list_item_set_child(aik_list_item(UnsafeMutableRawPointer(item)), picture.widget)
    }

    fileprivate func bind(_ item: UnsafeMutablePointer<GObject>?) {
        let start = Int64(g_get_monotonic_time()), cpu = GLibMainQueue.threadCPUMicroseconds
        defer { account(since: start, cpu: cpu) }
        guard let picture = cells[Self.key(item)] else { return }
        let index = Int(gtk_list_item_get_position(aik_list_item(UnsafeMutableRawPointer(item))))
        binds += 1
        bound[Self.key(item)] = (picture, index)
        guard loads else { return }
        if distance(of: picture) <= margin, takeStart() {
            started += 1
            picture.imageURL = origin.url(of: index)
        } else {
            waiting[Self.key(item)] = (picture, index)
            schedulePass()
        }
    }

    fileprivate func unbind(_ item: UnsafeMutablePointer<GObject>?) {
        let start = Int64(g_get_monotonic_time()), cpu = GLibMainQueue.threadCPUMicroseconds
        defer { account(since: start, cpu: cpu) }
        guard let picture = cells[Self.key(item)] else { return }
        unbinds += 1
        waiting[Self.key(item)] = nil
        bound[Self.key(item)] = nil
        guard let url = picture.imageURL else { return }
        unboundURLs.append((ObjectIdentifier(picture.view), url))
        picture.imageURL = nil
    }

    fileprivate func teardown(_ item: UnsafeMutablePointer<GObject>?) {
        let start = Int64(g_get_monotonic_time()), cpu = GLibMainQueue.threadCPUMicroseconds
        defer { account(since: start, cpu: cpu) }
        if let picture = cells.removeValue(forKey: Self.key(item)) { cellViews.remove(ObjectIdentifier(picture.view)) }
        bound[Self.key(item)] = nil
        waiting[Self.key(item)] = nil
    }

    /// How far `picture` is laid out from the viewport, in points (0: it
    /// overlaps it; infinity: not laid out).
    private func distance(of picture: AsyncImagePicture) -> Double {
        var bounds = graphene_rect_t()
        guard gtk_widget_get_mapped(picture.widget) != 0,
            gtk_widget_compute_bounds(picture.widget, scrolledWindow, &bounds) != 0
        else { return .infinity }
        let height = Double(gtk_widget_get_height(scrolledWindow))
        let top = Double(bounds.origin.y), bottom = top + Double(bounds.size.height)
        if bottom <= 0 { return -bottom + 0.5 }
        if top >= height { return top - height + 0.5 }
        return 0
    }

    /// Takes one of this frame's ``startsPerFrame``; false when none is left.
    private func takeStart() -> Bool {
        guard startsPerFrame > 0 else { return true }
        let frame = gtk_widget_get_frame_clock(gridView).map { Int64(gdk_frame_clock_get_frame_counter($0)) } ?? 0
        if frame != startsFrame {
            startsFrame = frame
            startsInFrame = 0
        }
        guard startsInFrame < startsPerFrame else { return false }
        startsInFrame += 1
        return true
    }

    /// Runs ``startNearCells()`` on the grid's next frames (a tick callback
    /// on the frame clock): cells bound while GTK lays out a frame are
    /// placed in that frame, so the next one finds where they are. It ticks
    /// until no waiting cell is left unplaced, for at most three frames (a
    /// cell GTK keeps bound far off screen is never placed: it waits for the
    /// next scroll).
    fileprivate func schedulePass() {
        unplacedFrames = 0
        guard passSource == 0, !waiting.isEmpty else { return }
        passSource = gtk_widget_add_tick_callback(gridView, { _, _, data in
            guard let grid = GridBox.grid(data) else { return gboolean(0) }
            let again = grid.startNearCells()
            if !again { grid.passSource = 0 }
            return again ? gboolean(1) : gboolean(0)
        }, Unmanaged.passUnretained(box).toOpaque(), nil)
    }

    /// Sets the URL of waiting cells now near the viewport, up to
    /// ``startsPerFrame``. Returns true while a waiting cell is not placed
    /// yet or a near one was deferred (look again next frame).
    private func startNearCells() -> Bool {
        let start = Int64(g_get_monotonic_time()), cpu = GLibMainQueue.threadCPUMicroseconds
        defer { account(since: start, cpu: cpu) }
        var unplaced = false
        var near: [(key: UInt, distance: Double, cell: (picture: AsyncImagePicture, index: Int))] = []
        for (key, cell) in waiting {
            guard gtk_widget_get_mapped(cell.picture.widget) != 0, gtk_widget_get_width(cell.picture.widget) > 0 else {
                unplaced = true
                continue
            }
            let distance = distance(of: cell.picture)
            if distance <= margin { near.append((key, distance, cell)) }
        }
        // The visible first, then the nearest (index order among equals, for a stable order).
        near.sort { ($0.distance, $0.cell.index) < ($1.distance, $1.cell.index) }
        // Removed after the loop: a removal during it would copy the dictionary it iterates.
        var deferred = false
        for (key, _, cell) in near {
            guard takeStart() else {
                deferred = true
                break
            }
            waiting[key] = nil
            started += 1
            cell.picture.imageURL = origin.url(of: cell.index)
        }
        if deferred { return true }
        unplacedFrames += 1
        return unplaced && unplacedFrames < 3
    }
}

/// Reaches the grid from GLib's callbacks without keeping it alive.
private final class GridBox {
    weak var grid: GalleryGrid?

    static func grid(_ data: UnsafeMutableRawPointer?) -> GalleryGrid? {
        Unmanaged<GridBox>.fromOpaque(data!).takeUnretainedValue().grid
    }
}
#endif
