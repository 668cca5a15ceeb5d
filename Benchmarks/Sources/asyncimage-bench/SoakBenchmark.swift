import AsyncImageKit
import Foundation
import LoadMix

// The soak: the load test's mix (LoadMix: requests from four threads with
// random cancels by every API, target deallocations, cache purges and
// setting changes) run for minutes against a loopback server, with RSS,
// open descriptors, in-flight and completed counts sampled every second.
// At the end: the mix's checks (every request ended exactly once, the cap
// held, ...), the resources once the cache is cleared, and CPU in an idle
// second; a table, `soak.csv` and `soak.png` (RSS, descriptors and in-flight
// over time).

/// Options of `soak`.
struct SoakOptions {
    var minutes = 5.0
    var loads = 8
    var output = "bench-output/soak"
    var seed: UInt64 = 2026
}

/// One second of the soak.
struct SoakSample {
    /// Seconds since the soak started.
    let time: Double
    let residentBytes: Int
    let descriptors: Int
    let inFlight: Int
    let pending: Int
    /// Requests delivered or cancelled so far.
    let completed: Int
    /// Requests made so far.
    let requests: Int

    var residentMegabytes: Double { Double(residentBytes) / 1_048_576 }
}

func runSoak(_ options: SoakOptions) throws {
    let folder = URL(fileURLWithPath: options.output)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let mix = try LoadMix(concurrentLoads: max(1, options.loads))
    print("soak: \(String(format: "%g", options.minutes)) minutes at concurrentLoads \(mix.concurrentLoads), seed \(options.seed)")

    // Warm-up: what the process keeps for good (threads, tables at their
    // working size) is part of the baseline.
    mix.run(requests: 2_000, seed: options.seed &* 31)
    mix.settle(timeout: 120)
    mix.clearCaches()
    let baseline = ProcessResources.snapshot()
    let completedBefore = mix.loader.activity.delivered + mix.loader.activity.cancelled
    let requestsBefore = mix.requestsMade

    let start = ProcessInfo.processInfo.systemUptime
    func sample() -> SoakSample {
        let activity = mix.loader.activity
        let resources = ProcessResources.snapshot()
        return SoakSample(
            time: ProcessInfo.processInfo.systemUptime - start, residentBytes: resources.residentBytes,
            descriptors: resources.descriptors, inFlight: activity.inFlight, pending: activity.pendingRequests,
            completed: activity.delivered + activity.cancelled - completedBefore, requests: mix.requestsMade - requestsBefore)
    }
    var samples = [sample()]

    // The mix runs on threads of its own; this thread samples once a second
    // (the wait paces the samples: it orders nothing).
    let finished = DispatchSemaphore(value: 0)
    let deadline = Date().addingTimeInterval(options.minutes * 60)
    let runner = Thread {
        mix.run(requests: 1 << 50, seed: options.seed, until: deadline)
        finished.signal()
    }
    runner.name = "soak runner"
    runner.start()
    var tick = 1.0
    while true {
        let wait = max(0, start + tick - ProcessInfo.processInfo.systemUptime)
        if finished.wait(timeout: .now() + wait) == .success { break }
        let current = sample()
        samples.append(current)
        if Int(tick) % 10 == 0 { printSoakRow(current) }
        tick += 1
    }
    let settled = mix.settle(timeout: 300)
    samples.append(sample())
    mix.clearCaches()
    let cleared = sample()
    samples.append(cleared)

    let cpu = ProcessResources.cpuSeconds
    Thread.sleep(forTimeInterval: 1)
    let idleCPU = ProcessResources.cpuSeconds - cpu

    let report = mix.report
    print("\n      t (s)   RSS (MB)   fds  in flight   pending   completed    requests")
    for row in samples where Int(row.time.rounded()) % 30 == 0 || row.time == samples.last?.time { printSoakRow(row) }
    let peakRSS = samples.map(\.residentBytes).max() ?? 0
    let peakFDs = samples.map(\.descriptors).max() ?? 0
    let seconds = (samples.dropLast(2).last?.time ?? 1)
    print("\n\(report)")
    print(
        String(
            format: "RSS: baseline %.1f MB, peak %.1f MB, end %.1f MB (after the cache was cleared)",
            Double(baseline.residentBytes) / 1_048_576, Double(peakRSS) / 1_048_576, cleared.residentMegabytes))
    print("descriptors: baseline \(baseline.descriptors), peak \(peakFDs), end \(cleared.descriptors)")
    print(String(format: "throughput: %.0f requests/s over %.0f s; idle CPU %.1f ms in 1 s", Double(cleared.requests) / seconds, seconds, idleCPU * 1000))
    let csv = folder.appendingPathComponent("soak.csv")
    try soakCSV(samples).write(to: csv, atomically: true, encoding: .utf8)
    let png = folder.appendingPathComponent("soak.png")
    try SoakPlot(samples: samples, cap: mix.concurrentLoads, title: "SOAK: \(String(format: "%g", options.minutes)) MIN AT CONCURRENTLOADS \(mix.concurrentLoads)").canvas().writePNG(to: png)
    print("wrote \(csv.path) and \(png.path)")

    var failures = report.failures
    if !settled { failures.append("the loader did not settle within 300 s") }
    if idleCPU >= 0.05 { failures.append(String(format: "an idle second took %.1f ms of CPU", idleCPU * 1000)) }
    if failures.isEmpty {
        print("soak: every check held")
    } else {
        print("soak: FAILED\n  " + failures.joined(separator: "\n  "))
        exit(1)
    }
}

private func printSoakRow(_ row: SoakSample) {
    print(
        String(
            format: "%11.0f %10.1f %5d %10d %9d %11d %11d", row.time, row.residentMegabytes, row.descriptors, row.inFlight,
            row.pending, row.completed, row.requests))
}

private func soakCSV(_ samples: [SoakSample]) -> String {
    var text = "seconds,rss_bytes,descriptors,in_flight,pending,completed,requests\n"
    for row in samples {
        text += String(format: "%.3f", row.time)
            + ",\(row.residentBytes),\(row.descriptors),\(row.inFlight),\(row.pending),\(row.completed),\(row.requests)\n"
    }
    return text
}
