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

        /// The key the call was about, or `nil` for `removeAll`.
        public var key: Key? {
            switch self {
            case .value(let key), .setValue(_, let key), .removeValue(let key): key
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
