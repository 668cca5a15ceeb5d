import AsyncImageKit
import DemoSupport
import Foundation
import ImageFixtures

/// The pictures the demo writes.
enum Pictures {
    static let background = RGBA(r: 24, g: 26, b: 30)
    static let labelColor = RGBA(r: 230, g: 230, b: 230)
    static let queuedColor = RGBA(r: 95, g: 95, b: 105)
    static let loadingColor = RGBA(r: 60, g: 130, b: 230)
    static let decodingColor = RGBA(r: 240, g: 160, b: 40)
    static let loadedColor = RGBA(r: 70, g: 200, b: 100)
    static let failedColor = RGBA(r: 230, g: 60, b: 60)
    static let cancelledColor = RGBA(r: 150, g: 150, b: 150)
    static let cacheColor = RGBA(r: 190, g: 110, b: 230)

    static func placeholder(_ size: PixelSize) -> Image {
        var canvas = Canvas(width: size.width, height: size.height, background: RGBA(r: 60, g: 62, b: 68))
        canvas.fill(x: size.width / 2 - 12, y: size.height / 2 - 2, width: 24, height: 4, color: RGBA(r: 90, g: 92, b: 98))
        return canvas.image
    }

    static func failureImage(_ size: PixelSize) -> Image {
        var canvas = Canvas(width: size.width, height: size.height, background: RGBA(r: 90, g: 30, b: 34))
        for i in 0..<min(size.width, size.height) {
            let x = (size.width - size.height) / 2 + i
            canvas.fill(x: x - 1, y: i, width: 3, height: 1, color: failedColor)
            canvas.fill(x: size.width - 1 - x - 1, y: i, width: 3, height: 1, color: failedColor)
        }
        return canvas.image
    }

    /// The final screen: each cell's picture (or placeholder or failure image),
    /// framed by its state, with its item number and state below.
    static func contactSheet(_ screen: Screen) -> Canvas {
        let cell = DemoRun.cellSize
        let pad = 8
        let label = 18
        var canvas = Canvas(
            width: screen.columns * (cell.width + pad) + pad, height: screen.rows * (cell.height + label + pad) + pad,
            background: background)
        for (position, entry) in screen.ordered.enumerated() {
            let x = pad + (position % screen.columns) * (cell.width + pad)
            let y = pad + (position / screen.columns) * (cell.height + label + pad)
            let (color, word): (RGBA, String)
            switch entry.cell.state {
            case .loaded: (color, word) = (loadedColor, "OK")
            case .failed: (color, word) = (failedColor, "FAILED")
            case .loading: (color, word) = (entry.cell.image == nil ? queuedColor : loadingColor, entry.cell.image == nil ? "LOADING" : "THUMB")
            case .empty: (color, word) = (queuedColor, "EMPTY")
            }
            canvas.fill(x: x - 2, y: y - 2, width: cell.width + 4, height: cell.height + 4, color: color)
            if let image = entry.cell.displayedImage {
                // An animation shows its first frame, labelled with its frame count.
                canvas.draw(image, x: x, y: y, width: cell.width, height: cell.height)
                if let label = frameLabel(image) { drawFrameLabel(label, on: &canvas, x: x, y: y) }
            }
            let kind = entry.item.map { $0.kind == .photo ? "JPG" : $0.kind.rawValue.uppercased() } ?? ""
            let text = "#\(entry.item?.index ?? -1) \(kind) \(word)"
            canvas.text(text, x: x, y: y + cell.height + 5, scale: 2, color: color == queuedColor ? labelColor : color)
        }
        return canvas
    }

    /// The frame-count label of an animated picture ("8F"), nil for a still one.
    static func frameLabel(_ image: Image) -> String? {
        image.isAnimated ? "\(image.frames.count)F" : nil
    }

    /// Where a cell's frame-count label goes: its text starts `frameLabelInset`
    /// px right of and below the cell's top-left corner, on a dark box.
    static let frameLabelInset = 5

    static func drawFrameLabel(_ label: String, on canvas: inout Canvas, x: Int, y: Int) {
        let inset = frameLabelInset
        canvas.fill(
            x: x + inset - 3, y: y + inset - 3, width: Canvas.textWidth(label) + 6, height: 5 * 2 + 6,
            color: RGBA(r: 0, g: 0, b: 0, a: 170))
        canvas.text(label, x: x + inset, y: y + inset, scale: 2, color: labelColor)
    }

