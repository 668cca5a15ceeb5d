import Foundation
import TestSupport
import XCTest

extension XCTestCase {
    /// Starts this test binary again as a worker process running only
    /// `test` ("Class/testMethod"), with `variable` set to `value` (the
    /// worker test does nothing without it); its output is discarded.
    func startWorker(_ test: String, _ variable: String, _ value: String) throws -> Process {
        try ProcessRun.start(
            URL(fileURLWithPath: CommandLine.arguments[0]), ["AsyncImageKitIntegrationTests.\(test)"],
            environment: [variable: value])
    }
}
