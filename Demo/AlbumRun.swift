import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP

/// `asyncimage-demo album`: a user paging through a photo album
/// (`PhotoAlbum`, Nimbus' data source) over the generated gallery's photos:
/// on each page it asks `photo(at:)` (an answer at once, from memory), then
/// watches the page's best image improve (thumbnail, the original's size
/// from its header, the original) until the original is in or the page's
/// time is up, then turns the page (`stopLoading` for the page left behind).
/// Writes `album.png` (one row per page: what the page showed over time)
/// and `album.json`. Then a progressive JPEG of the album, sent at about
/// 5 Mbit/s, loaded with previews: `progressive.png` shows each preview and
/// the final image.
struct AlbumRun {
    struct Step: Codable {
        /// Seconds since the page was opened.
        let time: Double
        /// "none", "thumbnail" or "original".
        let sizeClass: String
        let width: Int?
        let height: Int?
        /// The original's size, once known ("WxH").
        let originalSize: String?
    }

    struct Page: Codable {
        let index: Int
        let steps: [Step]
    }

    struct Report: Codable {
        let photos: Int
        let pages: [Page]
        /// Pages whose original came after a thumbnail was shown.
        let thumbnailFirst: Int
        /// Pages whose original's size was known before its pixels.
        let sizeBeforePixels: Int
        /// Previews of the progressive photo shown before its final image.
        let previews: Int
        let files: [String]
    }

    let photos: Int
    let output: String
    let latency: Int
    let json: Bool

    func run() throws {
        let gallery = try Gallery(count: max(20, photos * 20 / 15 + 20), seed: 3, latency: latency)
        defer { gallery.stop() }
        let items = gallery.items.filter { $0.kind == .photo }.prefix(photos)
        let delivery = DispatchQueue(label: "album delivery")
        let loader = AsyncImageLoader(
            configuration: .init(cache: ImageCache(), concurrentLoads: 2, deliveryQueue: delivery))
        let album = PhotoAlbum(
            photos: items.map { PhotoAlbum.Photo(thumbnailURL: $0.thumbnail!, originalURL: $0.full) },
            thumbnailSize: PixelSize(width: 120, height: 90), originalDisplaySize: PixelSize(width: 480, height: 360),
            loader: loader)
        var pages: [Page] = []
        var shown: [[Image?]] = []
        for index in album.photos.indices {
            let opened = ProcessInfo.processInfo.systemUptime
            let steps = Locked<[(Step, Image?)]>([])
            let done = DispatchSemaphore(value: 0)
            @Sendable func record(_ state: PhotoAlbum.PhotoState) {
                let step = Step(
                    time: ProcessInfo.processInfo.systemUptime - opened, sizeClass: "\(state.sizeClass)",
                    width: state.image?.width, height: state.image?.height,
                    originalSize: state.originalSize.map { "\($0.width)x\($0.height)" })
                steps.withLock { $0.append((step, state.image)) }
                if state.sizeClass == .original { done.signal() }
            }
            album.onChange = { state in if state.index == index { record(state) } }
            let first = album.photo(at: index)
            record(first)
            _ = done.wait(timeout: .now() + 10)
            album.onChange = nil
            if index > 0 { album.stopLoading(at: index - 1) }
            let taken = steps.withLock { $0 }
            pages.append(Page(index: index, steps: taken.map(\.0)))
            shown.append(taken.map(\.1))
        }
        delivery.sync {}
        // Let the prefetches still running finish (previews are skipped while
        // every decoder is busy), then the progressive photo.
        for index in album.photos.indices { album.stopLoading(at: index) }
        let deadline = ProcessInfo.processInfo.systemUptime + 30
        while ProcessInfo.processInfo.systemUptime < deadline {
            let activity = loader.activity
            if activity.pendingRequests == 0 && activity.inFlight == 0 && activity.decoding == 0 { break }
            Thread.sleep(forTimeInterval: 0.01)
        }

        let folder = URL(fileURLWithPath: output)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let picture = folder.appendingPathComponent("album.png")
        let reportFile = folder.appendingPathComponent("album.json")
        try Self.picture(pages, shown).writePNG(to: picture)
        let strip = folder.appendingPathComponent("progressive.png")
        let (previews, final) = try Self.progressive(loader: loader)
        try Self.strip(previews, final).writePNG(to: strip)
        let thumbnailFirst = pages.count { page in
            guard let thumb = page.steps.firstIndex(where: { $0.sizeClass == "thumbnail" }),
                let original = page.steps.firstIndex(where: { $0.sizeClass == "original" })
            else { return false }
            return thumb < original
        }
        let sizeBeforePixels = pages.count { page in
            page.steps.contains { $0.sizeClass != "original" && $0.originalSize != nil }
        }
        let report = Report(
            photos: pages.count, pages: pages, thumbnailFirst: thumbnailFirst, sizeBeforePixels: sizeBeforePixels,
            previews: previews.count, files: [picture.path, strip.path, reportFile.path])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(report)
        try data.write(to: reportFile)
        if json {
            FileHandle.standardOutput.write(data)
            print()
        } else {
            print("album: \(pages.count) pages; thumbnail before original on \(thumbnailFirst); original's size known before its pixels on \(sizeBeforePixels); \(previews.count) progressive previews before the final image")
            for file in report.files { print("  wrote \(file)") }
        }
    }

