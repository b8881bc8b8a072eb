public import HanekeProtocols

/// A store that lives in a temporary directory of its own, removed when the store is released: a
/// file-backed store for one test, or one conformance check.
///
/// ```swift
/// try await StoreConformanceSuite {
///     try TemporaryStore { directory in try FileStore(directory: directory.path) }
/// }.run()
/// ```
public struct TemporaryStore<Base: Store>: Store {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The store.
    public let base: Base
    /// The directory it lives in.
    public let directory: TemporaryDirectory

    /// Creates a directory and a store in it.
    /// - Parameter makeStore: Makes the store in the given directory.
    /// - Throws: What creating the directory or `makeStore` throws.
    public init(_ makeStore: (TemporaryDirectory) throws -> Base) throws {
        let directory = try TemporaryDirectory()
        self.base = try makeStore(directory)
        self.directory = directory
    }

    /// Reads from the store.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil`.
    /// - Throws: What the store throws.
    public func value(forKey key: Key) async throws -> Value? {
        try await base.value(forKey: key)
    }

    /// Reads from the store through `transform`, where the store reads.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: What `transform` made of it, or `nil`.
    /// - Throws: What the store or `transform` throw.
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        try await base.value(forKey: key, transformedBy: transform)
    }

    /// Writes to the store.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What the store throws.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await base.setValue(value, forKey: key)
    }

    /// Forwards to ``base``.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What ``base`` throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await base.entry(forKey: key, transformedBy: transform)
    }

    /// Forwards to ``base``.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What ``base`` throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await base.attributes(forKey: key)
    }

    /// Forwards to ``base``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What ``base`` throws.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await base.setEntry(entry, forKey: key)
    }

    /// Forwards to ``base``.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What ``base`` throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await base.setAttributes(attributes, forKey: key)
    }

    /// Forwards to ``base``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What ``base`` throws.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await base.addEntry(entry, forKey: key)
    }

    /// Removes from the store.
    /// - Parameter key: The key to remove.
    /// - Throws: What the store throws.
    public func removeValue(forKey key: Key) async throws {
        try await base.removeValue(forKey: key)
    }

    /// Empties the store.
    /// - Throws: What the store throws.
    public func removeAll() async throws {
        try await base.removeAll()
    }

    /// The store's layers.
    public var layerStatistics: [LayerStatistics] { base.layerStatistics }
}