    /// The playback row of crossfade.png: the first animated cell on screen
    /// (its position in screen order) and the times it is drawn at: 0.04 s,
    /// then every 0.24 s, so that with the gallery's 80 ms frames each step
    /// lands mid-frame on another frame (0, 3, 6, 1, 4), the first two
    /// inside the crossfade.
    static func playback(_ screen: Screen) -> (position: Int, cell: AsyncImageView, image: Image, times: [Double])? {
        for (position, entry) in screen.ordered.enumerated() {
            if case .loaded = entry.cell.state, let image = entry.cell.displayedImage, image.isAnimated {
                return (position, entry.cell, image, (0..<5).map { 0.04 + Double($0) * 0.24 })
            }
        }
        return nil
    }

    /// Every request over time, one row each in the order they were made:
    /// queued (grey), transferring (blue), decoding (orange), then a mark for
    /// the outcome (green loaded, red failed, light grey cancelled, violet
    /// cache hit). The strip on top counts transfers in flight against the cap;
    /// the line under it, per-target order (thumbnail, then full image).
    static func timeline(_ requests: [Recorder.Request], cap: Int, scrollStopped: Double) -> Canvas {
        let left = 10
        let plot = 1000
        let top = 124
        let shown = Array(requests.prefix(3000))
        let rowHeight = max(1, min(6, 900 / max(1, shown.count)))
        let legendHeight = 40
        let height = top + shown.count * rowHeight + legendHeight + 20
        var canvas = Canvas(width: left * 2 + plot, height: height, background: background)
        let end = max(0.001, shown.compactMap { $0.finished ?? $0.decoding ?? $0.loading ?? $0.queued }.max() ?? 1)
        func x(_ t: Double) -> Int { left + Int(Double(plot) * min(1, max(0, t / end))) }

        // Seconds.
        var second = 0.0
        while second <= end {
            canvas.fill(x: x(second), y: top - 6, width: 1, height: height - top - legendHeight, color: RGBA(r: 45, g: 48, b: 55))
            canvas.text("\(Int(second))S", x: x(second) + 2, y: top - 14, scale: 1, color: labelColor)
            second += 1
        }
        canvas.fill(x: x(scrollStopped), y: 12, width: 1, height: height - 12 - legendHeight, color: RGBA(r: 255, g: 255, b: 255, a: 120))
        let stopLabel = "SCROLL STOPS"
        let labelX = x(scrollStopped) + 3 + Canvas.textWidth(stopLabel, scale: 1) < left + plot
            ? x(scrollStopped) + 3 : x(scrollStopped) - 3 - Canvas.textWidth(stopLabel, scale: 1)
        canvas.text(stopLabel, x: labelX, y: 12, scale: 1, color: labelColor)

        // Transfers in flight (from start to body, or to failure or cancel), against the cap.
        let stripTop = 24
        let stripHeight = 70
        let unit = max(1, stripHeight / max(1, cap + 1))
        let spans = Recorder.transferSpans(shown)
        for px in 0..<plot {
            let t = Double(px) / Double(plot) * end
            let count = Recorder.transfersInFlight(spans, at: t)
            canvas.fill(x: left + px, y: stripTop + stripHeight - count * unit, width: 1, height: count * unit, color: loadingColor)
        }
        canvas.fill(x: left, y: stripTop + stripHeight - cap * unit, width: plot, height: 1, color: failedColor)
        canvas.text("TRANSFERS IN FLIGHT (RED LINE = CAP \(cap))", x: left + 4, y: stripTop + 2, scale: 1, color: labelColor)

        // Per-target order, over the cells that asked for a thumbnail and then the full image.
        let pairs = Report.pairs(requests)
        let started = pairs.filter { $0.thumbnail.loading != nil && $0.full.loading != nil }
        let delivered = pairs.filter { ["loaded", "cache"].contains($0.thumbnail.outcome) && ["loaded", "cache"].contains($0.full.outcome) }
        let order = "THUMBNAIL THEN FULL: \(started.count { $0.thumbnail.loading! <= $0.full.loading! }) OF \(started.count) CELLS"
            + " THAT STARTED BOTH STARTED THE THUMBNAIL FIRST, \(delivered.count { $0.thumbnail.finished! <= $0.full.finished! })"
            + " OF \(delivered.count) THAT GOT BOTH GOT IT FIRST"
        canvas.text(order, x: left + 4, y: stripTop + stripHeight + 6, scale: 1, color: labelColor)

        for (row, request) in shown.enumerated() {
            let y = top + row * rowHeight
            let h = max(1, rowHeight - (rowHeight > 2 ? 1 : 0))
            guard let queued = request.queued else { continue }
            let loading = request.loading
            let decoding = request.decoding
            let finished = request.finished ?? end
            let loadStart = loading ?? decoding ?? finished
            canvas.fill(x: x(queued), y: y, width: max(1, x(loadStart) - x(queued)), height: h, color: queuedColor)
            if let loading {
                let stop = decoding ?? finished
                canvas.fill(x: x(loading), y: y, width: max(1, x(stop) - x(loading)), height: h, color: loadingColor)
            }
            if let decoding {
                canvas.fill(x: x(decoding), y: y, width: max(1, x(finished) - x(decoding)), height: h, color: decodingColor)
            }
            let mark: RGBA
            switch request.outcome {
            case "loaded": mark = loadedColor
            case "failed": mark = failedColor
            case "cache": mark = cacheColor
            case "cancelled": mark = cancelledColor
            default: mark = labelColor
            }
            canvas.fill(x: x(finished), y: y, width: 3, height: h, color: mark)
        }

        // Legend.
        let legendY = height - legendHeight
        var lx = left
        for (name, color) in [
            ("QUEUED", queuedColor), ("TRANSFER", loadingColor), ("DECODE", decodingColor), ("LOADED", loadedColor),
            ("FAILED", failedColor), ("CANCELLED", cancelledColor), ("CACHE HIT", cacheColor),
        ] {
            canvas.fill(x: lx, y: legendY + 10, width: 12, height: 12, color: color)
            canvas.text(name, x: lx + 16, y: legendY + 11, scale: 2, color: labelColor)
            lx += 16 + Canvas.textWidth(name) + 18
        }
        return canvas
    }

