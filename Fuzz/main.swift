// The decoders' fuzz target: `Fuzz/run` builds it with libFuzzer and
// AddressSanitizer (`swift build --sanitize=fuzzer --sanitize=address`) and
// runs it on the corpus's files. In an ordinary build it does nothing.
//
// No top-level code: under `--sanitize=fuzzer` SwiftPM compiles this file as a
// library and libFuzzer supplies `main`.
import AsyncImageKit
import Foundation

/// One input: decoded at full size and downsampled (the first byte picks the
/// display size and content mode), under a small pixel limit so that each run
/// stays quick, and its header properties read (`ImageFileProperties`).
/// Every input must end in an image or a thrown `AsyncImageError`; anything
/// else (a crash, a leak, a sanitizer report, an image whose pixels do not
/// match its size, a decoded image whose size or frame count its header
/// properties do not give) is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    let properties = ImageFileProperties(data: data)
    let selector = count > 0 ? Int(bytes[0]) : 0
    let side = 1 + selector % 97
    let options: [DecodingOptions] = [
        DecodingOptions(maxPixels: 4_000_000),
        DecodingOptions(
            maxPixels: 4_000_000, targetSize: PixelSize(width: side, height: side + selector % 7),
            contentMode: selector & 0x80 == 0 ? .aspectFill : .aspectFit),
    ]
    for option in options {
        do {
            let image = try ImageDecoder().decode(data, options: option)
            precondition(
                properties?.uprightPixelSize == image.originalSize && properties?.frameCount == image.frames.count,
                "the header properties disagree with the decoded image")
            precondition(image.width > 0 && image.height > 0, "empty image reported as a success")
            precondition(image.bytesPerRow >= image.width * 4, "bytesPerRow too small")
            for frame in image.frames {
                frame.pixels.withUnsafeBytes { raw in
                    precondition(raw.count >= image.bytesPerRow * image.height, "frame buffer smaller than its size")
                    // Touch the first and last byte: ASan checks both ends.
                    if let first = raw.first, let last = raw.last { _ = first &+ last }
                }
            }
        } catch {
            _ = error.localizedDescription
        }
    }
    return 0
}
