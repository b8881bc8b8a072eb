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
