public import Logging
import HanekeProtocols

/// A swift-log handler that keeps everything logged to it, at every level, for tests that check
/// what the log shows — a failure was reported — and what it must not show, such as a secret.
public final class LogCapture: Sendable {
    /// One logged event.
    public struct Entry: Sendable {
        /// Its level.
        public var level: Logger.Level
        /// Its message.
        public var message: String
        /// The handler's metadata merged with the event's, as text.
        public var metadata: [String: String]
    }

    private let store = Locked<[Entry]>([])

    /// Creates an empty capture.
    public init() {}

    /// The events so far, oldest first.
    public var entries: [Entry] { store.withLock { $0 } }

    /// The events so far as lines of text: the level, the message and the metadata sorted by key.
    public var lines: [String] {
        entries.map { entry in
            "\(entry.level) \(entry.message) " + entry.metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
    }

    /// A logger, at level `trace`, that writes here.
    public var logger: Logger {
        var logger = Logger(label: "haneke.test") { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            let entry = Entry(level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" })
            capture.store.withLock { $0.append(entry) }
        }
    }
}
