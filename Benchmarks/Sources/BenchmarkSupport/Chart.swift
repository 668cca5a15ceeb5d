import AsyncImageKit
import Foundation
import ImageFixtures

// The benchmark's plots, drawn on the project's own Canvas and written with
// its own PNG encoder: a line chart (a figure against a parameter, each
// point the median of its runs with a whisker for their min-max, either axis
// linear or logarithmic) and a horizontal bar chart (one bar per row, the
// median, with the min-max whisker and the figure written at its end).
// Labels use the canvas's 3x5 font: letters, digits and a little punctuation.

/// Colors the charts give their series and bars, in order.
package let chartPalette = [
    RGBA(r: 200, g: 60, b: 40), RGBA(r: 40, g: 90, b: 200), RGBA(r: 30, g: 140, b: 70),
    RGBA(r: 150, g: 60, b: 170), RGBA(r: 220, g: 140, b: 20), RGBA(r: 20, g: 150, b: 160),
    RGBA(r: 120, g: 120, b: 120), RGBA(r: 170, g: 110, b: 60), RGBA(r: 230, g: 90, b: 160),
    RGBA(r: 110, g: 160, b: 20), RGBA(r: 20, g: 40, b: 110), RGBA(r: 110, g: 20, b: 30),
]

private let chartInk = RGBA(r: 40, g: 40, b: 40)
private let chartGrid = RGBA(r: 225, g: 225, b: 225)
private let chartBackground = RGBA(r: 255, g: 255, b: 255)

/// A figure against a parameter, one line per series.
package struct LineChart {
    package struct Series {
        package var name: String
        /// (parameter, the runs' figures), in increasing parameter.
        package var points: [(x: Double, y: Samples)]
        /// Drawn dashed (a bound or a yardstick rather than a contestant).
        package var dashed: Bool

        package init(name: String, points: [(x: Double, y: Samples)], dashed: Bool = false) {
            self.name = name
            self.points = points
            self.dashed = dashed
        }
    }

    package var title: String
    package var xLabel: String
    package var yLabel: String
    package var series: [Series]
    package var logX: Bool
    package var logY: Bool
    /// How a tick value on the x axis is written (`1K`, `1M` for sizes, say).
    package var xTickLabel: (Double) -> String
    /// The x axis's ticks, spanning it exactly (the measured parameters, say); nil: round numbers.
    package var xTicks: [Double]?

    package init(
        title: String, xLabel: String, yLabel: String, series: [Series], logX: Bool = false, logY: Bool = false,
        xTickLabel: @escaping (Double) -> String = { chartNumber($0) }, xTicks: [Double]? = nil
    ) {
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.series = series
        self.logX = logX
        self.logY = logY
        self.xTickLabel = xTickLabel
        self.xTicks = xTicks
    }

    package let width = 1000
    package let height = 560
    package let left = 110
    package let right = 30
    package let top = 60

    package func canvas() -> Canvas {
        var canvas = Canvas(width: width, height: height, background: chartBackground)
        canvas.text(title, x: left, y: 14, scale: 3, color: chartInk)
        // The legend: as many columns (up to three) as its longest name allows.
        let longest = series.map { Canvas.textWidth($0.name) }.max() ?? 0
        let columns = max(1, min(3, (width - left - right) / (longest + 40)))
        let legendRows = (series.count + columns - 1) / columns
        let plotHeight = height - top - 70 - 18 * legendRows
        let plotWidth = width - left - right
        let xs = series.flatMap { $0.points.map(\.x) }.filter { !logX || $0 > 0 }
        let ys = series.flatMap { $0.points.flatMap { [$0.y.min, $0.y.max] } }.filter { $0.isFinite && (!logY || $0 > 0) }
        guard let xLow = xs.min(), let xHigh = xs.max(), let yHigh = ys.max() else {
            canvas.text("NO DATA", x: left, y: top + 40, scale: 3, color: chartInk)
            return canvas
        }
        let xAxis =
            xTicks.map { ChartAxis(ticks: $0, logarithmic: logX) }
            ?? ChartAxis(low: xLow, high: xHigh, logarithmic: logX, fromZero: false)
        let yAxis = ChartAxis(low: ys.min() ?? 0, high: yHigh, logarithmic: logY, fromZero: true)
        func px(_ x: Double) -> Int { left + Int(Double(plotWidth) * xAxis.position(x)) }
        func py(_ y: Double) -> Int { top + plotHeight - Int(Double(plotHeight) * yAxis.position(y)) }

        for tick in yAxis.ticks {
            let y = py(tick)
            canvas.fill(x: left, y: y, width: plotWidth, height: 1, color: chartGrid)
            let text = chartNumber(tick)
            canvas.text(text, x: left - 8 - Canvas.textWidth(text), y: y - 5, scale: 2, color: chartInk)
        }
        for tick in xAxis.ticks {
            let x = px(tick)
            canvas.fill(x: x, y: top, width: 1, height: plotHeight, color: chartGrid)
            let text = xTickLabel(tick)
            canvas.text(text, x: x - Canvas.textWidth(text) / 2, y: top + plotHeight + 8, scale: 2, color: chartInk)
        }
        canvas.fill(x: left, y: top, width: 1, height: plotHeight + 1, color: chartInk)
        canvas.fill(x: left, y: top + plotHeight, width: plotWidth, height: 1, color: chartInk)
        canvas.text(yLabel, x: left, y: top - 18, scale: 2, color: chartInk)
        canvas.text(
            xLabel, x: left + plotWidth - Canvas.textWidth(xLabel), y: top + plotHeight + 26, scale: 2, color: chartInk)

        for (index, line) in series.enumerated() {
            let color = chartPalette[index % chartPalette.count]
            var previous: (x: Int, y: Int)?
            for point in line.points where point.y.median.isFinite && (!logX || point.x > 0) && (!logY || point.y.min > 0) {
                let here = (x: px(point.x), y: py(point.y.median))
                // The whisker: the runs' min-max.
                let (high, low) = (py(point.y.max), py(point.y.min))
                canvas.fill(x: here.x, y: high, width: 1, height: max(1, low - high + 1), color: color)
                canvas.fill(x: here.x - 3, y: high, width: 7, height: 1, color: color)
                canvas.fill(x: here.x - 3, y: low, width: 7, height: 1, color: color)
                canvas.fill(x: here.x - 3, y: here.y - 3, width: 7, height: 7, color: color)
                if let previous { canvas.line(from: previous, to: here, color: color, dashed: line.dashed) }
                previous = here
            }
            let lx = left + (index % columns) * (plotWidth / columns)
            let ly = top + plotHeight + 50 + (index / columns) * 18
            canvas.fill(x: lx, y: ly + 3, width: 16, height: 4, color: color)
            canvas.text(line.name, x: lx + 22, y: ly, scale: 2, color: chartInk)
        }
        return canvas
    }
}

