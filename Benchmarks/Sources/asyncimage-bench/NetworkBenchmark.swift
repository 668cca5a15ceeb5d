import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// `net`: what a person waits for over real links (issue 29). nginx serves a
// gallery over TLS on 127.0.0.1, HTTP/2 on one port and HTTP/1.1 only on
// another; a `LinkEmulator` in this process puts a round trip and a rate
// between each client and nginx. Every client run is a fresh child process
// (`net-one`, NetworkClient.swift), so each starts cold.
//
// Workloads: `cold`, a screen of 16 cells given their thumbnails and then
// their full images at once; `scroll`, the demo's scroll over the gallery.
// Contestants: AsyncImageKit at its defaults, the URLSession peer at its
// defaults, and for `cold` two yardsticks: `curl --parallel` fetching the
// same 32 URLs over the same link (`--parallel-max 6` over HTTP/1.1,
// multiplexed over HTTP/2; its time is its last byte plus the decode term
// below), and the physical limit:
//
//     handshakes (TCP and TLS 1.3: 2 round trips)
//     + ceil(requests / connections) round trips (1 over HTTP/2; 6 connections over HTTP/1.1)
//     + the bytes of the 32 files over the link's rate
//     + the slowest single decode of those files at the cell's size, measured in this run.

struct NetOptions {
    var roundTrips: [Double] = [0.020, 0.050, 0.150]
    var rates: [Double] = [10e6, 50e6, 200e6]
    var protocols = ["h2", "h1"]
    var workloads = ["cold", "scroll"]
    var clients = ["ours", "peer", "curl"]
    var runs = 3
    var items = 300
    var rowsPerSecond = 25.0
    var loads: Int?
    var perHost: Int?
    var output = URL(fileURLWithPath: "bench-output/net")
    var smoke = false
}

/// The gallery on disk: thumbnails (200x150, q70) and full photos (q85, the
/// demo's sizes), one file per item so that every URL is its own.
struct NetGallery {
    let root: URL
    let items: Int
    /// Bytes of each file, by path ("/thumb/3.jpg").
    let sizes: [String: Int]
    /// The slowest single decode at the cell's size among the distinct files (s).
    let slowestDecode: Double

    init(items: Int, in folder: URL) throws {
        root = folder.appendingPathComponent("gallery")
        self.items = items
        for sub in ["thumb", "full"] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let photoSizes = [(1600, 1200), (1200, 1600), (2000, 1333), (1024, 768), (1500, 1000), (800, 1200)]
        var variants: [(full: Data, thumb: Data)] = []
        for variant in 0..<12 {
            let (w, h) = photoSizes[variant % photoSizes.count]
            let image = SyntheticImage.photo(width: w, height: h, seed: 17 &+ UInt64(variant) &* 7919)
            let small = try ImageResizer.resize(image, to: PixelSize(width: w / 8, height: h / 8))
            variants.append((try JPEGEncoder(quality: 85).encode(image), try JPEGEncoder(quality: 70).encode(small)))
        }
        var sizes: [String: Int] = [:]
        for item in 0..<items {
            let variant = variants[(item * 7) % variants.count]
            try variant.thumb.write(to: root.appendingPathComponent("thumb/\(item).jpg"))
            try variant.full.write(to: root.appendingPathComponent("full/\(item).jpg"))
            sizes["/thumb/\(item).jpg"] = variant.thumb.count
            sizes["/full/\(item).jpg"] = variant.full.count
        }
        self.sizes = sizes
        // The decode term: each distinct file at the cell's size, three
        // times, the slowest single one.
        var slowest = 0.0
        let options = DecodingOptions(targetSize: NetClientRun.cellSize, contentMode: .aspectFill)
        for variant in variants {
            for data in [variant.full, variant.thumb] {
                for _ in 0..<3 {
                    let start = now()
                    _ = try ImageDecoder().decode(data, options: options)
                    slowest = max(slowest, now() - start)
                }
            }
        }
        slowestDecode = slowest
    }

    /// Bytes of the cold screen's 32 files (16 thumbnails and 16 full images).
    var coldBytes: Int { (0..<16).reduce(0) { $0 + sizes["/thumb/\($1).jpg"]! + sizes["/full/\($1).jpg"]! } }
}

