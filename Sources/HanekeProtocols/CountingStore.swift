/// A store that counts the operations it passes to another: for stores that count nothing
/// themselves, such as your own.
///
/// Made by ``Store/counted(name:)``.
public struct CountingStore<Base: Store>: Store {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The store whose operations are counted.
    public let base: Base
    /// The name of the layer this store reports.
    public let name: String
    private let counter = StatisticsCounter()

    /// Counts `base`'s operations under `name`. Prefer ``Store/counted(name:)``.
    /// - Parameters:
    ///   - base: The store whose operations are counted.
    ///   - name: The name of the reported layer.
    public init(base: Base, name: String) {
        self.base = base
        self.name = name
    }

    /// Reads from `base`, counting a hit, a miss or an error.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil`.
    /// - Throws: What `base` throws.
    public func value(forKey key: Key) async throws -> Value? {
        let value = try await counting { try await base.value(forKey: key) }
        counter.recordRead(value != nil)
        return value
    }

    /// Reads from `base` through `transform`, where `base` reads, counting a hit, a miss or an
    /// error (an error of `transform` too).
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: What `transform` made of it, or `nil`.
    /// - Throws: What `base` or `transform` throw.
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        let value = try await counting { try await base.value(forKey: key, transformedBy: transform) }
        counter.recordRead(value != nil)
        return value
    }

    /// Writes to `base`, counting a write or an error.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What `base` throws.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await counting { try await base.setValue(value, forKey: key) }
        counter.recordWrite()
    }

    /// Removes from `base`, counting a removal or an error.
    /// - Parameter key: The key to remove.
    /// - Throws: What `base` throws.
    public func removeValue(forKey key: Key) async throws {
        try await counting { try await base.removeValue(forKey: key) }
        counter.recordRemoval()
    }

    /// Empties `base`, counting an error if it fails.
    /// - Throws: What `base` throws.
    public func removeAll() async throws {
        try await counting { try await base.removeAll() }
    }

    /// One layer named `name`, with what this wrapper counted (in place of `base`'s own layers).
    public var layerStatistics: [LayerStatistics] {
        [LayerStatistics(name: name, statistics: counter.snapshot)]
    }

    private func counting<T>(_ operation: () async throws -> T) async throws -> T {
        do {
            return try await operation()
        } catch {
            if !(error is CancellationError) { counter.recordError() }
            throw error
        }
    }
}

extension Store {
    /// Counts this store's hits, misses, writes, removals and errors as one named layer.
    /// - Parameter name: The layer's name in ``Store/layerStatistics``.
    /// - Returns: A counting wrapper.
    public func counted(name: String) -> CountingStore<Self> {
        CountingStore(base: self, name: name)
    }
}
