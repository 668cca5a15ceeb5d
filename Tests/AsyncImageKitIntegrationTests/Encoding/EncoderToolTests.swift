import AsyncImageKit
import Foundation
import ImageFixtures
import TestSupport
import XCTest

/// `WebPEncoder` and `AVIFEncoder` (issue 32, item 4) against the codecs'
/// own tools (Debian's `webp` and `libavif-bin`): what we write, `dwebp`
/// and `avifdec` read (and as our decoders do); and the tools' encoders,
/// `cwebp` and `avifenc`, at the same settings on the same pixels, make
/// the same bytes, which is what makes the benchmark's comparison
/// (`asyncimage-bench encode`) a fair one.
final class EncoderToolTests: XCTestCase {
    private var tools: CodecTools!

    override func setUpWithError() throws {
        tools = try CodecTools(["cwebp": "webp", "dwebp": "webp", "avifenc": "libavif-bin", "avifdec": "libavif-bin"])
    }

    override func tearDown() {
        tools?.remove()
        tools = nil
    }

    /// A photo with an alpha ramp across it (alpha 0 on the left, its
    /// colour still there), or opaque.
    private static func photo(width: Int, height: Int, alpha: Bool) -> Image {
        let photo = SyntheticImage.photo(width: width, height: height, seed: 21)
        guard alpha else { return photo }
        var pixels = photo.pixels
        for y in 0..<height {
            for x in 0..<width { pixels[y * photo.bytesPerRow + x * 4 + 3] = UInt8(x * 255 / (width - 1)) }
        }
        return Image(width: width, height: height, rgba: pixels, bytesPerRow: photo.bytesPerRow)
    }

    /// A PAM file (`dwebp -pam`: RGBA, 8 bits) as an image.
    private func pam(_ data: Data) throws -> Image {
        let bytes = [UInt8](data)
        let marker = Array("ENDHDR\n".utf8)
        guard let end = (0...(bytes.count - marker.count)).first(where: { Array(bytes[$0..<$0 + marker.count]) == marker })
        else { throw WebPTools.ToolFailure(description: "not a PAM file") }
        var fields: [String: String] = [:]
        for line in String(decoding: bytes[..<end], as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
        }
        let width = try XCTUnwrap(fields["WIDTH"].flatMap { Int($0) })
        let height = try XCTUnwrap(fields["HEIGHT"].flatMap { Int($0) })
        XCTAssertEqual(fields["DEPTH"], "4")
        XCTAssertEqual(fields["MAXVAL"], "255")
        let start = end + marker.count
        XCTAssertEqual(bytes.count - start, width * height * 4)
        return Image(width: width, height: height, rgba: Data(bytes[start...]))
    }

    /// libwebp's `dwebp` reads our lossless WebP as exactly the pixels
    /// given, and our lossy one as our decoder does (the same library).
    func testDwebpReadsOurWebP() throws {
        let image = Self.photo(width: 90, height: 60, alpha: true)
        let lossless = try tools.file(try WebPEncoder(lossless: true).encode(image), "lossless.webp")
        let losslessOut = tools.folder.appendingPathComponent("lossless.pam").path
        try tools.run("dwebp", [lossless, "-pam", "-o", losslessOut])
        XCTAssertTrue(ImageComparison.isEqual(try pam(try Data(contentsOf: URL(fileURLWithPath: losslessOut))), image))

        let lossyData = try WebPEncoder(quality: 70, method: 6).encode(image)
        let lossy = try tools.file(lossyData, "lossy.webp")
        let lossyOut = tools.folder.appendingPathComponent("lossy.pam").path
        try tools.run("dwebp", [lossy, "-pam", "-o", lossyOut])
        let theirs = try pam(try Data(contentsOf: URL(fileURLWithPath: lossyOut)))
        let ours = try WebPDecoder().decode(lossyData)
        XCTAssertTrue(ImageComparison.isEqual(theirs, ours))
        XCTAssertFalse(theirs.isOpaque)
    }

