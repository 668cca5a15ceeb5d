// asyncimage-gallery: a recycling GtkGridView over thousands of pictures
// from a local origin (GalleryKit), each cell an AsyncImagePicture.
//
//   swift run --traits GTKSupport asyncimage-gallery [--count N] [--latency MS] [--cell PT]
//       [--screenshot FILE.png --after SECONDS]
//       [--frame-times SECONDS [--no-loading] [--speed PX_PER_S]]
//       [--decoders N] [--spin N] [--crossfade SECONDS] [--starts-per-frame N] [--probe MICROSECONDS]
//
// --frame-times scrolls the grid at a steady speed on the frame clock (down,
// then back to the top, and so on) after a second of warm-up, and prints the
// frame clock's frame intervals (p50, p99, longest) and the main loop's time
// in the library per frame, in wall time and in the main thread's CPU time
// (the difference: time it waited for a core), what the slowest frames spent
// it on, and how often the main thread was preempted; the origin encodes its
// pictures first, so it takes no CPU during the scroll. --no-loading binds
// cells without loading (GTK alone). GSK_RENDERER=cairo (GTK's CPU renderer)
// or ngl (GL; Mesa's llvmpipe under Xvfb) in the environment picks the renderer.
// --decoders sets the loader's decoders (default: cores - 1, at least 1, so
// the main loop keeps a core); --spin keeps N threads busy during the run
// (GTK's frames with cores taken away: the floor a loaded scroll is held to).
// --starts-per-frame caps the URLs the grid sets per frame (default 4, half
// a row; 0: no cap), so a row coming near is started over two frames.
// --probe spins the main thread for that many microseconds of its CPU time
// in every frame and reports the spin's wall time: what the machine (other
// threads, Xvfb, the hypervisor) adds to any main-loop work of that cost,
// the yardstick for the library's own wall time per frame.
#if GTKSupport
import AsyncImageGTK
import AsyncImageGalleryKit
import AsyncImageKit
import Foundation

struct Options: Sendable {
    var count = 5_000
    var latency = 40
    var cell = 96
    var screenshot: String?
    var after = 3.0
    var width = 900
    var height = 640
    var frameTimes: Double?
    var loading = true
    var speed = 3_000.0
    /// The loader's decoders: one core fewer than the machine has, at least 1.
    var decoders = max(1, ProcessInfo.processInfo.activeProcessorCount - 1)
    var spin = 0
    var probe = 0
    var crossfade = 0.2
    var startsPerFrame = 4
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var rest = arguments.dropFirst()
    func value(_ name: String) -> String {
        guard let next = rest.popFirst() else {
            FileHandle.standardError.write(Data("\(name) needs a value\n".utf8))
            exit(2)
        }
        return next
    }
    func number(_ name: String) -> Int {
        guard let n = Int(value(name)), n >= 0 else {
            FileHandle.standardError.write(Data("\(name) needs a whole number\n".utf8))
            exit(2)
        }
        return n
    }
    while let argument = rest.popFirst() {
        switch argument {
        case "--count": options.count = max(1, number(argument))
        case "--latency": options.latency = number(argument)
        case "--cell": options.cell = max(16, number(argument))
        case "--screenshot": options.screenshot = value(argument)
        case "--after": options.after = Double(value(argument)) ?? 3
        case "--size":
            let parts = value(argument).split(separator: "x").compactMap { Int($0) }
            if parts.count == 2 { (options.width, options.height) = (parts[0], parts[1]) }
        case "--decoders": options.decoders = max(1, number(argument))
        case "--spin": options.spin = number(argument)
        case "--probe": options.probe = number(argument)
        case "--crossfade": options.crossfade = Double(value(argument)) ?? 0.2
        case "--starts-per-frame": options.startsPerFrame = max(0, number(argument))
        case "--frame-times": options.frameTimes = Double(value(argument)) ?? 10
        case "--no-loading": options.loading = false
        case "--speed": options.speed = Double(number(argument))
        case "-h", "--help":
            print("usage: asyncimage-gallery [--count N] [--latency MS] [--cell PT] [--size WxH] [--screenshot FILE.png --after SECONDS] [--frame-times SECONDS [--no-loading] [--speed PX_PER_S]] [--decoders N] [--spin N] [--crossfade SECONDS] [--starts-per-frame N] [--probe MICROSECONDS]")
            exit(0)
        default:
            FileHandle.standardError.write(Data("unknown option \(argument)\n".utf8))
            exit(2)
        }
    }
    return options
}

