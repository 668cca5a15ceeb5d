@testable import AsyncImageKit
import CImageCodecs
import Foundation
import FuzzTargets
import TestSupport
import XCTest

/// Every input the fuzzer (`Fuzz/run`) found a problem with (and crafted variants), kept in
/// `Tests/AsyncImageKitTests/Resources/fuzz/` and decoded again here the way
/// the fuzz target does: each must end in an image or a typed error, quickly
/// and without a sanitizer report (the suite also runs under TSan in CI).
/// The files at the top are the decoders' (target `image`); those in a
/// subfolder named after a target (`png`, `probe`, `disk-entry`, ...) are
/// replayed through that target's own code (`FuzzTarget.run`, module
/// FuzzTargets, the code libFuzzer runs).
final class FuzzRegressionTests: XCTestCase {
    static let directory = Corpus.packageRoot.appendingPathComponent("Tests/AsyncImageKitTests/Resources/fuzz")

    func testFindingsDecodeToAnImageOrATypedError() throws {
        let files = try FileManager.default.contentsOfDirectory(at: Self.directory, includingPropertiesForKeys: nil)
            .filter { $0.lastPathComponent != "README.md" && !Self.isDirectory($0) }
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

    /// Each target's findings, and the top-level files through `image`,
    /// replayed through the target: no problem reported.
    func testFindingsReplayThroughTheirTargets() throws {
        let manager = FileManager.default
        var replayed = 0
        for target in FuzzTarget.allCases {
            let folder = target == .image ? Self.directory : Self.directory.appendingPathComponent(target.rawValue)
            guard let names = try? manager.contentsOfDirectory(atPath: folder.path) else { continue }
            for name in names.sorted() where name != "README.md" {
                let file = folder.appendingPathComponent(name)
                guard !Self.isDirectory(file) else { continue }
                XCTAssertNil(target.run(try Data(contentsOf: file)), "\(target.rawValue)/\(name)")
                replayed += 1
            }
        }
        XCTAssertGreaterThan(replayed, 0, "no findings in \(Self.directory.path)")
    }

    /// Every subfolder of the findings names a target (a typo would skip its files).
    func testFindingFoldersNameTargets() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path)
        for name in names where Self.isDirectory(Self.directory.appendingPathComponent(name)) {
            XCTAssertNotNil(FuzzTarget(name: name), "\(name) is not a fuzz target")
        }
    }

    static func isDirectory(_ url: URL) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// libpng's largest single allocation while decoding `data`.
    static func largestPNGAllocation(_ data: Data) -> Int {
        var result = aiv_decode_result()
        _ = data.withBytes { bytes, count in
            withUnsafePointer(to: PixelMemory.codecAllocator) { aiv_png_decode(bytes, count, 1 << 30, $0, nil, &result) }
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
