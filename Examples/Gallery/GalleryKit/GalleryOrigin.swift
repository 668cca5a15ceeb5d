#if GTKSupport
import AsyncImageKit
import Foundation
import LoopbackHTTP

/// The gallery's local origin: `count` pictures served by a loopback HTTP
/// server that waits `latency` ms (with up to half as much jitter, as the
/// demo's gallery does) before each answer, like a slow network.
///
/// Picture `i` is a PNG of ``colour(of:)`` with a darker border, so a test
/// (or an eye) can tell which picture a cell shows from its centre.
/// Pictures are made on first request and kept.
public final class GalleryOrigin: @unchecked Sendable {
    /// How many pictures.
    public let count: Int
    /// Each picture's side in pixels.
    public let side: Int
    private let server: LoopbackServer
    private let bodies = Bodies()

    /// Starts the server.
    ///
    /// - Parameters:
    ///   - count: how many pictures.
    ///   - side: their side in pixels.
    ///   - latency: ms before each answer (plus up to half as much jitter).
    public init(count: Int, side: Int = 256, latency: Int = 40) throws {
        self.count = count
        self.side = side
        let bodies = bodies
        server = try LoopbackServer { request, connection in
            let name = request.path.split(separator: "/").last.map(String.init) ?? ""
            guard let index = Int(name.replacingOccurrences(of: ".png", with: "")), index >= 0, index < count else {
                connection.respond(status: 404, body: Data("not found".utf8))
                return
            }
            if latency > 0 {
                let jitter = Int.random(in: 0...max(0, latency / 2))
                usleep(useconds_t((latency + jitter) * 1000))
            }
            guard let body = bodies.body(index, side: side) else {
                connection.respond(status: 500, body: Data())
                return
            }
            connection.respond(status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=3600")], body: body)
        }
    }

    /// Encodes pictures `0..<count` now, on every core, so that serving them
    /// later costs no CPU beyond the sockets' (as a remote origin would):
    /// a frame-time measurement then has no encoder competing with the main
    /// loop for the cores. Returns the seconds it took.
    @discardableResult
    public func prepare(upTo count: Int) -> Double {
        let start = Date()
        let (bodies, side) = (bodies, side)
        DispatchQueue.concurrentPerform(iterations: min(count, self.count)) { _ = bodies.body($0, side: side) }
        return Date().timeIntervalSince(start)
    }

    /// The URL of picture `index`.
    public func url(of index: Int) -> URL { server.url("/pictures/\(index).png") }

    /// Requests answered so far.
    public var requestCount: Int { server.requestCount }

    /// Stops the server.
    public func stop() { server.stop() }

    /// Picture `index`'s colour (its centre): hues spread around the wheel.
    public static func colour(of index: Int) -> RGBA {
        let hue = Double((index * 47) % 360) / 60
        let value = 0.55 + Double((index / 7) % 4) * 0.12, saturation = 0.75
        let c = value * saturation, x = c * (1 - abs(hue.truncatingRemainder(dividingBy: 2) - 1)), m = value - c
        let (r, g, b): (Double, Double, Double) = switch Int(hue) {
        case 0: (c, x, 0)
        case 1: (x, c, 0)
        case 2: (0, c, x)
        case 3: (0, x, c)
        case 4: (x, 0, c)
        default: (c, 0, x)
        }
        return RGBA(r: UInt8((r + m) * 255), g: UInt8((g + m) * 255), b: UInt8((b + m) * 255))
    }

    /// Picture `index` itself, `side` pixels square.
    public static func picture(_ index: Int, side: Int) -> Image {
        let colour = colour(of: index)
        let border = max(1, side / 16)
        var pixels = Data(count: side * side * 4)
        pixels.withUnsafeMutableBytes { raw in
            let p = raw.bindMemory(to: UInt8.self)
            for y in 0..<side {
                for x in 0..<side {
                    let edge = x < border || y < border || x >= side - border || y >= side - border
                    let o = (y * side + x) * 4
                    p[o] = edge ? colour.r / 2 : colour.r
                    p[o + 1] = edge ? colour.g / 2 : colour.g
                    p[o + 2] = edge ? colour.b / 2 : colour.b
                    p[o + 3] = 255
                }
            }
        }
        return Image(width: side, height: side, rgba: pixels)
    }

    /// The encoded pictures, made once each.
    private final class Bodies: @unchecked Sendable {
        private let lock = NSLock()
        private var bodies: [Int: Data] = [:]

        func body(_ index: Int, side: Int) -> Data? {
            if let body = lock.withLock({ bodies[index] }) { return body }
            guard let body = try? PNGEncoder(compressionLevel: 1).encode(GalleryOrigin.picture(index, side: side)) else { return nil }
            lock.withLock { bodies[index] = body }
            return body
        }
    }
}
#endif
