/// A type-erased store, for API boundaries where the concrete chain type should not show.
///
/// Made by ``Store/eraseToAnyStore()``. Inside your own code keep the concrete type: it lets the
/// compiler specialise the whole chain.
public struct AnyStore<Key: Hashable & Sendable, Value: Sendable>: Store {
    private let base: any Store<Key, Value>

    /// Wraps `base`. Prefer ``Store/eraseToAnyStore()``.
    /// - Parameter base: The store to wrap.
    public init(_ base: some Store<Key, Value>) {
        if let erased = base as? AnyStore<Key, Value> {
            self = erased
        } else {
            self.base = base
        }
    }

    /// Reads from the wrapped store.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil`.
    /// - Throws: What the wrapped store throws.
    public func value(forKey key: Key) async throws -> Value? {
        try await base.value(forKey: key)
    }

    /// Reads from the wrapped store through `transform`, where the wrapped store reads.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: What `transform` made of it, or `nil`.
    /// - Throws: What the wrapped store or `transform` throw.
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        try await base.value(forKey: key, transformedBy: transform)
    }

    /// Writes to the wrapped store.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What the wrapped store throws.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await base.setValue(value, forKey: key)
    }

    /// Forwards to the wrapped store.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What the wrapped store throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await base.entry(forKey: key, transformedBy: transform)
    }

    /// Forwards to the wrapped store.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What the wrapped store throws.
    public func entry(forKey key: Key) async throws -> StoreEntry<Value>? {
        try await base.entry(forKey: key)
    }

    /// Forwards to the wrapped store.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What the wrapped store throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await base.attributes(forKey: key)
    }

    /// Forwards to the wrapped store.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What the wrapped store throws.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await base.setEntry(entry, forKey: key)
    }

    /// Forwards to the wrapped store.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What the wrapped store throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await base.setAttributes(attributes, forKey: key)
    }

    /// Forwards to the wrapped store.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What the wrapped store throws.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await base.addEntry(entry, forKey: key)
    }

    /// Removes from the wrapped store.
    /// - Parameter key: The key to remove.
    /// - Throws: What the wrapped store throws.
    public func removeValue(forKey key: Key) async throws {
        try await base.removeValue(forKey: key)
    }

    /// Empties the wrapped store.
    /// - Throws: What the wrapped store throws.
    public func removeAll() async throws {
        try await base.removeAll()
    }

    /// The wrapped store's layers.
    public var layerStatistics: [LayerStatistics] { base.layerStatistics }
}

extension Store {
    /// Hides this store's concrete type behind `AnyStore`.
    /// - Returns: A type-erased store.
    public func eraseToAnyStore() -> AnyStore<Key, Value> {
        AnyStore(self)
    }
}
