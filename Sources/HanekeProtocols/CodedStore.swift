public import Foundation
import Logging

/// A store of bytes seen as a store of values, through a ``DataCodec``.
///
/// Made by ``Store/coded(as:)`` or ``Store/coded(with:)``. Bytes that do not decode make a read throw
/// `StoreError` with code `decoding` (a chain or a fetcher treats that as a miss and removes the entry).
public struct CodedStore<Base: Store, Codec: DataCodec>: Store
where Base.Value == Data, Codec.Value: Sendable {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Codec.Value

    /// The store of bytes.
    public let base: Base
    /// The codec between values and bytes.
    public let codec: Codec
    @usableFromInline let counter = StatisticsCounter()

    /// Views `base` through `codec`. Prefer ``Store/coded(with:)``.
    /// - Parameters:
    ///   - base: The store of bytes.
    ///   - codec: The codec between values and bytes.
    public init(base: Base, codec: Codec) {
        self.base = base
        self.codec = codec
    }

    /// Reads the bytes for `key` and decodes them.
    /// - Parameter key: The key to look up.
    /// - Returns: The decoded value, or `nil` on a miss.
    /// - Throws: `StoreError` with code `decoding` when the bytes do not decode; what `base` throws.
    @inlinable
    public func value(forKey key: Key) async throws -> Value? {
        try await base.value(forKey: key, transformedBy: { [self] data in try decode(data, key: key) })
    }

    /// Reads the bytes for `key`, decodes them and passes the value through `transform`, where
    /// `base` reads (on a `FileStore`'s I/O executor, in the job that read the file).
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the decoded value.
    /// - Returns: What `transform` made of it, or `nil` on a miss.
    /// - Throws: As ``value(forKey:)``; what `transform` throws.
    @inlinable
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        try await base.value(forKey: key, transformedBy: { [self] data in try transform(decode(data, key: key)) })
    }

    /// Decodes the bytes read for `key`, as a `StoreError` with code `decoding` when they do not.
    @inlinable
    func decode(_ data: Data, key: Key) throws -> Value {
        do {
            return try codec.decode(data)
        } catch {
            throw failure(error, decoding: true, key: key)
        }
    }

    /// Encodes `value` and stores the bytes.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError` with code `encoding`; what `base` throws.
    @inlinable
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await base.setValue(encode(value, key: key), forKey: key)
    }

    @inlinable
    func encode(_ value: Value, key: Key) throws -> Data {
        do {
            return try codec.encode(value)
        } catch {
            throw failure(error, decoding: false, key: key)
        }
    }

    /// Reads the entry from `base` and decodes its value (where `base` runs transforms: off the
    /// caller's thread for a disk store).
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the decoded value.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: `StoreError.decoding` when the bytes do not decode; what `base` or `transform` throw.
    @inlinable
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await base.entry(forKey: key, transformedBy: { [self] data in try transform(decode(data, key: key)) })
    }

    /// The attributes `base` keeps for `key`; the value is not decoded.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What `base` throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await base.attributes(forKey: key)
    }

    /// Encodes the value and stores it in `base` with the entry's attributes.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError.encoding`, or what `base` throws.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await base.setEntry(entry.map { try encode($0, key: key) }, forKey: key)
    }

    /// Replaces the attributes in `base`.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What `base` throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await base.setAttributes(attributes, forKey: key)
    }

    /// Encodes the value and adds it to `base` if absent; an existing entry is decoded.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the decoded entry that is there.
    /// - Throws: `StoreError.encoding` or `.decoding`, or what `base` throws.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await base.addEntry(entry.map { try encode($0, key: key) }, forKey: key).map { try decode($0, key: key) }
    }

    /// Counts a codec failure and makes the `StoreError` users see (out of line: the error path).
    @usableFromInline
    func failure(_ error: any Error, decoding: Bool, key: Key) -> StoreError {
        if decoding {
            counter.recordMiss()
            counter.recordError()
            return StoreError.wrapping(error, as: .decoding, "Could not decode the value stored for key \(Logger.describe(key))")
        }
        counter.recordError()
        return StoreError.wrapping(error, as: .encoding, "Could not encode the value for key \(Logger.describe(key))")
    }

    /// Removes `key` from `base`.
    /// - Parameter key: The key to remove.
    /// - Throws: What `base` throws.
    public func removeValue(forKey key: Key) async throws {
        try await base.removeValue(forKey: key)
    }

    /// Empties `base`.
    /// - Throws: What `base` throws.
    public func removeAll() async throws {
        try await base.removeAll()
    }

    /// The layers of `base`, with what this view counted merged into the first: a read whose
    /// bytes failed to decode moves from that layer's hits to its misses and adds an error (the
    /// caller got no value), and a value that failed to encode adds an error. A base that reports
    /// no layers is reported as one layer named `"coded"`.
    public var layerStatistics: [LayerStatistics] {
        LayerStatistics.merging(viewCounts: counter.snapshot, into: base.layerStatistics, orNamed: "coded")
    }
}

extension Store where Value == Data {
    /// Views this store of bytes as a store of `type`, using the type's own
    /// `DataConvertible` and `DataRepresentable` conformances.
    /// - Parameter type: The value type.
    /// - Returns: A store of `type` values.
    public func coded<T: DataConvertible & DataRepresentable & Sendable>(
        as type: T.Type
    ) -> CodedStore<Self, ConformanceCodec<T>> {
        CodedStore(base: self, codec: ConformanceCodec())
    }

    /// Views this store of bytes as a store of values, through `codec` (JSON, property list, your own).
    /// - Parameter codec: The codec between values and bytes.
    /// - Returns: A store of the codec's values.
    public func coded<Codec: DataCodec>(with codec: Codec) -> CodedStore<Self, Codec> {
        CodedStore(base: self, codec: codec)
    }
}
