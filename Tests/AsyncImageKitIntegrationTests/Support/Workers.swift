import Foundation
import XCTest

extension XCTestCase {
    /// Starts this test binary again as a worker process running only
    /// `test` ("Class/testMethod"), with `variable` set to `value` (the
    /// worker test does nothing without it); its output is discarded.
    func startWorker(_ test: String, _ variable: String, _ value: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["AsyncImageKitIntegrationTests.\(test)"]
        var environment = ProcessInfo.processInfo.environment
        environment[variable] = value
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }
}