    /// libavif's `avifdec` reads our AVIF as our decoder does, and says what
    /// it holds: 8 bits, the subsampling asked, full range, sRGB's `nclx`
    /// code points (1/13/6), an alpha plane only with transparency.
    func testAvifdecReadsOurAVIF() throws {
        let cases: [(AVIFEncoder, Bool, String)] = [
            (AVIFEncoder(quality: 60, speed: 8), true, "YUV420"),
            (AVIFEncoder(quality: 90, speed: 8, chromaSubsampling: .yuv444), false, "YUV444"),
        ]
        for (encoder, alpha, format) in cases {
            let image = Self.photo(width: 90, height: 60, alpha: alpha)
            let data = try encoder.encode(image)
            let input = try tools.file(data, "\(format).avif")
            let output = tools.folder.appendingPathComponent("\(format).png").path
            let info = try tools.output("avifdec", ["--info", input])
            for line in [
                "Bit Depth      : 8", "Format         : \(format)", "Range          : Full", "Color Primaries: 1",
                "Transfer Char. : 13", "Matrix Coeffs. : 6", "ICC Profile    : Absent", "Transformations: None",
                alpha ? "Alpha          : Not premultiplied" : "Alpha          : Absent",
            ] {
                XCTAssertTrue(info.contains(line), "\(format): no \(line) in\n\(info)")
            }
            try tools.run("avifdec", ["-j", "1", "-d", "8", input, output])
            let theirs = try PNGDecoder().decode(try Data(contentsOf: URL(fileURLWithPath: output)))
            let ours = try AVIFDecoder().decode(data)
            XCTAssertEqual(theirs.size, image.size)
            for channel in 0..<4 {
                XCTAssertLessThanOrEqual(ImageComparison.maxDifference(theirs, ours, channel: channel), 1, "\(format) \(channel)")
            }
            XCTAssertEqual(theirs.isOpaque, !alpha)
        }
    }

    /// `cwebp -q Q -m M` and `avifenc` with the quantizers our quality maps
    /// to, the same speed, subsampling, one thread and libaom, from a PNG
    /// of the same pixels: the same bytes as ours.
    func testTheToolsAtTheSameSettingsMakeTheSameBytes() throws {
        let image = Self.photo(width: 200, height: 150, alpha: false)
        let png = try tools.png(image, "photo")
        for (quality, method) in [(50, 4), (80, 6)] {
            let output = tools.folder.appendingPathComponent("cwebp-\(quality).webp").path
            try tools.run("cwebp", ["-quiet", "-q", "\(quality)", "-m", "\(method)", png, "-o", output])
            let theirs = try Data(contentsOf: URL(fileURLWithPath: output))
            let ours = try WebPEncoder(quality: quality, method: method).encode(image)
            XCTAssertEqual(ours, theirs, "WebP q\(quality) m\(method): \(ours.count) bytes against cwebp's \(theirs.count)")
        }
        for (quality, speed, subsampling) in [(60, 8, AVIFEncoder.ChromaSubsampling.yuv420), (80, 6, .yuv444)] {
            let q = String(AVIFEncoder.quantizer(forQuality: quality))
            let output = tools.folder.appendingPathComponent("avifenc-\(quality).avif").path
            try tools.run(
                "avifenc",
                [
                    "-c", "aom", "-j", "1", "-s", "\(speed)", "-y", subsampling == .yuv420 ? "420" : "444", "--min", q, "--max", q,
                    "--minalpha", q, "--maxalpha", q, png, output,
                ])
            let theirs = try Data(contentsOf: URL(fileURLWithPath: output))
            let ours = try AVIFEncoder(quality: quality, speed: speed, chromaSubsampling: subsampling).encode(image)
            XCTAssertEqual(ours, theirs, "AVIF q\(quality) s\(speed): \(ours.count) bytes against avifenc's \(theirs.count)")
        }
    }
}
