public import Foundation
public import HanekeProtocols
import Logging
import Synchronization

/// A store of bytes that keeps every value as one standard LZ4 frame in another store of bytes.
///
/// ```swift
/// let disk = try FileStore(directory: "/var/cache/myapp").compressed()
/// ```
///
/// Each frame records its content size and a content checksum, so `lz4 -d` decodes what this store
/// writes, frames written by the `lz4` tool decode here, and damage is detected: a frame that fails to
/// decode or to match its checksum makes a read throw `StoreError` with code `corrupted` (in a chain:
/// a miss, the entry removed, the fetcher asked). A frame that claims more than the
/// ``CompressionConfiguration/decompressionLimit`` is refused with `decompressionLimitExceeded` before anything
/// is allocated for it. Incompressible values grow only by the frame's overhead (23 bytes plus
/// 4 per block), because the frame format stores such blocks raw.
///
/// Compression runs on the calling task: it is CPU work (about 700 MB/s), not blocking I/O.
public struct CompressedStore<Base: Store>: Store where Base.Value == Data {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Data

    /// The store that holds the frames.
    public let base: Base
    /// How values are compressed.
    public var configuration: Configuration { coder.configuration }
    @usableFromInline let coder: FrameCoder

    /// Compresses into `base`. Prefer ``HanekeProtocols/Store/compressed(_:)``.
    /// - Parameters:
    ///   - base: The store that holds the frames.
    ///   - configuration: How values are compressed.
    public init(base: Base, configuration: Configuration = Configuration()) {
        self.base = base
        coder = FrameCoder(configuration)
    }

    /// Reads the frame for `key` and decompresses it.
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil` on a miss.
    /// - Throws: `StoreError` with code `corrupted` or `decompressionLimitExceeded`; what `base` throws.
    @inlinable
    public func value(forKey key: Key) async throws -> Data? {
        try await base.value(forKey: key, transformedBy: { [coder] frame in try coder.decode(frame, key: key) })
    }

    /// Reads the frame for `key`, decompresses it and passes the bytes through `transform`, where
    /// `base` reads (on a `FileStore`'s I/O executor, in the job that read the file).
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the decompressed bytes.
    /// - Returns: What `transform` made of them, or `nil` on a miss.
    /// - Throws: As ``value(forKey:)``; what `transform` throws.
    @inlinable
    public func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> Transformed? {
        try await base.value(forKey: key, transformedBy: { [coder] frame in try transform(coder.decode(frame, key: key)) })
    }

    /// Compresses `value` into one frame and stores it.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` with code `valueTooLarge` for a value larger than the
    ///   ``CompressionConfiguration/decompressionLimit`` (it could never be read back: in a chain it would be
    ///   a miss, and refetched, forever); `encoding` if liblz4 fails; what `base` throws.
    @inlinable
    public func setValue(_ value: Data, forKey key: Key) async throws {
        let frame = try coder.encode(value, key: key)
        try await base.setValue(frame, forKey: key)
        coder.recordWrite(uncompressed: value.count, compressed: frame.count)
    }

    /// Reads the frame's entry from `base` and decompresses it where `base` runs transforms.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the decompressed bytes.
    /// - Returns: The entry, or `nil` on a miss.
    /// - Throws: `StoreError.corrupted` or `.decompressionLimitExceeded`; what `base` throws.
    @inlinable
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await base.entry(forKey: key, transformedBy: { [coder] frame in try transform(coder.decode(frame, key: key)) })
    }

    /// The attributes `base` keeps for `key`; nothing is decompressed.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil` on a miss.
    /// - Throws: What `base` throws.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        try await base.attributes(forKey: key)
    }

    /// Compresses the value into a frame and stores it in `base` with the entry's attributes.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Throws: What compressing or `base` throw.
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: Key) async throws {
        let frame = try coder.encode(entry.value, key: key)
        try await base.setEntry(StoreEntry(value: frame, attributes: entry.attributes), forKey: key)
        coder.recordWrite(uncompressed: entry.value.count, compressed: frame.count)
    }

    /// Replaces the attributes in `base`; the frame is not touched.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there was no entry.
    /// - Throws: What `base` throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await base.setAttributes(attributes, forKey: key)
    }

    /// Compresses the value and adds it to `base` if absent; an existing frame is decompressed.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Returns: `.inserted`, or `.existing` with the decompressed entry that is there.
    /// - Throws: What compressing, decompressing or `base` throw.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: Key) async throws -> AddResult<Data> {
        let frame = try coder.encode(entry.value, key: key)
        let result = try await base.addEntry(StoreEntry(value: frame, attributes: entry.attributes), forKey: key)
        if result.inserted { coder.recordWrite(uncompressed: entry.value.count, compressed: frame.count) }
        return try result.map { [coder] frame in try coder.decode(frame, key: key) }
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

    /// The layers of `base`; a frame that was refused turns its read from a hit into a miss and an
    /// error of the first layer (the caller got no value).
    public var layerStatistics: [LayerStatistics] {
        LayerStatistics.merging(viewCounts: coder.counters.view.snapshot, into: base.layerStatistics, orNamed: "compressed")
    }

    /// Bytes before and after compression, and frames refused.
    public var compressionStatistics: CompressionStatistics { coder.counters.snapshot }

    /// Compresses `value` as this store would write it, without storing it: for tools and tests.
    /// - Parameter value: The bytes to compress.
    /// - Returns: One LZ4 frame.
    /// - Throws: `StoreError` with code `encoding`.
    public func frame(for value: Data) throws -> Data {
        try LZ4Frame.compress(value, configuration: configuration)
    }

    /// Decompresses one frame as this store would read it: for tools (`haneke get`) and tests.
    /// - Parameter frame: One LZ4 frame.
    /// - Returns: The bytes it holds.
    /// - Throws: `StoreError` with code `corrupted` or `decompressionLimitExceeded`.
    public func decompress(_ frame: Data) throws -> Data {
        try LZ4Frame.decompress(frame, limit: configuration.decompressionLimit)
    }
}

extension Store where Value == Data {
    /// Keeps every value of this store as one LZ4 frame (content size and checksum included).
    /// - Parameter configuration: Level, block size and decompression limit; the defaults by default.
    /// - Returns: A compressing view of this store.
    public func compressed(_ configuration: CompressionConfiguration = .init()) -> CompressedStore<Self> {
        CompressedStore(base: self, configuration: configuration)
    }
}
