import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// The scale benchmark (issue: "no call may scan every pending request"): the
// loader's cost per operation against the number of pending requests.
//
// The loader gets `concurrentLoads: 1`, and its first request goes to a path
// the loopback server answers only at the end of the run, so that request
// keeps the only transfer slot and every measured request stays queued:
// nothing is transferred, decoded or delivered, and each figure is the
// loader's bookkeeping alone. For each size N and target shape:
//
// 1. enqueue N requests for distinct URLs (`/img/<i>.png`): `loadImage`;
// 2. look up the most recent URL of a target, a few thousand times:
//    `url(for:)`, `url(for:action:)`;
// 3. cancel the requests, in a fixed shuffled order, in slices:
//    N/2 by URL and target, N/8 by URL, N/8 through the handle, the last N/4 by target (shape
//    `many`: half of those by target and action, half by target; shape
//    `one`: one `cancelLoadingImages(target:)` call, reported per request
//    it cancelled).
//
// Shape `many` gives every request a target of its own rather than sharing
// N/10 targets: each by-target call then cancels exactly one request (a
// figure per call, like the others), and the per-target bookkeeping holds
// N entries, its largest.
//
// Memory per pending request is the allocator's in-use bytes (and RSS)
// after the enqueue minus before it, divided by N. A size runs again (up to
// `scaleMaxRuns` times) while its runs take under `scaleRunSeconds`, and
// each figure is the median of its runs: the smallest N's figures, which
// every ratio divides by, take milliseconds and would be noisy alone.
//
// A phase that runs longer than `--max-seconds` is stopped and reported
// "over time"; it is then not run at the larger sizes of that shape (nor is
// anything at a size whose enqueue was stopped: its N requests never all
// were pending).

/// How the measured requests are spread over targets.
enum ScaleShape: String, CaseIterable {
    /// All N requests on one target object, with one action.
    case one
    /// Each request on a target object of its own (N targets, one action).
    case many

    var summary: String {
        switch self {
        case .one: return "all N requests on one target object, one action"
        case .many: return "each request on a target object of its own (N targets), one action"
        }
    }
}

struct ScaleOptions {
    var sizes = [1_000, 10_000, 100_000, 1_000_000]
    var shapes = ScaleShape.allCases
    var maxSeconds = 60.0
    var output: String?
}

/// A target object, as a cell or view would be.
final class ScaleTarget {}

/// A request and its handle in the re-rank yardstick.
final class ScaleFloorRecord {
    var priority = 2
}

final class ScaleFloorHandle {
    let record: ScaleFloorRecord
    init(_ record: ScaleFloorRecord) { self.record = record }
}

/// A target's entry in the lookup yardstick: what `url(for:)` must read.
final class ScaleFloorEntry {
    weak var target: ScaleTarget?
    let url: URL

    init(_ target: ScaleTarget, _ url: URL) {
        self.target = target
        self.url = url
    }
}

/// One measured phase: `calls` calls of `operation`, the k-th with argument k.
struct ScalePhase {
    let name: String
    let calls: Int
    /// A single call that cancels many requests: its figure is per request cancelled.
    var bulk = false
    let operation: (Int) -> Void
}

/// One cell of the table.
enum ScaleFigure {
    /// Nanoseconds per operation (or bytes per request).
    case value(Double)
    /// Stopped at the time limit after `done` of `total` calls, taking `seconds`.
    case overTime(done: Int, total: Int, seconds: Double)
}

/// What one size and shape measured: figures by row name, in order, and notes.
struct ScaleCaseResult {
    var rows: [(name: String, figure: ScaleFigure)] = []
    var notes: [String] = []

    subscript(name: String) -> ScaleFigure? { rows.first { $0.name == name }?.figure }

    var isOverTime: Bool {
        rows.contains { if case .overTime = $0.figure { return true } else { return false } }
    }

