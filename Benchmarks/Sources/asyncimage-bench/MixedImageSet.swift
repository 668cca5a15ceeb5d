import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP

/// The issue's "mixed" set, as a new user's image folder would be: JPEGs
/// from 0.3 to 12 megapixels (every 4th progressive, some portrait), PNGs
/// (every 10th file: photos, and one with alpha), GIFs (every 20th: animated
/// or a static palette photo). Generated deterministically (the file at
/// index i is always the same) and kept on disk; only missing files are
/// made, on every core, each written under a temporary name and renamed, so
/// an interrupted run leaves no partial file behind.
enum MixedImageSet {
    /// JPEG sizes, cycled: about 3 megapixels on average, one of 12 at 12 MP.
    static let jpegSizes = [
        (640, 480), (1024, 768), (1280, 960), (1600, 1200), (1920, 1080), (2048, 1536),
        (1080, 1440), (3000, 2000), (4000, 3000), (2400, 1600), (800, 600), (1200, 1600),
    ]
    /// PNG sizes, cycled; the 2nd is a graphic with alpha, the others photos.
    static let pngSizes = [(1200, 800), (800, 800), (1600, 1200), (640, 480)]

    enum Kind: String { case jpeg = "jpg", png, gif }

    static func kind(of index: Int) -> Kind {
        if index % 20 == 9 { return .gif }
        if index % 10 == 4 { return .png }
        return .jpeg
    }

    static func name(of index: Int) -> String { String(format: "mixed-%04d.%@", index, kind(of: index).rawValue) }

    /// The first `count` files of the set in `folder` (made if missing); returns their names.
    static func make(count: Int, folder: URL) throws -> [String] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let names = (0..<count).map(name(of:))
        let missing = (0..<count).filter {
            !FileManager.default.fileExists(atPath: folder.appendingPathComponent(names[$0]).path)
        }
        let failures = Locked([String]())
        let next = Locked(0)
        DispatchQueue.concurrentPerform(iterations: ProcessInfo.processInfo.activeProcessorCount) { _ in
            while true {
                let slot = next.withLock { value -> Int in
                    defer { value += 1 }
                    return value
                }
                guard slot < missing.count else { return }
                let index = missing[slot]
                do {
                    let file = folder.appendingPathComponent(names[index])
                    let temporary = folder.appendingPathComponent(".\(names[index]).partial")
                    try encode(index).write(to: temporary)
                    guard rename(temporary.path, file.path) == 0 else {
                        throw NSError(domain: NSPOSIXErrorDomain, code: Int(errno))
                    }
                } catch {
                    failures.withLock { $0.append("\(names[index]): \(error)") }
                }
            }
        }
        if let first = failures.withLock({ $0.first }) {
            throw NSError(domain: "bench", code: 1, userInfo: [NSLocalizedDescriptionKey: "generating the mixed set: \(first)"])
        }
        return names
    }

    /// The bytes of file `index`.
    static func encode(_ index: Int) throws -> Data {
        let seed = UInt64(5000 + index)
        switch kind(of: index) {
        case .jpeg:
            let (w, h) = jpegSizes[index % jpegSizes.count]
            let image = SyntheticImage.photo(width: w, height: h, seed: seed)
            return try JPEGEncoder(quality: index % 3 == 0 ? 80 : 90, progressive: index % 4 == 1).encode(image)
        case .png:
            let shape = (index / 10) % pngSizes.count
            let (w, h) = pngSizes[shape]
            let image =
                shape == 1 ? SyntheticImage.alphaRamp(width: w, height: h) : SyntheticImage.photo(width: w, height: h, seed: seed)
            return try PNGEncoder().encode(image)
        case .gif:
            if (index / 20) % 2 == 0 {
                return try makeAnimatedGIF(width: 480, height: 270, frames: 24)
            }
            return try paletteGIF(SyntheticImage.photo(width: 800, height: 600, seed: seed))
        }
    }

    /// A one-frame GIF of `image` in a fixed 3-3-2 palette (no dithering).
    static func paletteGIF(_ image: Image) throws -> Data {
        let palette = (0..<256).map { (i: Int) -> RGBA in
            let r = (i >> 5) * 255 / 7
            let g = ((i >> 2) & 7) * 255 / 7
            let b = (i & 3) * 255 / 3
            return RGBA(r: UInt8(r), g: UInt8(g), b: UInt8(b))
        }
        var indices = [UInt8](repeating: 0, count: image.width * image.height)
        image.pixels.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for y in 0..<image.height {
                let row = y * image.bytesPerRow
                for x in 0..<image.width {
                    let p = row + x * 4
                    let red: UInt8 = bytes[p] & 0xE0
                    let green: UInt8 = (bytes[p + 1] >> 3) & 0x1C
                    let blue: UInt8 = bytes[p + 2] >> 6
                    indices[y * image.width + x] = red | green | blue
                }
            }
        }
        return try GIFWriter.encode(
            width: image.width, height: image.height, globalPalette: palette,
            frames: [GIFFrameSpec(width: image.width, height: image.height, indices: indices, delay: 0)], loopCount: nil)
    }
}
