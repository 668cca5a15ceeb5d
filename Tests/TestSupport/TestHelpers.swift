import AsyncImageKit
import Foundation
import XCTest

/// A value set from one thread and read from another.
public final class Box<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?

    public init(_ value: Value? = nil) { stored = value }

    public var value: Value? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    /// Changes the value under the lock (a read-modify-write no other thread splits).
    public func update(_ change: (inout Value?) -> Void) { lock.withLock { change(&stored) } }
}

/// A counter shared between threads.
public final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    public init() {}

    @discardableResult
    public func increment() -> Int { lock.withLock { count += 1; return count } }
    public var value: Int { lock.withLock { count } }
}

extension XCTestCase {
    /// Polls (every 2 ms, at most `seconds`) until `condition` holds: for a
    /// state another thread or process reaches, never to order events.
    public func waitUntil(upTo seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            usleep(2_000)
        }
        return true
    }

    /// A fresh folder under the temporary directory (not created), removed
    /// when the test ends.
    public func temporaryFolder(_ prefix: String) -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        return folder
    }

    /// The ``AsyncImageError`` that `body` throws; a test failure if it
    /// returns or throws anything else.
    public func asyncImageError(
        file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async -> AsyncImageError? {
        do {
            try await body()
            XCTFail("expected a failure", file: file, line: line)
        } catch let error as AsyncImageError {
            return error
        } catch {
            XCTFail("expected AsyncImageError, got \(error)", file: file, line: line)
        }
        return nil
    }

    /// Asserts that `body` throws an ``AsyncImageError`` and returns it.
    public func assertDecodingFails(
        _ body: () throws -> Image, file: StaticString = #filePath, line: UInt = #line
    ) -> DecodingFailure? {
        do {
            let image = try body()
            XCTFail("expected a decoding failure, got a \(image.width)x\(image.height) image", file: file, line: line)
        } catch let error as AsyncImageError {
            if case .decoding(let failure, _) = error { return failure }
            XCTFail("expected .decoding, got \(error)", file: file, line: line)
        } catch {
            XCTFail("expected AsyncImageError, got \(error)", file: file, line: line)
        }
        return nil
    }
}

/// Mean absolute difference per channel between two pixels.
public func distance(_ a: RGBA, _ b: RGBA) -> Int {
    (abs(Int(a.r) - Int(b.r)) + abs(Int(a.g) - Int(b.g)) + abs(Int(a.b) - Int(b.b)) + abs(Int(a.a) - Int(b.a))) / 4
}

/// Records a loader's events, and runs `join` once, from the monitor, at the
/// first `.decoding` event: that decode's options are fixed and it has not
/// been handed to a decoder yet, so whatever `join` asks for joins it
/// deterministically.
public final class JoinAtFirstDecode: @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [LoaderEvent] = []
    private var joined = false

    public init(_ loader: AsyncImageLoader, join: @escaping @Sendable () -> Void) {
        loader.eventMonitor = { [self] event in
            let first = lock.withLock { () -> Bool in
                recorded.append(event)
                guard event.kind == .decoding, !joined else { return false }
                joined = true
                return true
            }
            if first { join() }
        }
    }

    /// Every event so far, in the loader's order (events made on two threads
    /// at once may reach the monitor in either order).
    public var events: [LoaderEvent] { lock.withLock { recorded }.sorted { $0.sequence < $1.sequence } }
}