    /// Several runs of one size as one: each row's median, or the first run's
    /// "over time" if any run was; the notes of every run.
    init(merging runs: [ScaleCaseResult]) {
        for run in runs {
            for (name, _) in run.rows where self[name] == nil {
                let figures = runs.compactMap { $0[name] }
                var values: [Double] = []
                var overTime: ScaleFigure?
                for figure in figures {
                    switch figure {
                    case .value(let value): values.append(value)
                    case .overTime: overTime = overTime ?? figure
                    }
                }
                rows.append((name, overTime ?? .value(values.sorted()[values.count / 2])))
            }
            for note in run.notes where !notes.contains(note) { notes.append(note) }
        }
    }

    init() {}
}

let scaleEnqueueRow = "loadImage (enqueue)"
let scaleMallocRow = "malloc in use, bytes per request"
let scaleRSSRow = "RSS, bytes per request"
let scaleRunsRow = "runs (figures are their medians)"
let scaleYardstickRow = "yardstick: Dictionary remove of N objects"
let scaleLookupFloorRow = "yardstick: url(for:)'s least work (lock, find, weak load, URL)"
let scaleRerankFloorRow = "yardstick: a re-rank's least work (lock, handle, request, write)"
/// How many `url(for:)` calls a lookup phase makes, whatever N.
let scaleLookups = 4_000
/// Each size runs again while its runs so far took under `scaleRunSeconds`, at most `scaleMaxRuns` times.
let scaleMaxRuns = 5
let scaleRunSeconds = 2.0

/// One size and shape: the loader (its only slot held), and what to measure with.
final class ScaleRun {
    let count: Int
    let shape: ScaleShape
    let loader: AsyncImageLoader
    let requests: [ImageRequest]
    /// One target (shape `one`) or one per request (shape `many`).
    let targets: [ScaleTarget]
    let action = ImageAction("scale") { _, _, _ in }
    /// A fixed shuffle of `0..<count`: the order lookups and cancels visit requests in,
    /// so that no phase walks the requests in the order they were enqueued.
    let order: [Int]
    /// The enqueue's handles, for the phases that use them (their ~50 bytes
    /// each are counted in the memory per pending request).
    var handles: [ImageTask] = []

    init(count: Int, shape: ScaleShape, loader: AsyncImageLoader, requests: [ImageRequest]) {
        self.count = count
        self.shape = shape
        self.loader = loader
        self.requests = requests
        targets = (0..<(shape == .one ? 1 : count)).map { _ in ScaleTarget() }
        var generator = SplitMix64(seed: 0x5CA1E)
        order = Array(0..<count).shuffled(using: &generator)
    }

    func target(_ index: Int) -> ScaleTarget { targets.count == 1 ? targets[0] : targets[index] }

    /// The most recent pending URL of request `index`'s target, right after the enqueue.
    func expectedURL(_ index: Int) -> URL { requests[shape == .one ? count - 1 : index].url }

    /// The phases after the enqueue, in the order they run (each adds a row to the table).
    func phases() -> [ScalePhase] {
        let loader = loader
        let requests = requests
        let action = action
        let order = order
        let lookups = (0..<scaleLookups).map { order[$0 % count] }
        // The cancels take consecutive slices of the shuffled order.
        var next = 0
        func take(_ share: Int) -> [Int] {
            defer { next += share }
            return Array(order[next..<next + share])
        }
        let byURLAndTarget = take(count / 2)
        let byURL = take(count / 8)
        let byHandle = take(count / 8)
        let rest = Array(order[next...])
        var phases = [
            ScalePhase(name: "url(for:)", calls: lookups.count) { _ = loader.url(for: self.target(lookups[$0])) },
            ScalePhase(name: "url(for:action:)", calls: lookups.count) {
                _ = loader.url(for: self.target(lookups[$0]), action: action)
            },
            ScalePhase(name: "ImageTask.priority (re-rank)", calls: lookups.count) {
                let task = self.handles[lookups[$0]]
                task.priority = task.priority == .high ? .low : .high
            },
            ScalePhase(name: "cancelLoading(url:target:)", calls: byURLAndTarget.count) {
                loader.cancelLoading(url: requests[byURLAndTarget[$0]].url, target: self.target(byURLAndTarget[$0]))
            },
            ScalePhase(name: "cancelLoading(url:)", calls: byURL.count) {
                loader.cancelLoading(url: requests[byURL[$0]].url)
            },
            ScalePhase(name: "ImageTask.cancel()", calls: byHandle.count) { self.handles[byHandle[$0]].cancel() },
        ]
        switch shape {
        case .one:
            phases.append(
                ScalePhase(name: "cancelLoadingImages(target:), 1 call, per request", calls: 1, bulk: true) { _ in
                    loader.cancelLoadingImages(target: self.targets[0])
                })
        case .many:
            let byTargetAndAction = Array(rest.prefix(rest.count / 2))
            let byTarget = Array(rest.dropFirst(rest.count / 2))
            phases.append(
                ScalePhase(name: "cancelLoadingImages(target:action:)", calls: byTargetAndAction.count) {
                    loader.cancelLoadingImages(
                        target: self.targets[byTargetAndAction[$0]], action: action)
                })
            phases.append(
                ScalePhase(name: "cancelLoadingImages(target:)", calls: byTarget.count) {
                    loader.cancelLoadingImages(target: self.targets[byTarget[$0]])
                })
        }
        return phases
    }
}