/// One bar per row, the median, with the runs' min-max as a whisker; rows in
/// groups (a gap and the group's name between them).
package struct BarChart {
    package struct Bar {
        package var label: String
        package var value: Samples
        /// Index into `chartPalette` (bars of one contestant share a color across groups).
        package var color: Int

        package init(label: String, value: Samples, color: Int) {
            self.label = label
            self.value = value
            self.color = color
        }
    }

    package var title: String
    package var unit: String
    package var groups: [(name: String, bars: [Bar])]

    package init(title: String, unit: String, groups: [(name: String, bars: [Bar])]) {
        self.title = title
        self.unit = unit
        self.groups = groups
    }

    package let width = 1000
    package let labelWidth = 400
    package let right = 110
    package let rowHeight = 22
    package let top = 60

    package func canvas() -> Canvas {
        let rows = groups.reduce(0) { $0 + $1.bars.count + 1 }
        let height = top + rows * rowHeight + 40
        var canvas = Canvas(width: width, height: height, background: chartBackground)
        canvas.text(title, x: 10, y: 14, scale: 3, color: chartInk)
        let highest = groups.flatMap { $0.bars.map { $0.value.max } }.filter(\.isFinite).max() ?? 1
        let axis = ChartAxis(low: 0, high: max(highest, 1e-9), logarithmic: false, fromZero: true)
        let plotLeft = labelWidth + 10
        let plotWidth = width - plotLeft - right
        func px(_ v: Double) -> Int { plotLeft + Int(Double(plotWidth) * axis.position(v)) }
        let bottom = top + rows * rowHeight
        for tick in axis.ticks {
            canvas.fill(x: px(tick), y: top, width: 1, height: bottom - top, color: chartGrid)
            let text = chartNumber(tick)
            canvas.text(text, x: px(tick) - Canvas.textWidth(text) / 2, y: bottom + 6, scale: 2, color: chartInk)
        }
        canvas.text(unit, x: width - right - Canvas.textWidth(unit), y: bottom + 22, scale: 2, color: chartInk)
        var y = top
        for group in groups {
            canvas.text(group.name, x: 10, y: y + 6, scale: 2, color: chartInk)
            y += rowHeight
            for bar in group.bars {
                let color = chartPalette[bar.color % chartPalette.count]
                let label = String(bar.label.prefix((labelWidth - 30) / 8))
                canvas.text(label, x: 30, y: y + 6, scale: 2, color: chartInk)
                if bar.value.median.isFinite {
                    let end = px(bar.value.median)
                    canvas.fill(x: plotLeft, y: y + 4, width: max(1, end - plotLeft), height: rowHeight - 8, color: color)
                    let (low, high) = (px(bar.value.min), px(bar.value.max))
                    let middle = y + rowHeight / 2
                    canvas.fill(x: low, y: middle, width: max(1, high - low), height: 1, color: chartInk)
                    canvas.fill(x: low, y: middle - 4, width: 1, height: 9, color: chartInk)
                    canvas.fill(x: high, y: middle - 4, width: 1, height: 9, color: chartInk)
                    canvas.text(chartNumber(bar.value.median), x: max(end, high) + 6, y: y + 6, scale: 2, color: chartInk)
                } else {
                    canvas.text("NOT MEASURED", x: plotLeft + 4, y: y + 6, scale: 2, color: chartInk)
                }
                y += rowHeight
            }
        }
        canvas.fill(x: plotLeft, y: top, width: 1, height: bottom - top, color: chartInk)
        return canvas
    }
}

