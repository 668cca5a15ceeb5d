import AsyncImageKit
import DemoSupport
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
        /// Images delivered from a cache: `memoryCacheHits + diskCacheHits`.
        /// Part of `loaded`.
        var cacheHits: Int
        /// Images delivered from the memory cache (requests whose outcome is "cache").
        var memoryCacheHits: Int
        /// Images delivered from the disk cache (none unless the loader has one).
        var diskCacheHits: Int
        var bytes: Int
        var seconds: Double
        var scrollStoppedAt: Double
        var megabytesPerSecond: Double
        var peakTransfersInFlight: Int
        /// Cell visits whose thumbnail and full transfers both started, and
        /// of those, how many started the thumbnail first (per-target order).
        var pairsBothStarted: Int
        var thumbnailStartedFirst: Int
        /// Cell visits whose thumbnail and full image were both delivered,
        /// and of those, how many delivered the thumbnail first.
        var pairsBothDelivered: Int
        var thumbnailDeliveredFirst: Int
    }

    /// The thumbnail-then-full pairs of the run: a cell's thumbnail request
    /// and the full request made right after it for the same item.
    static func pairs(_ requests: [Recorder.Request]) -> [(thumbnail: Recorder.Request, full: Recorder.Request)] {
        let byID = Dictionary(requests.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return requests.compactMap { full in
            guard full.role == "full", let thumbnail = byID[full.id - 1], thumbnail.role == "thumbnail",
                thumbnail.cell == full.cell, thumbnail.item == full.item
            else { return nil }
            return (thumbnail, full)
        }
    }

    struct Cell: Codable {
        var position: Int
        var item: Int?
        var kind: String?
        var url: String?
        var state: String
        var error: String?
        /// The frames of the picture shown (more than 1: an animation).
        var frames: Int?
        /// The frame-count label drawn on the contact sheet ("8F"), for an animation.
        var frameLabel: String?
    }

    /// The playback row of crossfade.png: which cell, and the frame drawn at each time.
    struct Playback: Codable {
        struct Step: Codable {
            var t: Double
            var frame: Int
        }
        var position: Int
        var item: Int?
        var frames: Int
        var loopCount: Int?
        var loopDuration: Double
        var steps: [Step]
    }

    var settings: Settings
    var summary: Summary
    var screen: [Cell]
    /// Present when the final screen shows an animated picture.
    var playback: Playback?
    var files: [String]
    var requests: [Recorder.Request]

    static func make(
        settings: DemoSettings, items: [GalleryItem], requests: [Recorder.Request], recorder: Recorder,
        activity: LoaderActivity, screen: Screen, scrollStopped: Double, finished: Double, files: [String]
    ) -> Report {
        let s = recorder.snapshot
        let pairs = pairs(requests)
        let started = pairs.filter { $0.thumbnail.loading != nil && $0.full.loading != nil }
        let delivered = pairs.filter {
            ["loaded", "cache"].contains($0.thumbnail.outcome) && ["loaded", "cache"].contains($0.full.outcome)
        }
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
            let shown = entry.cell.displayedImage
            return Cell(
                position: position, item: entry.item?.index, kind: entry.item?.kind.rawValue,
                url: entry.item?.full.absoluteString, state: state, error: error, frames: shown?.frames.count,
                frameLabel: shown.flatMap(Pictures.frameLabel))
        }
        let playback = Pictures.playback(screen).map { found in
            Playback(
                position: found.position, item: screen.ordered[found.position].item?.index,
                frames: found.image.frames.count, loopCount: found.image.loopCount,
                loopDuration: found.image.animationTimeline.loopDuration,
                steps: found.times.map { Playback.Step(t: $0, frame: found.image.frameIndex(at: $0)) })
        }
        return Report(
            settings: Settings(
                concurrentLoads: settings.concurrentLoads, timeout: settings.timeout, cells: settings.cells,
                scrollSpeed: settings.scrollSpeed, seed: settings.seed, images: items.count,
                latencyMilliseconds: settings.latency, generatedGallery: items.first?.kind != .external),
            summary: Summary(
                requests: requests.count, loaded: s.loaded, failed: s.failed, cancelled: s.cancelled,
                cacheHits: s.memoryHits + s.diskHits, memoryCacheHits: s.memoryHits, diskCacheHits: s.diskHits,
                bytes: s.bytes, seconds: finished, scrollStoppedAt: scrollStopped,
                megabytesPerSecond: Double(s.bytes) / 1_000_000 / max(0.001, finished),
                peakTransfersInFlight: activity.peakInFlight,
                pairsBothStarted: started.count,
                thumbnailStartedFirst: started.count { $0.thumbnail.loading! <= $0.full.loading! },
                pairsBothDelivered: delivered.count,
                thumbnailDeliveredFirst: delivered.count { $0.thumbnail.finished! <= $0.full.finished! }),
            screen: cells, playback: playback, files: files, requests: requests)
    }

    static func encode(_ report: Report) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(report)
    }

    static func printSummary(_ report: Report) {
        let s = report.summary
        print("")
        print("  requests  loaded  failed  cancelled  memory hits  disk hits      MB  seconds  peak in flight")
        print(String(
            format: "  %8d  %6d  %6d  %9d  %11d  %9d  %6.1f  %7.2f  %14d", s.requests, s.loaded, s.failed,
            s.cancelled, s.memoryCacheHits, s.diskCacheHits, Double(s.bytes) / 1_000_000, s.seconds,
            s.peakTransfersInFlight))
        let states = Dictionary(grouping: report.screen, by: \.state).mapValues(\.count)
        let described = states.keys.sorted().map { "\(states[$0]!) \($0)" }.joined(separator: ", ")
        print("  final screen: \(report.screen.count) cells: \(described)")
        if let playback = report.playback {
            let frames = playback.steps.map { String(format: "%.2f s: frame %d", $0.t, $0.frame) }.joined(separator: ", ")
            print("  playback of cell \(playback.position) (\(playback.frames) frames): \(frames)")
        }
        print(String(format: "  the scroll stopped at %.2f s; the last picture arrived at %.2f s", s.scrollStoppedAt, s.seconds))
        print(
            "  thumbnail then full: \(s.thumbnailStartedFirst) of \(s.pairsBothStarted) cells that started both"
                + " started the thumbnail first; \(s.thumbnailDeliveredFirst) of \(s.pairsBothDelivered) that got both"
                + " got the thumbnail first")
        print("")
        for file in report.files { print("  wrote \(file)") }
    }
}
