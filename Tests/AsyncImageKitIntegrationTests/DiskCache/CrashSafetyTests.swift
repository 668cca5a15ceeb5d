import CrashSafety
import Foundation
import TestSupport
import XCTest

/// The disk cache's crash test, short (the release command runs hundreds of
/// kills: `asyncimage-crashtest run`): a writer process (this test binary,
/// as a worker) loads, revalidates, replaces, stores thumbnails and trims
/// until it is killed with SIGKILL at a random moment; then the folder is
/// read as the next start would: every response's parts are of its
/// version or missing, no temporary file is left, and the totals agree.
final class CrashSafetyTests: XCTestCase {
    func testKilledWritersLeaveNothingMixedOrLeftOver() throws {
        let folder = temporaryFolder("crash")
        let result = try CrashSafety.run(kills: 10, folder: folder, seed: 26) { seed in
            try startWorker("CrashSafetyTests/testWriterWorker", "CRASH_WRITER", "\(folder.path)|\(seed)")
        }
        XCTAssertEqual(result.kills, 10)
        XCTAssertEqual(result.failures, [], "\(result.total)")
        XCTAssertGreaterThan(result.total.responses, 0, "the writers stored something before they were killed")
        XCTAssertGreaterThan(result.total.bodies + result.total.thumbnails, 0)
    }

    /// The writer of the test above (does nothing in a normal run).
    func testWriterWorker() throws {
        guard let spec = ProcessInfo.processInfo.environment["CRASH_WRITER"] else { return }
        let parts = spec.split(separator: "|").map(String.init)
        try CrashSafety.runWriter(folder: URL(fileURLWithPath: parts[0]), seed: UInt64(parts[1]) ?? 1, seconds: 30)
    }
}
