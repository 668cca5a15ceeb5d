import AsyncImageKit
import Foundation
import ImageFixtures
import LoopbackHTTP
import TestSupport
import XCTest

/// A hostile URL cannot name or place a disk cache file: entries are named
/// by the SHA-256 of their key, never by the URL's text, so `../`, encoded
/// slashes, NUL bytes and very long paths all end up as hex names inside
/// the cache's own folder.
final class HostileURLNameTests: XCTestCase {
    func testHostileURLsNeitherEscapeNorNameCacheFiles() throws {
        let png = try PNGEncoder().encode(SyntheticImage.solid(width: 2, height: 2, color: RGBA(r: 1, g: 1, b: 1)))
        let server = try LoopbackServer { _, c in
            c.respond(status: 200, headers: [("Content-Type", "image/png"), ("Cache-Control", "max-age=600")], body: png)
        }
        defer { server.stop() }
        let folder = temporaryFolder("hostile-names")
        let disk = try DataCache(directory: folder)
        let loader = AsyncImageLoader(
            configuration: .init(
                cache: nil, deliveryQueue: DispatchQueue(label: "hostile names"), notificationCenter: NotificationCenter(),
                diskCache: disk))
        let base = "http://127.0.0.1:\(server.port)"
        let paths = [
            "/a/../../../../etc/passwd",
            "/..%2F..%2F..%2Fetc%2Fshadow",
            "/%2e%2e/%2e%2e/escape.png",
            "/nul%00byte.png?name=../../x#frag",
            "/" + String(repeating: "long", count: 600) + ".png",
            "/~user/%0a%0dnewline/%C3%A9t%C3%A9.png",
            "/AsyncImageKit.v1/lock",
        ]
        for path in paths {
            let url = try XCTUnwrap(URL(string: base + path), path)
            let image = try awaitImage(loader, url)
            XCTAssertEqual(image.size, PixelSize(width: 2, height: 2), path)
            loader.flushDiskWrites()
            XCTAssertTrue(disk.contains(url.absoluteString), "\(path) was stored")
        }
        // Only the versioned folder at the top; under it, the lock and ledger
        // file and two levels of hex folders holding 64-hex-digit names.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: folder.path), ["AsyncImageKit.v1"])
        let root = disk.directory.path
        let hex = Set("0123456789abcdef")
        var entries = 0
        for first in try FileManager.default.contentsOfDirectory(atPath: root) where first != "lock" {
            XCTAssertTrue(first.count == 2 && first.allSatisfy(hex.contains), first)
            for second in try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(first)") {
                XCTAssertTrue(second.count == 2 && second.allSatisfy(hex.contains), second)
                for name in try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(first)/\(second)") {
                    XCTAssertTrue(name.count == 64 && name.allSatisfy(hex.contains), name)
                    XCTAssertTrue(name.hasPrefix(first + second), name)
                    entries += 1
                }
            }
        }
        XCTAssertGreaterThanOrEqual(entries, paths.count, "every URL has its entries")
    }

    private func awaitImage(_ loader: AsyncImageLoader, _ url: URL) throws -> Image {
        let done = expectation(description: url.path)
        let result = Box<Result<Image, AsyncImageError>>()
        Task {
            do {
                result.value = .success(try await loader.image(for: url))
            } catch {
                result.value = .failure(error as? AsyncImageError ?? .invalidURL("\(error)"))
            }
            done.fulfill()
        }
        wait(for: [done], timeout: 15)
        return try XCTUnwrap(result.value).get()
    }
}
