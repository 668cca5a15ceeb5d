import BenchmarkSupport
import Foundation

// Two sections of `asyncimage-bench all` built on the `loader --source/--set`
// and `cache` measurements (LoaderSourcesBenchmark.swift, CacheBenchmark.swift):
// the full-size goal on the 1,000 mixed images served by nginx, with
// the decode bound and the curl + codec tools yardstick, and the memory cache.

/// The mixed set through nginx (and the built-in server), full and display
/// size at 2 and 8 loads: ours, the URLSession peer, curl + tools, the bound.
func measureMixedSection(runs: Int, sets: URL, smoke: Bool, log: (String) -> Void) throws -> (ReportSection, failures: Int) {
    var options = LoaderSourcesOptions()
    options.set = .mixed
    options.sources = [.nginx]  // the built-in server serves the loader section's photos
    options.loads = smoke ? [2] : [2, 8]
    options.workloads = ["full", "display"]
    options.repeats = runs
    options.loaders = ["peer", "ours"]
    options.smoke = smoke
    options.output = sets.path
    if smoke { options.count = 6 }
    let result = try measureLoaderSources(options, log: log)
    return (mixedSection(result), result.rows.filter { $0.loader == "ours" }.reduce(0) { $0 + $1.samples.reduce(0) { $0 + $1.failures } })
}

func mixedSection(_ result: LoaderSourcesResult) -> ReportSection {
    var section = ReportSection(title: "Full and display size on the mixed set, from nginx")
    section.summary = [
        String(
            format: "%d mixed images (%.0f MB: JPEGs of 0.3-12 MP, every 4th progressive; PNGs; GIFs, half animated), ",
            result.images, Double(result.bytes) / 1e6)
            + "served from 127.0.0.1 by nginx (started with its own configuration); "
            + "each loader in a child process. The bound: our decoders' CPU for the whole set divided by the cores, "
            + "measured before every round (what perfect overlap of transfers and decodes would reach). "
            + "curl: `curl --parallel` into a folder, then djpeg (`-scale 1/4` for display size), pngtopnm and giftopnm, "
            + "one process per file, one per core at a time. \"others\": CPU used by other processes during the run "
            + "(a busy machine makes every row slower)."
    ]
    section.command = "asyncimage-bench loader --source nginx --set mixed --loads 2,8 --workloads full,display --loaders peer,ours"
    section.skipped = result.skipped
    for workload in result.options.workloads {
        let bound = Samples((result.bounds[workload] ?? []).map(\.imagesPerSecond))
        var table = ResultTable(
            title: workload == "full" ? "Full size" : "Display size (256x256 fill)",
            header: ["source", "loads", "loader", "images/s", "of the bound", "peak RSS MB", "CPU ms/image", "others %"])
        if !bound.isEmpty {
            table.add(["-", "-", "decode bound", bound.formatted(1), "100%", "-", "-", "-"])
        }
        for row in result.rows where row.workload == workload {
            let rates = Samples(row.samples.map(\.imagesPerSecond))
            let of = bound.isEmpty ? "-" : String(format: "%.1f%%", 100 * rates.median / bound.median)
            let others = Samples(row.samples.map { 100 * $0.othersCPU / max(0.001, Double(result.cores) * $0.seconds) })
            table.add([
                row.source.rawValue, "\(row.loads)", loaderDisplayNames[row.loader] ?? row.loader, rates.formatted(1), of,
                Samples(row.samples.map(\.peakMB)).formatted(0),
                Samples(row.samples.map { 1000 * $0.cpu / Double(max(1, $0.images)) }).formatted(1), others.formatted(0),
            ])
        }
        for curl in result.curl where curl.workload == workload {
            let samples = curl.samples
            table.add([
                "nginx", "\(curl.parallelMax)", "curl --parallel, then the codecs' tools",
                Samples(samples.map(\.imagesPerSecond)).formatted(1),
                bound.isEmpty ? "-" : String(format: "%.1f%%", 100 * Samples(samples.map(\.imagesPerSecond)).median / bound.median),
                Samples(samples.map(\.peakMB)).formatted(0),
                Samples(samples.map { 1000 * $0.cpu / Double(max(1, $0.images)) }).formatted(1), "-",
            ])
        }
        func samples(_ source: LoaderSource, _ loads: Int, _ loader: String) -> [LoaderRunSample]? {
            result.rows.first { $0.source == source && $0.workload == workload && $0.loads == loads && $0.loader == loader }?.samples
        }
        if workload == "full", !bound.isEmpty, let ours = samples(.nginx, 2, "ours"), let peer = samples(.nginx, 2, "peer") {
            table.addGoal(
                "goal: nginx, 2 loads, ours / the bound, images/s",
                ratio: Samples(ours.map(\.imagesPerSecond)).map { $0 / bound.median }, goal: .atLeast(0.95))
            table.addGoal(
                "goal: nginx, 2 loads, peak RSS ours / the peer's", ratio: Samples(ours.map(\.peakMB)).ratio(to: Samples(peer.map(\.peakMB))),
                goal: .atMost(1))
        }
        section.tables.append(table)
    }
    return section
}

/// The memory cache: hits per second on 1 and 2 threads against NSCache, and
/// a cache hit's delivery latency through the loader's APIs.
func cacheSection(_ result: CacheBenchmarkResult) -> ReportSection {
    var section = ReportSection(title: "Memory cache: hits and a hit's delivery")
    section.summary = [
        "`ImageCache` lookups of 1,000 keys made in advance, rounds alternating with Foundation's `NSCache<NSString, _>`; "
            + "on 2 threads both threads look up the same cache (the figure is their total). Latency: from the call to the "
            + "success action (or the awaited image) for an image already in the loader's memory cache, median and p99."
    ]
    section.command = "asyncimage-bench cache"
    var hits = ResultTable(title: "", header: ["threads", "ImageCache, million hits/s", "NSCache, million hits/s", "ImageCache / NSCache"])
    for rates in result.hits {
        let ours = Samples(rates.ours)
        let peer = Samples(rates.nsCache)
        hits.add(["\(rates.threads)", ours.formatted(1), peer.formatted(1), ours.ratio(to: peer).formattedRatio()])
    }
    if let one = result.hits.first(where: { $0.threads == 1 }) {
        hits.addGoal("goal: one thread, million hits/s (as a multiple of 20)", ratio: Samples(one.ours).map { $0 / 20 }, goal: .atLeast(1))
    }
    var latency = ResultTable(title: "", header: ["way of asking", "median µs", "p99 µs"])
    for entry in result.latencies {
        latency.add([entry.name, String(format: "%.1f", 1e6 * entry.percentile(0.5)), String(format: "%.1f", 1e6 * entry.percentile(0.99))])
    }
    section.tables = [hits, latency]
    return section
}
