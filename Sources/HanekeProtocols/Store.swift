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

    /// Returns the entry for `key` — its value passed through `transform`, with its expiry, the
    /// time it was stored and its metadata — or `nil` when there is none or it has expired.
    ///
    /// Stores that keep attributes implement this; the default reads the value and reports empty
    /// attributes.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored value: it runs once, on a hit.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed; what `transform` throws.
    func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>?

    /// Returns the entry for `key` as it is stored: its value and attributes, or `nil` when there is
    /// none or it has expired. The default reads ``entry(forKey:transformedBy:)`` with no transform;
    /// a store on a hot path (a memory layer, a chain) implements it without the generic transform.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed.
    func entry(forKey key: Key) async throws -> StoreEntry<Value>?

    /// Returns the attributes of the entry for `key` without decoding its value (a disk store reads
    /// the header or the row only), or `nil` when there is none or it has expired.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed.
    func attributes(forKey key: Key) async throws -> EntryAttributes?

    /// Stores `entry` for `key` with its own expiry and metadata, replacing any previous value. An
    /// entry without `storedAt` is stamped with the time of the write.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError` when it could not be stored (`valueTooLarge` for metadata over
    ///   ``EntryAttributes/metadataLimit``; `unsupported` from a store that keeps no attributes).
    func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws

    /// Replaces the attributes of the entry for `key`, keeping its value — without rewriting the
    /// value where the engine allows (an HTTP revalidation refreshes headers only).
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when the key had no unexpired entry (nothing is written).
    /// - Throws: `StoreError` when the store failed.
    @discardableResult
    func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool

    /// Stores `entry` only if `key` has no unexpired value, atomically in this store (between
    /// processes and machines where the store is shared).
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry already there (nothing was written).
    /// - Throws: `StoreError` when the store failed; `unsupported` from a store without an atomic add.
    func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value>

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
