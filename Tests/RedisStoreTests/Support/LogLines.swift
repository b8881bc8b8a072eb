@_spi(HanekeInternals) import HanekeProtocols
import Logging

/// A swift-log handler that keeps every line logged, at every level, as text — the message and its
/// metadata — for tests that check what the log shows and what it must not.
final class LogLines: Sendable {
    private let lines = Locked<[String]>([])

    /// The lines so far, oldest first.
    var all: [String] { lines.withLock { $0 } }

    /// A logger, at level `trace`, that writes here.
    var logger: Logger {
        var logger = Logger(label: "haneke.test.lines") { _ in Handler(lines: self) }
        logger.logLevel = .trace
        return logger
    }

    private struct Handler: LogHandler {
        let lines: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let metadata = self.metadata.merging(event.metadata ?? [:]) { _, new in new }
            let line = "\(event.level) \(event.message) " + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            lines.lines.withLock { $0.append(line) }
        }
    }
}
