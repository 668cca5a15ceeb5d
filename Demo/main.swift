import AsyncImageKit
import Foundation
import ImageFixtures

/// asyncimage-demo: the headless demo runner.
///
/// - `asyncimage-demo decode FILE...` prints one JSON line per file:
///   `{"path","ok","format","width","height","frames","error"}` (a stable shape
///   that scripts use).
/// - `asyncimage-demo` with no arguments makes a few sample files (a photo, a
///   PNG with alpha, an animated GIF and a truncated JPEG), decodes each, and
///   writes the decoded photo shown at 256x256 to `demo-output/sample.png`.

func jsonString(_ value: String?) -> String {
    guard let value else { return "null" }
    var out = "\""
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case let s where s.value < 0x20: out += String(format: "\\u%04x", s.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

func jsonInt(_ value: Int?) -> String { value.map(String.init) ?? "null" }

/// Decodes one file and returns its JSON line.
func decodeLine(path: String) -> (line: String, ok: Bool) {
    let data: Data
    do {
        data = try Data(contentsOf: URL(fileURLWithPath: path))
    } catch {
        let line =
            "{\"path\":\(jsonString(path)),\"ok\":false,\"format\":null,\"width\":null,\"height\":null,\"frames\":null,\"error\":\(jsonString("cannot read file: \(error.localizedDescription)"))}"
        return (line, false)
    }
    let format = ImageFormat.sniff(data)
    do {
        let image = try ImageDecoder().decode(data)
        let line =
            "{\"path\":\(jsonString(path)),\"ok\":true,\"format\":\(jsonString(image.format?.rawValue)),\"width\":\(image.width),\"height\":\(image.height),\"frames\":\(image.frames.count),\"error\":null}"
        return (line, true)
    } catch {
        let line =
            "{\"path\":\(jsonString(path)),\"ok\":false,\"format\":\(jsonString(format?.rawValue)),\"width\":null,\"height\":null,\"frames\":null,\"error\":\(jsonString(error.description))}"
        return (line, false)
    }
}

func usage() -> Never {
    FileHandle.standardError.write(
        Data(
            """
            usage: asyncimage-demo                 run the sample demo
                   asyncimage-demo decode FILE...  print one JSON line per file

            """.utf8))
    exit(2)
}

func runSample() throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("asyncimage-demo-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }

    let photo = SyntheticImage.photo(width: 1600, height: 1200, seed: 7)
    let jpeg = try JPEGEncoder(quality: 90).encode(photo)
    let palette = (0..<4).map { i in RGBA(r: UInt8(i * 80), g: UInt8(255 - i * 60), b: 128) }
    let gif = try GIFWriter.encode(
        width: 64, height: 64, globalPalette: palette,
        frames: (0..<4).map { GIFFrameSpec.filled(UInt8($0), width: 64, height: 64, delay: 20) })
    let samples: [(String, Data)] = [
        ("photo.jpg", jpeg),
        ("alpha.png", try PNGEncoder().encode(SyntheticImage.alphaRamp(width: 320, height: 200))),
        ("animated.gif", gif),
        ("truncated.jpg", jpeg.prefix(jpeg.count / 2)),
    ]
    print("Decoding \(samples.count) sample files (the last one is cut in half on purpose):")
    for (name, data) in samples {
        let path = folder.appendingPathComponent(name).path
        try data.write(to: URL(fileURLWithPath: path))
        print(decodeLine(path: path).line.replacingOccurrences(of: folder.path + "/", with: ""))
    }

    let options = DecodingOptions(targetSize: PixelSize(width: 256, height: 256))
    let thumbnail = try ImageDecoder().decode(jpeg, options: options)
    let output = URL(fileURLWithPath: "demo-output")
    try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
    let file = output.appendingPathComponent("sample.png")
    try PNGEncoder().encode(thumbnail).write(to: file)
    print(
        "Decoded the \(photo.width)x\(photo.height) photo for a 256x256 cell at DCT scale 1/\(thumbnail.decodeInfo.scaleDenominator) (\(thumbnail.decodeInfo.decodedSize) decoded, \(thumbnail.size) shown): wrote \(file.path)"
    )
}

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "decode" {
    let paths = arguments.dropFirst()
    if paths.isEmpty { usage() }
    var allOK = true
    for path in paths {
        let (line, ok) = decodeLine(path: path)
        print(line)
        allOK = allOK && ok
    }
    exit(allOK ? 0 : 1)
} else if arguments.isEmpty {
    do {
        try runSample()
    } catch {
        FileHandle.standardError.write(Data("demo failed: \(error)\n".utf8))
        exit(1)
    }
} else {
    usage()
}