/// One link setting over one protocol: every contestant's runs.
struct NetSettingResult: Codable {
    var protocolName: String
    var roundTrip: Double
    var bitsPerSecond: Double
    var link: LinkEmulator.Settings { LinkEmulator.Settings(roundTrip: roundTrip, bitsPerSecond: bitsPerSecond) }
    var limit: Double
    /// The scroll's final screen's limit: warm connections, so one round
    /// trip + its 32 files over the rate + the slowest decode (nil: no scroll run).
    var scrollLimit: Double?
    var runs: [String: [NetRunOutcome]] = [:]  // "cold ours", "scroll peer", "cold curl"
}

struct NetRunOutcome: Codable {
    var result: NetRunResult
    var connections: Int
    var peakConnections = 0
    var bytesDown: Int
    /// Bytes down beyond the files that arrived whole (TLS and HTTP framing included).
    var extraBytes: Int
}

func runNetworkBenchmark(_ options: NetOptions) throws {
    guard NginxServer.isAvailable, which("openssl") != nil, which("curl") != nil else {
        throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "net needs nginx, openssl and curl (apt-get install nginx openssl curl)"])
    }
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("asyncimage-net-\(getpid())")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    try FileManager.default.createDirectory(at: options.output, withIntermediateDirectories: true)

    print("Making the gallery (\(options.items) items) and a certificate ...")
    let gallery = try NetGallery(items: options.items, in: scratch)
    let authority = try makeNetCertificates(in: scratch.appendingPathComponent("tls"))
    let servers = try [
        "h2": NginxServer(root: gallery.root.path, workers: 1, tls: .init(certificate: authority.certificate, key: authority.key, http2: true)),
        "h1": NginxServer(root: gallery.root.path, workers: 1, tls: .init(certificate: authority.certificate, key: authority.key, http2: false)),
    ]
    print("Cold screen: \(gallery.coldBytes / 1000) KB in 32 files; slowest decode \(String(format: "%.1f", gallery.slowestDecode * 1000)) ms")

    var results: [NetSettingResult] = []
    for protocolName in options.protocols {
        guard let server = servers[protocolName] else { continue }
        for rtt in options.roundTrips {
            for rate in options.rates {
                let link = LinkEmulator.Settings(roundTrip: rtt, bitsPerSecond: rate)
                let relay = try LinkEmulator(upstreamPort: UInt16(server.port), settings: link)
                defer { relay.stop() }
                let base = "https://127.0.0.1:\(relay.port)"
                // One round trip for all 32 requests over HTTP/2; ceil(32 / 6) over six HTTP/1.1 connections.
                let requestRoundTrips = protocolName == "h2" ? 1.0 : (32.0 / 6).rounded(.up)
                let limit = 2 * rtt + requestRoundTrips * rtt + Double(gallery.coldBytes * 8) / rate + gallery.slowestDecode
                var setting = NetSettingResult(protocolName: protocolName, roundTrip: rtt, bitsPerSecond: rate, limit: limit)
                print("\n\(protocolName == "h2" ? "HTTP/2" : "HTTP/1.1"), \(link): limit \(ms(limit))")
                for run in 0..<options.runs {
                    for workload in options.workloads {
                        for client in options.clients {
                            if client == "curl" && workload != "cold" { continue }
                            relay.resetCounters()
                            var outcome: NetRunOutcome
                            if client == "curl" {
                                outcome = try runCurlCold(base: base, http2: protocolName == "h2", authority: authority.authority, gallery: gallery, scratch: scratch)
                            } else {
                                var spec = NetRunSpec(client: client, workload: workload, base: base, authority: authority.authority, items: gallery.items)
                                spec.rowsPerSecond = options.rowsPerSecond
                                spec.loads = client == "ours" ? options.loads : nil
                                spec.perHost = client == "ours" ? options.perHost : nil
                                let result = try runNetChild(spec)
                                if workload == "scroll", setting.scrollLimit == nil, !result.finalItems.isEmpty {
                                    let bytes = result.finalItems.reduce(0) { $0 + gallery.sizes["/thumb/\($1).jpg"]! + gallery.sizes["/full/\($1).jpg"]! }
                                    setting.scrollLimit = rtt + Double(bytes * 8) / rate + gallery.slowestDecode
                                }
                                let useful = result.completedURLs.compactMap { URL(string: $0).flatMap { gallery.sizes[$0.path] } }.reduce(0, +)
                                outcome = NetRunOutcome(result: result, connections: 0, bytesDown: 0, extraBytes: -useful)
                            }
                            // Let the last connections close before reading the counters.
                            let settle = now() + 2
                            while relay.openConnections > 0 && now() < settle { usleep(10_000) }
                            let counters = relay.counters
                            outcome.connections = counters.connections
                            outcome.peakConnections = counters.peakConnections
                            outcome.bytesDown = counters.bytesDown
                            outcome.extraBytes += counters.bytesDown
                            setting.runs["\(workload) \(client)", default: []].append(outcome)
                            let r = outcome.result
                            print(
                                "  run \(run + 1) \(workload) \(client): complete \(ms(r.complete)), first paint \(ms(r.firstPaint)), "
                                    + "thumb p50/p95 \(ms(Samples(r.toThumbnail).percentile(0.5)))/\(ms(Samples(r.toThumbnail).percentile(0.95))), "
                                    + "full p50/p95 \(ms(Samples(r.toFull).percentile(0.5)))/\(ms(Samples(r.toFull).percentile(0.95))), "
                                    + "\(outcome.connections) conn (\(outcome.peakConnections) at once), \(outcome.bytesDown / 1000) KB down (\(outcome.extraBytes / 1000) KB extra), "
                                    + "off-screen starts \(r.offscreenStarts), failures \(r.failures)")
                            fflush(nil)  // progress readable as it runs, also into a file
                        }
                    }
                }
                results.append(setting)
            }
        }
    }
    let saved = NetSavedRun(
        results: results, coldBytes: gallery.coldBytes, slowestDecode: gallery.slowestDecode, runs: options.runs,
        items: options.items, rowsPerSecond: options.rowsPerSecond, workloads: options.workloads)
    try writeNetReport(saved, into: options.output)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    try encoder.encode(saved).write(to: options.output.appendingPathComponent("net-results.json"))
}