/// Calls `operation(0..<count)` in order, reading the clock every few calls,
/// and stops once `limit` seconds have passed. Returns the calls made and the seconds taken.
func timeCalls(_ count: Int, limit: Double, _ operation: (Int) -> Void) -> (done: Int, seconds: Double) {
    let batch = 16
    let start = now()
    var done = 0
    while done < count {
        let end = min(count, done + batch)
        for k in done..<end { operation(k) }
        done = end
        if done < count, now() - start > limit { break }
    }
    return (done, now() - start)
}

/// The allocator's bytes in use and the resident set size, in bytes.
struct MemorySnapshot {
    let mallocBytes: Int?
    let rssBytes: Int?

    /// `malloc.h` is not part of Swift's Glibc module, so glibc's
    /// `malloc_info` and `malloc_trim` are looked up at run time.
    private typealias MallocInfo = @convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32
    private typealias MallocTrim = @convention(c) (Int) -> Int32

    /// The C function `name` of the process (glibc's, here), as `type`.
    private static func function<Function>(_ name: String, as type: Function.Type) -> Function? {
        let process = dlopen(nil, RTLD_NOW)
        defer { if let process { dlclose(process) } }
        return dlsym(process, name).map { unsafeBitCast($0, to: type) }
    }

    /// Gives freed memory back to the system first, so that RSS starts low.
    static func takeAfterTrimming() -> MemorySnapshot {
        _ = function("malloc_trim", as: MallocTrim.self)?(0)
        return take()
    }

    static func take() -> MemorySnapshot {
        MemorySnapshot(mallocBytes: mallocInUse(), rssBytes: residentBytes())
    }

    /// Bytes in use in every arena plus mmapped chunks (what mallinfo2's
    /// `uordblks + hblkhd` give), from `malloc_info`'s totals. The report is
    /// written into a buffer made in advance, so writing it allocates nothing.
    private static func mallocInUse() -> Int? {
        guard let mallocInfo = function("malloc_info", as: MallocInfo.self) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let text = buffer.withUnsafeMutableBytes { bytes -> String? in
            guard let file = fmemopen(bytes.baseAddress, bytes.count - 1, "w") else { return nil }
            let status = mallocInfo(0, file)
            let length = ftell(file)
            fclose(file)
            guard status == 0, length > 0 else { return nil }
            return String(decoding: bytes.prefix(length), as: UTF8.self)
        }
        // The totals follow the last heap.
        guard let text, let tail = text.range(of: "</heap>", options: .backwards).map({ text[$0.upperBound...] }) else {
            return nil
        }
        // Arena bytes from the system, minus free chunks (fast bins, the
        // rest, the top chunk among them), plus chunks mmapped on their own.
        guard let fast = size(in: tail, of: "<total type=\"fast\""), let rest = size(in: tail, of: "<total type=\"rest\""),
            let mmap = size(in: tail, of: "<total type=\"mmap\""),
            let current = size(in: tail, of: "<system type=\"current\"")
        else { return nil }
        return current - fast - rest + mmap
    }

