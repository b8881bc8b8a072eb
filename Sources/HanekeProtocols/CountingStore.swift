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

    /// Reads the entry from the base store, counting a hit or a miss.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What the base store throws (counted as an error).
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        let entry = try await counting { try await base.entry(forKey: key, transformedBy: transform) }
        counter.recordRead(entry != nil)
        return entry
    }

    /// The base store's attributes for `key` (not counted as a read).
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What the base store throws (counted as an error).
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await counting { try await base.attributes(forKey: key) }
    }

    /// Writes the entry to the base store, counting a write.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What the base store throws (counted as an error).
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await counting { try await base.setEntry(entry, forKey: key) }
        counter.recordWrite()
    }

    /// Replaces the attributes in the base store.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What the base store throws (counted as an error).
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await counting { try await base.setAttributes(attributes, forKey: key) }
    }

    /// Adds the entry to the base store if absent: counted as a write when inserted, a hit when not.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What the base store throws (counted as an error).
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        let result = try await counting { try await base.addEntry(entry, forKey: key) }
        if result.inserted { counter.recordWrite() } else { counter.recordRead(true) }
        return result
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
