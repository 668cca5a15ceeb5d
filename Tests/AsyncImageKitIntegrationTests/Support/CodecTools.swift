import AsyncImageKit
import ImageFixtures
import Foundation
import TestSupport
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
        _ = try output(tool, arguments)
    }

    /// Runs `tool` with `arguments`, fails unless it exits 0, and returns
    /// what it wrote to standard output (standard error goes to a file, so
    /// that neither stream can fill a pipe while the other is read).
    func output(_ tool: String, _ arguments: [String]) throws -> String {
        let result = try ProcessRun.run(URL(fileURLWithPath: try Self.path(of: tool, package: packages[tool])), arguments)
        guard result.status == 0 else {
            throw WebPTools.ToolFailure(
                description: "\(tool) \(arguments.joined(separator: " ")) exited \(result.status): " + result.errorText)
        }
        return result.outputText
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

    /// `avifenc` of an encoded input file (a PNG, such as a 16-bit one from
    /// ``RawPNGWriter``) with `options`. Speed 10.
    func avifenc(file input: Data, _ ext: String, _ options: [String] = []) throws -> Data {
        let name = UUID().uuidString
        let path = try file(input, "\(name).\(ext)")
        let output = folder.appendingPathComponent(name + ".avif").path
        try run("avifenc", ["-s", "10", "-j", "1"] + options + [path, output])
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

extension CodecTools {
    /// `heif-enc` of an encoded input file (PNG or JPEG: its ICC profile and
    /// EXIF go into the HEIC) with `options` (`-q 90`, `-L`...).
    func heifenc(file input: Data, _ ext: String, _ options: [String] = []) throws -> Data {
        let name = UUID().uuidString
        let path = try file(input, "\(name).\(ext)")
        let output = folder.appendingPathComponent(name + ".heic").path
        try run("heif-enc", options + [path, "-o", output])
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    /// `heif-enc` of `image` (as a PNG).
    func heifenc(_ image: Image, _ options: [String] = []) throws -> Data {
        try heifenc(file: try PNGEncoder().encode(image), "png", options)
    }

    /// The options for a lossless HEIC: lossless x265, 4:4:4, RGB (matrix 0).
    static let losslessHEIC = ["-L", "-p", "chroma=444", "--matrix_coefficients=0"]
}

/// What `irot` (quarter turns anticlockwise) then `imir` (0: top to bottom,
/// 1: left to right) do to an image, written from the HEIF definitions
/// (not from the decoders' tables), for the AVIF and HEIC tests.
enum OrientationReference {
    static func apply(_ image: Image, rotation: Int, mirror: Int?) -> Image {
        var current = image
        for _ in 0..<rotation {
            let (w, h) = (current.width, current.height)
            let old = current
            // new(x, y) = old(w - 1 - y, x), the new image h wide and w high.
            current = SyntheticImage.make(width: h, height: w) { out in
                for y in 0..<w {
                    for x in 0..<h {
                        let p = old.pixel(x: w - 1 - y, y: x)
                        (out + (y * h + x) * 4).update(from: [p.r, p.g, p.b, p.a], count: 4)
                    }
                }
            }
        }
        guard let mirror else { return current }
        let old = current
        let (w, h) = (old.width, old.height)
        return SyntheticImage.make(width: w, height: h) { out in
            for y in 0..<h {
                for x in 0..<w {
                    let p = mirror == 0 ? old.pixel(x: x, y: h - 1 - y) : old.pixel(x: w - 1 - x, y: y)
                    (out + (y * w + x) * 4).update(from: [p.r, p.g, p.b, p.a], count: 4)
                }
            }
        }
    }
}

/// Adds `irot` and `imir` properties (or any property box: `colr`, `clli`,
/// `mdcv`) to a HEIF file's primary item and its alpha image (`heif-enc`
/// 1.15 cannot write them; `avifenc` 0.11 no `clli` or `mdcv`; libheif drops an alpha
/// image whose size does not match): the property boxes appended to
/// `ipco`, their associations (essential) to the items' `ipma` entries, the
/// sizes of `meta`, `iprp`, `ipco` and `ipma` grown, and the `iloc` offsets
/// into the file (construction method 0) moved by the bytes inserted. Only
/// for files as `heif-enc` writes them: 32-bit box sizes, `meta` before `mdat`.
enum HEIFEditor {
    struct Malformed: Error {}

    static func addingTransforms(_ data: Data, rotation: Int?, mirror: Int?) throws -> Data {
        var boxes: [[UInt8]] = []
        if let rotation { boxes.append([0, 0, 0, 9] + Array("irot".utf8) + [UInt8(rotation)]) }
        if let mirror { boxes.append([0, 0, 0, 9] + Array("imir".utf8) + [UInt8(mirror)]) }
        return try addingProperties(data, boxes)
    }

    /// A `clli` box (content light level: MaxCLL, MaxFALL in cd/m²), for ``addingProperties(_:_:)``.
    static func clli(maxCLL: UInt16, maxFALL: UInt16) -> [UInt8] {
        [0, 0, 0, 12] + Array("clli".utf8) + [UInt8(maxCLL >> 8), UInt8(maxCLL & 0xFF), UInt8(maxFALL >> 8), UInt8(maxFALL & 0xFF)]
    }

    /// An `mdcv` box (mastering display: BT.2020 primaries, D65, the
    /// luminances in cd/m²), for ``addingProperties(_:_:)``.
    static func mdcv(maxLuminance: Double, minLuminance: Double) -> [UInt8] {
        var box: [UInt8] = [0, 0, 0, 32] + Array("mdcv".utf8)
        // G, B, R, then white, in units of 0.00002 (as HEVC's SEI has them).
        for value in [0.170, 0.797, 0.131, 0.046, 0.708, 0.292, 0.3127, 0.3290] {
            let unit = UInt16((value / 0.00002).rounded())
            box += [UInt8(unit >> 8), UInt8(unit & 0xFF)]
        }
        for luminance in [maxLuminance, minLuminance] {
            let unit = UInt32((luminance * 10000).rounded())
            box += [UInt8(unit >> 24), UInt8(unit >> 16 & 0xFF), UInt8(unit >> 8 & 0xFF), UInt8(unit & 0xFF)]
        }
        return box
    }

    /// A `colr` box of type `nclx` (full range) with the H.273 code points, for ``addingProperties(_:_:)``.
    static func nclx(primaries: UInt16, transfer: UInt16, matrix: UInt16) -> [UInt8] {
        var box: [UInt8] = [0, 0, 0, 19] + Array("colr".utf8) + Array("nclx".utf8)
        for value in [primaries, transfer, matrix] { box += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        return box + [0x80]
    }

    /// `data` with `boxes` (whole property boxes) added to the primary item
    /// and its alpha image, as for ``addingTransforms(_:rotation:mirror:)``.
    /// `essential`: whether the associations are marked essential (as
    /// transforms must be; `clli` and `mdcv` must not be).
    static func addingProperties(_ data: Data, _ boxes: [[UInt8]], essential: Bool = true) throws -> Data {
        var bytes = [UInt8](data)
        func u(_ at: Int, _ size: Int) -> Int { (0..<size).reduce(0) { $0 << 8 | Int(bytes[at + $1]) } }
        func put(_ at: Int, _ size: Int, _ value: Int) {
            for i in 0..<size { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * (size - 1 - i))) }
        }
        func children(_ start: Int, _ end: Int) -> [(type: String, at: Int, size: Int)] {
            var result: [(String, Int, Int)] = []
            var offset = start
            while offset + 8 <= end {
                let size = u(offset, 4)
                result.append((String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self), offset, size))
                offset += max(size, 8)
            }
            return result
        }
        guard let meta = children(0, bytes.count).first(where: { $0.type == "meta" }) else { throw Malformed() }
        let metaBoxes = children(meta.at + 12, meta.at + meta.size)
        guard let pitm = metaBoxes.first(where: { $0.type == "pitm" }),
            let iloc = metaBoxes.first(where: { $0.type == "iloc" }),
            let iprp = metaBoxes.first(where: { $0.type == "iprp" })
        else { throw Malformed() }
        let primary = bytes[pitm.at + 8] == 0 ? u(pitm.at + 12, 2) : u(pitm.at + 12, 4)
        // The alpha image: an `auxl` reference from it to the primary (iref version 0: 16-bit IDs).
        var targets: Set<Int> = [primary]
        if let iref = metaBoxes.first(where: { $0.type == "iref" }), bytes[iref.at + 8] == 0 {
            for reference in children(iref.at + 12, iref.at + iref.size) where reference.type == "auxl" {
                let from = u(reference.at + 8, 2)
                let count = u(reference.at + 10, 2)
                if (0..<count).contains(where: { u(reference.at + 12 + 2 * $0, 2) == primary }) { targets.insert(from) }
            }
        }
        let iprpBoxes = children(iprp.at + 8, iprp.at + iprp.size)
        guard let ipco = iprpBoxes.first(where: { $0.type == "ipco" }),
            let ipma = iprpBoxes.first(where: { $0.type == "ipma" }), ipco.at < ipma.at
        else { throw Malformed() }
        let propertyCount = children(ipco.at + 8, ipco.at + ipco.size).count

        let properties = boxes.flatMap { $0 }
        let added = boxes.count

        // The targets' ipma entries: their association counts, where their associations end.
        let version = bytes[ipma.at + 8]
        let wide = bytes[ipma.at + 11] & 1 != 0
        var offset = ipma.at + 16
        var entries: [(countAt: Int, insertAt: Int)] = []
        for _ in 0..<u(ipma.at + 12, 4) {
            let item = version < 1 ? u(offset, 2) : u(offset, 4)
            offset += version < 1 ? 2 : 4
            let countAt = offset
            let associations = Int(bytes[offset])
            offset += 1 + associations * (wide ? 2 : 1)
            if targets.contains(item) { entries.append((countAt, offset)) }
        }
        guard entries.count == targets.count else { throw Malformed() }
        var associations: [UInt8] = []
        for index in 0..<added {
            let property = propertyCount + 1 + index
            let flag = essential ? 0x80 : 0
            associations += wide ? [UInt8(flag | property >> 8), UInt8(property & 0xFF)] : [UInt8(flag | property)]
        }
        let ipmaGrowth = associations.count * entries.count
        let delta = properties.count + ipmaGrowth
        let metaEnd = meta.at + meta.size

        // iloc: move the offsets of data after `meta` (construction method 0).
        let ilocVersion = bytes[iloc.at + 8]
        let offsetSize = Int(bytes[iloc.at + 12] >> 4), lengthSize = Int(bytes[iloc.at + 12] & 15)
        let baseSize = Int(bytes[iloc.at + 13] >> 4), indexSize = ilocVersion >= 1 ? Int(bytes[iloc.at + 13] & 15) : 0
        var at = iloc.at + 14
        let items = ilocVersion < 2 ? u(at, 2) : u(at, 4)
        at += ilocVersion < 2 ? 2 : 4
        for _ in 0..<items {
            at += ilocVersion < 2 ? 2 : 4
            var method = 0
            if ilocVersion >= 1 {
                method = u(at, 2) & 15
                at += 2
            }
            at += 2  // data reference index
            let baseAt = at
            let base = baseSize > 0 ? u(at, baseSize) : 0
            at += baseSize
            let extents = u(at, 2)
            at += 2
            if method == 0, baseSize > 0, base >= metaEnd { put(baseAt, baseSize, base + delta) }
            for _ in 0..<extents {
                at += indexSize
                if method == 0, baseSize == 0, offsetSize > 0, u(at, offsetSize) >= metaEnd {
                    put(at, offsetSize, u(at, offsetSize) + delta)
                }
                at += offsetSize + lengthSize
            }
        }
        for entry in entries { bytes[entry.countAt] += UInt8(added) }
        put(ipma.at, 4, ipma.size + ipmaGrowth)
        put(ipco.at, 4, ipco.size + properties.count)
        put(iprp.at, 4, iprp.size + delta)
        put(meta.at, 4, meta.size + delta)
        for entry in entries.reversed() { bytes.insert(contentsOf: associations, at: entry.insertAt) }
        bytes.insert(contentsOf: properties, at: ipco.at + ipco.size)
        return Data(bytes)
    }
}

extension CodecTools {
    /// `cjxl` of an encoded input file (PNG, APNG, GIF, JPEG, PPM) with
    /// `options` (`-d 0` lossless, `-q 90`...), effort 3 (fast).
    func cjxl(file input: Data, _ ext: String, _ options: [String] = []) throws -> Data {
        let name = UUID().uuidString
        let path = try file(input, "\(name).\(ext)")
        let output = folder.appendingPathComponent(name + ".jxl").path
        try run("cjxl", [path, output, "--quiet", "-e", "3", "--num_threads=0"] + options)
        return try Data(contentsOf: URL(fileURLWithPath: output))
    }

    /// `cjxl` of `image` (as a PNG).
    func cjxl(_ image: Image, _ options: [String] = []) throws -> Data {
        try cjxl(file: try PNGEncoder().encode(image), "png", options)
    }

    /// `djxl` of a JPEG XL to a 16-bit PPM with `options` (`--color_space=...`):
    /// its size and its RGB samples, 3 a pixel, row by row.
    func djxl16(_ data: Data, _ options: [String] = []) throws -> (width: Int, height: Int, samples: [UInt16]) {
        let name = UUID().uuidString
        let path = try file(data, "\(name).jxl")
        let output = folder.appendingPathComponent(name + ".ppm").path
        try run("djxl", [path, output, "--quiet", "--num_threads=0", "--bits_per_sample=16"] + options)
        let ppm = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        // P6, width, height, maximum, each ended by one whitespace byte; then big-endian samples.
        var fields: [String] = []
        var at = 0
        while fields.count < 4, at < ppm.count {
            while at < ppm.count, [9, 10, 13, 32].contains(ppm[at]) { at += 1 }
            let start = at
            while at < ppm.count, ![9, 10, 13, 32].contains(ppm[at]) { at += 1 }
            fields.append(String(decoding: ppm[start..<at], as: UTF8.self))
        }
        at += 1
        guard fields.count == 4, fields[0] == "P6", fields[3] == "65535", let width = Int(fields[1]),
            let height = Int(fields[2]), ppm.count - at == width * height * 6
        else { throw WebPTools.ToolFailure(description: "djxl wrote no 16-bit PPM: \(fields)") }
        let samples = stride(from: at, to: ppm.count, by: 2).map { UInt16(ppm[$0]) << 8 | UInt16(ppm[$0 + 1]) }
        return (width, height, samples)
    }
}
