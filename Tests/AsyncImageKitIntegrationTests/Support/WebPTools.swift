import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// libwebp's command-line tools (Debian's `webp` package): `cwebp`,
/// `img2webp` and `webpmux` make the WebP test files from PNGs written by
/// ``PNGEncoder``.
///
/// Under CI (`CI=true`) a missing tool fails the test; elsewhere the test is
/// skipped with a message.
struct WebPTools {
    /// A folder of its own for the files of one test, removed by ``remove()``.
    let folder: URL

    init() throws {
        for tool in ["cwebp", "img2webp", "webpmux"] { _ = try Self.path(of: tool) }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("webp-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    /// The tool's path, or a skip (a failure under CI) when it is not installed.
    static func path(of tool: String) throws -> String {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in directories + ["/usr/bin", "/usr/local/bin"] {
            let path = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let message = "\(tool) not found (Debian's webp package: apt-get install webp)"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail(message)
            throw XCTSkip("failed: \(message)")
        }
        throw XCTSkip(message + "; WebP file tests skipped")
    }

    /// Runs `tool` with `arguments` and fails unless it exits 0.
    func run(_ tool: String, _ arguments: [String]) throws {
        let result = try ProcessRun.run(URL(fileURLWithPath: try Self.path(of: tool)), arguments)
        guard result.status == 0 else {
            throw ToolFailure(
                description: "\(tool) \(arguments.joined(separator: " ")) exited \(result.status): " + result.errorText)
        }
    }

    struct ToolFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Writes `image` as a PNG in the folder and returns its path.
    func png(_ image: Image, _ name: String) throws -> String {
        let url = folder.appendingPathComponent(name + ".png")
        try PNGEncoder().encode(image).write(to: url)
        return url.path
    }

    /// `cwebp` of `image` with `options` (`-q 90`, `-lossless -exact`...).
    func cwebp(_ image: Image, _ options: [String]) throws -> Data {
        let name = UUID().uuidString
        let input = try png(image, name)
        let output = folder.appendingPathComponent(name + ".webp").path
        try run("cwebp", ["-quiet"] + options + [input, "-o", output])
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    /// An animation by `img2webp`: each image shown for its milliseconds,
    /// played `loop` times (0 = forever), with `options` (`-lossless`, `-lossy`...).
    func img2webp(_ frames: [(image: Image, milliseconds: Int)], loop: Int, _ options: [String] = ["-lossless"])
        throws -> Data
    {
        var arguments = ["-loop", String(loop)] + options
        for (index, frame) in frames.enumerated() {
            arguments += ["-d", String(frame.milliseconds), try png(frame.image, "frame\(index)")]
        }
        let output = folder.appendingPathComponent("\(UUID().uuidString).webp").path
        try run("img2webp", arguments + ["-o", output])
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    /// `webpmux -set KIND` (`icc`, `exif`) of `payload` into `webp`.
    func webpmux(_ webp: Data, set kind: String, _ payload: Data) throws -> Data {
        let name = UUID().uuidString
        let input = folder.appendingPathComponent(name + ".webp")
        let chunk = folder.appendingPathComponent(name + "." + kind)
        let output = folder.appendingPathComponent(name + "-muxed.webp")
        try webp.write(to: input)
        try payload.write(to: chunk)
        try run("webpmux", ["-set", kind, chunk.path, input.path, "-o", output.path])
        return try Data(contentsOf: output)
    }
}

extension Data {
    /// A WebP whose `VP8L` header claims `width` x `height` (1-16384), with
    /// no image data after it: a decompression bomb, as far as the header goes.
    static func webPLosslessHeader(width: Int, height: Int, alpha: Bool = true) -> Data {
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14 | (alpha ? 1 : 0) << 28
        var chunk = Data("VP8L".utf8)
        chunk.append(contentsOf: [5, 0, 0, 0, 0x2F])
        chunk.append(contentsOf: Swift.withUnsafeBytes(of: bits.littleEndian, Array.init))
        chunk.append(0)  // pad to an even size
        var data = Data("RIFF".utf8)
        data.append(contentsOf: Swift.withUnsafeBytes(of: UInt32(4 + chunk.count).littleEndian, Array.init))
        data.append(Data("WEBP".utf8))
        data.append(chunk)
        return data
    }
}
