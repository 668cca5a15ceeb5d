import AsyncImageKit
import Foundation

/// report.json: the run's settings, totals, final screen and every request.
struct Report: Codable {
    struct Settings: Codable {
        var concurrentLoads: Int
        var timeout: Double
        var cells: Int
        var scrollSpeed: Double
        var seed: UInt64
        var images: Int
        var latencyMilliseconds: Int
        var generatedGallery: Bool
    }

    struct Summary: Codable {
        var requests: Int
        var loaded: Int
        var failed: Int
        var cancelled: Int
        var cacheHits: Int
        var bytes: Int
        var seconds: Double
        var scrollStoppedAt: Double
        var megabytesPerSecond: Double
        var peakTransfersInFlight: Int
    }

    struct Cell: Codable {
        var position: Int
        var item: Int?
        var kind: String?
        var url: String?
        var state: String
        var error: String?
    }

    var settings: Settings
    var summary: Summary
    var screen: [Cell]
    var files: [String]
    var requests: [Recorder.Request]

    static func make(
        settings: DemoSettings, items: [GalleryItem], requests: [Recorder.Request], recorder: Recorder,
        activity: LoaderActivity, screen: Screen, scrollStopped: Double, finished: Double, files: [String]
    ) -> Report {
        let s = recorder.snapshot
        let cells = screen.ordered.enumerated().map { position, entry -> Cell in
            let state: String
            var error: String?
            switch entry.cell.state {
            case .empty: state = "empty"
            case .loading: state = entry.cell.image == nil ? "loading" : "thumbnail"
            case .loaded: state = "loaded"
            case .failed(_, let failure):
                state = "failed"
                error = failure.description
            }
            return Cell(
                position: position, item: entry.item?.index, kind: entry.item?.kind.rawValue,
                url: entry.item?.full.absoluteString, state: state, error: error)
        }
        return Report(
            settings: Settings(
                concurrentLoads: settings.concurrentLoads, timeout: settings.timeout, cells: settings.cells,
                scrollSpeed: settings.scrollSpeed, seed: settings.seed, images: items.count,
                latencyMilliseconds: settings.latency, generatedGallery: items.first?.kind != .external),
            summary: Summary(
                requests: requests.count, loaded: s.loaded, failed: s.failed, cancelled: s.cancelled,
                cacheHits: s.cacheHits, bytes: s.bytes, seconds: finished, scrollStoppedAt: scrollStopped,
                megabytesPerSecond: Double(s.bytes) / 1_000_000 / max(0.001, finished),
                peakTransfersInFlight: activity.peakInFlight),
            screen: cells, files: files, requests: requests)
    }

    static func encode(_ report: Report) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(report)
    }

    static func printSummary(_ report: Report) {
        let s = report.summary
        print("")
        print("  requests  loaded  failed  cancelled  cache hits      MB  seconds  peak in flight")
        print(String(
            format: "  %8d  %6d  %6d  %9d  %10d  %6.1f  %7.2f  %14d", s.requests, s.loaded, s.failed, s.cancelled,
            s.cacheHits, Double(s.bytes) / 1_000_000, s.seconds, s.peakTransfersInFlight))
        let states = Dictionary(grouping: report.screen, by: \.state).mapValues(\.count)
        let described = states.keys.sorted().map { "\(states[$0]!) \($0)" }.joined(separator: ", ")
        print("  final screen: \(report.screen.count) cells: \(described)")
        print(String(format: "  the scroll stopped at %.2f s; the last picture arrived at %.2f s", s.scrollStoppedAt, s.seconds))
        print("")
        for file in report.files { print("  wrote \(file)") }
    }
}
