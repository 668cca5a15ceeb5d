import AsyncImageKit
import Foundation
import ImageFixtures

/// `scaling.png`: Nimbus' four scaling results side by side, made by the
/// library's own decode path (`ImageDecoder` with a display size), for a
/// 500x375 photo at 100x100: aspect fit (transparent margins), aspect fill
/// (excess cropped), fit with `fitCropsExcess` (100x75) and fill with
/// `fillLeavesExcess` (133x100). Each result is drawn at its own size on a
/// checkerboard, so transparent margins show, inside a 100x100 outline.
enum ScalingPicture {
    static let box = PixelSize(width: 100, height: 100)
    static let cases: [(label: String, mode: ContentMode, scaling: ScalingOptions)] = [
        ("FIT", .aspectFit, []),
        ("FILL", .aspectFill, []),
        ("FIT CROPS EXCESS", .aspectFit, .fitCropsExcess),
        ("FILL LEAVES EXCESS", .aspectFill, .fillLeavesExcess),
    ]
    /// Each column: wide enough for 133 pixels and the longest label.
    static let column = 150
    static let margin = 10
    static let top = 24

    static func make() throws -> Canvas {
        let source = try JPEGEncoder(quality: 92).encode(SyntheticImage.photo(width: 500, height: 375, seed: 11))
        var canvas = Canvas(
            width: margin + cases.count * column, height: top + 110 + 24, background: RGBA(r: 24, g: 24, b: 28))
        canvas.text("500X375 AT 100X100", x: margin, y: 6, color: RGBA(r: 220, g: 220, b: 220))
        for (index, item) in cases.enumerated() {
            let image = try ImageDecoder().decode(
                source, options: DecodingOptions(targetSize: box, contentMode: item.mode, scaling: item.scaling))
            let x = margin + index * column
            let y = top
            // The display box, then the checkerboard under the result, then the result.
            canvas.fill(x: x - 1, y: y - 1, width: box.width + 2, height: box.height + 2, color: RGBA(r: 255, g: 200, b: 0))
            checkerboard(&canvas, x: x, y: y, width: max(box.width, image.width), height: max(box.height, image.height))
            canvas.place(image, x: x, y: y)
            canvas.text(item.label, x: x, y: top + 110, scale: 1, color: RGBA(r: 220, g: 220, b: 220))
            canvas.text("\(image.width)X\(image.height)", x: x, y: top + 118, scale: 1, color: RGBA(r: 160, g: 160, b: 160))
        }
        return canvas
    }

    static func checkerboard(_ canvas: inout Canvas, x: Int, y: Int, width: Int, height: Int) {
        for row in stride(from: 0, to: height, by: 8) {
            for col in stride(from: 0, to: width, by: 8) {
                let light = (row / 8 + col / 8) % 2 == 0
                canvas.fill(
                    x: x + col, y: y + row, width: min(8, width - col), height: min(8, height - row),
                    color: light ? RGBA(r: 200, g: 200, b: 200) : RGBA(r: 150, g: 150, b: 150))
            }
        }
    }
}
