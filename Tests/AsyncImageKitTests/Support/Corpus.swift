import Foundation
import XCTest

/// The shared test corpus (`../shared/corpus` beside the package root) and its manifest.
///
/// Under CI (`CI=true`) a missing corpus fails the test; in a user's clone
/// without it, corpus tests are skipped with a message (the suite's generated
/// images still test every decoder).
struct Corpus {
    struct Entry {
        let path: String
        let format: String
        let expectsSuccess: Bool
        let width: Int?
        let height: Int?
        let frames: Int?
        let note: String
    }

    let root: URL
    let entries: [Entry]

    /// The package root, found from this file's path (Tests/AsyncImageKitTests/Support/Corpus.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var location: URL {
        if let override = ProcessInfo.processInfo.environment["ASYNCIMAGE_CORPUS"] {
            return URL(fileURLWithPath: override)
        }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")
    }

    /// Loads the corpus, or fails (CI) / skips (elsewhere) when it is missing.
    static func load() throws -> Corpus {
        let root = location.standardizedFileURL
        let manifest = root.appendingPathComponent("manifest.tsv")
        guard let text = try? String(contentsOf: manifest, encoding: .utf8) else {
            let message = "test corpus not found at \(root.path) (expected ../shared/corpus beside the package)"
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                XCTFail(message)
                throw XCTSkip("failed: \(message)")
            }
            throw XCTSkip(message + "; corpus tests skipped")
        }
        var entries: [Entry] = []
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 7 else { continue }
            entries.append(
                Entry(
                    path: fields[0], format: fields[1], expectsSuccess: fields[2] == "ok", width: Int(fields[3]),
                    height: Int(fields[4]), frames: Int(fields[5]), note: fields[6]))
        }
        return Corpus(root: root, entries: entries)
    }

    func data(_ entry: Entry) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(entry.path))
    }
}
