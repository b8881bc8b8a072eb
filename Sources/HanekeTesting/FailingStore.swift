public import HanekeProtocols

/// A store that throws on the operations you choose and passes the others to a real store: a disk
/// that fails, a server that is down. Faults can be switched on and off while a test runs.
///
/// ```swift
/// let broken = FailingStore(wrapping: MemoryStore<String, Data>(), failing: [.read])
/// broken.failingOperations = []   // the "disk" recovers
/// ```
public final class FailingStore<Base: Store>: Store {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The store used for operations that do not fail.
    public let base: Base
    /// The name of the layer this store reports; `"failing"` by default.
    public let name: String
    private let state: Locked<(operations: StoreOperation, error: StoreError)>
    private let counter = StatisticsCounter()

    /// Wraps `base`, failing `operations` with `error`.
    /// - Parameters:
    ///   - base: The store used for operations that do not fail.
    ///   - operations: The operations that throw; every operation by default.
    ///   - error: What they throw; a `StoreError` with code `unavailable` by default.
    ///   - name: The reported layer name.
    public init(
        wrapping base: Base,
        failing operations: StoreOperation = .all,
        error: StoreError = StoreError(.unavailable, "FailingStore was told to fail"),
        name: String = "failing"
    ) {
        self.base = base
        self.name = name
        self.state = Locked((operations, error))
    }

    /// The operations that currently throw; set it to switch faults on or off.
    public var failingOperations: StoreOperation {
        get { state.withLock { $0.operations } }
        set { state.withLock { $0.operations = newValue } }
    }

    /// The error the failing operations throw.
    public var error: StoreError {
        get { state.withLock { $0.error } }
        set { state.withLock { $0.error = newValue } }
    }

    /// Reads from `base`, or throws when reads fail.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil`.
    /// - Throws: ``error`` when `.read` fails.
    public func value(forKey key: Key) async throws -> Value? {
        try failIfChosen(.read)
        let value = try await base.value(forKey: key)
        counter.recordRead(value != nil)
        return value
    }

    /// Writes to `base`, or throws when writes fail.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: ``error`` when `.write` fails.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try failIfChosen(.write)
        try await base.setValue(value, forKey: key)
        counter.recordWrite()
    }

    /// Fails when its operation is chosen; otherwise forwards to ``base``.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What ``base`` throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try failIfChosen(.read)
        let entry = try await base.entry(forKey: key, transformedBy: transform)
        counter.recordRead(entry != nil)
        return entry
    }

    /// Fails when its operation is chosen; otherwise forwards to ``base``.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What ``base`` throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try failIfChosen(.read)
        return try await base.attributes(forKey: key)
    }

    /// Fails when its operation is chosen; otherwise forwards to ``base``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What ``base`` throws.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try failIfChosen(.write)
        try await base.setEntry(entry, forKey: key)
        counter.recordWrite()
    }

    /// Fails when its operation is chosen; otherwise forwards to ``base``.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What ``base`` throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try failIfChosen(.write)
        return try await base.setAttributes(attributes, forKey: key)
    }

    /// Fails when its operation is chosen; otherwise forwards to ``base``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What ``base`` throws.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try failIfChosen(.write)
        return try await base.addEntry(entry, forKey: key)
    }

    /// Removes from `base`, or throws when removals fail.
    /// - Parameter key: The key to remove.
    /// - Throws: ``error`` when `.remove` fails.
    public func removeValue(forKey key: Key) async throws {
        try failIfChosen(.remove)
        try await base.removeValue(forKey: key)
        counter.recordRemoval()
    }

    /// Empties `base`, or throws when `removeAll` fails.
    /// - Throws: ``error`` when `.removeAll` fails.
    public func removeAll() async throws {
        try failIfChosen(.removeAll)
        try await base.removeAll()
    }

    /// One layer, named ``name``: the operations it passed on, and one error per operation it failed.
    public var layerStatistics: [LayerStatistics] {
        [LayerStatistics(name: name, statistics: counter.snapshot)]
    }

    private func failIfChosen(_ operation: StoreOperation) throws {
        let (operations, error) = state.withLock { $0 }
        if operations.contains(operation) {
            counter.recordError()
            throw error
        }
    }
}
