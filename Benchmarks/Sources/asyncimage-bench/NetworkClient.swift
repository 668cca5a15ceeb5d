import AsyncImageKit
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The client side of the network benchmark (`net-one`, a child process of
// `net`, so that every run starts cold: no connection, no TLS session, no
// DNS entry, no cached image). Two workloads over the emulated link:
//   - cold: a screen of 16 cells, each given its thumbnail and then its
//     full image (as the demo's cells are), all at once; done when every
//     cell shows its full image.
//   - scroll: the demo's scroll: 16 cells (4 x 4) over the gallery, rows
//     passing at a set speed from the top to the bottom, then back up one
//     screen; done when the final screen shows every full image.
// Two clients: AsyncImageKit (AsyncImageView cells, the loader at its
// defaults but for the test CA), and the peer: URLSession at its defaults,
// the code a user writes without this library (a data task per image, the
// cell's tasks cancelled when it is reused, a decode on a global queue at
// display size, an NSCache of decoded images).

/// What the harness asks of one run.
struct NetRunSpec: Codable {
    var client: String  // "ours" or "peer"
    var workload: String  // "cold" or "scroll"
    var base: String  // https://127.0.0.1:PORT
    var authority: String  // the CA's PEM file
    var items: Int
    var cells: Int = 16
    var rowsPerSecond: Double = 25
    /// ours: the loader's concurrentLoads (nil: its default).
    var loads: Int?
    /// ours: the transport's maxConnectionsPerHost (nil: its default).
    var perHost: Int?
}

/// What one run measured (seconds from the run's start, or from a cell's appearance).
struct NetRunResult: Codable {
    /// cold: the last full image shown; scroll: from the scroll's stop to the final screen complete.
    var complete: Double
    /// cold: every cell showing something (thumbnail or full).
    var firstPaint: Double
    /// Per cell appearance: seconds to its first image, and to its full image (shown ones only).
    var toThumbnail: [Double]
    var toFull: [Double]
    /// Cell appearances, and how many got their first and their full image while on screen.
    var appearances: Int
    var failures: Int
    /// Transfers started for an item that was not on screen then while one that was waited (ours only).
    var offscreenStarts: Int
    /// URLs whose image arrived whole over the network (for the bytes that were not wasted).
    var completedURLs: [String]
    var peakRSS: Double
    /// The items of the final screen (cold: the first screen).
    var finalItems: [Int] = []
}

/// Child process: one run of `spec` (`net-one JSON`); reports `RESULT` and the result as JSON.
func netRunChild(_ spec: NetRunSpec) throws {
    let result = try NetClientRun(spec: spec).run()
    let data = try JSONEncoder().encode(result)
    BenchChild.report("RESULT", String(decoding: data, as: UTF8.self))
}

/// The gallery's URLs: item i has /thumb/i.jpg and /full/i.jpg.
struct NetGalleryURLs {
    let base: String
    func thumbnail(_ item: Int) -> URL { URL(string: "\(base)/thumb/\(item).jpg")! }
    func full(_ item: Int) -> URL { URL(string: "\(base)/full/\(item).jpg")! }
    /// The item and whether it is the full image, from a URL of the gallery.
    static func parse(_ url: URL) -> (item: Int, full: Bool)? {
        let parts = url.path.split(separator: "/")
        guard parts.count == 2, let item = Int(parts[1].dropLast(4)) else { return nil }
        return (item, parts[0] == "full")
    }
}

/// A screen of cells, whatever draws them.
protocol NetScreen: AnyObject {
    /// Gives cell `cell` the item's thumbnail and then its full image (cancelling what it had).
    func assign(cell: Int, item: Int)
}

/// The clock and the ledger: when each item appeared, and was first shown, and shown full.
final class NetLedger: @unchecked Sendable {
    struct Appearance {
        var item: Int
        var at: Double
        var thumbnail: Double?
        var full: Double?
    }

    private let lock = NSLock()
    private let start: Double
    private var appearances: [Appearance] = []
    /// The item's current appearance, while it is on screen.
    private var current: [Int: Int] = [:]
    private var completed = Set<String>()
    private(set) var failures = 0
    private var offscreen = 0
    private var waiting: (items: Set<Int>, done: DispatchSemaphore)?

    init(start: Double) { self.start = start }

    func now() -> Double { ProcessInfo.processInfo.systemUptime - start }

    func appeared(_ item: Int) {
        lock.withLock {
            current[item] = appearances.count
            appearances.append(Appearance(item: item, at: now()))
        }
    }

    func disappeared(_ item: Int) { lock.withLock { _ = current.removeValue(forKey: item) } }

    /// An image of `item` is shown (full or not).
    func shown(_ item: Int, full: Bool) {
        lock.withLock {
            guard let index = current[item] else { return }
            let time = now()
            if appearances[index].thumbnail == nil { appearances[index].thumbnail = time }
            if full, appearances[index].full == nil {
                appearances[index].full = time
                if var wait = waiting, wait.items.remove(item) != nil {
                    waiting = wait
                    if wait.items.isEmpty { wait.done.signal() }
                }
            }
        }
    }

    func failed() { lock.withLock { failures += 1 } }
    func completed(_ url: URL) { lock.withLock { _ = completed.insert(url.absoluteString) } }

    /// A transfer started for `item`: counted if the item is off screen while one on screen has no full image.
    func transferStarted(_ item: Int) {
        lock.withLock {
            guard current[item] == nil else { return }
            if current.values.contains(where: { appearances[$0].full == nil }) { offscreen += 1 }
        }
    }

    /// Waits until every item of `items` on screen is shown full (at most `timeout` s).
    func waitForFull(_ items: Set<Int>, timeout: Double) -> Bool {
        let done = DispatchSemaphore(value: 0)
        lock.withLock {
            let pending = items.filter { item in current[item].map { appearances[$0].full == nil } ?? true }
            waiting = pending.isEmpty ? nil : (Set(pending), done)
            if pending.isEmpty { done.signal() }
        }
        return done.wait(timeout: .now() + timeout) == .success
    }

    func result(complete: Double, firstPaint: Double) -> NetRunResult {
        lock.withLock {
            NetRunResult(
                complete: complete, firstPaint: firstPaint,
                toThumbnail: appearances.compactMap { a in a.thumbnail.map { $0 - a.at } },
                toFull: appearances.compactMap { a in a.full.map { $0 - a.at } }, appearances: appearances.count,
                failures: failures, offscreenStarts: offscreen, completedURLs: completed.sorted(), peakRSS: peakRSSMegabytes())
        }
    }

    /// When the last of `items`' current appearances was first shown.
    func firstPaint(of items: [Int]) -> Double {
        lock.withLock { items.compactMap { current[$0].flatMap { appearances[$0].thumbnail } }.max() ?? .nan }
    }
}

/// One run of one workload with one client.
struct NetClientRun {
    let spec: NetRunSpec
    static let cellSize = PixelSize(width: 160, height: 120)

    func run() throws -> NetRunResult {
        let urls = NetGalleryURLs(base: spec.base)
        let ledger = NetLedger(start: ProcessInfo.processInfo.systemUptime)
        let screen: NetScreen = spec.client == "peer" ? PeerScreen(spec: spec, urls: urls, ledger: ledger) : OursScreen(spec: spec, urls: urls, ledger: ledger)
        let columns = 4
        let rows = spec.cells / columns
        var shownItems = [Int?](repeating: nil, count: spec.cells)
        // Shows rows from `first`: a cell whose item scrolled off takes the one coming on.
        func show(firstRow first: Int) {
            for slot in 0..<spec.cells {
                let item = first * columns + slot
                guard item < spec.items else { continue }
                let cell = item % spec.cells
                guard shownItems[cell] != item else { continue }
                if let old = shownItems[cell] { ledger.disappeared(old) }
                shownItems[cell] = item
                ledger.appeared(item)
                screen.assign(cell: cell, item: item)
            }
        }
        if spec.workload == "cold" {
            show(firstRow: 0)
            let items = Set(0..<min(spec.cells, spec.items))
            let ok = ledger.waitForFull(items, timeout: 300)
            let complete = ok ? ledger.now() : .nan
            var result = ledger.result(complete: complete, firstPaint: ledger.firstPaint(of: Array(items)))
            result.finalItems = items.sorted()
            return result
        }
        // Scroll: top to bottom, then back up one screen, as the demo does.
        let lastRow = max(0, (spec.items + columns - 1) / columns - rows)
        let scrollStart = ledger.now()
        var row = -1
        while row < lastRow {
            let next = min(lastRow, Int((ledger.now() - scrollStart) * spec.rowsPerSecond))
            if next != row {
                row = next
                show(firstRow: row)
            }
            if row < lastRow { Thread.sleep(forTimeInterval: 0.005) }
        }
        let backTo = max(0, lastRow - rows)
        while row > backTo {
            Thread.sleep(forTimeInterval: 1 / spec.rowsPerSecond)
            row -= 1
            show(firstRow: row)
        }
        let stopped = ledger.now()
        let final = Set(shownItems.compactMap { $0 })
        let ok = ledger.waitForFull(final, timeout: 300)
        let complete = ok ? ledger.now() - stopped : .nan
        var result = ledger.result(complete: complete, firstPaint: ledger.firstPaint(of: Array(final)) - stopped)
        result.finalItems = final.sorted()
        return result
    }
}

/// AsyncImageKit: `AsyncImageView` cells on a loader at its defaults (but the test CA).
final class OursScreen: NetScreen {
    let cells: [AsyncImageView]
    let urls: NetGalleryURLs
    let loader: AsyncImageLoader

    init(spec: NetRunSpec, urls: NetGalleryURLs, ledger: NetLedger) {
        self.urls = urls
        var transport = TransportConfiguration()
        transport.certificateAuthorities = URL(fileURLWithPath: spec.authority)
        if let perHost = spec.perHost { transport.maxConnectionsPerHost = perHost }
        var configuration = AsyncImageLoader.Configuration(
            cache: ImageCache(), deliveryQueue: DispatchQueue(label: "net delivery"), notificationCenter: nil,
            dataLoader: DataLoader(configuration: transport))
        if let loads = spec.loads { configuration.concurrentLoads = loads }
        loader = AsyncImageLoader(configuration: configuration)
        loader.eventMonitor = { event in
            guard let (item, full) = NetGalleryURLs.parse(event.url) else { return }
            switch event.kind {
            case .delivered(let success):
                if success {
                    // Counted before it is shown: the run may end at that.
                    if event.source == .network { ledger.completed(event.url) }
                    ledger.shown(item, full: full)
                } else {
                    ledger.failed()
                }
            case .loading: ledger.transferStarted(item)
            default: break
            }
        }
        let loader = self.loader
        cells = (0..<spec.cells).map { _ in AsyncImageView(loader: loader, displaySize: NetClientRun.cellSize) }
    }

    func assign(cell: Int, item: Int) {
        let view = cells[cell]
        view.imageURL = nil
        view.imageURL = urls.thumbnail(item)
        view.imageURL = urls.full(item)
    }
}

/// The peer: URLSession at its defaults, as a user writes it without this library.
final class PeerScreen: NetScreen, @unchecked Sendable {
    let urls: NetGalleryURLs
    let ledger: NetLedger
    let session = URLSession(configuration: .default)
    /// Decoded full images by URL (at most 100, as an NSCache with a count limit).
    private var cache: [URL: Image] = [:]
    private let lock = NSLock()
    private var tasks: [Int: [URLSessionDataTask]] = [:]
    private var items: [Int: Int] = [:]

    init(spec: NetRunSpec, urls: NetGalleryURLs, ledger: NetLedger) {
        self.urls = urls
        self.ledger = ledger
    }

    func assign(cell: Int, item: Int) {
        let old = lock.withLock { () -> [URLSessionDataTask] in
            items[cell] = item
            return tasks.removeValue(forKey: cell) ?? []
        }
        for task in old { task.cancel() }
        if lock.withLock({ cache[urls.full(item)] != nil }) {
            ledger.shown(item, full: true)
            return
        }
        var started: [URLSessionDataTask] = []
        for (url, isFull) in [(urls.thumbnail(item), false), (urls.full(item), true)] {
            let task = session.dataTask(with: url) { [self] data, response, error in
                guard let data, error == nil, (response as? HTTPURLResponse)?.statusCode == 200 else {
                    if (error as? URLError)?.code != .cancelled { ledger.failed() }
                    return
                }
                ledger.completed(url)
                DispatchQueue.global().async { [self] in
                    let options = DecodingOptions(targetSize: NetClientRun.cellSize, contentMode: .aspectFill)
                    guard let image = try? ImageDecoder().decode(data, options: options) else { return ledger.failed() }
                    if isFull {
                        lock.withLock {
                            if cache.count >= 100, let any = cache.keys.first { cache.removeValue(forKey: any) }
                            cache[url] = image
                        }
                    }
                    if lock.withLock({ items[cell] == item }) { ledger.shown(item, full: isFull) }
                }
            }
            started.append(task)
        }
        lock.withLock { tasks[cell] = started }
        for task in started { task.resume() }
    }
}
