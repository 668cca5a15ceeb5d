#if GTKSupport
import AsyncImageGTK
import AsyncImageKit
import Foundation
import XCTest

/// GTK for the tests: initialised once (on a display: `.ci/gtk` runs the
/// tests under `xvfb-run -a`), the main queue attached to GLib, and GLib's
/// default context iterated on the main thread (XCTest's) until a condition holds.
enum GTKHarness {
    nonisolated(unsafe) private static var started: Bool?

    /// Starts GTK, or skips the test without a display (fails under CI=true).
    static func start() throws {
        XCTAssertTrue(Thread.isMainThread, "GTK tests run on the main thread")
        if started == nil {
            started = gtk_init_check() != 0
            if started == true { GLibMainQueue.attach() }
        }
        guard started == true else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                XCTFail("no display for GTK: run under xvfb-run -a (.ci/gtk does)")
            }
            throw XCTSkip("no display for GTK (run under xvfb-run -a, as .ci/gtk does)")
        }
    }

    /// Iterates the default main context until `condition` holds (true) or `timeout` passes (false).
    @discardableResult
    static func pump(timeout: Double = 20, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline { return false }
            if g_main_context_iteration(nil, 0) == 0 { usleep(500) }
        }
        return true
    }

    /// Iterates the default main context for `seconds`.
    static func pump(seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        pump(timeout: seconds + 1) { Date() > deadline }
    }

    /// An undecorated window of `width` x `height` around `child`, shown.
    static func window(_ child: UnsafeMutablePointer<GtkWidget>, width: Int, height: Int) -> UnsafeMutablePointer<GtkWidget> {
        let window = gtk_window_new()!
        gtk_window_set_decorated(aik_window(window), 0)
        gtk_window_set_default_size(aik_window(window), Int32(width), Int32(height))
        gtk_window_set_resizable(aik_window(window), 0)
        gtk_window_set_child(aik_window(window), child)
        gtk_window_present(aik_window(window))
        pump(timeout: 10) { gtk_widget_get_mapped(child) != 0 && gtk_widget_get_width(child) > 0 }
        return window
    }

    static func close(_ window: UnsafeMutablePointer<GtkWidget>) {
        gtk_window_destroy(aik_window(window))
        pump(seconds: 0.05)
    }
}

/// A widget rendered by GTK itself (the window's renderer), as straight RGBA.
struct Rendering {
    let width: Int
    let height: Int
    /// B, G, R, A premultiplied, as gdk_texture_download gives them on little-endian.
    let bytes: [UInt8]

    init?(_ widget: UnsafeMutablePointer<GtkWidget>) {
        guard let texture = aik_render_widget(widget) else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
        width = Int(gdk_texture_get_width(texture))
        height = Int(gdk_texture_get_height(texture))
        var bytes = [UInt8](repeating: 0, count: width * height * 4)
        let stride = width * 4
        bytes.withUnsafeMutableBufferPointer { aik_texture_download(texture, $0.baseAddress, stride) }
        self.bytes = bytes
    }

    /// The pixel at (x, y), un-premultiplied.
    func pixel(_ x: Int, _ y: Int) -> RGBA {
        let o = (y * width + x) * 4
        let a = bytes[o + 3]
        func straight(_ v: UInt8) -> UInt8 { a == 0 ? 0 : UInt8(min(255, (Int(v) * 255 + Int(a) / 2) / Int(a))) }
        return RGBA(r: straight(bytes[o + 2]), g: straight(bytes[o + 1]), b: straight(bytes[o]), a: a)
    }

    /// Writes it as a PNG (for a failing test's artefacts).
    func save(_ path: String) {
        var rgba = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let p = pixel(x, y), o = (y * width + x) * 4
                (rgba[o], rgba[o + 1], rgba[o + 2], rgba[o + 3]) = (p.r, p.g, p.b, p.a)
            }
        }
        if let data = try? PNGEncoder().encode(Image(width: width, height: height, rgba: Data(rgba))) {
            try? data.write(to: URL(fileURLWithPath: path))
        }
    }
}

/// Whether two colours are within `tolerance` on every channel.
func close(_ a: RGBA, _ b: RGBA, tolerance: Int) -> Bool {
    abs(Int(a.r) - Int(b.r)) <= tolerance && abs(Int(a.g) - Int(b.g)) <= tolerance && abs(Int(a.b) - Int(b.b)) <= tolerance
}

/// A solid image.
func solid(_ colour: RGBA, width: Int, height: Int) -> Image {
    var pixels = Data(count: width * height * 4)
    for i in 0..<(width * height) {
        pixels[i * 4] = colour.r
        pixels[i * 4 + 1] = colour.g
        pixels[i * 4 + 2] = colour.b
        pixels[i * 4 + 3] = colour.a
    }
    return Image(width: width, height: height, rgba: pixels)
}

/// Every loader event, with whether it came on the main thread.
final class EventLog: @unchecked Sendable {
    struct Entry {
        let event: LoaderEvent
        let onMain: Bool
    }

    private let lock = NSLock()
    private var entries: [Entry] = []

    func attach(to loader: AsyncImageLoader) {
        loader.eventMonitor = { [self] event in
            let onMain = Thread.isMainThread
            lock.withLock { entries.append(Entry(event: event, onMain: onMain)) }
        }
    }

    var all: [Entry] { lock.withLock { entries } }

    /// Kinds that must never happen on the main loop: decodes, disk reads, transfers' ends.
    var offMainViolations: [Entry] {
        all.filter { entry in
            guard entry.onMain else { return false }
            switch entry.event.kind {
            case .decoding, .diskRead, .transferred, .transferFailed, .retrying: return true
            default: return false
            }
        }
    }

    /// Requests whose terminal events (delivered or cancelled) are not exactly one.
    var requestsWithoutOneOutcome: [UInt64: Int] {
        var made: Set<UInt64> = []
        var ends: [UInt64: Int] = [:]
        for entry in all {
            made.insert(entry.event.requestID)
            switch entry.event.kind {
            case .delivered, .cancelled: ends[entry.event.requestID, default: 0] += 1
            default: break
            }
        }
        return made.reduce(into: [:]) { result, id in
            if ends[id, default: 0] != 1 { result[id] = ends[id, default: 0] }
        }
    }

    /// Deliveries made off the main thread (must be none: the delivery queue is the main queue).
    var deliveriesOffMain: Int {
        all.filter { if case .delivered = $0.event.kind { return !$0.onMain } else { return false } }.count
    }
}
#endif
