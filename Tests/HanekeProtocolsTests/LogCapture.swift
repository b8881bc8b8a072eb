@_spi(HanekeInternals) import HanekeProtocols
import Logging

/// A swift-log handler that keeps what is logged, for tests that check a failure was reported.
final class LogCapture: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let store = Locked<[Entry]>([])

    var entries: [Entry] { store.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test") { _ in Handler(capture: self) }
    }

    fileprivate func append(_ entry: Entry) {
        store.withLock { $0.append(entry) }
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
            var merged = metadata
            merged.merge(event.metadata ?? [:]) { _, new in new }
            capture.append(Entry(
                level: event.level,
                message: event.message.description,
                metadata: merged.mapValues { "\($0)" }
            ))
        }
    }
}
