import AsyncImageKit
import Foundation
import XCTest

/// The command-line encoders of the modern formats (issue 32), from
/// Debian's packages: `avifenc` (libavif-bin), later `heif-enc`
/// (libheif-examples) and `cjxl` (libjxl-tools). They make the test files at
/// test time from PNGs written by ``PNGEncoder``, as ``WebPTools`` does
/// for WebP.
///
/// Under CI (`CI=true`) a missing tool fails the test; elsewhere the test is
/// skipped with a message.
struct CodecTools {
    /// A folder of its own for the files of one test, removed by ``remove()``.
    let folder: URL
    /// The Debian package of each tool, for the message when it is missing.
    private let packages: [String: String]

    /// Checks that `tools` (name: Debian package) are installed.
    init(_ tools: [String: String]) throws {
        packages = tools
        for tool in tools.keys.sorted() { _ = try Self.path(of: tool, package: tools[tool]) }
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("codec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    /// The tool's path, or a skip (a failure under CI) when it is not installed.
    private static func path(of tool: String, package: String?) throws -> String {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for directory in directories + ["/usr/bin", "/usr/local/bin"] {
            let path = "\(directory)/\(tool)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let package = package ?? "?"
        let message = "\(tool) not found (Debian's \(package) package: apt-get install \(package))"
        if ProcessInfo.processInfo.environment["CI"] == "true" {
            XCTFail(message)
            throw XCTSkip("failed: \(message)")
        }
        throw XCTSkip(message + "; its file tests skipped")
    }

    /// Runs `tool` with `arguments` and fails unless it exits 0.
    func run(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.path(of: tool, package: packages[tool]))
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw WebPTools.ToolFailure(
                description: "\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                    + String(decoding: message, as: UTF8.self))
        }
    }

    /// Writes `image` as a PNG in the folder and returns its path.
    func png(_ image: Image, _ name: String) throws -> String {
        let url = folder.appendingPathComponent(name + ".png")
        try PNGEncoder().encode(image).write(to: url)
        return url.path
    }

    /// Writes `data` in the folder and returns its path.
    func file(_ data: Data, _ name: String) throws -> String {
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    /// `avifenc` of one image (a still) or several (a sequence, each frame
    /// `--duration` timescales long, see `options`) with `options`
    /// (`-l` lossless, `-d 10`, `--irot 1`...). Speed 10 (the fastest).
    func avifenc(_ images: [Image], _ options: [String] = []) throws -> Data {
        let name = UUID().uuidString
        var inputs: [String] = []
        for (index, image) in images.enumerated() { inputs.append(try png(image, "\(name)-\(index)")) }
        let output = folder.appendingPathComponent(name + ".avif").path
        try run("avifenc", ["-s", "10", "-j", "1"] + options + inputs + [output])
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    /// `avifenc` of a sequence whose frames last the given milliseconds.
    func avifSequence(_ frames: [(image: Image, milliseconds: Int)], _ options: [String] = []) throws -> Data {
        let name = UUID().uuidString
        var arguments = ["-s", "10", "-j", "1", "--timescale", "1000"] + options
        for (index, frame) in frames.enumerated() {
            arguments += ["--duration", String(frame.milliseconds), try png(frame.image, "\(name)-\(index)")]
        }
        let output = folder.appendingPathComponent(name + ".avif").path
        try run("avifenc", arguments + [output])
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }
}