/// What a `net` run measured, kept as JSON so that its tables and charts
/// can be made again (`net-report DIR`).
struct NetSavedRun: Codable {
    var results: [NetSettingResult]
    var coldBytes: Int
    var slowestDecode: Double
    var runs: Int
    var items: Int
    var rowsPerSecond: Double
    var workloads: [String]
}

/// The tables (net.md, printed) and the charts of a run, in `folder`.
func writeNetReport(_ saved: NetSavedRun, into folder: URL) throws {
    let report = netReport(saved)
    try report.write(to: folder.appendingPathComponent("net.md"), atomically: true, encoding: .utf8)
    print("\n" + report)
    try netCharts(saved.results, into: folder)
}

/// `net-report DIR`: the tables and charts again from DIR/net-results.json.
func rewriteNetReport(folder: URL) throws {
    let decoder = JSONDecoder()
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    let saved = try decoder.decode(NetSavedRun.self, from: Data(contentsOf: folder.appendingPathComponent("net-results.json")))
    try writeNetReport(saved, into: folder)
}

func ms(_ seconds: Double) -> String { seconds.isFinite ? String(format: "%.0f ms", seconds * 1000) : "-" }

/// A CA and a certificate for 127.0.0.1 made with `openssl` (as the tests' TLS servers do).
func makeNetCertificates(in folder: URL) throws -> (authority: String, certificate: String, key: String) {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let script = """
        set -e
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem -days 2 \
          -subj "/CN=AsyncImageKit bench CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1
        printf 'subjectAltName=IP:127.0.0.1\\nbasicConstraints=critical,CA:FALSE\\nkeyUsage=critical,digitalSignature\\nextendedKeyUsage=serverAuth\\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -set_serial 1 -days 2 -extfile server.ext -out server.pem
        """
    let made = try ProcessRun.run(
        URL(fileURLWithPath: "/bin/sh"), ["-c", script], directory: folder, output: .discarded, timeLimit: 120)
    guard made.status == 0 else { throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "openssl failed"]) }
    return (folder.appendingPathComponent("ca.pem").path, folder.appendingPathComponent("server.pem").path, folder.appendingPathComponent("server.key").path)
}

/// Runs `net-one` for `spec` in a child process and reads its result.
///
/// The peer (URLSession) trusts only the system's certificate store (on
/// Linux, FoundationNetworking has no setting for another), so its child
/// runs in a mount namespace of its own where the test CA is bind-mounted
/// over the system bundle (`unshare -m`, as root): the machine's store is
/// untouched.
func runNetChild(_ spec: NetRunSpec) throws -> NetRunResult {
    let json = String(decoding: try JSONEncoder().encode(spec), as: UTF8.self)
    var launcher: [String] = []
    if spec.client == "peer" {
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        launcher = ["/usr/bin/unshare", "-m", "/bin/sh", "-c", "mount --bind \"$0\" \(bundle) && exec \"$@\"", spec.authority]
    }
    let payload = try BenchChild.result(["net-one", json], tag: "RESULT", launcher: launcher)
    do {
        return try JSONDecoder().decode(NetRunResult.self, from: Data(payload.utf8))
    } catch {
        throw BenchError("net-one \(spec.client) \(spec.workload) printed an unreadable result: \(error)")
    }
}

