import AsyncImageKit
import BenchmarkSupport
import Foundation

/// A small C program next to this package's sources (`reference-*/NAME.c`),
/// compiled with `cc -O2` into a benchmark's output folder and run as a
/// child: the yardstick that does a measured piece of work with a C
/// library's own calls. It answers with one line of `key=value` pairs.
struct ReferenceProgram {
    let binary: URL

    /// Compiles `reference-<folder>/<name>.c` against the pkg-config
    /// `packages` into `output`. With `librarySources` (paths from the
    /// repository's root, such as the library's colour kernel), those are
    /// compiled into the program too, with the library's C include folder
    /// and `AIV_KERNEL` defined, by clang as SwiftPM compiles them (`cc`
    /// otherwise).
    init(folder: String, name: String, packages: [String], into output: URL, librarySources: [String] = []) throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let source = here.appendingPathComponent("../../\(folder)/\(name).c").standardized
        let root = here.appendingPathComponent("../../..").standardized
        binary = output.appendingPathComponent(name)
        var command = "cc -O2"
        if !librarySources.isEmpty {
            command = "clang -O2 -DAIV_KERNEL -I'\(root.appendingPathComponent("Sources/CImageCodecs/include").path)'"
            command += librarySources.map { " '\(root.appendingPathComponent($0).path)'" }.joined()
        }
        command += " -o '\(binary.path)' '\(source.path)' $(pkg-config --cflags --libs \(packages.joined(separator: " ")))"
        let status = try Self.run(URL(fileURLWithPath: "/bin/sh"), ["-c", command]).status
        guard status == 0 else { throw BenchError("cannot compile \(source.path) (\(command))") }
    }

    /// Runs the program with `arguments`: its `key=value` line.
    func run(_ arguments: [String]) throws -> [String: String] {
        let (status, text) = try Self.run(binary, arguments)
        guard status == 0 else { throw BenchError("\(binary.lastPathComponent) \(arguments.joined(separator: " ")) failed (\(status))") }
        var fields: [String: String] = [:]
        for pair in text.split(whereSeparator: \.isWhitespace) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        return fields
    }

    /// Runs `executable` to its end: its exit status and standard output
    /// (its standard error is this process's: a compiler's messages show).
    static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let result = try ProcessRun.run(executable, arguments, errors: .passedThrough)
        return (result.status, result.outputText)
    }

    /// FNV-1a (64 bits) of an image's first frame, rows packed, as the C
    /// programs compute it over their output: both sides made the same pixels.
    static func checksum(_ image: Image) -> String {
        let rowBytes = image.width * 4
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        image.pixels.withUnsafeBytes { raw in
            for y in 0..<image.height {
                for byte in raw[(y * image.bytesPerRow)..<(y * image.bytesPerRow + rowBytes)] {
                    hash ^= UInt64(byte)
                    hash &*= 0x0000_0100_0000_01b3
                }
            }
        }
        return String(format: "%016llx", hash)
    }
}
