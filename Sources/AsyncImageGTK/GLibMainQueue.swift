#if GTKSupport
@_exported import CAsyncImageGTK
import Foundation

/// Runs `DispatchQueue.main` from GLib's main loop, so a GTK program gets
/// the loader's deliveries (actions, notifications), `DispatchQueue.main`
/// blocks and `@MainActor` code on GTK's own thread, in order.
///
/// A GTK program runs GLib's main loop on the main thread
/// (`gtk_application_run`, or `g_main_context_iteration`), and nothing
/// there runs Dispatch's main queue, where the loader delivers by default
/// (``AsyncImageKit/AsyncImageLoader/Configuration/deliveryQueue``). Call
/// ``attach()`` once on the main thread before the loop starts:
///
/// ```swift
/// GLibMainQueue.attach()
/// let app = gtk_application_new("org.example.Photos", G_APPLICATION_DEFAULT_FLAGS)
/// ```
///
/// It adds a GLib source (at `G_PRIORITY_DEFAULT`) on the default main
/// context that watches the descriptor libdispatch signals when the main
/// queue has work (what CoreFoundation's run loop watches) and drains the
/// queue there. The queue stays serial, so the loader's per-target order
/// and its one outcome per request hold exactly as on any delivery queue;
/// a cache hit asked for on the main thread is still delivered inline.
///
/// Why the main queue rather than a queue of its own that hands each block
/// to `g_main_context_invoke`: the delivery queue is a `DispatchQueue`, and
/// a queue's block can only reach another thread by waiting for it (a
/// thread parked per delivery, and a deadlock if the main thread ever waits
/// for that queue); draining the main queue from GLib needs no thread and
/// no waiting, and makes the main actor work too.
public enum GLibMainQueue {
    /// Attaches the main queue to GLib's default main context, once per
    /// process (later calls do nothing). Call it on the main thread, the one
    /// that runs GLib's main loop. Returns false when libdispatch gave no
    /// descriptor (the main queue is then not drained by GLib).
    @discardableResult
    public static func attach() -> Bool {
        precondition(Thread.isMainThread, "GLibMainQueue.attach() must be called on the main thread")
        return aik_main_queue_attach() != 0
    }

    /// How many times the GLib source has drained the main queue (about
    /// once per burst of work; it never spins).
    public static var drainCount: UInt64 { UInt64(aik_main_queue_dispatch_count()) }

    /// Microseconds the main loop has spent draining the main queue so far
    /// (the loader's deliveries: notifications, actions, the pictures'
    /// updates they cause; and whatever else the program put on the main
    /// queue). For frame-time budgets.
    public static var busyMicroseconds: UInt64 { UInt64(aik_main_queue_busy_microseconds()) }

    /// ``busyMicroseconds`` in the main thread's CPU time: without the time
    /// the thread was ready to run while other threads had the cores (a
    /// software renderer's, the decoders'), which the wall clock counts.
    /// What the work itself costs the main loop.
    public static var busyCPUMicroseconds: UInt64 { UInt64(aik_main_queue_busy_cpu_microseconds()) }

    /// The calling thread's CPU time so far, in microseconds.
    public static var threadCPUMicroseconds: UInt64 { UInt64(aik_thread_cpu_microseconds()) }
}
#endif