    /// The `size` attribute of the first element of `text` that starts with `element`.
    private static func size(in text: Substring, of element: String) -> Int? {
        guard let element = text.range(of: element),
            let start = text[element.upperBound...].range(of: "size=\"")?.upperBound,
            let end = text[start...].firstIndex(of: "\"")
        else { return nil }
        return Int(text[start..<end])
    }

    /// VmRSS from /proc/self/status.
    private static func residentBytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kilobytes * 1024
    }
}

/// Runs one size and shape: a server holding its answers, a loader whose
/// only slot that holds, the enqueue, then every phase. `stopped` lists the
/// rows that were over time at a smaller size: they are not run. `number`
/// counts the runs of this size, for the progress lines on stderr.
func runScaleCase(
    shape: ScaleShape, count: Int, limit: Double, stopped: Set<String>, run number: Int
) throws -> ScaleCaseResult {
    var result = ScaleCaseResult()
    func progress(_ text: String) {
        let line = "scale \(shape.rawValue) \(scaleSizeLabel(count)), run \(number): \(text)\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
    guard !stopped.contains(scaleEnqueueRow) else { return result }

    let gate = Gate()
    // Every answer waits for the gate, opened when the run is over; the
    // loader should only ever ask for /hold.
    let server = try LoopbackServer { _, connection in
        gate.wait()
        connection.respond(status: 404, body: Data())
    }
    defer {
        gate.open()
        server.stop()
    }
    let requests = (0..<count).map { ImageRequest(url: server.url("/img/\($0).png")) }
    let deliveryQueue = DispatchQueue(label: "asyncimage-bench.scale.delivery")

    // The loader lives in this function only: when it returns, the loader's
    // deinit ends whatever is still pending (the held transfer included),
    // before the deferred gate lets the server answer.
    func measure() {
        let loader = AsyncImageLoader(
            cache: nil, concurrentLoads: 1, loadingTimeout: 0, deliveryQueue: deliveryQueue,
            notificationCenter: NotificationCenter())
        // Room for every measured request and the held one: at the default
        // limit (10,000) the rest are refused with `queueFull`, and the
        // figures past 10k were of refusals (a run of `all` without this
        // left 1 to 12,307 of 10k-1M requests pending after the enqueue).
        loader.maxPendingRequests = count + 1
        let run = ScaleRun(count: count, shape: shape, loader: loader, requests: requests)

        loader.loadImage(ImageRequest(url: server.url("/hold")))
        let deadline = now() + 10
        while server.requestCount < 1 || loader.activity.inFlight < 1 {
            guard now() < deadline else {
                result.notes.append("the held request did not reach the server in 10 s: nothing measured")
                return
            }
            usleep(1000)
        }

        // Enqueue.
        run.handles.reserveCapacity(count)
        let before = MemorySnapshot.takeAfterTrimming()
        let enqueue = timeCalls(count, limit: limit) {
            run.handles.append(loader.loadImage(requests[$0], target: run.target($0), success: run.action))
        }
        let after = MemorySnapshot.take()
        guard enqueue.done == count else {
            result.rows.append((scaleEnqueueRow, .overTime(done: enqueue.done, total: count, seconds: enqueue.seconds)))
            progress("enqueue over time (\(enqueue.done) of \(count) in \(scaleSeconds(enqueue.seconds)) s)")
            return
        }
        result.rows.append((scaleEnqueueRow, .value(enqueue.seconds * 1e9 / Double(count))))
        if let start = before.mallocBytes, let end = after.mallocBytes {
            result.rows.append((scaleMallocRow, .value(Double(end - start) / Double(count))))
        }
        if let start = before.rssBytes, let end = after.rssBytes {
            result.rows.append((scaleRSSRow, .value(Double(end - start) / Double(count))))
        }
        let activity = loader.activity
        // Queued lanes: one for all of shape one (one target and action), one per request for shape many.
        let lanes = shape == .one ? 1 : count
        if activity.queued != lanes || activity.pendingRequests != count + 1 || server.requestCount != 1 {
            result.notes.append(
                "after the enqueue \(activity.queued) lanes were queued and \(activity.pendingRequests) requests pending"
                    + " (expected \(lanes) and \(count + 1)), \(server.requestCount) requests reached the server (expected 1)")
        }
        progress("enqueued in \(scaleSeconds(enqueue.seconds)) s, \(activity.queued) queued")

        var skipped = false
        for phase in run.phases() {
            guard !stopped.contains(phase.name) else {
                skipped = true
                continue
            }
            let pendingBefore = phase.bulk ? loader.activity.pendingRequests : 0
            let timing = timeCalls(phase.calls, limit: limit, phase.operation)
            if timing.done < phase.calls {
                result.rows.append(
                    (phase.name, .overTime(done: timing.done, total: phase.calls, seconds: timing.seconds)))
                progress("\(phase.name) over time (\(timing.done) of \(phase.calls) calls in \(scaleSeconds(timing.seconds)) s)")
                continue
            }
            let operations = phase.bulk ? pendingBefore - loader.activity.pendingRequests : phase.calls
            result.rows.append((phase.name, .value(timing.seconds * 1e9 / Double(max(1, operations)))))
            progress("\(phase.name): \(scaleSeconds(timing.seconds)) s")
            if phase.name == "url(for:action:)" {
                // Both lookups must have found the most recent pending URL.
                let wrong = run.order.prefix(20).filter {
                    loader.url(for: run.target($0)) != run.expectedURL($0)
                        || loader.url(for: run.target($0), action: run.action) != run.expectedURL($0)
                }.count
                if wrong > 0 { result.notes.append("url(for:) gave an unexpected URL for \(wrong) of 20 targets") }
            }
        }
        let end = loader.activity
        let complete = !skipped && !result.rows.contains {
            if case .overTime = $0.figure { return true } else { return false }
        }
        if complete, end.pendingRequests != 1 || end.queued != 0 {
            result.notes.append(
                "after the cancels \(end.pendingRequests) requests were pending and \(end.queued) lanes queued (expected 1 and 0)")
        }
        // A yardstick from the same run: removing N objects (allocated one by
        // one, like requests) from a plain Dictionary, in the same shuffled
        // order. Its growth from 1k to 1M is the memory hierarchy's (1k
        // objects fit in the caches, 1M do not), not an algorithm's.
        let objects = (0..<count).map { _ in ScaleTarget() }
        var table = Dictionary(uniqueKeysWithValues: objects.map { (ObjectIdentifier($0), $0) })
        let order = run.order
        let yardstick = timeCalls(count, limit: limit) { table.removeValue(forKey: ObjectIdentifier(objects[order[$0]])) }
        result.rows.append((scaleYardstickRow, .value(yardstick.seconds * 1e9 / Double(max(1, yardstick.done)))))
        // The least work a re-rank can do: from the caller's handle to its
        // request, and a write there (N of each, allocated one by one), under
        // a lock as any call a loader takes from any thread. (Without the
        // lock the processor overlaps the memory reads of successive calls;
        // a lock's atomic instructions do not let it.)
        let records = (0..<count).map { _ in ScaleFloorRecord() }
        let floorHandles = records.map(ScaleFloorHandle.init)
        let flips = (0..<scaleLookups).map { order[$0 % count] }
        let floorLock = Locked(0)
        let rerank = timeCalls(flips.count, limit: limit) { index in
            floorLock.withLock { _ in
                let record = floorHandles[flips[index]].record
                record.priority = record.priority == 3 ? 1 : 3
            }
        }
        result.rows.append((scaleRerankFloorRow, .value(rerank.seconds * 1e9 / Double(max(1, rerank.done)))))
        if shape == .many {
            // The least work `url(for:)` can do with a target each, under the
            // lock: find the target's entry by identity, load its weak
            // reference (a dead target's address can be reused), and hand back
            // a URL. No design does less; its growth from 1k to 1M bounds how
            // flat the real lookup can be.
            let entries = Dictionary(
                uniqueKeysWithValues: run.targets.indices.map {
                    (ObjectIdentifier(run.targets[$0]), ScaleFloorEntry(run.targets[$0], requests[$0].url))
                })
            var found: [URL] = []
            found.reserveCapacity(scaleLookups)
            let lookups = (0..<scaleLookups).map { order[$0 % count] }
            let floor = timeCalls(lookups.count, limit: limit) { index in
                let target = run.targets[lookups[index]]
                let url = floorLock.withLock { _ -> URL? in
                    guard let entry = entries[ObjectIdentifier(target)], entry.target === target else { return nil }
                    return entry.url
                }
                if let url { found.append(url) }
            }
            if found.count != floor.done { result.notes.append("the lookup yardstick missed \(floor.done - found.count) targets") }
            result.rows.append((scaleLookupFloorRow, .value(floor.seconds * 1e9 / Double(max(1, floor.done)))))
        }
    }
    measure()
    // Deliveries scheduled by the loader's teardown (none are expected) finish first.
    deliveryQueue.sync {}
    return result
}

func runScaleBenchmark(_ options: ScaleOptions) throws {
    let tables = try measureScale(options)
    let (text, markdown) = renderScale(tables, options: options)
    print(text, terminator: "")
    if let output = options.output {
        let folder = URL(fileURLWithPath: output)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("scale.md")
        try markdown.write(to: file, atomically: true, encoding: .utf8)
        print("Written to \(file.path)")
    }
}

/// Every shape and size of `options`: each size's figures (the medians of its runs).
func measureScale(_ options: ScaleOptions) throws -> [(shape: ScaleShape, results: [Int: ScaleCaseResult])] {
    var tables: [(shape: ScaleShape, results: [Int: ScaleCaseResult])] = []
    for shape in options.shapes {
        var results: [Int: ScaleCaseResult] = [:]
        var stopped: Set<String> = []
        for size in options.sizes {
            // Small sizes take milliseconds: more runs (see the top of this file).
            var runs: [ScaleCaseResult] = []
            let start = now()
            repeat {
                runs.append(
                    try runScaleCase(
                        shape: shape, count: size, limit: options.maxSeconds, stopped: stopped, run: runs.count + 1))
            } while runs.count < scaleMaxRuns && now() - start < scaleRunSeconds
                && !runs[runs.count - 1].rows.isEmpty && !runs[runs.count - 1].isOverTime
            var result = ScaleCaseResult(merging: runs)
            if !result.rows.isEmpty { result.rows.append((scaleRunsRow, .value(Double(runs.count)))) }
            for row in result.rows {
                if case .overTime = row.figure { stopped.insert(row.name) }
            }
            results[size] = result
        }
        tables.append((shape, results))
    }
    return tables
}

/// The scale tables as plain text and as Markdown (with the notes: phases over time, checks that failed).
func renderScale(
    _ tables: [(shape: ScaleShape, results: [Int: ScaleCaseResult])], options: ScaleOptions
) -> (text: String, markdown: String) {
    var text = """
        Scale: the loader's cost per operation against the number of pending requests.
        concurrentLoads 1, its only slot held by a request the loopback server answers at the end,
        so all N requests stay queued; distinct URLs; no cache. Cancels visit requests in a fixed
        shuffled order: N/2 by URL and target, N/8 by URL, N/8 through the handle, the last N/4 by target (shape many:
        half with the action). Lookups: \(scaleLookups) calls. Times in ns per call; memory: after minus
        before the enqueue, per request. Each size runs up to \(scaleMaxRuns) times while its runs take under
        \(scaleSeconds(scaleRunSeconds)) s, and each figure is the median of its runs. Limit per phase: \(scaleSeconds(options.maxSeconds)) s.
        Goal: at most 2x from the smallest N to the largest. Yardsticks, timed in the same run: a plain
        Dictionary's remove, the least work a re-rank and (shape many) url(for:) can do; their growth is the memory's.


        """
    var markdown = "## Scale\n\n" + text
    for (shape, results) in tables {
        let table = scaleTable(shape: shape, sizes: options.sizes, results: results)
        text += "shape \(shape.rawValue): \(shape.summary)\n" + table.plain
        markdown += "### Shape `\(shape.rawValue)`: \(shape.summary)\n\n" + table.markdown + "\n"
        var notes: [String] = []
        for size in options.sizes {
            guard let result = results[size] else { continue }
            for (name, figure) in result.rows {
                if case .overTime(let done, let total, let seconds) = figure {
                    notes.append(
                        "\(scaleSizeLabel(size)), \(name): stopped after \(scaleSeconds(seconds)) s, \(done) of \(total) calls"
                            + (done > 0 ? " (\(scaleGrouped(seconds * 1e9 / Double(done))) ns per call so far)" : ""))
                }
            }
            notes += result.notes.map { "\(scaleSizeLabel(size)): \($0)" }
        }
        if table.rows.contains(where: { $0.contains("not run") }) {
            notes.append("not run: over time at a smaller size, or not every request of that size could be enqueued in time")
        }
        for note in notes {
            text += "  \(note)\n"
            markdown += "- \(note)\n"
        }
        text += "\n"
        markdown += "\n"
    }
    return (text, markdown)
}

/// The table of one shape: a row per phase and memory figure, a column per size and the ratio.
func scaleTable(shape: ScaleShape, sizes: [Int], results: [Int: ScaleCaseResult]) -> ResultTable {
    var names: [String] = []
    for size in sizes {
        for row in results[size]?.rows ?? [] where !names.contains(row.name) { names.append(row.name) }
    }
    // Times first, then memory, then the runs.
    let trailing = [scaleMallocRow, scaleRSSRow, scaleRunsRow]
    names = names.filter { !trailing.contains($0) } + trailing.filter(names.contains)
    let ratioHeader = sizes.count > 1 ? "\(scaleSizeLabel(sizes.last!)) / \(scaleSizeLabel(sizes.first!))" : "ratio"
    var table = ResultTable(title: "", header: ["N"] + sizes.map(scaleSizeLabel) + [ratioHeader])
    for name in names {
        var row = [name]
        for size in sizes {
            switch results[size]?[name] {
            case .value(let value)?: row.append(scaleGrouped(value))
            case .overTime?: row.append("over time")
            case nil: row.append("not run")
            }
        }
        if name == scaleRunsRow {
            row.append("-")
        } else if sizes.count > 1, case .value(let first)? = results[sizes.first!]?[name],
            case .value(let last)? = results[sizes.last!]?[name]
        {
            if trailing.contains(name) || first <= 0 {
                row.append(first > 0 ? String(format: "%.2fx", last / first) : "-")
            } else {
                let ratio = last / first
                row.append(String(format: "%.2fx ", ratio) + (ratio <= 2 ? "ok" : "over 2x"))
            }
        } else {
            row.append("-")
        }
        table.add(row)
    }
    return table
}

/// `1k`, `10k`, `1M`, or the number itself.
func scaleSizeLabel(_ size: Int) -> String {
    if size >= 1_000_000, size % 1_000_000 == 0 { return "\(size / 1_000_000)M" }
    if size >= 1_000, size % 1_000 == 0 { return "\(size / 1_000)k" }
    return "\(size)"
}

/// A rounded number with thousands separators: `12,345`.
func scaleGrouped(_ value: Double) -> String {
    let digits = String(Int(value.rounded()).magnitude)
    var grouped = ""
    for (index, digit) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { grouped += "," }
        grouped.append(digit)
    }
    return (value < -0.5 ? "-" : "") + grouped
}

/// Seconds with two decimals.
func scaleSeconds(_ seconds: Double) -> String { String(format: "%.2f", seconds) }
