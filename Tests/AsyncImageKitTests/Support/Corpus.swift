import Foundation
import XCTest

/// The test corpus in the repository (`Tests/AsyncImageKitTests/Resources/corpus`,
/// read by path: the test target excludes `Resources`) and its manifest.
///
/// Real PNG, JPEG and GIF files from public test suites whose licences allow
/// redistribution, and generated stand-ins for those whose sources state no
/// licence (see the folder's README.md and make-generated.py). Every clone
/// has it, so a missing corpus or manifest fails the test: nothing is skipped.
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

    /// A corpus that cannot be read: a failure of the test that asked for it.
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    let root: URL
    let entries: [Entry]

    /// The package root, found from this file's path (Tests/AsyncImageKitTests/Support/Corpus.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The corpus folder.
    static let location = packageRoot.appendingPathComponent("Tests/AsyncImageKitTests/Resources/corpus")

    /// Loads the manifest; a missing or empty one fails the calling test.
    static func load() throws -> Corpus {
        let root = location.standardizedFileURL
        let manifest = root.appendingPathComponent("manifest.tsv")
        guard let text = try? String(contentsOf: manifest, encoding: .utf8) else {
            throw Missing(description: "test corpus manifest not found at \(manifest.path)")
        }
        var entries: [Entry] = []
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 7 else {
                throw Missing(description: "manifest.tsv: a row without its 7 columns: \(line.prefix(80))")
            }
            entries.append(
                Entry(
                    path: fields[0], format: fields[1], expectsSuccess: fields[2] == "ok", width: Int(fields[3]),
                    height: Int(fields[4]), frames: Int(fields[5]), note: fields[6]))
        }
        guard !entries.isEmpty else { throw Missing(description: "test corpus manifest \(manifest.path) is empty") }
        return Corpus(root: root, entries: entries)
    }

    func data(_ entry: Entry) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(entry.path))
    }
}