/// `curl --parallel` fetching the cold screen's 32 URLs (thumbnails first, as
/// the cells ask), its time plus the decode term (curl decodes nothing).
func runCurlCold(base: String, http2: Bool, authority: String, gallery: NetGallery, scratch: URL) throws -> NetRunOutcome {
    let config = scratch.appendingPathComponent("curl-net.config")
    var lines: [String] = []
    for item in 0..<16 {
        for path in ["/thumb/\(item).jpg", "/full/\(item).jpg"] { lines.append("url = \"\(base)\(path)\"\noutput = \"/dev/null\"") }
    }
    try lines.joined(separator: "\n").write(to: config, atomically: true, encoding: .utf8)
    // curl 7.88 draws its --parallel progress meter even with --silent: its stderr goes to a file.
    let errors = scratch.appendingPathComponent("curl-net.stderr")
    var argv = [
        which("curl")!, "--silent", "--show-error", "--fail", "--stderr", errors.path, "--cacert", authority, "--parallel",
        "--config", config.path,
    ]
    argv += http2 ? ["--http2", "--parallel-max", "32"] : ["--http1.1", "--parallel-max", "6"]
    let start = now()
    let run = try ProcessRun.run(
        URL(fileURLWithPath: argv[0]), Array(argv.dropFirst()), output: .discarded, errors: .passedThrough)
    let seconds = now() - start + gallery.slowestDecode
    let ok = run.status == 0
    let result = NetRunResult(
        complete: ok ? seconds : .nan, firstPaint: .nan, toThumbnail: [], toFull: [], appearances: 16,
        failures: ok ? 0 : 1, offscreenStarts: 0, completedURLs: [], peakRSS: 0)
    return NetRunOutcome(result: result, connections: 0, bytesDown: 0, extraBytes: -gallery.coldBytes)
}

