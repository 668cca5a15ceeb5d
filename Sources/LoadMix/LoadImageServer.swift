import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP

/// The load mix's loopback server: small real images at `/img/N.png`
/// (N below ``count``), made once at start, and the same bodies at
/// `/async/N.png` (the async API's requests, told apart by their path).
///
/// Image N is a 32x32 PNG (even N) or JPEG (odd N); every 17th is a body in
/// no image format and every 23rd (from 5) a 404, so failures mix with
/// successes. The server counts the requests it is answering at once (from
/// arrival until the response is written) and the most ever.
public final class LoadImageServer: Sendable {
    /// How many distinct images there are.
    public static let count = 200
    /// Every image's width and height.
    public static let side = 32

    /// What image N is.
    public enum Kind: Sendable {
        /// A 32x32 PNG of one colour.
        case png
        /// A 32x32 photo-like JPEG.
        case jpeg
        /// A body in no image format (a decoding failure).
        case notAnImage
        /// A 404 (a transport failure).
        case missing
    }

    /// What image N is (the same for `/img/` and `/async/`).
    public static func kind(_ n: Int) -> Kind {
        if n % 17 == 0 { return .notAnImage }
        if n % 23 == 5 { return .missing }
        return n % 2 == 0 ? .png : .jpeg
    }

    private let server: LoopbackServer
    /// The emulated link in front of the server, if any: URLs name its port.
    public let link: LinkEmulator?
    private let counts = Locked((active: 0, peak: 0))

    /// Makes the images and starts the server on 127.0.0.1; with `link`,
    /// behind a ``LinkEmulator`` of those settings (the URLs then lead through it).
    public init(link: LinkEmulator.Settings? = nil) throws {
        var bodies: [Data?] = []
        for n in 0..<Self.count {
            switch Self.kind(n) {
            case .png:
                let color = RGBA(r: UInt8(n % 256), g: UInt8(255 - n % 256), b: 77)
                bodies.append(try PNGEncoder().encode(SyntheticImage.solid(width: Self.side, height: Self.side, color: color)))
            case .jpeg:
                let photo = SyntheticImage.photo(width: Self.side, height: Self.side, seed: UInt64(n))
                bodies.append(try JPEGEncoder(quality: 80).encode(photo))
            case .notAnImage:
                bodies.append(Data("not an image, number \(n)".utf8))
            case .missing:
                bodies.append(nil)
            }
        }
        let made = bodies
        let counts = self.counts
        server = try LoopbackServer { request, connection in
            counts.withLock {
                $0.active += 1
                $0.peak = max($0.peak, $0.active)
            }
            defer { counts.withLock { $0.active -= 1 } }
            let name = request.path.split(separator: "/").last.map { $0.replacingOccurrences(of: ".png", with: "") }
            guard let n = name.flatMap({ Int($0) }), (0..<Self.count).contains(n), let body = made[n] else {
                connection.respond(status: 404, body: Data("not found".utf8))
                return
            }
            let type = Self.kind(n) == .jpeg ? "image/jpeg" : "image/png"
            connection.respond(status: 200, headers: [("Content-Type", type)], body: body)
        }
        let port = server.port
        self.link = try link.map { try LinkEmulator(upstreamPort: port, settings: $0) }
    }

    deinit {
        link?.stop()
        server.stop()
    }

    /// The URL of image N (`/async/N.png` for the async API's requests).
    public func url(_ n: Int, async: Bool = false) -> URL {
        let path = "/\(async ? "async" : "img")/\(n).png"
        guard let link else { return server.url(path) }
        return URL(string: "http://127.0.0.1:\(link.port)\(path)")!
    }

    /// Whether `url` is one of the async API's.
    public static func isAsync(_ url: URL) -> Bool { url.path.hasPrefix("/async/") }

    /// Image N's number, from its URL.
    public static func number(_ url: URL) -> Int {
        Int(url.deletingPathExtension().lastPathComponent) ?? -1
    }

    /// The most requests answered at once since the start or the last ``resetPeak()``.
    public var peakActive: Int { counts.withLock { $0.peak } }

    /// Requests being answered now.
    public var active: Int { counts.withLock { $0.active } }

    /// Starts counting the peak again from what is active now.
    public func resetPeak() { counts.withLock { $0.peak = $0.active } }

    /// How many requests have arrived.
    public var requestCount: Int { server.requestCount }

    /// Stops the server (open connections are shut down).
    public func stop() { server.stop() }
}
