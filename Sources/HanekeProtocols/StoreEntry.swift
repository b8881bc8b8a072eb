public import Foundation
import Logging

/// What travels with a stored value through every layer: when it expires, when it was first stored,
/// and a small block of metadata (validators and headers for HTTP, a version for anything else).
///
/// Instants are on the store's clock (``StoreClock``). A store with a `timeToLive` of its own uses it
/// as a maximum: an entry expires at its own expiry or that lifetime after it was written, whichever
/// comes first. A value promoted from a lower layer keeps its attributes, so it expires when the
/// original would.
public struct EntryAttributes: Sendable, Hashable {
    /// The most bytes of metadata one entry may carry: 16 KiB. A larger block is refused with
    /// `valueTooLarge`.
    public static let metadataLimit = 16 << 10

    /// When the entry stops being served; `nil` for never.
    public var expiresAt: Date?
    /// When the value was first stored (kept when a chain promotes it); `nil` when unknown. A store
    /// given an entry without it records the time of the write.
    public var storedAt: Date?
    /// Bytes kept beside the value, at most ``metadataLimit``; empty by default.
    public var metadata: Data

    /// Creates attributes.
    /// - Parameters:
    ///   - expiresAt: When the entry stops being served; `nil` for never.
    ///   - storedAt: When the value was first stored; `nil` for the time of the write.
    ///   - metadata: Bytes kept beside the value, at most ``metadataLimit``.
    @inlinable
    public init(expiresAt: Date? = nil, storedAt: Date? = nil, metadata: Data = Data()) {
        self.expiresAt = expiresAt
        self.storedAt = storedAt
        self.metadata = metadata
    }

    /// Whether the entry has expired at `now`: its expiry is `now` or earlier.
    /// - Parameter now: The current time on the store's clock.
    /// - Returns: `true` when a read at `now` misses.
    public func isExpired(at now: Date) -> Bool {
        guard let expiresAt else { return false }
        return expiresAt <= now
    }

    /// The expiry an entry written at `now` gets in a store whose own lifetime is `timeToLive`:
    /// whichever comes first of ``expiresAt`` and `now + timeToLive`.
    /// - Parameters:
    ///   - now: The time of the write.
    ///   - timeToLive: The store's own lifetime in seconds; `nil` for none.
    /// - Returns: The expiry to keep; `nil` for never.
    public func expiry(writtenAt now: Date, storeTimeToLive timeToLive: Double?) -> Date? {
        let bound = timeToLive.map { now.addingTimeInterval($0) }
        switch (expiresAt, bound) {
        case let (own?, bound?): return min(own, bound)
        case let (own, bound): return own ?? bound
        }
    }

    /// Throws `valueTooLarge` when the metadata is over ``metadataLimit``.
    /// - Parameter key: The key, for the message.
    /// - Throws: `StoreError.valueTooLarge`.
    public func checkMetadataSize(forKey key: some Hashable & Sendable) throws {
        guard metadata.count > Self.metadataLimit else { return }
        throw StoreError(
            .valueTooLarge,
            "The metadata for key \(Logger.describe(key)) is \(metadata.count) bytes; an entry carries at most \(Self.metadataLimit)"
        )
    }
}

/// A stored value and its ``EntryAttributes``.
public struct StoreEntry<Value: Sendable>: Sendable {
    /// The value.
    public var value: Value
    /// Its expiry, the time it was stored, and its metadata.
    public var attributes: EntryAttributes

    /// Creates an entry.
    /// - Parameters:
    ///   - value: The value.
    ///   - attributes: Its expiry, the time it was stored, and its metadata.
    @inlinable
    public init(value: Value, attributes: EntryAttributes = EntryAttributes()) {
        self.value = value
        self.attributes = attributes
    }

    /// Creates an entry.
    /// - Parameters:
    ///   - value: The value.
    ///   - expiresAt: When it stops being served; `nil` (never) by default.
    ///   - metadata: Bytes kept beside it; none by default.
    @inlinable
    public init(value: Value, expiresAt: Date?, metadata: Data = Data()) {
        self.init(value: value, attributes: EntryAttributes(expiresAt: expiresAt, metadata: metadata))
    }

    /// When the entry stops being served; `nil` for never.
    public var expiresAt: Date? {
        get { attributes.expiresAt }
        set { attributes.expiresAt = newValue }
    }

    /// The bytes kept beside the value.
    public var metadata: Data {
        get { attributes.metadata }
        set { attributes.metadata = newValue }
    }

    /// The same attributes with another value.
    /// - Parameter transform: Makes the new value.
    /// - Returns: The entry with the transformed value.
    /// - Throws: What `transform` throws.
    @inlinable
    public func map<T: Sendable>(_ transform: (Value) throws -> T) rethrows -> StoreEntry<T> {
        StoreEntry<T>(value: try transform(value), attributes: attributes)
    }
}

