import AsyncImageKit
import DemoSupport
import Foundation
import ImageFixtures
import LoopbackHTTP

/// The generated sample gallery (photos, one of them a Display P3 JPEG
/// with its profile, AVIF photos, PNGs with alpha, animated GIFs, broken
/// and missing files), served from memory by a server on
/// 127.0.0.1 (port chosen by the system) that waits `latency` ms (with some
/// jitter) before each answer, like a slow network.
final class Gallery {
    let items: [GalleryItem]
    private let server: LoopbackServer

    init(count: Int, seed: UInt64, latency: Int) throws {
        var files: [String: Data] = [:]
        var random = SplitMix64(seed: seed)

        // A few distinct pictures of each kind, reused across the gallery.
        let photoSizes = [(1600, 1200), (1200, 1600), (2000, 1333), (1024, 768), (1500, 1000), (800, 1200)]
        var photos: [(full: Data, thumb: Data)] = []
        var avifs: [(full: Data, thumb: Data)] = []
        for variant in 0..<max(1, min(12, count / 20)) {
            let (w, h) = photoSizes[variant % photoSizes.count]
            let image = SyntheticImage.photo(width: w, height: h, seed: seed &+ UInt64(variant) &* 7919)
            let small = try ImageResizer.resize(image, to: PixelSize(width: w / 8, height: h / 8))
            // AVIF versions of the first two (what an image CDN sends a
            // client whose Accept names image/avif): libavif with aom at its
            // fastest speed, so the gallery is made in well under a second.
            if variant < 2 {
                avifs.append((
                    try AVIFEncoder(quality: 55, speed: 10).encode(image), try AVIFEncoder(quality: 50, speed: 10).encode(small)
                ))
            }
            // The second photo is a Display P3 file (its numbers P3's, the
            // profile embedded): colour-managed, it shows as the others do.
            if variant == 1, let full = ColourFixtures.displayP3JPEG(image, quality: 88),
                let thumb = ColourFixtures.displayP3JPEG(small, quality: 70)
            {
                photos.append((full, thumb))
                continue
            }
            photos.append((try JPEGEncoder(quality: 88).encode(image), try JPEGEncoder(quality: 70).encode(small)))
        }
        let pngs = try (0..<3).map { variant -> Data in
            let ramp = SyntheticImage.alphaRamp(width: 480 + variant * 80, height: 360)
            return try PNGEncoder().encode(ramp)
        }
        let gifs = try (0..<3).map { variant in try Self.animatedGIF(variant: variant) }
        let brokenBodies = [photos[0].full.prefix(photos[0].full.count / 2), Data("<html>oops</html>".utf8)]

        var items: [GalleryItem] = []
        let base = "http://127.0.0.1:1"  // the real port is put in below
        for index in 0..<count {
            let slot = index % 20
            let pick = Int(random.next() % 1000)
            switch slot {
            case 14:
                let avif = avifs[pick % avifs.count]
                files["/avif/\(index).avif"] = avif.full
                files["/avifthumb/\(index).avif"] = avif.thumb
                items.append(GalleryItem(
                    index: index, kind: .avif, thumbnail: URL(string: "\(base)/avifthumb/\(index).avif"),
                    full: URL(string: "\(base)/avif/\(index).avif")!))
            case 0..<15:
                let photo = photos[pick % photos.count]
                files["/photo/\(index).jpg"] = photo.full
                files["/thumb/\(index).jpg"] = photo.thumb
                items.append(GalleryItem(
                    index: index, kind: .photo, thumbnail: URL(string: "\(base)/thumb/\(index).jpg"),
                    full: URL(string: "\(base)/photo/\(index).jpg")!))
            case 15, 16:
                files["/png/\(index).png"] = pngs[pick % pngs.count]
                items.append(GalleryItem(index: index, kind: .png, thumbnail: nil, full: URL(string: "\(base)/png/\(index).png")!))
            case 17, 18:
                files["/gif/\(index).gif"] = gifs[pick % gifs.count]
                items.append(GalleryItem(index: index, kind: .gif, thumbnail: nil, full: URL(string: "\(base)/gif/\(index).gif")!))
            default:
                if index % 40 == 19 {
                    files["/broken/\(index).jpg"] = brokenBodies[(index / 40) % brokenBodies.count]
                    items.append(GalleryItem(index: index, kind: .broken, thumbnail: nil, full: URL(string: "\(base)/broken/\(index).jpg")!))
                } else {
                    items.append(GalleryItem(index: index, kind: .missing, thumbnail: nil, full: URL(string: "\(base)/missing/\(index).jpg")!))
                }
            }
        }

        let bodies = files
        let delay = latency
        server = try LoopbackServer { request, connection in
            if delay > 0 {
                // Jitter from the path, so a seed gives the same run.
                let jitter = abs(request.path.hashValue % max(1, delay))
                usleep(UInt32((delay + jitter) * 1000))
            }
            if let body = bodies[request.path] {
                connection.respond(status: 200, body: body)
            } else {
                connection.respond(status: 404, body: Data("not found".utf8))
            }
        }
        let port = server.port
        func real(_ url: URL) -> URL {
            URL(string: url.absoluteString.replacingOccurrences(of: "127.0.0.1:1/", with: "127.0.0.1:\(port)/"))!
        }
        self.items = items.map { item in
            GalleryItem(index: item.index, kind: item.kind, thumbnail: item.thumbnail.map(real), full: real(item.full))
        }
    }

    /// A gallery of the user's own URLs or files (no thumbnails).
    static func external(_ sources: [String]) -> [GalleryItem] {
        sources.enumerated().map { index, source in
            let url: URL
            if source.contains("://") || source.hasPrefix("data:") {
                url = URL(string: source) ?? URL(fileURLWithPath: source)
            } else {
                url = URL(fileURLWithPath: source)
            }
            return GalleryItem(index: index, kind: .external, thumbnail: nil, full: url)
        }
    }

    func stop() { server.stop() }

    private static func animatedGIF(variant: Int) throws -> Data {
        let palette = (0..<16).map { i in
            RGBA(r: UInt8((i * 16 + variant * 60) & 0xFF), g: UInt8((255 - i * 12) & 0xFF), b: UInt8((i * 40) & 0xFF))
        }
        let (w, h) = (160, 120)
        let frames = (0..<8).map { frame -> GIFFrameSpec in
            var indices = [UInt8](repeating: 0, count: w * h)
            for y in 0..<h {
                for x in 0..<w { indices[y * w + x] = UInt8(((x + frame * 10) / 20 + y / 20) % 16) }
            }
            return GIFFrameSpec(width: w, height: h, indices: indices, delay: 8)
        }
        return try GIFWriter.encode(width: w, height: h, globalPalette: palette, frames: frames)
    }
}
