package import Foundation

/// A store of bytes whose operations block — a disk store, a database — and that runs them on an
/// ``IOExecutor`` for its async API, off Swift's cooperative threads.
///
/// An engine implements its operations once, synchronously, under names of their own
/// (`blockingValue(forKey:)`, …); this protocol's extension makes the async versions, each one job
/// of the engine's executor, and the engine's public async methods are one line each that call
/// them (`try await valueOnExecutor(forKey: key)`).
///
/// The async methods are not given to the engines as defaults of `Store`'s requirements, on
/// purpose: an engine also has public synchronous `value(forKey:)`, `setValue(_:forKey:)`, …, and
/// Swift may choose a synchronous method as the witness of an `async` requirement, which would
/// run the blocking work on the caller's cooperative thread. Declared in the engine, the async
/// methods are the witnesses.
package protocol BlockingEngine: Sendable {
    /// Where the async operations run.
    var executor: IOExecutor { get }

    /// Returns the value for `key`, or `nil` (blocks: disk I/O).
    func blockingValue(forKey key: String) throws -> Data?
    /// Stores `value` for `key` (blocks: disk I/O).
    func blockingSetValue(_ value: Data, forKey key: String) throws
    /// Removes the value for `key` (blocks: disk I/O).
    func blockingRemoveValue(forKey key: String) throws
    /// Removes every value (blocks: disk I/O).
    func blockingRemoveAll() throws
    /// Returns the entry for `key` with its attributes, or `nil` (blocks: disk I/O).
    func blockingEntry(forKey key: String) throws -> StoreEntry<Data>?
    /// Returns the attributes of the entry for `key` without its value, or `nil` (blocks).
    func blockingAttributes(forKey key: String) throws -> EntryAttributes?
    /// Stores `entry` for `key` (blocks: disk I/O).
    func blockingSetEntry(_ entry: StoreEntry<Data>, forKey key: String) throws
    /// Replaces the attributes of the entry for `key`; `false` when there is none (blocks).
    func blockingSetAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool
    /// Stores `entry` for `key` if it has no unexpired entry, atomically (blocks: disk I/O).
    func blockingAddEntry(_ entry: StoreEntry<Data>, forKey key: String) throws -> AddResult<Data>
    /// What work on the whole store (`removeAll`, its size, a flush) awaits first, without holding
    /// a thread: a store that indexes its folder in the background waits for its index. Nothing by
    /// default.
    func waitUntilReady() async
    /// The entry for `key` read on the calling thread when that cannot block — the kernel has the
    /// file's name and pages cached — or `nil`, and the read goes to the executor. Always `nil` by
    /// default.
    func entryWithoutWaiting(forKey key: String, withAttributes: Bool) -> StoreEntry<Data>?
}

extension BlockingEngine {
    package func waitUntilReady() async {}

    package func entryWithoutWaiting(forKey key: String, withAttributes: Bool) -> StoreEntry<Data>? { nil }

    /// ``blockingValue(forKey:)`` as one job of the executor, unless
    /// ``entryWithoutWaiting(forKey:withAttributes:)`` serves it on the calling thread.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func valueOnExecutor(forKey key: String) async throws -> Data? {
        if let entry = entryWithoutWaiting(forKey: key, withAttributes: false) { return entry.value }
        return try await executor.run { try self.blockingValue(forKey: key) }
    }

    /// ``blockingValue(forKey:)`` and `transform` of what it returns, in one job of the executor: a
    /// decorator's decompression or decoding runs there, and the caller resumes once. A value that
    /// ``entryWithoutWaiting(forKey:withAttributes:)`` serves is transformed as
    /// ``ReadWithoutHop/transform(_:on:_:)`` says.
    /// - Throws: What either throws; `CancellationError` if cancelled before it ran.
    package func valueOnExecutor<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> Transformed? {
        if let entry = entryWithoutWaiting(forKey: key, withAttributes: false) {
            return try await ReadWithoutHop.transform(entry, on: executor, transform).value
        }
        return try await executor.run { try self.blockingValue(forKey: key).map(transform) }
    }

    /// ``blockingSetValue(_:forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func setValueOnExecutor(_ value: Data, forKey key: String) async throws {
        try await executor.run { try self.blockingSetValue(value, forKey: key) }
    }

    /// ``blockingRemoveValue(forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func removeValueOnExecutor(forKey key: String) async throws {
        try await executor.run { try self.blockingRemoveValue(forKey: key) }
    }

    /// ``blockingEntry(forKey:)`` and `transform` of its value, in one job of the executor, unless
    /// ``entryWithoutWaiting(forKey:withAttributes:)`` serves it on the calling thread.
    /// - Throws: What either throws; `CancellationError` if cancelled before it ran.
    package func entryOnExecutor<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        if let entry = entryWithoutWaiting(forKey: key, withAttributes: true) {
            return try await ReadWithoutHop.transform(entry, on: executor, transform)
        }
        return try await executor.run { try self.blockingEntry(forKey: key).map { try $0.map(transform) } }
    }

    /// ``blockingAttributes(forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func attributesOnExecutor(forKey key: String) async throws -> EntryAttributes? {
        try await executor.run { try self.blockingAttributes(forKey: key) }
    }

    /// ``blockingSetEntry(_:forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func setEntryOnExecutor(_ entry: StoreEntry<Data>, forKey key: String) async throws {
        try await executor.run { try self.blockingSetEntry(entry, forKey: key) }
    }

    /// ``blockingSetAttributes(_:forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func setAttributesOnExecutor(_ attributes: EntryAttributes, forKey key: String) async throws -> Bool {
        try await executor.run { try self.blockingSetAttributes(attributes, forKey: key) }
    }

    /// ``blockingAddEntry(_:forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func addEntryOnExecutor(_ entry: StoreEntry<Data>, forKey key: String) async throws -> AddResult<Data> {
        try await executor.run { try self.blockingAddEntry(entry, forKey: key) }
    }

    /// ``waitUntilReady()``, then ``blockingRemoveAll()`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func removeAllOnExecutor() async throws {
        await waitUntilReady()
        try await executor.run { try self.blockingRemoveAll() }
    }
}