extension StoreEntry: Equatable where Value: Equatable {}

/// What an add-if-absent (``Store/addEntry(_:forKey:)``) did.
public enum AddResult<Value: Sendable>: Sendable {
    /// The key had no unexpired value: the entry was stored.
    case inserted
    /// The key already had this unexpired entry; nothing was written.
    case existing(StoreEntry<Value>)

    /// Whether the entry was stored.
    public var inserted: Bool {
        if case .inserted = self { return true }
        return false
    }

    /// The entry that was already there, or `nil` when the new one was stored.
    public var existing: StoreEntry<Value>? {
        if case .existing(let entry) = self { return entry }
        return nil
    }

    /// The same outcome with the existing value transformed.
    /// - Parameter transform: Makes the new value.
    /// - Returns: The outcome with the transformed value.
    /// - Throws: What `transform` throws.
    @inlinable
    public func map<T: Sendable>(_ transform: (Value) throws -> T) rethrows -> AddResult<T> {
        switch self {
        case .inserted: return .inserted
        case .existing(let entry): return .existing(try entry.map(transform))
        }
    }
}

extension AddResult: Equatable where Value: Equatable {}

extension Store {
    /// The entry for `key`: its value and attributes, or `nil` when there is none or it has expired.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `StoreError` when the store failed.
    @inlinable
    public func entry(forKey key: Key) async throws -> StoreEntry<Value>? {
        try await entry(forKey: key, transformedBy: { $0 })
    }

    /// Stores `value` for `key` with its own expiry and metadata, replacing any previous value.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    ///   - expiresAt: When it stops being served, on the store's clock; `nil` for never (or the
    ///     store's own lifetime).
    ///   - metadata: Bytes kept beside it, at most ``EntryAttributes/metadataLimit``.
    /// - Throws: `StoreError` when it could not be stored.
    public func setValue(_ value: Value, forKey key: Key, expiresAt: Date?, metadata: Data = Data()) async throws {
        try await setEntry(StoreEntry(value: value, expiresAt: expiresAt, metadata: metadata), forKey: key)
    }

    /// Stores `value` for `key` only if the key has no unexpired value, atomically.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    ///   - expiresAt: When it stops being served; `nil` for never.
    ///   - metadata: Bytes kept beside it.
    /// - Returns: `.inserted`, or `.existing` with the entry that was there.
    /// - Throws: `StoreError` when the store failed.
    @discardableResult
    public func addValue(
        _ value: Value, forKey key: Key, expiresAt: Date? = nil, metadata: Data = Data()
    ) async throws -> AddResult<Value> {
        try await addEntry(StoreEntry(value: value, expiresAt: expiresAt, metadata: metadata), forKey: key)
    }

    /// Reads the value, with empty attributes: a store that keeps no attributes.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored value.
    /// - Returns: The entry, or `nil`.
    /// - Throws: What ``value(forKey:transformedBy:)`` throws.
    @inlinable
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await value(forKey: key, transformedBy: transform).map { StoreEntry(value: $0) }
    }

    /// Reads the entry and keeps its attributes: a store that cannot read them alone.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What ``entry(forKey:transformedBy:)`` throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await entry(forKey: key, transformedBy: { _ in () })?.attributes
    }

    /// Stores a plain entry with ``setValue(_:forKey:)``; refuses one with an expiry or metadata
    /// with `unsupported`, rather than dropping them: a store that keeps no attributes.
    /// - Parameters:
    ///   - entry: The entry.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError.unsupported`, or what ``setValue(_:forKey:)`` throws.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        guard entry.attributes.expiresAt == nil, entry.attributes.metadata.isEmpty else {
            throw StoreError(
                .unsupported,
                "\(Self.self) keeps no expiry or metadata (key \(Logger.describe(key))); implement setEntry(_:forKey:)"
            )
        }
        try await setValue(entry.value, forKey: key)
    }

    /// Reads the entry and writes it again with `attributes`: a store that cannot rewrite them alone.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What reading or writing throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        guard let entry = try await entry(forKey: key) else { return false }
        try await setEntry(StoreEntry(value: entry.value, attributes: attributes), forKey: key)
        return true
    }

    /// Refuses with `unsupported`: a store without an atomic add-if-absent.
    /// - Parameters:
    ///   - entry: The entry.
    ///   - key: The key.
    /// - Returns: Never.
    /// - Throws: `StoreError.unsupported`.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        throw StoreError(
            .unsupported,
            "\(Self.self) has no atomic add-if-absent (key \(Logger.describe(key))); implement addEntry(_:forKey:)"
        )
    }
}