/// What the GLib callbacks reach (main thread only).
final class App: @unchecked Sendable {
    nonisolated(unsafe) static var shared: App?
    let options: Options
    let loader: AsyncImageLoader
    let origin: GalleryOrigin
    var grid: GalleryGrid?
    var window: UnsafeMutablePointer<GtkWidget>?

    init(options: Options) throws {
        self.options = options
        origin = try GalleryOrigin(count: options.count, latency: options.latency)
        if options.frameTimes != nil {
            // The pictures made before the scroll, not by the origin's threads during it.
            let seconds = origin.prepare(upTo: options.count)
            print("origin: \(options.count) pictures encoded in \(String(format: "%.1f", seconds)) s before the scroll")
        }
        var configuration = AsyncImageLoader.Configuration(cache: ImageCache(), notificationCenter: NotificationCenter())
        configuration.concurrentLoads = 16
        // A desktop setting: decodes leave a core to GTK's main loop (which
        // never decodes either way).
        configuration.concurrentDecodes = options.decoders
        loader = AsyncImageLoader(configuration: configuration)
    }

    func activate(_ application: UnsafeMutablePointer<GtkApplication>) {
        let window = gtk_application_window_new(application)!
        self.window = window
        gtk_window_set_title(aik_window(window), "AsyncImageView: \(options.count) pictures")
        gtk_window_set_default_size(aik_window(window), Int32(options.width), Int32(options.height))
        let grid = GalleryGrid(loader: loader, origin: origin, cellSide: options.cell)
        grid.loads = options.loading
        grid.crossfadeDuration = options.crossfade
        grid.startsPerFrame = options.startsPerFrame
        self.grid = grid
        gtk_window_set_child(aik_window(window), grid.widget)
        gtk_window_present(aik_window(window))
        if options.frameTimes != nil {
            _ = g_timeout_add(1000, { _ in
                App.shared?.startScrolling()
                return gboolean(0)
            }, nil)
        }
        if options.screenshot != nil {
            _ = g_timeout_add(UInt32(options.after * 1000), { _ in
                App.shared?.screenshot()
                return gboolean(0)
            }, nil)
        }
    }

    var attempts = 0

    // The scripted scroll (--frame-times).
    private var lastFrame: Int64?
    private var scrollStart: Int64 = 0
    private var intervals: [Double] = []
    /// Wall ms of each frame's probe (--probe).
    private var probeWall: [Double] = []
    /// The library's main-loop time in each frame interval, ms (deliveries, ticks, bind/unbind).
    private var libraryPerFrame: [Double] = []
    /// The same in the main thread's CPU time, ms.
    private var libraryCPUPerFrame: [Double] = []
    private var lastLibraryCPU: UInt64 = 0
    /// The same, split: deliveries (the main queue's blocks), picture ticks, the grid's handlers; µs.
    private var partsPerFrame: [(drain: UInt64, ticks: UInt64, handlers: UInt64, binds: Int, unbinds: Int, started: Int, preempted: Int, waited: Int)] = []
    private var lastCounts = (binds: 0, unbinds: 0, started: 0, preempted: 0, waited: 0)

    /// The main thread's context switches so far: involuntary (it was
    /// runnable but another thread got its core) and voluntary (it waited:
    /// for a lock, or in GLib's poll between frames).
    private static func switches() -> (preempted: Int, waited: Int) {
        var usage = rusage()
        getrusage(__rusage_who_t(1), &usage)  // RUSAGE_THREAD (not imported)
        return (usage.ru_nivcsw, usage.ru_nvcsw)
    }
    private var lastParts: (drain: UInt64, ticks: UInt64, handlers: UInt64) = (0, 0, 0)
    private var lastLibraryTotal: UInt64 = 0
    private var direction = 1.0
    private var baseline: (drain: UInt64, ticks: UInt64, handlers: UInt64) = (0, 0, 0)

