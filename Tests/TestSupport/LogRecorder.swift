import Foundation
import Logging

/// A swift-log handler that records messages for a test.
public final class LogRecorder: @unchecked Sendable {
    public struct Message: Sendable {
        public let level: Logger.Level
        public let text: String
        /// The logger's metadata with the line's own.
        public var metadata: Logger.Metadata = [:]
    }

    private let lock = NSLock()
    private var recorded: [Message] = []
    /// Signalled at the first message.
    public let firstMessage = DispatchSemaphore(value: 0)
    /// Runs for every message, on the thread that logs.
    public var onLog: (@Sendable (Message) -> Void)? {
        get { lock.withLock { hook } }
        set { lock.withLock { hook = newValue } }
    }
    private var hook: (@Sendable (Message) -> Void)?
    public let level: Logger.Level

    public init(level: Logger.Level = .info) { self.level = level }

    public var messages: [Message] { lock.withLock { recorded } }

    public var logger: Logger {
        var logger = Logger(label: "AsyncImageKit", factory: { _ in Handler(recorder: self) })
        logger.logLevel = level
        return logger
    }

    fileprivate func record(_ message: Message) {
        let (first, hook) = lock.withLock { () -> (Bool, (@Sendable (Message) -> Void)?) in
            recorded.append(message)
            return (recorded.count == 1, self.hook)
        }
        hook?(message)
        if first { firstMessage.signal() }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.record(
                Message(
                    level: event.level, text: "\(event.message)",
                    metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}
