#if GTKSupport
import AsyncImageGTK
import AsyncImageGalleryKit
import AsyncImageKit
import Foundation
import XCTest

/// The recycling grid under Xvfb: scrolled fast by a script (down, then
/// back up), then stopped;
/// every cell on screen shows its own picture (as GTK renders the window,
/// its centre within 3 levels of the picture's colour), no delivery reaches
/// a recycled cell for its old URL, every request ends exactly once, and no
/// decode, disk read or transfer ends on the main loop.
final class GalleryGridTests: XCTestCase {
    func testFastScrollThenStopShowsEveryVisibleCellsPicture() throws {
        try GTKHarness.start()
        let origin = try GalleryOrigin(count: 3_000, side: 64, latency: 8)
        defer { origin.stop() }
        let loader = AsyncImageLoader(configuration: .init(cache: ImageCache(), notificationCenter: NotificationCenter()))
        let events = EventLog()
        events.attach(to: loader)
        let grid = GalleryGrid(loader: loader, origin: origin, cellSide: 48)
        gtk_widget_set_visible(grid.label, 0)
        let window = GTKHarness.window(grid.widget, width: 420, height: 360)
        defer { GTKHarness.close(window) }

        // The script: 160 steps of 45 px down, one every 8 ms of main-loop
        // time (far faster than the pictures arrive), then 20 back up, then
        // a stop. (Jumps of thousands of rows at once trip GTK 4.8's grid:
        // "ran out of items", an empty view until the next scroll.)
        let adjustment = grid.verticalAdjustment
        func scroll(to value: Double) {
            let top = gtk_adjustment_get_upper(adjustment) - gtk_adjustment_get_page_size(adjustment)
            gtk_adjustment_set_value(adjustment, min(max(0, value), top))
            GTKHarness.pump(seconds: 0.008)
        }
        for step in 0..<160 { scroll(to: Double(step * 45)) }
        for step in 0..<20 { scroll(to: Double((160 - step) * 45)) }

        func visible() -> [(picture: AsyncImagePicture, index: Int, bounds: graphene_rect_t)] {
            let width = Float(gtk_widget_get_width(window)), height = Float(gtk_widget_get_height(window))
            return grid.bound.values.compactMap { cell in
                var bounds = graphene_rect_t()
                guard gtk_widget_get_mapped(cell.picture.widget) != 0,
                    gtk_widget_compute_bounds(cell.picture.widget, window, &bounds) != 0,
                    bounds.origin.y >= 0, bounds.origin.y + bounds.size.height <= height,
                    bounds.origin.x >= 0, bounds.origin.x + bounds.size.width <= width
                else { return nil }
                return (cell.picture, cell.index, bounds)
            }
        }
        let settled = GTKHarness.pump(timeout: 30) {
            let cells = visible()
            return !cells.isEmpty
                && cells.allSatisfy { $0.picture.view.state == .loaded(origin.url(of: $0.index)) && !$0.picture.isTicking }
                && loader.activity.pendingRequests == 0
        }
        XCTAssertTrue(settled, "the visible cells did not all load: \(grid.statsText)")
        GTKHarness.pump(seconds: 0.1)

        let cells = visible()
        XCTAssertGreaterThanOrEqual(cells.count, 30, "a 420x360 window shows at least 6 rows of 5 cells")
        let frame = try XCTUnwrap(Rendering(window))
        var wrong: [String] = []
        for cell in cells {
            let x = Int(cell.bounds.origin.x + cell.bounds.size.width / 2)
            let y = Int(cell.bounds.origin.y + cell.bounds.size.height / 2)
            let seen = frame.pixel(x, y), expected = GalleryOrigin.colour(of: cell.index)
            if !close(seen, expected, tolerance: 3) { wrong.append("cell \(cell.index) at (\(x),\(y)): \(seen) vs \(expected)") }
        }
        if !wrong.isEmpty { frame.save("/tmp/asyncimage-gtk-grid.png") }
        XCTAssertEqual(wrong, [], "cells showing another picture")

        XCTAssertFalse(grid.isPlacingCells, "no tick callback left running once the grid is still")
        XCTAssertGreaterThan(grid.unbinds, 0, "the scroll recycled cells")
        XCTAssertEqual(grid.staleDeliveries, 0, "a delivery reached a recycled cell for its old URL")
        XCTAssertEqual(events.requestsWithoutOneOutcome, [:], "every request ends exactly once")
        XCTAssertEqual(events.deliveriesOffMain, 0)
        XCTAssertTrue(events.offMainViolations.isEmpty, "\(events.offMainViolations.map(\.event.kind))")
        // Each URL a cell was unbound from: its requests for that cell ended
        // cancelled, or were delivered before the unbind (never after: above).
        let unbound = Set(grid.unboundURLs.map { "\($0.target.hashValue) \($0.url)" })
        var cancelledForUnbound = 0
        for entry in events.all where entry.event.kind == .cancelled {
            if let target = entry.event.target, unbound.contains("\(target.hashValue) \(entry.event.url)") { cancelledForUnbound += 1 }
        }
        let activity = loader.activity
        print("grid: \(grid.binds) binds, \(grid.unbinds) unbinds, \(grid.deliveries) deliveries to cells, \(activity.cancelled) cancelled (\(cancelledForUnbound) for unbound cells), \(activity.delivered) delivered, \(origin.requestCount) requests at the origin")
    }
}
#endif