    func startScrolling() {
        guard let grid else { return }
        baseline = (GLibMainQueue.busyMicroseconds, AsyncImagePicture.tickMicroseconds, grid.handlerMicroseconds)
        for _ in 0..<options.spin {
            Thread.detachNewThread {
                var x: UInt64 = 1
                while true { x = x &* 6364136223846793005 &+ 1442695040888963407; if x == 0 { print(x) } }
            }
        }
        _ = gtk_widget_add_tick_callback(grid.gridView, { _, clock, _ in
            guard let app = App.shared else { return gboolean(0) }
            return app.scrollFrame(Int64(gdk_frame_clock_get_frame_time(clock))) ? gboolean(1) : gboolean(0)
        }, nil, nil)
    }

    /// One frame of the scripted scroll: true to go on.
    private func scrollFrame(_ now: Int64) -> Bool {
        guard let grid, let seconds = options.frameTimes else { return false }
        let parts = (
            drain: GLibMainQueue.busyMicroseconds, ticks: AsyncImagePicture.tickMicroseconds,
            handlers: grid.handlerMicroseconds)
        let libraryTotal = parts.drain + parts.ticks + parts.handlers
        let libraryCPU = GLibMainQueue.busyCPUMicroseconds + AsyncImagePicture.tickCPUMicroseconds + grid.handlerCPUMicroseconds
        if let last = lastFrame {
            let dt = Double(now - last) / 1e6
            intervals.append(dt * 1000)
            libraryPerFrame.append(Double(libraryTotal - lastLibraryTotal) / 1000)
            libraryCPUPerFrame.append(Double(libraryCPU - lastLibraryCPU) / 1000)
            partsPerFrame.append(
                (parts.drain - lastParts.drain, parts.ticks - lastParts.ticks, parts.handlers - lastParts.handlers,
                 grid.binds - lastCounts.binds, grid.unbinds - lastCounts.unbinds, grid.started - lastCounts.started,
                 Self.switches().preempted - lastCounts.preempted, Self.switches().waited - lastCounts.waited))
            let adjustment = grid.verticalAdjustment
            let top = gtk_adjustment_get_upper(adjustment) - gtk_adjustment_get_page_size(adjustment)
            var value = gtk_adjustment_get_value(adjustment) + direction * options.speed * dt
            if value >= top { (value, direction) = (top, -1) }
            if value <= 0 { (value, direction) = (0, 1) }
            gtk_adjustment_set_value(adjustment, value)
        } else {
            scrollStart = now
        }
        if options.probe > 0 {
            // Fixed work, measured in the thread's own CPU time so preemption cannot shorten it.
            let wall = g_get_monotonic_time(), cpu = GLibMainQueue.threadCPUMicroseconds
            while GLibMainQueue.threadCPUMicroseconds - cpu < UInt64(options.probe) {}
            probeWall.append(Double(g_get_monotonic_time() - wall) / 1000)
        }
        lastFrame = now
        lastLibraryTotal = libraryTotal
        lastLibraryCPU = libraryCPU
        lastParts = parts
        let switches = Self.switches()
        lastCounts = (grid.binds, grid.unbinds, grid.started, switches.preempted, switches.waited)
        guard Double(now - scrollStart) / 1e6 >= seconds else { return true }
        report()
        exit(0)
    }