/// An axis from a low to a high value: where a value falls (0 to 1) and where its ticks go.
package struct ChartAxis {
    package let lower: Double
    package let upper: Double
    package let logarithmic: Bool
    package let ticks: [Double]

    /// A linear axis starts at 0 when `fromZero`, and ends at a round number
    /// above `high`; a logarithmic one spans whole powers of ten.
    package init(low: Double, high: Double, logarithmic: Bool, fromZero: Bool) {
        self.logarithmic = logarithmic
        if logarithmic {
            let low = max(low, 1e-12)
            lower = pow(10, floor(log10(low)))
            upper = max(pow(10, ceil(log10(max(high, low)))), lower * 10)
            var ticks: [Double] = []
            var tick = lower
            while tick <= upper * 1.0001 {
                ticks.append(tick)
                tick *= 10
            }
            self.ticks = ticks
        } else {
            let start = fromZero ? 0 : low
            let step = niceCeiling((max(high, start) - start) * 1.1 / 5, allowingFractions: true)
            lower = fromZero ? 0 : floor(start / step) * step
            var top = lower
            var ticks = [lower]
            while top < high * 1.0001 || ticks.count < 2 {
                top += step
                ticks.append(top)
            }
            upper = top
            self.ticks = ticks
        }
    }

    /// An axis that spans `ticks` exactly.
    package init(ticks: [Double], logarithmic: Bool) {
        let sorted = ticks.filter { !logarithmic || $0 > 0 }.sorted()
        self.logarithmic = logarithmic
        lower = sorted.first ?? 1
        let last = sorted.last ?? lower
        upper = last > lower ? last : (logarithmic ? lower * 2 : lower + 1)
        self.ticks = sorted
    }

    package func position(_ value: Double) -> Double {
        if logarithmic {
            return (log10(max(value, lower)) - log10(lower)) / (log10(upper) - log10(lower))
        }
        return upper > lower ? (value - lower) / (upper - lower) : 0
    }
}

/// The smallest of 1, 2, 5 times a power of ten at or above `value`; at least
/// 1 unless `allowingFractions`.
package func niceCeiling(_ value: Double, allowingFractions: Bool = false) -> Double {
    guard value > 0, allowingFractions || value > 1 else { return 1 }
    let power = pow(10, floor(log10(value)))
    for factor in [1.0, 2, 5, 10] where factor * power >= value * 0.9999 { return factor * power }
    return 10 * power
}

/// A tick or bar figure: `1.5`, `120`, `12K`, `3M`.
package func chartNumber(_ value: Double) -> String {
    let magnitude = abs(value)
    if magnitude >= 1e6, (value / 1e6).rounded() == value / 1e6 { return "\(Int(value / 1e6))M" }
    if magnitude >= 1e4, (value / 1e3).rounded() == value / 1e3 { return "\(Int(value / 1e3))K" }
    if magnitude >= 100 || value == value.rounded() { return String(Int(value.rounded())) }
    if magnitude >= 10 { return String(format: "%.1f", value) }
    return String(format: "%.2f", value).replacingOccurrences(of: #"\.?0+$"#, with: "", options: .regularExpression)
}

extension Canvas {
    /// A 2-pixel line (Bresenham), dashed if asked (8 pixels on, 6 off).
    package mutating func line(from a: (x: Int, y: Int), to b: (x: Int, y: Int), color: RGBA, dashed: Bool = false) {
        var (x, y) = a
        let dx = abs(b.x - a.x), dy = -abs(b.y - a.y)
        let sx = a.x < b.x ? 1 : -1, sy = a.y < b.y ? 1 : -1
        var error = dx + dy
        var step = 0
        while true {
            if !dashed || step % 14 < 8 { fill(x: x, y: y, width: 2, height: 2, color: color) }
            step += 1
            if x == b.x && y == b.y { break }
            let doubled = 2 * error
            if doubled >= dy {
                error += dy
                x += sx
            }
            if doubled <= dx {
                error += dx
                y += sy
            }
        }
    }
}
