/// A store whose keys are translated into another store's keys.
///
/// Made by ``Store/mapKeys(_:)``.
public struct KeyMappedStore<Base: Store, Key: Hashable & Sendable>: Store {
    /// The type of the values.
    public typealias Value = Base.Value

    /// The store that holds the values.
    public let base: Base
    private let transform: @Sendable (Key) throws -> Base.Key

    /// Translates keys with `transform`. Prefer ``Store/mapKeys(_:)``.
    /// - Parameters:
    ///   - base: The store that holds the values.
    ///   - transform: Turns a key of this store into a key of `base`.
    public init(base: Base, transform: @escaping @Sendable (Key) throws -> Base.Key) {
        self.base = base
        self.transform = transform
    }

    /// Reads the translated key from `base`.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil`.
    /// - Throws: What `transform` or `base` throw.
    public func value(forKey key: Key) async throws -> Value? {
        try await base.value(forKey: transform(key))
    }

    /// Reads the translated key from `base` through `transform`, where `base` reads.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: What `transform` made of it, or `nil`.
    /// - Throws: What the key translation, `base` or `transform` throw.
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        try await base.value(forKey: self.transform(key), transformedBy: transform)
    }

    /// Writes under the translated key.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What `transform` or `base` throw.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await base.setValue(value, forKey: transform(key))
    }

    /// Reads the entry for the mapped key.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What the key mapping or `base` throw.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await base.entry(forKey: self.transform(key), transformedBy: transform)
    }

    /// The attributes for the mapped key.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What the key mapping or `base` throw.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await base.attributes(forKey: transform(key))
    }

    /// Stores the entry under the mapped key.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What the key mapping or `base` throw.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await base.setEntry(entry, forKey: transform(key))
    }

    /// Replaces the attributes under the mapped key.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What the key mapping or `base` throw.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await base.setAttributes(attributes, forKey: transform(key))
    }

    /// Adds the entry under the mapped key if absent.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What the key mapping or `base` throw.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await base.addEntry(entry, forKey: transform(key))
    }

    /// Removes the translated key.
    /// - Parameter key: The key to remove.
    /// - Throws: What `transform` or `base` throw.
    public func removeValue(forKey key: Key) async throws {
        try await base.removeValue(forKey: transform(key))
    }

    /// Empties `base`.
    /// - Throws: What `base` throws.
    public func removeAll() async throws {
        try await base.removeAll()
    }

    /// The layers of `base`.
    public var layerStatistics: [LayerStatistics] { base.layerStatistics }
}

extension Store {
    /// Adapts this store to another key type.
    ///
    /// ```swift
    /// let byURL = stringStore.mapKeys { (url: URL) in url.absoluteString }
    /// ```
    /// - Parameter transform: Turns a new key into a key of this store; it may throw
    ///   (`StoreError` code `invalidKey`) for keys it cannot translate.
    /// - Returns: A store keyed by `NewKey`.
    public func mapKeys<NewKey: Hashable & Sendable>(
        _ transform: @escaping @Sendable (NewKey) throws -> Key
    ) -> KeyMappedStore<Self, NewKey> {
        KeyMappedStore(base: self, transform: transform)
    }
}
