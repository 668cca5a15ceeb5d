import AsyncImageKit
import BenchmarkSupport
import Foundation
import ImageFixtures

/// The soak's picture: RSS, open descriptors and loads in flight against
/// time, one panel each, with labelled axes (the demo's 3x5 font).
struct SoakPlot {
    let samples: [SoakSample]
    let cap: Int
    let title: String

    private static let width = 1000
    private static let left = 90
    private static let right = 30
    private static let panelHeight = 170
    private static let gap = 60
    private static let top = 50
    private static let background = RGBA(r: 255, g: 255, b: 255)
    private static let ink = RGBA(r: 40, g: 40, b: 40)
    private static let grid = RGBA(r: 225, g: 225, b: 225)

    func canvas() -> Canvas {
        let panels: [(name: String, unit: String, color: RGBA, values: [Double], limit: Double?)] = [
            ("RSS", "MB", RGBA(r: 200, g: 60, b: 40), samples.map(\.residentMegabytes), nil),
            ("OPEN FILE DESCRIPTORS", "", RGBA(r: 40, g: 90, b: 200), samples.map { Double($0.descriptors) }, nil),
            ("LOADS IN FLIGHT", "", RGBA(r: 30, g: 140, b: 70), samples.map { Double($0.inFlight) }, Double(cap)),
        ]
        let height = Self.top + panels.count * (Self.panelHeight + Self.gap) + 10
        var canvas = Canvas(width: Self.width, height: height, background: Self.background)
        canvas.text(title, x: Self.left, y: 16, scale: 3, color: Self.ink)
        let times = samples.map(\.time)
        let end = max(1, times.max() ?? 1)
        for (index, panel) in panels.enumerated() {
            let y = Self.top + index * (Self.panelHeight + Self.gap) + 20
            draw(panel, times: times, end: end, y: y, on: &canvas)
        }
        return canvas
    }

    private func draw(
        _ panel: (name: String, unit: String, color: RGBA, values: [Double], limit: Double?), times: [Double],
        end: Double, y top: Int, on canvas: inout Canvas
    ) {
        let plotWidth = Self.width - Self.left - Self.right
        let height = Self.panelHeight
        let highest = max(panel.values.max() ?? 1, panel.limit ?? 0, 1)
        // Four steps of a round number up to at least 10% above the highest value.
        let scale = 4 * niceCeiling(highest * 1.1 / 4)
        func px(_ t: Double) -> Int { Self.left + Int(Double(plotWidth) * t / end) }
        func py(_ v: Double) -> Int { top + height - Int(Double(height) * min(1, v / scale)) }

        let label = panel.unit.isEmpty ? panel.name : "\(panel.name) (\(panel.unit))"
        canvas.text(label, x: Self.left, y: top - 16, scale: 2, color: panel.color)
        // Horizontal grid lines and y labels at 0, 1/4, ..., the top.
        for step in 0...4 {
            let value = scale * Double(step) / 4
            let gy = py(value)
            canvas.fill(x: Self.left, y: gy, width: plotWidth, height: 1, color: Self.grid)
            let text = Self.format(value)
            canvas.text(text, x: Self.left - 8 - Canvas.textWidth(text), y: gy - 5, scale: 2, color: Self.ink)
        }
        // Time ticks: about eight, at a round number of seconds.
        let tick = niceCeiling(end / 8)
        var t = 0.0
        while t <= end + 0.001 {
            let gx = px(t)
            canvas.fill(x: gx, y: top, width: 1, height: height, color: Self.grid)
            let text = Self.format(t)
            canvas.text(text, x: gx - Canvas.textWidth(text) / 2, y: top + height + 6, scale: 2, color: Self.ink)
            t += tick
        }
        let axis = "TIME (S)"
        canvas.text(axis, x: Self.left + plotWidth - Canvas.textWidth(axis), y: top + height + 22, scale: 2, color: Self.ink)
        // Axes.
        canvas.fill(x: Self.left, y: top, width: 1, height: height + 1, color: Self.ink)
        canvas.fill(x: Self.left, y: top + height, width: plotWidth, height: 1, color: Self.ink)
        if let limit = panel.limit {
            let ly = py(limit)
            var x = Self.left
            while x < Self.left + plotWidth {
                canvas.fill(x: x, y: ly, width: 6, height: 1, color: Self.ink)
                x += 12
            }
            canvas.text("CAP \(Int(limit))", x: Self.left + plotWidth - 60, y: ly - 14, scale: 2, color: Self.ink)
        }
        // The series, joined point to point.
        var previous: (x: Int, y: Int)?
        for (time, value) in zip(times, panel.values) {
            let point = (x: px(time), y: py(value))
            if let previous { canvas.line(from: previous, to: point, color: panel.color) }
            previous = point
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }
}
