import AsyncImageKit
import DemoSupport
import Foundation

/// One run of the demo: gallery, screen of cells, scroll, pictures, report.
struct DemoRun {
    let settings: DemoSettings
    let userSources: [String]

    static let cellSize = PixelSize(width: 160, height: 120)

    func run() throws {
        let start = ProcessInfo.processInfo.systemUptime
        let quiet = settings.json
        func say(_ text: String) { if !quiet { print(text) } }

        let gallery: Gallery?
        let items: [GalleryItem]
        if userSources.isEmpty {
            say("Generating a gallery of \(settings.images) pictures (seed \(settings.seed)) ...")
            let made = try Gallery(count: settings.images, seed: settings.seed, latency: settings.latency)
            gallery = made
            items = made.items
            say("Serving it on \(made.items.first.map { "\($0.full.scheme!)://\($0.full.host!):\($0.full.port!)" } ?? "127.0.0.1")")
        } else {
            gallery = nil
            items = Gallery.external(userSources)
            say("Loading \(items.count) image(s) you named.")
        }
        defer { gallery?.stop() }

        let center = NotificationCenter()
        let delivery = DispatchQueue(label: "demo delivery")
        let loader = AsyncImageLoader(
            cache: ImageCache(), concurrentLoads: settings.concurrentLoads, loadingTimeout: settings.timeout,
            deliveryQueue: delivery, notificationCenter: center)
        let runStart = ProcessInfo.processInfo.systemUptime
        let recorder = Recorder(start: runStart)
        recorder.register(items)
        recorder.attach(to: loader)

        let screen = Screen(cells: settings.cells, loader: loader, recorder: recorder)
        let progress = ProgressPrinter(
            recorder: recorder,
            expected: {
                let a = loader.activity
                return (a.delivered + a.cancelled, a.delivered + a.cancelled + a.pendingRequests)
            }, quiet: quiet)

        // Scroll from the top to the bottom at the chosen speed, then stop.
        let lastRow = max(0, (items.count + screen.columns - 1) / screen.columns - screen.rows)
        let scrollStart = ProcessInfo.processInfo.systemUptime
        var row = -1
        while row < lastRow {
            let elapsed = ProcessInfo.processInfo.systemUptime - scrollStart
            let next = min(lastRow, Int(elapsed * settings.scrollSpeed))
            if next != row {
                row = next
                screen.show(firstRow: row, items: items)
            }
            if row < lastRow { Thread.sleep(forTimeInterval: 0.02) }
        }
        if row < 0 { screen.show(firstRow: 0, items: items) }
        // Then back up by one screen, as a user does: those pictures come from the cache.
        let backTo = max(0, lastRow - screen.rows)
        while row > backTo {
            Thread.sleep(forTimeInterval: 1 / settings.scrollSpeed)
            row -= 1
            screen.show(firstRow: row, items: items)
        }
        let scrollStopped = ProcessInfo.processInfo.systemUptime - runStart

        // Let the visible cells finish.
        let deadline = ProcessInfo.processInfo.systemUptime + settings.timeout * 3 + 30
        while ProcessInfo.processInfo.systemUptime < deadline {
            let a = loader.activity
            if a.pendingRequests == 0 && a.inFlight == 0 && a.decoding == 0 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        delivery.sync {}
        let finished = ProcessInfo.processInfo.systemUptime - runStart
        let activity = loader.activity
        progress.stop(recorder: recorder, expected: (activity.delivered + activity.cancelled, activity.delivered + activity.cancelled + activity.pendingRequests), quiet: quiet)

        // Pictures and report.
        let folder = URL(fileURLWithPath: settings.output)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let requests = recorder.all
        let sheet = folder.appendingPathComponent("contact-sheet.png")
        let timeline = folder.appendingPathComponent("timeline.png")
        let crossfade = folder.appendingPathComponent("crossfade.png")
        let scaling = folder.appendingPathComponent("scaling.png")
        let reportFile = folder.appendingPathComponent("report.json")
        try Pictures.contactSheet(screen).writePNG(to: sheet)
        try Pictures.timeline(requests, cap: settings.concurrentLoads, scrollStopped: scrollStopped).writePNG(to: timeline)
        try Pictures.crossfade(screen).writePNG(to: crossfade)
        try ScalingPicture.make().writePNG(to: scaling)

        let report = Report.make(
            settings: settings, items: items, requests: requests, recorder: recorder, activity: activity,
            screen: screen, scrollStopped: scrollStopped, finished: finished,
            files: [sheet, timeline, crossfade, scaling, reportFile].map(\.path))
        let json = try Report.encode(report)
        try json.write(to: reportFile)
        if quiet {
            FileHandle.standardOutput.write(json)
            print()
        } else {
            Report.printSummary(report)
        }
        _ = start
    }
}

/// The cells on screen: a grid of reusable `AsyncImageView`s.
final class Screen {
    let columns: Int
    let rows: Int
    let cells: [AsyncImageView]
    private(set) var assigned: [Int?]
    private(set) var items: [Int: GalleryItem] = [:]

    init(cells count: Int, loader: AsyncImageLoader, recorder: Recorder) {
        columns = min(4, count)
        rows = (count + columns - 1) / columns
        let placeholder = Pictures.placeholder(DemoRun.cellSize)
        let failure = Pictures.failureImage(DemoRun.cellSize)
        cells = (0..<count).map { index in
            let view = AsyncImageView(loader: loader, displaySize: DemoRun.cellSize)
            view.placeholderImage = placeholder
            view.failureImage = failure
            recorder.register(cell: view, index: index)
            return view
        }
        assigned = Array(repeating: nil, count: count)
    }

    /// Shows the rows from `firstRow`: a cell that scrolled off is reused for
    /// an item coming on, which cancels its loads; it then asks for the
    /// thumbnail and the full picture.
    func show(firstRow: Int, items all: [GalleryItem]) {
        for slot in 0..<cells.count {
            let index = firstRow * columns + slot
            guard index < all.count else { continue }
            let cellIndex = index % cells.count
            guard assigned[cellIndex] != index else { continue }
            assigned[cellIndex] = index
            let item = all[index]
            items[cellIndex] = item
            let cell = cells[cellIndex]
            cell.imageURL = nil
            if let thumbnail = item.thumbnail { cell.imageURL = thumbnail }
            cell.imageURL = item.full
        }
    }

    /// The cells in screen order (top-left first) with their items.
    var ordered: [(cell: AsyncImageView, item: GalleryItem?)] {
        let indices = assigned.enumerated().sorted { ($0.element ?? Int.max) < ($1.element ?? Int.max) }.map(\.offset)
        return indices.map { (cells[$0], items[$0]) }
    }
}
