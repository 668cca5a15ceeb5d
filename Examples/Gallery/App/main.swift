// asyncimage-gallery: a recycling GtkGridView over thousands of pictures
// from a local origin (GalleryKit), each cell an AsyncImagePicture.
//
//   swift run --traits GTKSupport asyncimage-gallery [--count N] [--latency MS] [--cell PT]
//       [--screenshot FILE.png --after SECONDS]
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
        case "-h", "--help":
            print("usage: asyncimage-gallery [--count N] [--latency MS] [--cell PT] [--size WxH] [--screenshot FILE.png --after SECONDS]")
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
        var configuration = AsyncImageLoader.Configuration(cache: ImageCache(), notificationCenter: NotificationCenter())
        configuration.concurrentLoads = 16
        // The loader decodes on one thread per core (DecodeScheduler); it has
        // no public setting for fewer, so "cores - 1" is not set here. The
        // main thread never decodes either way.
        loader = AsyncImageLoader(configuration: configuration)
    }

    func activate(_ application: UnsafeMutablePointer<GtkApplication>) {
        let window = gtk_application_window_new(application)!
        self.window = window
        gtk_window_set_title(aik_window(window), "AsyncImageView: \(options.count) pictures")
        gtk_window_set_default_size(aik_window(window), Int32(options.width), Int32(options.height))
        let grid = GalleryGrid(loader: loader, origin: origin, cellSide: options.cell)
        self.grid = grid
        gtk_window_set_child(aik_window(window), grid.widget)
        gtk_window_present(aik_window(window))
        if options.screenshot != nil {
            _ = g_timeout_add(UInt32(options.after * 1000), { _ in
                App.shared?.screenshot()
                return gboolean(0)
            }, nil)
        }
    }

    var attempts = 0

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