    private func report() {
        guard let grid else { return }
        let sorted = intervals.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        let frames = Double(max(1, intervals.count))
        let drain = Double(GLibMainQueue.busyMicroseconds - baseline.drain) / 1000
        let ticks = Double(AsyncImagePicture.tickMicroseconds - baseline.ticks) / 1000
        let handlers = Double(grid.handlerMicroseconds - baseline.handlers) / 1000
        let f = { (v: Double) in String(format: "%.2f", v) }
        print("frames \(intervals.count) at \(Int(options.speed)) px/s, loading \(options.loading ? "on" : "off"), decoders \(options.decoders), spinning threads \(options.spin), cross-fade \(options.crossfade) s, URLs set per frame at most \(options.startsPerFrame == 0 ? "any" : String(options.startsPerFrame))")
        print("frame interval ms: p50 \(f(percentile(0.5))) p99 \(f(percentile(0.99))) longest \(f(sorted.last ?? 0)); over 33 ms: \(sorted.filter { $0 > 33.4 }.count)")
        print("main loop in the library per frame ms: \(f((drain + ticks + handlers) / frames)) (deliveries \(f(drain / frames)), picture ticks \(f(ticks / frames)), bind/unbind \(f(handlers / frames)))")
        let library = libraryPerFrame.sorted()
        func libraryPercentile(_ p: Double) -> Double {
            library.isEmpty ? 0 : library[min(library.count - 1, Int(Double(library.count) * p))]
        }
        print("main loop in the library per frame interval ms: p50 \(f(libraryPercentile(0.5))) p99 \(f(libraryPercentile(0.99))) longest \(f(library.last ?? 0)); over 2 ms: \(library.filter { $0 > 2 }.count)")
        let cpu = libraryCPUPerFrame.sorted()
        func cpuPercentile(_ p: Double) -> Double { cpu.isEmpty ? 0 : cpu[min(cpu.count - 1, Int(Double(cpu.count) * p))] }
        print("main loop in the library per frame interval, main thread CPU ms: p50 \(f(cpuPercentile(0.5))) p99 \(f(cpuPercentile(0.99))) longest \(f(cpu.last ?? 0)); over 2 ms: \(cpu.filter { $0 > 2 }.count)")
        // What the slowest frames (at or over the p99) spent their library time on.
        let slow = partsPerFrame.filter { Double($0.drain + $0.ticks + $0.handlers) / 1000 >= libraryPercentile(0.99) }
        if !slow.isEmpty {
            let n = Double(slow.count) * 1000
            print("  the \(slow.count) frames at or over it, mean ms: deliveries \(f(Double(slow.map(\.drain).reduce(0, +)) / n)), picture ticks \(f(Double(slow.map(\.ticks).reduce(0, +)) / n)), bind/unbind \(f(Double(slow.map(\.handlers).reduce(0, +)) / n)); binds \(slow.map(\.binds)), unbinds \(slow.map(\.unbinds)), URLs set \(slow.map(\.started)), main thread preempted \(slow.map(\.preempted)), waited \(slow.map(\.waited))")
            let all = partsPerFrame.map(\.preempted)
            print("  main thread preempted in \(all.filter { $0 > 0 }.count) of \(all.count) frame intervals")
        }
        if !probeWall.isEmpty {
            let probe = probeWall.sorted()
            let at = { (p: Double) in probe[min(probe.count - 1, Int(Double(probe.count) * p))] }
            print("probe: \(options.probe) µs of main-thread CPU per frame took, wall ms: p50 \(f(at(0.5))) p99 \(f(at(0.99))) longest \(f(probe.last ?? 0)); over 2 ms: \(probe.filter { $0 > 2 }.count)")
        }
        print(grid.statsText)
    }

    func screenshot() {
        guard let path = options.screenshot, let window else { return }
        guard let texture = aik_render_widget(window) else {
            // Not mapped or not drawn yet (a loaded machine): try again shortly.
            attempts += 1
            guard attempts < 50 else {
                FileHandle.standardError.write(Data("could not render the window (\(gtk_widget_get_width(window))x\(gtk_widget_get_height(window)), mapped \(gtk_widget_get_mapped(window)))\n".utf8))
                exit(1)
            }
            _ = g_timeout_add(100, { _ in
                App.shared?.screenshot()
                return gboolean(0)
            }, nil)
            return
        }
        let saved = gdk_texture_save_to_png(texture, path) != 0
        g_object_unref(UnsafeMutableRawPointer(texture))
        print(saved ? "wrote \(path)" : "could not write \(path)")
        print(grid?.statsText ?? "")
        exit(saved ? 0 : 1)
    }
}

let options = parse(CommandLine.arguments)
GLibMainQueue.attach()
do {
    App.shared = try App(options: options)
} catch {
    FileHandle.standardError.write(Data("could not start the origin: \(error)\n".utf8))
    exit(1)
}
let application = gtk_application_new("org.asyncimageview.Gallery", G_APPLICATION_NON_UNIQUE)!
_ = aik_connect_object(
    UnsafeMutableRawPointer(application), "activate",
    { object, _ in App.shared?.activate(aik_gtk_application(UnsafeMutableRawPointer(object))) }, nil)
// argv is ours (parsed above), not GTK's.
let status = g_application_run(aik_application(UnsafeMutableRawPointer(application)), 0, nil)
exit(status)
#else
print("asyncimage-gallery needs the trait GTKSupport: swift run --traits GTKSupport asyncimage-gallery")
#endif
