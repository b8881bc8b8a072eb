// Public although `readAsLayer` is not: an `@inlinable` body may use only what its module imports
// publicly.
public import Logging

extension Store {
    /// Reads `key` the way a chain reads one of its layers: a layer that throws is logged
    /// and treated as a miss, and an entry whose bytes are damaged or do not decode is removed so the
    /// next layer (or the fetcher) can replace it. Cancellation is not a miss: it propagates.
    ///
    /// The layer counts its own error; the caller only logs it. Used by `ChainedStore`,
    /// `FetchingStore` and `Cache`; `package`, not public (issue 14), and `@inlinable` so that a
    /// chain's hot read (a hit in its top layer) is inlined into your code.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - logger: Where a failure is logged.
    /// - Returns: The value, or `nil` on a miss or a failure.
    /// - Throws: `CancellationError` only.
    @inlinable @inline(__always)
    package func readAsLayer(_ key: Key, logger: Logger) async throws -> Value? {
        do {
            return try await value(forKey: key)
        } catch {
            try await recoverFromFailedRead(of: key, error: error, logger: logger)
            return nil
        }
    }

    /// ``readAsLayer(_:logger:)`` for the whole entry: its value and attributes.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - logger: Where a failure is logged.
    /// - Returns: The entry, or `nil` on a miss or a failure.
    /// - Throws: `CancellationError` only.
    @inlinable
    package func readEntryAsLayer(_ key: Key, logger: Logger) async throws -> StoreEntry<Value>? {
        do {
            return try await entry(forKey: key)
        } catch {
            try await recoverFromFailedRead(of: key, error: error, logger: logger)
            return nil
        }
    }

    /// The slow path of ``readAsLayer(_:logger:)``, kept out of line.
    @usableFromInline
    func recoverFromFailedRead(of key: Key, error: any Error, logger: Logger) async throws {
        // A layer may report cancellation in its own words (a wrapped or network error).
        if error is CancellationError || Task.isCancelled { throw CancellationError() }
        logger.warning(
            "A cache layer failed to read; treating it as a miss",
            metadata: ["layer": "\(layerName)", "key": "\(Logger.describe(key))", "error": "\(error)"]
        )
        if let storeError = error as? StoreError,
           storeError.code == .decoding || storeError.code == .corrupted {
            do {
                try await removeValue(forKey: key)
            } catch {
                logger.warning(
                    "Could not remove an entry that failed to decode",
                    metadata: ["layer": "\(layerName)", "key": "\(Logger.describe(key))", "error": "\(error)"]
                )
            }
        }
    }

    /// The name of this store's first layer, for log messages.
    package var layerName: String {
        layerStatistics.first?.name ?? String(describing: Self.self)
    }
}

extension Logger {
    /// A key as messages and logs show it: a URL with its user info and the values of sensitive
    /// query items hidden (``Redaction``), control characters escaped (so a key cannot start a new
    /// log line or move a terminal's cursor), and cut to 200 characters (so a huge key cannot flood
    /// the log).
    package static func describe(_ key: some Any) -> String {
        let text = Redaction.redactingURLs(in: String(describing: key))
        var shown = ""
        var characters = 0
        for scalar in text.unicodeScalars {
            if characters == 200 {
                return shown + "… (\(text.utf8.count) bytes)"
            }
            switch scalar {
            case "\n": shown += "\\n"
            case "\r": shown += "\\r"
            case "\t": shown += "\\t"
            case "\\": shown += "\\\\"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value):
                shown += "\\u{\(String(scalar.value, radix: 16))}"
            default:
                shown.unicodeScalars.append(scalar)
            }
            characters += 1
        }
        return shown
    }
}
