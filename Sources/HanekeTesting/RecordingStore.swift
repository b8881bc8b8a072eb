public import HanekeProtocols

/// A store that logs every call before passing it to a real store, so a test can check which layer
/// was asked for what, and in which order.
///
/// ```swift
/// let disk = RecordingStore(wrapping: MemoryStore<String, Data>())
/// _ = try await MemoryStore<String, Data>().chained(to: disk).value(forKey: "a")
/// #expect(disk.calls == [.value("a")])
/// ```
public final class RecordingStore<Base: Store>: Store {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// One call made to the store.
    public enum Call: Sendable {
        /// `value(forKey:)`.
        case value(Key)
        /// `setValue(_:forKey:)`.
        case setValue(Value, Key)
        /// `removeValue(forKey:)`.
        case removeValue(Key)
        /// `removeAll()`.
        case removeAll
        /// ``RecordingStore/entry(forKey:transformedBy:)``.
        case entry(Key)
        /// ``RecordingStore/attributes(forKey:)``.
        case attributes(Key)
        /// ``RecordingStore/setEntry(_:forKey:)``.
        case setEntry(StoreEntry<Value>, Key)
        /// ``RecordingStore/setAttributes(_:forKey:)``.
        case setAttributes(EntryAttributes, Key)
        /// ``RecordingStore/addEntry(_:forKey:)``.
        case addEntry(StoreEntry<Value>, Key)

        /// The key the call was about, or `nil` for `removeAll`.
        public var key: Key? {
            switch self {
            case .value(let key), .setValue(_, let key), .removeValue(let key), .entry(let key), .attributes(let key),
                 .setEntry(_, let key), .setAttributes(_, let key), .addEntry(_, let key): key
            case .removeAll: nil
            }
        }
    }

    /// The store the calls are passed to.
    public let base: Base
    private let log = Locked<[Call]>([])

    /// Records calls to `base`.
    /// - Parameter base: The store the calls are passed to.
    public init(wrapping base: Base) {
        self.base = base
    }

    /// Every call so far, oldest first.
    public var calls: [Call] { log.withLock { $0 } }

    /// Forgets the calls recorded so far.
    public func resetCalls() { log.withLock { $0.removeAll() } }

    /// Records the call and reads from `base`.
    /// - Parameter key: The key to look up.
    /// - Returns: What `base` returns.
    /// - Throws: What `base` throws.
    public func value(forKey key: Key) async throws -> Value? {
        log.withLock { $0.append(.value(key)) }
        return try await base.value(forKey: key)
    }

    /// Records the call and writes to `base`.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What `base` throws.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        log.withLock { $0.append(.setValue(value, key)) }
        try await base.setValue(value, forKey: key)
    }

    /// Records the call, then forwards it to ``base``.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: What ``base`` throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        log.withLock { $0.append(.entry(key)) }
        return try await base.entry(forKey: key, transformedBy: transform)
    }

    /// Records the call, then forwards it to ``base``.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What ``base`` throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        log.withLock { $0.append(.attributes(key)) }
        return try await base.attributes(forKey: key)
    }

    /// Records the call, then forwards it to ``base``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What ``base`` throws.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        log.withLock { $0.append(.setEntry(entry, key)) }
        try await base.setEntry(entry, forKey: key)
    }

    /// Records the call, then forwards it to ``base``.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What ``base`` throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        log.withLock { $0.append(.setAttributes(attributes, key)) }
        return try await base.setAttributes(attributes, forKey: key)
    }

    /// Records the call, then forwards it to ``base``.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What ``base`` throws.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        log.withLock { $0.append(.addEntry(entry, key)) }
        return try await base.addEntry(entry, forKey: key)
    }

    /// Records the call and removes from `base`.
    /// - Parameter key: The key to remove.
    /// - Throws: What `base` throws.
    public func removeValue(forKey key: Key) async throws {
        log.withLock { $0.append(.removeValue(key)) }
        try await base.removeValue(forKey: key)
    }

    /// Records the call and empties `base`.
    /// - Throws: What `base` throws.
    public func removeAll() async throws {
        log.withLock { $0.append(.removeAll) }
        try await base.removeAll()
    }

    /// The layers of `base`.
    public var layerStatistics: [LayerStatistics] { base.layerStatistics }
}

extension RecordingStore.Call: Equatable where Base.Value: Equatable {}
