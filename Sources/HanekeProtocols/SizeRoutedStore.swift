public import Foundation

/// Two stores of bytes used as one, each value kept by the one that suits its size: values of up to
/// ``threshold`` bytes in ``small``, larger ones in ``large``, and a key never in both.
///
/// Made by ``Store/routingLargeValues(over:to:)``. The pairing it is for: an `SQLiteStore` for small
/// values (they share database pages, so a 512-byte value takes about 1.4× its size on disk instead
/// of a whole 4 KiB block, and the store opens at once) and a `FileStore` for large ones (a file
/// per value reads fastest from about 16 KiB):
///
/// ```swift
/// let disk = try SQLiteStore(directory: folder, capacity: 50 << 20)
///     .routingLargeValues(over: 16 << 10, to: try FileStore(directory: folder, capacity: 50 << 20))
/// ```
///
/// - A write removes the key from the other store, then writes, then removes it from the other
///   store again: a process killed between the steps leaves the key missing, never in both or with
///   an older value, and two writers of one key racing with values of different sizes leave at most
///   one of their values.
/// - A read asks `small` first, then `large` (a large value costs one small-store miss more).
/// - Sizes are of the bytes stored: under a `CompressedStore`, of the compressed frames.
public struct SizeRoutedStore<Small: Store, Large: Store>: Store
where Small.Key == Large.Key, Small.Value == Data, Large.Value == Data {
    /// The type of the keys.
    public typealias Key = Small.Key
    /// The type of the values: bytes, whose size routes them.
    public typealias Value = Data

    /// The store of values of up to ``threshold`` bytes.
    public let small: Small
    /// The store of larger values.
    public let large: Large
    /// The largest value kept in ``small``, in bytes.
    public let threshold: Int

    /// Routes values of up to `threshold` bytes to `small`, larger ones to `large`. Prefer
    /// ``Store/routingLargeValues(over:to:)``.
    /// - Parameters:
    ///   - small: The store of small values.
    ///   - large: The store of large values.
    ///   - threshold: The largest value kept in `small`, in bytes.
    public init(small: Small, large: Large, threshold: Int) {
        self.small = small
        self.large = large
        self.threshold = threshold
    }

    /// The value for `key` from `small`, or else from `large`.
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil` when neither store has them.
    /// - Throws: What the stores throw.
    public func value(forKey key: Key) async throws -> Data? {
        if let value = try await small.value(forKey: key) { return value }
        return try await large.value(forKey: key)
    }

    /// The value for `key` passed through `transform` by the store that holds it (in its own read
    /// job, for stores that read on threads of their own).
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored bytes.
    /// - Returns: What `transform` made of the value, or `nil` on a miss.
    /// - Throws: What the stores or `transform` throw.
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> Transformed? {
        if let value = try await small.value(forKey: key, transformedBy: transform) { return value }
        return try await large.value(forKey: key, transformedBy: transform)
    }

    /// Stores `value` in the store its size picks, and removes `key` from the other.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key.
    /// - Throws: What the stores throw; after a failed write the key is in neither store.
    public func setValue(_ value: Data, forKey key: Key) async throws {
        try await setEntry(StoreEntry(value: value), forKey: key)
    }

    /// Reads the entry from `small`, then `large`.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the bytes.
    /// - Returns: The entry, or `nil` when neither store has it.
    /// - Throws: What either store throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        if let entry = try await small.entry(forKey: key, transformedBy: transform) { return entry }
        return try await large.entry(forKey: key, transformedBy: transform)
    }

    /// The attributes from `small`, then `large`.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` when neither store has the key.
    /// - Throws: What either store throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        if let attributes = try await small.attributes(forKey: key) { return attributes }
        return try await large.attributes(forKey: key)
    }

    /// Stores the entry in the store its value's size routes it to, removing the key from the other
    /// before and after (as ``setValue(_:forKey:)``).
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Throws: What either store throws.
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: Key) async throws {
        if entry.value.count <= threshold {
            try await large.removeValue(forKey: key)
            try await small.setEntry(entry, forKey: key)
            try await large.removeValue(forKey: key)
        } else {
            try await small.removeValue(forKey: key)
            try await large.setEntry(entry, forKey: key)
            try await small.removeValue(forKey: key)
        }
    }

    /// Replaces the attributes in whichever store holds the key.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when neither store has the key.
    /// - Throws: What either store throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        if try await small.setAttributes(attributes, forKey: key) { return true }
        return try await large.setAttributes(attributes, forKey: key)
    }

    /// Adds the entry, if absent, to the store its size routes it to, after checking that the other
    /// store has no entry for the key. Atomic among values routed to the same store (all the
    /// callers of one key with values of one size class); a value of the other size class written
    /// meanwhile may be added beside it, and a read returns the small one.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What either store throws.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: Key) async throws -> AddResult<Data> {
        if entry.value.count <= threshold {
            if let existing = try await large.entry(forKey: key) { return .existing(existing) }
            return try await small.addEntry(entry, forKey: key)
        }
        if let existing = try await small.entry(forKey: key) { return .existing(existing) }
        return try await large.addEntry(entry, forKey: key)
    }

    /// Removes `key` from both stores.
    /// - Parameter key: The key.
    /// - Throws: What the stores throw.
    public func removeValue(forKey key: Key) async throws {
        try await small.removeValue(forKey: key)
        try await large.removeValue(forKey: key)
    }

    /// Removes every value from both stores.
    /// - Throws: What the stores throw.
    public func removeAll() async throws {
        try await small.removeAll()
        try await large.removeAll()
    }

    /// The layers of `small`, then of `large`.
    public var layerStatistics: [LayerStatistics] { small.layerStatistics + large.layerStatistics }
}

extension Store where Value == Data {
    /// This store for values of up to `threshold` bytes, and `large` for larger ones: a
    /// ``SizeRoutedStore``, which keeps each key in one of them.
    /// - Parameters:
    ///   - threshold: The largest value kept in this store, in bytes.
    ///   - large: The store of larger values.
    /// - Returns: The two stores as one.
    public func routingLargeValues<Large: Store>(over threshold: Int, to large: Large) -> SizeRoutedStore<Self, Large>
    where Large.Key == Key, Large.Value == Data {
        SizeRoutedStore(small: self, large: large, threshold: threshold)
    }
}
