@testable import AsyncImageKit
import CImageCodecs
import Foundation
import XCTest

/// Every input the fuzzer (`Fuzz/run`) found a problem with (and crafted variants), kept in
/// `Tests/AsyncImageKitTests/Resources/fuzz/` and decoded again here the way
/// the fuzz target does: each must end in an image or a typed error, quickly
/// and without a sanitizer report (the suite also runs under TSan in CI).
final class FuzzRegressionTests: XCTestCase {
    static let directory = Corpus.packageRoot.appendingPathComponent("Tests/AsyncImageKitTests/Resources/fuzz")

    func testFindingsDecodeToAnImageOrATypedError() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.directory, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent != "README.md" }
        XCTAssertFalse(files.isEmpty, "no findings in \(Self.directory.path)")
        for file in files {
            let data = try Data(contentsOf: file)
            for options in [DecodingOptions(), DecodingOptions(targetSize: PixelSize(width: 32, height: 32))] {
                do {
                    let image = try ImageDecoder().decode(data, options: options)
                    XCTAssertEqual(image.pixels.count, image.bytesPerRow * image.height, file.lastPathComponent)
                } catch {
                    XCTAssertFalse(error.description.isEmpty, file.lastPathComponent)
                }
            }
            // Every finding so far is a small PNG: libpng must not allocate what it claims.
            if ImageFormat.sniff(data) == .png {
                XCTAssertLessThan(Self.largestPNGAllocation(data), 1 << 20, file.lastPathComponent)
            }
        }
    }

    /// libpng's largest single allocation while decoding `data`.
    static func largestPNGAllocation(_ data: Data) -> Int {
        var result = aiv_decode_result()
        _ = data.withBytes { bytes, count in
            withUnsafePointer(to: PixelMemory.codecAllocator) { aiv_png_decode(bytes, count, 1 << 30, $0, &result) }
        }
        if let pixels = result.pixels { PixelMemory.release(pixels, count: result.pixels_size) }
        return result.largest_codec_allocation
    }

    /// The first finding: a PNG of 1.7 KB whose second tEXt chunk claims
    /// 1.9 GB; libpng allocated the claimed length before reading it. The
    /// chunk is now skipped unread, so the decode fails at the end of the
    /// data, and libpng's largest allocation stays small.
    func testPNGChunkClaimingGigabytes() throws {
        let data = try Data(contentsOf: Self.directory.appendingPathComponent("png-text-chunk-claims-1.9GB.png"))
        do {
            _ = try ImageDecoder().decode(data)
            XCTFail("expected a failure")
        } catch {
            guard case .decoding(let failure, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(failure.format, .png)
            XCTAssertEqual(failure.reason, "unexpected end of data")
        }
        XCTAssertLessThan(Self.largestPNGAllocation(data), 1 << 20, "the claimed 1.9 GB was not allocated")
    }
}
