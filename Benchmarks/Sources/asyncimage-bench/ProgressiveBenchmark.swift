import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

// asyncimage-bench progressive [--count N] [--mbps M]: progressive JPEG photos (12 MP)
// loaded at 256x256 through two loaders in one run, taking turns: one that
// ends a transfer at the DC coefficients (the default), one that reads every
// file whole (`endsTransfersAtDCScans = false`). Bytes transferred, images
// per second, CPU per image, and the PSNR of the early-ended images against
// decodes of the whole files. Served from an in-process loopback server
// that sends each body at M megabits per second (default 100: a fast
// network; loopback itself delivers a whole file before a transfer could be
// stopped, which measures nothing a user sees).

func runProgressiveBenchmark(count: Int, mbps: Double) throws {
    let folder = URL(fileURLWithPath: "bench-output/progressive-set")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    var bodies: [Data] = []
    for index in 0..<count {
        let file = folder.appendingPathComponent("photo-\(index).jpg")
        if let data = try? Data(contentsOf: file) {
            bodies.append(data)
            continue
        }
        let (w, h) = index % 2 == 0 ? (4000, 3000) : (3000, 4000)
        let data = try JPEGEncoder(quality: 90, progressive: true).encode(
            SyntheticImage.photo(width: w, height: h, seed: UInt64(index + 100)))
        try data.write(to: file)
        bodies.append(data)
    }
    let total = bodies.reduce(0) { $0 + $1.count }
    let files = bodies
    let rate = mbps
    let server = try LoopbackServer { request, connection in
        guard let index = Int(request.path.dropFirst().split(separator: ".").first ?? ""), index < files.count else {
            return connection.respond(status: 404, body: Data())
        }
        // The head, then the body in 16 KB pieces at the link's rate.
        let body = files[index]
        guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nContent-Type: image/jpeg\r\n\r\n") else { return }
        let piece = 16 * 1024
        let secondsPerPiece = Double(piece * 8) / (rate * 1e6)
        var offset = 0
        let start = now()
        while offset < body.count {
            let end = min(body.count, offset + piece)
            guard connection.write(body.subdata(in: offset..<end)) else { return }  // the client stopped it
            offset = end
            let due = start + Double(offset / piece) * secondsPerPiece
            let wait = due - now()
            if wait > 0 { usleep(UInt32(wait * 1e6)) }
        }
    }
    defer { server.stop() }
    let urls = (0..<count).map { server.url("/\($0).jpg") }
    let target = PixelSize(width: 256, height: 256)
    print("progressive: \(count) progressive 12-MP JPEGs (\(total / 1_000_000) MB) at 256x256, 2 loads, \(Int(mbps)) Mbit/s per transfer, 3 rounds, loaders alternating")

    func pass(endsEarly: Bool) -> (rate: Double, cpu: Double, bytes: Int, images: [Image]) {
        var configuration = AsyncImageLoader.Configuration(cache: nil, deliveryQueue: DispatchQueue(label: "bench"))
        configuration.endsTransfersAtDCScans = endsEarly
        let loader = AsyncImageLoader(configuration: configuration)
        let received = Locked(0)
        let images = Locked([Int: Image]())
        let done = DispatchGroup()
        let (start, cpu) = (now(), cpuSeconds())
        for (index, url) in urls.enumerated() {
            done.enter()
            loader.loadImage(
                ImageRequest(url: url, targetSize: target), target: nil,
                success: ImageAction("bench", response: { _, response in
                    received.withLock { $0 += response.earlyEnd?.receivedBytes ?? files[index].count }
                    images.withLock { $0[index] = response.image }
                    done.leave()
                }),
                failure: ImageFailureAction("bench") { _, error, _ in
                    print("  failure: \(error)")
                    done.leave()
                })
        }
        done.wait()
        let seconds = now() - start
        let perImage = (cpuSeconds() - cpu) * 1000 / Double(count)
        let all = images.withLock { dict in (0..<count).compactMap { dict[$0] } }
        return (Double(count) / seconds, perImage, received.withLock { $0 }, all)
    }

    var early: [(rate: Double, cpu: Double, bytes: Int, images: [Image])] = []
    var whole: [(rate: Double, cpu: Double, bytes: Int, images: [Image])] = []
    for _ in 0..<3 {
        whole.append(pass(endsEarly: false))
        early.append(pass(endsEarly: true))
    }
    print("loader                          images/s  CPU ms/image   MB transferred")
    for (name, runs) in [("whole files", whole), ("ends at the DC scans", early)] {
        let padded = name.padding(toLength: 30, withPad: " ", startingAt: 0)
        print(padded + String(format: " %9.1f %13.2f %16.1f", Samples(runs.map(\.rate)).median, Samples(runs.map(\.cpu)).median,
                              Double(runs[0].bytes) / 1e6))
    }
    // Quality: each early image against the same file decoded whole.
    var worst = Double.infinity
    for (a, b) in zip(early[0].images, whole[0].images) where a.size == b.size {
        var squared = 0.0
        a.pixels.withUnsafeBytes { pa in
            b.pixels.withUnsafeBytes { pb in
                for i in stride(from: 0, to: min(pa.count, pb.count), by: 1) where i % 4 != 3 {
                    let d = Double(pa[i]) - Double(pb[i])
                    squared += d * d
                }
            }
        }
        let mse = squared / Double(a.width * a.height * 3)
        worst = min(worst, mse == 0 ? .infinity : 10 * log10(255 * 255 / mse))
    }
    print(String(format: "bytes saved: %.1f%%; images/s %.2fx, CPU per image %.2fx less; worst PSNR against the whole file %.1f dB",
                 100 * (1 - Double(early[0].bytes) / Double(whole[0].bytes)),
                 Samples(early.map(\.rate)).median / Samples(whole.map(\.rate)).median, Samples(whole.map(\.cpu)).median / Samples(early.map(\.cpu)).median,
                 worst))
}
