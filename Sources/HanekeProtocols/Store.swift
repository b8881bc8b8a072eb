/// A key-value store: the one protocol every backend and every combination of backends conforms to.
///
/// A miss is `nil`, never an error; an error means the store failed. Removing a missing key is a
/// no-op, and a store stays usable after `removeAll()`.
///
/// Stores compose by method chaining:
///
/// ```swift
/// let users = MemoryStore<String, User>(countLimit: 1_000)
///     .chained(to: diskStore.coded(as: User.self))
///     .fetching(from: UserAPI())
/// ```
public protocol Store<Key, Value>: Sendable {
    /// The type of the keys.
    associatedtype Key: Hashable & Sendable
    /// The type of the values.
    associatedtype Value: Sendable

    /// Returns the value stored for `key`, or `nil` when there is none.
    /// - Parameter key: The key to look up.
    /// - Returns: The stored value, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed (not when the key is missing).
    func value(forKey key: Key) async throws -> Value?

    /// Returns the value stored for `key` passed through `transform`, or `nil` when there is none,
    /// in one step: a store that reads on threads of its own runs `transform` there, right after the
    /// read (`FileStore` does, on its I/O executor), so that a decorator's decompression or decoding
    /// runs off the caller's thread and costs no second hop. The default reads, then transforms.
    ///
    /// Decorators (``CodedStore``, `CompressedStore`, ``AnyStore``, …) implement this by adding
    /// their own step to `transform` and passing it to their base.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored value: it runs once, on a hit.
    /// - Returns: What `transform` made of the value, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed; what `transform` throws.
    func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed?

    /// Stores `value` for `key`, replacing any previous value.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError` when the value could not be stored.
    func setValue(_ value: Value, forKey key: Key) async throws

    /// Removes the value for `key`; removing a missing key is a no-op.
    /// - Parameter key: The key to remove.
    /// - Throws: `StoreError` when the store failed.
    func removeValue(forKey key: Key) async throws

    /// Removes every value. The store stays usable afterwards.
    /// - Throws: `StoreError` when the store failed.
    func removeAll() async throws

    /// Snapshots of the counters of each layer of this store, top layer first.
    ///
    /// A single store reports one layer; a chain reports the layers of its parts in order. The
    /// default implementation reports none: a store you write yourself can implement this property,
    /// or be wrapped with ``Store/counted(name:)``.
    var layerStatistics: [LayerStatistics] { get }
}

extension Store {
    /// A store that counts nothing reports no layers.
    public var layerStatistics: [LayerStatistics] { [] }

    /// Reads the value for `key`, then passes it through `transform` on the caller's thread.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored value.
    /// - Returns: What `transform` made of the value, or `nil` on a miss.
    /// - Throws: What ``value(forKey:)`` or `transform` throw.
    @inlinable
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        try await value(forKey: key).map(transform)
    }
}