/// The tables: per protocol and link, the cold screen against the limit and
/// curl, and the scroll against the peer.
func netReport(_ saved: NetSavedRun) -> String {
    let results = saved.results
    func med(_ outcomes: [NetRunOutcome]?, _ value: (NetRunOutcome) -> Double) -> Double {
        guard let outcomes, !outcomes.isEmpty else { return .nan }
        return Samples(outcomes.map(value)).median
    }
    func whole(_ value: Double) -> String { value.isFinite ? String(Int(value.rounded())) : "-" }
    func seconds(_ value: Double) -> String { value.isFinite ? String(format: "%.2f", value) : "-" }
    func ratio(_ a: Double, _ b: Double) -> String { a.isFinite && b.isFinite && b > 0 ? String(format: "%.2fx", a / b) : "-" }
    var text = "Cold screen (16 thumbnails, then their full images; \(saved.coldBytes / 1000) KB), seconds to the last full image, median of \(saved.runs):\n\n"
    var cold = ResultTable(
        title: "",
        header: [
            "protocol", "link", "limit", "AsyncImageKit", "vs limit", "curl --parallel", "vs curl", "URLSession",
            "first paint (ours / peer)", "connections (ours / peer / curl)", "extra KB (ours / peer)",
        ])
    for setting in results {
        let ours = med(setting.runs["cold ours"]) { $0.result.complete }
        let curl = med(setting.runs["cold curl"]) { $0.result.complete }
        let peer = med(setting.runs["cold peer"]) { $0.result.complete }
        let paintOurs = med(setting.runs["cold ours"]) { $0.result.firstPaint }
        let paintPeer = med(setting.runs["cold peer"]) { $0.result.firstPaint }
        let conns = ["cold ours", "cold peer", "cold curl"].map { key in med(setting.runs[key]) { Double($0.connections) } }
        let extra = ["cold ours", "cold peer"].map { key in med(setting.runs[key]) { Double($0.extraBytes) / 1000 } }
        cold.add([
            setting.protocolName == "h2" ? "HTTP/2" : "HTTP/1.1", "\(setting.link)", seconds(setting.limit), seconds(ours),
            ratio(ours, setting.limit), seconds(curl), ratio(ours, curl), seconds(peer),
            "\(seconds(paintOurs)) / \(seconds(paintPeer))", conns.map(whole).joined(separator: " / "),
            extra.map(whole).joined(separator: " / "),
        ])
    }
    text += cold.markdown
    if saved.workloads.contains("scroll") {
        text += "\nScroll (\(saved.items) items, 16 cells, \(Int(saved.rowsPerSecond)) rows/s, then back one screen): seconds from the scroll's stop to the final screen complete; per cell appearance, time to its first and its full image (p50/p95, shown ones), median of \(saved.runs):\n\n"
        var scroll = ResultTable(
            title: "",
            header: [
                "protocol", "link", "limit", "AsyncImageKit", "URLSession", "vs peer", "ours vs limit", "peer vs limit",
                "thumb p50/p95 (ours)", "thumb p50/p95 (peer)", "full p50/p95 (ours)", "full p50/p95 (peer)",
                "off-screen starts (ours)", "connections (ours / peer)", "MB down (ours / peer)",
                "MB of cancelled transfers (ours / peer)",
            ])
        for setting in results {
            let ours = setting.runs["scroll ours"]
            let peer = setting.runs["scroll peer"]
            func pp(_ outcomes: [NetRunOutcome]?, _ values: (NetRunResult) -> [Double]) -> String {
                "\(seconds(med(outcomes) { Samples(values($0.result)).percentile(0.5) })) / \(seconds(med(outcomes) { Samples(values($0.result)).percentile(0.95) }))"
            }
            let (oursComplete, peerComplete) = (med(ours) { $0.result.complete }, med(peer) { $0.result.complete })
            func mb(_ outcomes: [NetRunOutcome]?, _ value: (NetRunOutcome) -> Int) -> String {
                let megabytes = med(outcomes) { Double(value($0)) / 1e6 }
                return megabytes.isFinite ? String(format: "%.1f", megabytes) : "-"
            }
            let limit = setting.scrollLimit ?? .nan
            scroll.add([
                setting.protocolName == "h2" ? "HTTP/2" : "HTTP/1.1", "\(setting.link)", seconds(limit), seconds(oursComplete),
                seconds(peerComplete), ratio(oursComplete, peerComplete), ratio(oursComplete, limit), ratio(peerComplete, limit),
                pp(ours, \.toThumbnail), pp(peer, \.toThumbnail), pp(ours, \.toFull), pp(peer, \.toFull),
                whole(med(ours) { Double($0.result.offscreenStarts) }),
                "\(whole(med(ours) { Double($0.connections) })) / \(whole(med(peer) { Double($0.connections) }))",
                "\(mb(ours, \.bytesDown)) / \(mb(peer, \.bytesDown))", "\(mb(ours, \.extraBytes)) / \(mb(peer, \.extraBytes))",
            ])
        }
        text += scroll.markdown
    }
    return text
}

/// A bar chart per link setting: the cold screen's contestants and the limit, both protocols.
func netCharts(_ results: [NetSettingResult], into folder: URL) throws {
    var byLink: [LinkEmulator.Settings: [NetSettingResult]] = [:]
    for setting in results { byLink[setting.link, default: []].append(setting) }
    for (link, settings) in byLink {
        var groups: [(name: String, bars: [BarChart.Bar])] = []
        for setting in settings.sorted(by: { $0.protocolName > $1.protocolName }) {
            let name = setting.protocolName == "h2" ? "HTTP/2" : "HTTP/1.1"
            var bars = [BarChart.Bar(label: "limit", value: Samples([setting.limit * 1000]), color: 6)]
            for (index, key) in ["cold ours", "cold curl", "cold peer", "scroll ours", "scroll peer"].enumerated() {
                guard let outcomes = setting.runs[key], !outcomes.isEmpty else { continue }
                let values = outcomes.map { $0.result.complete * 1000 }.filter(\.isFinite)
                guard !values.isEmpty else { continue }
                let label = key.replacingOccurrences(of: "ours", with: "AsyncImageKit").replacingOccurrences(of: "peer", with: "URLSession")
                bars.append(BarChart.Bar(label: label, value: Samples(values), color: index))
            }
            groups.append((name, bars))
        }
        let chart = BarChart(title: "Cold screen and scroll's final screen, \(link)", unit: "ms", groups: groups)
        let name = "net-\(Int(link.roundTrip * 1000))ms-\(Int((link.bitsPerSecond ?? 0) / 1e6))mbit.png"
        try chart.canvas().writePNG(to: folder.appendingPathComponent(name))
    }
}
