public import Logging

/// The one read-through path of the package: read the layers; on a full miss, one flight per key
/// asks a fetcher, writes its value back to the layers and hands it to every waiter. Writes through
/// it take turns with the write-backs (``WriteGate``), so a value set or removed while a fetch is
/// under way is not overwritten by the fetched one.
///
/// `FetchingStore` is this with one fetcher fixed; Haneke's `Cache` keeps one per format and passes
/// the fetcher (and the format's transform) with each call. `package`: not API.
@usableFromInline
package final class ReadThrough<Layers: Store>: Sendable {
    /// The type of the keys.
    @usableFromInline package typealias Key = Layers.Key
    /// The type of the values.
    @usableFromInline package typealias Value = Layers.Value

    /// The layers read before any fetcher.
    @usableFromInline package let layers: Layers
    /// Where layer and fetcher failures are logged.
    @usableFromInline package let logger: Logger
    /// Moves when a flight has filled the layers or a value was set or removed through this path.
    /// A caller whose read missed and who sees no movement since knows the layers are unchanged, so
    /// its flight need not read them again; a flight that sees its key change does not write back.
    @usableFromInline package let writes = WriteGate()
    /// Counts the fetcher calls: `hits` the values produced, `errors` the calls that failed.
    package let fetcherCounter: StatisticsCounter
    private let flights = SingleFlight<Key, Value>()

    /// A read-through path over `layers`.
    /// - Parameters:
    ///   - layers: The layers read before any fetcher.
    ///   - logger: Where failures are logged.
    ///   - fetcherCounter: Where fetcher calls are counted (several paths may share one).
    package init(layers: Layers, logger: Logger, fetcherCounter: StatisticsCounter = StatisticsCounter()) {
        self.layers = layers
        self.logger = logger
        self.fetcherCounter = fetcherCounter
    }

    /// The value for `key` from the first layer that has it, or else from `fetcher` (see
    /// `FetchingStore.fetch(_:)` for the guarantees).
    /// - Parameters:
    ///   - key: The key whose value is wanted.
    ///   - fetcher: Asked on a full miss, by the flight of `key` (a caller that joins a flight under
    ///     way gets that flight's value, whatever fetcher it passed).
    /// - Returns: The cached or fetched value.
    /// - Throws: The fetcher's error, or `CancellationError`.
    @inlinable
    package func fetch(_ key: Key, from fetcher: some Fetcher<Key, Value>) async throws -> Value {
        try Task.checkCancellation()
        let generation = writes.totalMark
        if let value = try await layers.readAsLayer(key, logger: logger) {
            return value
        }
        return try await fetchMissing(key, readAt: generation, from: fetcher)
    }

    /// The miss path of ``fetch(_:from:)``, kept out of line.
    @usableFromInline
    package func fetchMissing(_ key: Key, readAt generation: UInt64, from fetcher: some Fetcher<Key, Value>) async throws -> Value {
        try await flights.value(for: key) { [self] in
            defer { writes.recordFill() }
            return try await produce(key, readAt: generation, from: fetcher)
        }
    }

    /// Writes to the layers, in the key's turn.
    package func setValue(_ value: Value, forKey key: Key) async throws {
        try await writes.change(key) { try await layers.setValue(value, forKey: key) }
    }

    /// Removes `key` from the layers, in the key's turn.
    package func removeValue(forKey key: Key) async throws {
        try await writes.change(key) { try await layers.removeValue(forKey: key) }
    }

    /// Empties the layers once the turns under way have ended, holding new ones back meanwhile.
    package func removeAll() async throws {
        try await writes.changeEveryKey { try await layers.removeAll() }
    }

    /// The number of flights under way.
    package var flightsInProgress: Int { flights.count }

    /// The number of callers waiting on the flight for `key`.
    package func waiterCount(for key: Key) -> Int {
        flights.waiterCount(for: key)
    }

    private func produce(_ key: Key, readAt generation: UInt64, from fetcher: some Fetcher<Key, Value>) async throws -> Value {
        let keyMark = writes.mark(for: key)
        // Read again only if something may have filled the layers since this caller's read.
        if writes.totalMark != generation,
           let value = try await layers.readAsLayer(key, logger: logger) {
            return value
        }
        try Task.checkCancellation()
        let value: Value
        do {
            value = try await fetcher.fetch(key)
            fetcherCounter.recordHit()
        } catch {
            if !(error is CancellationError) {
                fetcherCounter.recordError()
                logger.debug("The fetcher failed", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
            }
            throw error
        }
        guard !Task.isCancelled else { return value }
        // A value set or removed meanwhile wins over the fetched one.
        await writes.ifUnchanged(key, since: keyMark) {
            do {
                try await layers.setValue(value, forKey: key)
            } catch {
                logger.warning(
                    "Could not store a fetched value in every layer",
                    metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"]
                )
            }
        }
        return value
    }
}
