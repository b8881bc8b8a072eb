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
