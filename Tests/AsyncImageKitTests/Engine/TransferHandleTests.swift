@testable import AsyncImageKit
import Foundation
import XCTest

/// A transfer handle lets its task go once the task is cancelled or its
/// completion runs (`finished()`), on the handle alone; TransferLifetimeTests
/// checks the same through the real DataLoader: the task's closures hold the handle and the job, so a
/// task kept for good made a cycle that leaked every network transfer
/// (its job, its transport task, its body; found by LeakCheckTests under
/// LeakSanitizer).
final class TransferHandleTests: XCTestCase {
    private final class Task: DataLoadingTask, @unchecked Sendable {
        var handle: TransferHandle?  // as a real task's completion closure holds it
        private(set) var cancels = 0
        func cancel() -> Bool {
            cancels += 1
            return cancels == 1
        }
    }

    func testTheTaskIsLetGoWhenTheOutcomeIsIn() {
        weak var released: Task?
        let handle = TransferHandle()
        do {
            let task = Task()
            task.handle = handle
            released = task
            XCTAssertTrue(handle.beginStarting())
            XCTAssertFalse(handle.attach(task))
        }
        XCTAssertNotNil(released, "held while the transfer runs")
        handle.finished()
        XCTAssertNil(released, "let go once its outcome is in")
        XCTAssertFalse(handle.cancel(), "nothing left to cancel")
        XCTAssertFalse(handle.isCancelled)
    }

    func testTheTaskIsLetGoWhenCancelled() {
        weak var released: Task?
        let handle = TransferHandle()
        do {
            let task = Task()
            task.handle = handle
            released = task
            XCTAssertTrue(handle.beginStarting())
            XCTAssertFalse(handle.attach(task))
            XCTAssertTrue(handle.cancel(), "the task's own answer")
            XCTAssertEqual(task.cancels, 1)
        }
        XCTAssertNil(released, "let go once cancelled")
        XCTAssertFalse(handle.cancel())
    }
}
