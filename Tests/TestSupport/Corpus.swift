import Foundation
import XCTest

/// The test corpus in the repository (`Tests/AsyncImageKitTests/Resources/corpus`,
/// read by path: the unit test target excludes `Resources`) and its manifest.
///
/// Real PNG, JPEG and GIF files from public test suites whose licences allow
/// redistribution, and generated stand-ins for those whose sources state no
/// licence (see the folder's README.md and make-generated.py). Every clone
/// has it, so a missing corpus or manifest fails the test: nothing is skipped.
public struct Corpus: Sendable {
    public struct Entry: Sendable {
        public let path: String
        public let format: String
        public let expectsSuccess: Bool
        public let width: Int?
        public let height: Int?
        public let frames: Int?
        public let note: String
    }

    /// A corpus that cannot be read: a failure of the test that asked for it.
    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    public let root: URL
    public let entries: [Entry]

    /// The package root, found from this file's path (Tests/TestSupport/Corpus.swift).
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The corpus folder.
    public static let location = packageRoot.appendingPathComponent("Tests/AsyncImageKitTests/Resources/corpus")

    /// Loads the manifest; a missing or empty one fails the calling test.
    public static func load() throws -> Corpus {
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

    public func data(_ entry: Entry) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(entry.path))
    }
}
