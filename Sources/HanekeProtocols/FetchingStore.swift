public import Logging

/// A store that ends in a fetcher: ``fetch(_:)`` reads the layers and, on a full miss, asks the
/// fetcher once per key however many callers are waiting (single flight).
///
/// Made by ``Store/fetching(from:logger:)``. As a ``Store`` it reads and writes its layers only;
/// the fetcher is asked by ``fetch(_:)``.
public final class FetchingStore<Base: Store, Source: Fetcher>: Store
where Base.Key == Source.Key, Base.Value == Source.Value {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The layers read before the fetcher.
    public var base: Base { path.layers }
    /// The source of original values.
    public let fetcher: Source
    /// The read-through path this store and Haneke's `Cache` share.
    @usableFromInline let path: ReadThrough<Base>

    /// Puts `fetcher` behind `base`. Prefer ``Store/fetching(from:logger:)``.
    /// - Parameters:
    ///   - base: The layers read before the fetcher.
    ///   - fetcher: The source of original values.
    ///   - logger: Where layer failures are logged.
    public init(base: Base, fetcher: Source, logger: Logger = Logger(label: "haneke")) {
        self.fetcher = fetcher
        self.path = ReadThrough(layers: base, logger: logger)
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
        try await path.fetch(key, from: fetcher)
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
        try await path.setValue(value, forKey: key)
    }

    /// Removes `key` from the layers.
    /// - Parameter key: The key to remove.
    /// - Throws: What the layers throw.
    public func removeValue(forKey key: Key) async throws {
        try await path.removeValue(forKey: key)
    }

    /// Empties the layers.
    /// - Throws: What the layers throw.
    public func removeAll() async throws {
        try await path.removeAll()
    }

    /// The layers of `base`, then a layer named `"fetcher"`: its `hits` are values the fetcher
    /// produced and its `errors` the calls that failed.
    public var layerStatistics: [LayerStatistics] {
        base.layerStatistics + [LayerStatistics(name: "fetcher", statistics: path.fetcherCounter.snapshot)]
    }

    /// The number of flights under way, for tests and diagnostics.
    public var flightsInProgress: Int { path.flightsInProgress }

    /// The number of callers waiting on the flight for `key`, for tests.
    package func waiterCount(for key: Key) -> Int {
        path.waiterCount(for: key)
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