    /// One cell's crossfade from its old picture to its new one, in five
    /// steps; then, when the screen shows an animated picture, a second row:
    /// its playback (through its own crossfade), labelled with the time and
    /// the frame shown.
    static func crossfade(_ screen: Screen) -> Canvas {
        let cell = DemoRun.cellSize
        let view =
            screen.ordered.first { if case .loaded = $0.cell.state { return $0.item?.thumbnail != nil } else { return false } }?.cell
            ?? screen.ordered.first { if case .loaded = $0.cell.state { return true } else { return false } }?.cell
            ?? screen.cells[0]
        let steps = 5
        let pad = 8
        let label = 18
        let animated = playback(screen)
        let rows = animated == nil ? 1 : 2
        var canvas = Canvas(
            width: steps * (cell.width + pad) + pad, height: rows * (cell.height + label + pad) + pad, background: background)
        let duration = view.crossfadeDuration
        for step in 0..<steps {
            let t = duration * Double(step) / Double(steps - 1)
            let x = pad + step * (cell.width + pad)
            if let frame = view.displayedImage(at: t) {
                canvas.draw(frame, x: x, y: pad, width: cell.width, height: cell.height)
            }
            canvas.text(String(format: "T=%.1fS", t), x: x, y: pad + cell.height + 5, scale: 2, color: labelColor)
        }
        if let animated {
            let y = pad + cell.height + label + pad
            for (step, t) in animated.times.enumerated() {
                let x = pad + step * (cell.width + pad)
                if let frame = animated.cell.displayedImage(at: t) {
                    canvas.draw(frame, x: x, y: y, width: cell.width, height: cell.height)
                }
                let text = String(format: "T=%.2fS F%d", t, animated.image.frameIndex(at: t))
                canvas.text(text, x: x, y: y + cell.height + 5, scale: 2, color: labelColor)
            }
        }
        return canvas
    }
}
