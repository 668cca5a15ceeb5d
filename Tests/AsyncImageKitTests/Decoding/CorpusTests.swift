import AsyncImageKit
import Foundation
import TestSupport
import XCTest

/// Every file of the test corpus (Resources/corpus) decodes (or fails) as its manifest says.
final class CorpusTests: XCTestCase {
    func testEveryManifestEntry() throws {
        let corpus = try Corpus.load()
        XCTAssertGreaterThan(corpus.entries.count, 200, "manifest looks truncated")
        let decoder = ImageDecoder()
        var checked = 0
        for entry in corpus.entries {
            let data = try corpus.data(entry)
            do {
                let image = try decoder.decode(data)
                XCTAssertTrue(entry.expectsSuccess, "\(entry.path) decoded but the manifest expects an error")
                XCTAssertEqual(image.width, entry.width, "\(entry.path) width")
                XCTAssertEqual(image.height, entry.height, "\(entry.path) height")
                XCTAssertEqual(image.frames.count, entry.frames, "\(entry.path) frames")
                XCTAssertEqual(image.format?.rawValue, entry.format, "\(entry.path) sniffed format")
                XCTAssertEqual(
                    image.cost,
                    image.frames.count * (image.bytesPerRow * image.height + (image.isAnimated ? Image.frameOverhead : 0)))
            } catch {
                XCTAssertFalse(entry.expectsSuccess, "\(entry.path) should decode but failed: \(error)")
                guard case .decoding(let failure, _) = error else {
                    XCTFail("\(entry.path): not a decoding error: \(error)")
                    continue
                }
                XCTAssertFalse(failure.reason.isEmpty, "\(entry.path) has no reason")
                if entry.note.contains("[libjpeg-warning-only]") {
                    XCTAssertEqual(failure.format, .jpeg, entry.path)
                }
            }
            checked += 1
        }
        XCTAssertEqual(checked, corpus.entries.count)
    }

    /// libpng and libjpeg print warnings and errors to stderr by default; ours print nothing.
    func testCodecsPrintNothingToStandardError() throws {
        let corpus = try Corpus.load()
        let capture = FileManager.default.temporaryDirectory.appendingPathComponent("stderr-\(UUID().uuidString)")
        XCTAssertTrue(FileManager.default.createFile(atPath: capture.path, contents: nil))
        defer { try? FileManager.default.removeItem(at: capture) }
        let file = try FileHandle(forWritingTo: capture)
        fflush(nil)
        let saved = dup(2)
        dup2(file.fileDescriptor, 2)
        for entry in corpus.entries {
            _ = try? ImageDecoder().decode(try corpus.data(entry))
        }
        fflush(nil)
        dup2(saved, 2)
        close(saved)
        try file.close()
        let printed = try String(contentsOf: capture, encoding: .utf8)
        XCTAssertEqual(printed, "", "a codec wrote to stderr")
    }

    /// Decoding a broken file twice gives the same error: no state leaks between decodes.
    func testBrokenFilesFailTheSameWayTwice() throws {
        let corpus = try Corpus.load()
        for entry in corpus.entries where !entry.expectsSuccess {
            let data = try corpus.data(entry)
            let first = Result { try ImageDecoder().decode(data) }
            let second = Result { try ImageDecoder().decode(data) }
            switch (first, second) {
            case (.failure(let a as AsyncImageError), .failure(let b as AsyncImageError)):
                XCTAssertEqual(a, b, entry.path)
            default:
                XCTFail("\(entry.path) did not fail twice")
            }
        }
    }
}
