public import Logging

/// A store that ends in a fetcher: ``fetch(_:)`` reads the layers and, on a full miss, asks the
/// fetcher once per key however many callers are waiting (single flight).
///
/// Made by ``Store/fetching(from:logger:)``. As a ``Store`` it reads and writes its layers only;
/// the fetcher is asked by ``fetch(_:)``.
///
/// This is the package's one read-through path: Haneke's `Cache` keeps one `FetchingStore` per
/// format and passes the fetcher with each call.
public final class FetchingStore<Base: Store, Source: Fetcher>: Store
where Base.Key == Source.Key, Base.Value == Source.Value {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The layers read before the fetcher.
    public let base: Base
    /// The source of original values.
    public let fetcher: Source
    @usableFromInline let logger: Logger
    /// Moves when a flight has filled the layers or a value was set or removed through this store.
    /// A caller whose read missed and who sees no movement since knows the layers are unchanged, so
    /// its flight need not read them again; a flight that sees its key change does not write back.
    @usableFromInline package let writes = WriteGate()
    private let flights = SingleFlight<Key, Value>()
    private let fetcherCounter: StatisticsCounter

    /// Puts `fetcher` behind `base`. Prefer ``Store/fetching(from:logger:)``.
    /// - Parameters:
    ///   - base: The layers read before the fetcher.
    ///   - fetcher: The source of original values.
    ///   - logger: Where layer failures are logged.
    public convenience init(base: Base, fetcher: Source, logger: Logger = Logger(label: "haneke")) {
        self.init(base: base, fetcher: fetcher, logger: logger, fetcherCounter: StatisticsCounter())
    }

    /// Puts `fetcher` behind `base`, counting the fetcher's calls in `fetcherCounter` (which
    /// several stores may share: a `Cache` counts every format's fetches together).
    package init(base: Base, fetcher: Source, logger: Logger, fetcherCounter: StatisticsCounter) {
        self.base = base
        self.fetcher = fetcher
        self.logger = logger
        self.fetcherCounter = fetcherCounter
    }

    /// Returns the value for `key` from the first layer that has it, or from the fetcher.
    ///
    /// On a full miss one flight per key starts: it reads the layers again when anything may have
    /// filled them since this caller's read (another flight, or a write through this store), calls
    /// the fetcher, writes the value to every layer and hands it to every
    /// waiter (the write is skipped when the key was set or removed through this store meanwhile,
    /// or every waiter has gone). A failure reaches every waiter and is not cached. Cancelling one waiter ends only that
    /// waiter's call, with `CancellationError`; when every waiter has been cancelled the fetcher call
    /// is cancelled too. Every call returns or throws exactly once.
    ///
    /// A layer that throws is treated as a miss; bytes that do not decode are removed from their
    /// layer and the fetcher is asked.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: The cached or fetched value.
    /// - Throws: The fetcher's error, or `CancellationError`.
    @inlinable
    public func fetch(_ key: Key) async throws -> Value {
        try Task.checkCancellation()
        let generation = writes.totalMark
        if let value = try await base.readAsLayer(key, logger: logger) {
            return value
        }
        return try await fetchMissing(key, readAt: generation, from: fetcher)
    }

    /// ``fetch(_:)`` with another fetcher than the store's own for this call (a caller that joins
    /// a flight under way gets that flight's value, whatever fetcher it passed).
    ///
    /// ``fetch(_:)`` spells out these five lines rather than calling this: the extra async call
    /// cost a hot read 47 instructions (1,691 against 1,738, `MemoryProbe chain get`).
    @inlinable
    package func fetch(_ key: Key, from source: some Fetcher<Key, Value>) async throws -> Value {
        try Task.checkCancellation()
        let generation = writes.totalMark
        if let value = try await base.readAsLayer(key, logger: logger) {
            return value
        }
        return try await fetchMissing(key, readAt: generation, from: source)
    }

    /// The miss path of ``fetch(_:)``, kept out of line.
    @usableFromInline
    func fetchMissing(_ key: Key, readAt generation: UInt64, from source: some Fetcher<Key, Value>) async throws -> Value {
        try await flights.value(for: key) { [self] in
            defer { writes.recordFill() }
            return try await produce(key, readAt: generation, from: source)
        }
    }

    /// Reads the layers only (the fetcher is not asked).
    /// - Parameter key: The key to look up.
    /// - Returns: The cached value, or `nil`.
    /// - Throws: What the layers throw.
    public func value(forKey key: Key) async throws -> Value? {
        try await base.value(forKey: key)
    }

    /// Writes to the layers.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What the layers throw.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await writes.change(key) { try await base.setValue(value, forKey: key) }
    }

    /// Removes `key` from the layers.
    /// - Parameter key: The key to remove.
    /// - Throws: What the layers throw.
    public func removeValue(forKey key: Key) async throws {
        try await writes.change(key) { try await base.removeValue(forKey: key) }
    }

    /// Empties the layers.
    /// - Throws: What the layers throw.
    public func removeAll() async throws {
        try await writes.changeEveryKey { try await base.removeAll() }
    }

    /// The layers of `base`, then a layer named `"fetcher"`: its `hits` are values the fetcher
    /// produced and its `errors` the calls that failed.
    public var layerStatistics: [LayerStatistics] {
        base.layerStatistics + [LayerStatistics(name: "fetcher", statistics: fetcherCounter.snapshot)]
    }

    /// The number of flights under way, for tests and diagnostics.
    public var flightsInProgress: Int { flights.count }

    /// The number of callers waiting on the flight for `key`, for tests.
    package func waiterCount(for key: Key) -> Int {
        flights.waiterCount(for: key)
    }

    private func produce(_ key: Key, readAt generation: UInt64, from source: some Fetcher<Key, Value>) async throws -> Value {
        let keyMark = writes.mark(for: key)
        // Read again only if something may have filled the layers since this caller's read.
        if writes.totalMark != generation,
           let value = try await base.readAsLayer(key, logger: logger) {
            return value
        }
        try Task.checkCancellation()
        let value: Value
        do {
            value = try await source.fetch(key)
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
                try await base.setValue(value, forKey: key)
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

extension Store {
    /// Ends this store (or chain) in a fetcher; call ``FetchingStore/fetch(_:)`` to read through.
    ///
    /// On a full miss the fetcher is called once per key, whatever the number of concurrent callers,
    /// and its value is written to every layer. See ``FetchingStore/fetch(_:)`` for the guarantees.
    /// - Parameters:
    ///   - fetcher: The source of original values.
    ///   - logger: Where layer failures are logged.
    /// - Returns: A store with a `fetch(_:)` method.
    public func fetching<Source: Fetcher>(
        from fetcher: Source,
        logger: Logger = Logger(label: "haneke")
    ) -> FetchingStore<Self, Source> where Source.Key == Key, Source.Value == Value {
        FetchingStore(base: self, fetcher: fetcher, logger: logger)
    }

    /// Ends this store (or chain) in a closure that produces original values.
    /// - Parameters:
    ///   - logger: Where layer failures are logged.
    ///   - body: Produces the value for a key.
    /// - Returns: A store with a `fetch(_:)` method.
    public func fetching(
        logger: Logger = Logger(label: "haneke"),
        _ body: @escaping @Sendable (Key) async throws -> Value
    ) -> FetchingStore<Self, ClosureFetcher<Key, Value>> {
        FetchingStore(base: self, fetcher: ClosureFetcher(body), logger: logger)
    }
}