    /// One row per page, one cell per step: the image the page showed then
    /// (drawn to cover the cell), labelled with the time, the class and the
    /// original's size when known.
    static func picture(_ pages: [Page], _ shown: [[Image?]]) -> Canvas {
        let (cellW, cellH, gap, label) = (160, 120, 8, 18)
        let columns = max(1, pages.map(\.steps.count).max() ?? 1)
        var canvas = Canvas(
            width: gap + columns * (cellW + gap), height: gap + pages.count * (cellH + label + gap),
            background: RGBA(r: 24, g: 24, b: 28))
        for (row, page) in pages.enumerated() {
            for (column, step) in page.steps.enumerated() {
                let x = gap + column * (cellW + gap)
                let y = gap + row * (cellH + label + gap)
                canvas.fill(x: x, y: y, width: cellW, height: cellH, color: RGBA(r: 60, g: 60, b: 66))
                if let image = shown[row][column] { canvas.draw(image, x: x, y: y, width: cellW, height: cellH) }
                let tag = step.sizeClass == "original" ? "ORIG" : step.sizeClass == "thumbnail" ? "THUMB" : "NONE"
                canvas.text(String(format: "%.2fS %@", step.time, tag), x: x, y: y + cellH + 2, scale: 1,
                            color: RGBA(r: 220, g: 220, b: 220))
                if let size = step.originalSize {
                    canvas.text(size.uppercased(), x: x, y: y + cellH + 9, scale: 1, color: RGBA(r: 255, g: 200, b: 0))
                }
            }
        }
        return canvas
    }

    /// A progressive 1600x1200 photo sent at about 5 Mbit/s, loaded at
    /// 480x360 with previews: the previews (in order) and the final image.
    /// The server pauses at 40% of the file until the first preview is shown
    /// (at most 10 s), so the strip has one on any machine, however slow.
    static func progressive(loader: AsyncImageLoader) throws -> (previews: [Image], final: Image?) {
        let body = try JPEGEncoder(quality: 90, progressive: true).encode(
            SyntheticImage.photo(width: 1600, height: 1200, seed: 21))
        let firstPreview = DispatchSemaphore(value: 0)
        let server = try LoopbackServer { _, connection in
            guard connection.write("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nContent-Type: image/jpeg\r\n\r\n")
            else { return }
            let piece = 8 * 1024
            var offset = 0
            var paused = false
            while offset < body.count {
                if !paused, offset >= body.count * 2 / 5 {
                    paused = true
                    _ = firstPreview.wait(timeout: .now() + 10)
                }
                let end = min(body.count, offset + piece)
                guard connection.write(body.subdata(in: offset..<end)) else { return }
                offset = end
                usleep(12_000)  // 8 KB every 12 ms: about 5 Mbit/s
            }
        }
        defer { server.stop() }
        var request = ImageRequest(url: server.url("/progressive.jpg"), targetSize: PixelSize(width: 480, height: 360))
        request.wantsPreviews = true
        let previews = Locked<[Image]>([])
        let final = Locked<Image?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = loader.loadImage(
            request, success: ImageAction("final") { _, image, _ in
                final.withLock { $0 = image }
                done.signal()
            },
            failure: ImageFailureAction("final") { _, _, _ in done.signal() })
        task.onPreview { image in
            let first = previews.withLock { list -> Bool in
                list.append(image)
                return list.count == 1
            }
            if first { firstPreview.signal() }
        }
        _ = done.wait(timeout: .now() + 30)
        return (previews.withLock { $0 }, final.withLock { $0 })
    }

    /// The previews, then the final image, side by side.
    static func strip(_ previews: [Image], _ final: Image?) -> Canvas {
        let (cellW, cellH, gap, label) = (240, 180, 8, 12)
        let cells: [(String, Image?)] = previews.enumerated().map { ("PREVIEW \($0 + 1)", $1) } + [("FINAL", final)]
        var canvas = Canvas(
            width: gap + cells.count * (cellW + gap), height: gap + cellH + label + gap, background: RGBA(r: 24, g: 24, b: 28))
        for (index, cell) in cells.enumerated() {
            let x = gap + index * (cellW + gap)
            canvas.fill(x: x, y: gap, width: cellW, height: cellH, color: RGBA(r: 60, g: 60, b: 66))
            if let image = cell.1 { canvas.draw(image, x: x, y: gap, width: cellW, height: cellH) }
            canvas.text(cell.0, x: x, y: gap + cellH + 3, scale: 1, color: RGBA(r: 220, g: 220, b: 220))
        }
        return canvas
    }
}
