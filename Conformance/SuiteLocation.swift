import Foundation

/// Where the suite's files, our node scripts and node itself are.
///
/// The suite is never copied into this repository: it is read where it is,
/// from `--suite`, `CACHE_TESTS_DIR` or this machine's snapshot.
struct SuiteLocation {
    /// The suite's commit the figures in Conformance/README.md and
    /// Conformance/minimum were measured at.
    static let pinnedCommit = "b55b8bda3dbb8c927c04e85bd8d496a8caa3e4ba"
    /// The team's read-only snapshot of the suite at ``pinnedCommit``, beside
    /// the checkout (`../shared/cache-tests`, as CI lays it out).
    static let machineSnapshot = "../shared/cache-tests"

    /// The suite's folder.
    let directory: URL
    /// The node executable.
    let node: URL
    /// Our scripts (Conformance/Scripts, copied next to the executable as a resource).
    let scripts: URL

    /// The suite's files this command uses.
    static let requiredFiles = [
        "tests/index.mjs", "test-engine/client/runner.mjs", "test-engine/client/test.mjs",
        "test-engine/server/server.mjs", "test-engine/cli.mjs", "results/chrome.json",
    ]

    /// What is missing, in words for the user.
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    /// Finds the suite and node (node 18 or later: the suite's client needs its `fetch`).
    static func find(_ options: Options) -> Result<SuiteLocation, Missing> {
        let environment = ProcessInfo.processInfo.environment
        let candidate =
            options.suiteDirectory ?? environment["CACHE_TESTS_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? machineSnapshot
        let directory = URL(fileURLWithPath: candidate).standardizedFileURL
        let absent = requiredFiles.filter {
            !FileManager.default.fileExists(atPath: directory.appendingPathComponent($0).path)
        }
        guard absent.isEmpty else {
            return .failure(Missing(description: """
                The HTTP cache test suite is not at \(directory.path) (no \(absent[0])).
                Get it (node is all it needs; nothing from npm):

                  git clone https://github.com/http-tests/cache-tests.git
                  git -C cache-tests checkout \(pinnedCommit)
                  export CACHE_TESTS_DIR=$PWD/cache-tests

                """))
        }
        guard let node = ChildProcess.onPath("node") else {
            return .failure(Missing(description: """
                node is not on PATH: the suite's origin server and client run on it
                (node 18 or later; on Debian or Ubuntu: apt-get install -y nodejs).

                """))
        }
        let version = (try? ChildProcess.output(of: node, ["--version"], seconds: 10))
            .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) } ?? ""
        let major = Int(version.dropFirst().prefix { $0 != "." }) ?? 0
        guard version.hasPrefix("v"), major >= 18 else {
            return .failure(Missing(description: """
                \(node.path) is node \(version.isEmpty ? "(unknown version)" : version): the suite's client
                needs node 18 or later (its built-in fetch).

                """))
        }
        guard let scripts = Bundle.module.url(forResource: "Scripts", withExtension: nil) else {
            let text = "the command's node scripts (Conformance/Scripts) are not in its bundle\n"
            return .failure(Missing(description: text))
        }
        return .success(SuiteLocation(directory: directory, node: node, scripts: scripts))
    }

    /// One of our node scripts.
    func script(_ name: String) -> String {
        scripts.appendingPathComponent(name).path
    }

    /// The suite's commit: `git rev-parse HEAD` in a checkout, else the
    /// pinned one when the folder's SNAPSHOT.md names it; nil if unknown.
    var commit: String? {
        if FileManager.default.fileExists(atPath: directory.appendingPathComponent(".git").path),
            let git = ChildProcess.onPath("git"),
            let output = try? ChildProcess.output(of: git, ["-C", directory.path, "rev-parse", "HEAD"], seconds: 10)
        {
            let commit = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return commit.isEmpty ? nil : commit
        }
        let snapshot = try? String(contentsOf: directory.appendingPathComponent("SNAPSHOT.md"), encoding: .utf8)
        return snapshot?.contains(Self.pinnedCommit) == true ? Self.pinnedCommit : nil
    }
}
