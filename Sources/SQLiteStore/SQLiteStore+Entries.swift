public import Foundation
public import HanekeProtocols

// Entries with their own attributes: each row keeps its expiry (`expires`), the time its value was
// first stored (`created`), and its metadata beside a checksum of its own (`metadata`,
// `metadata_checksum`), so that the attributes are read, checked and replaced without the value.
//
// As for values, the work is done once, synchronously (the public synchronous methods), and the
// async methods are one job of the executor each, declared here in the type so that they — not
// the synchronous ones — witness `Store`'s async requirements.

extension SQLiteStore {
    // MARK: - Synchronous API

    /// Returns the entry for `key` — its value, expiry, the time it was first stored and its
    /// metadata — or `nil` when there is none, it has expired, or its row is damaged (expired and
    /// damaged rows are deleted).
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `StoreError` with code `io` when the database cannot be read, `unavailable` when
    ///   another connection keeps it locked.
    /// - Performs disk I/O: one B-tree lookup, usually in SQLite's page cache.
    public func entry(forKey key: String) throws -> StoreEntry<Data>? {
        do {
            let entry = try readEntry(forKey: key, withValue: true).map { StoreEntry(value: $0.value ?? Data(), attributes: $0.attributes) }
            counter.recordRead(entry != nil)
            return entry
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Returns the attributes of the entry for `key` without reading its value (the row's small
    /// columns only; the metadata is checked against its own checksum), or `nil` when there is
    /// none, it has expired, or its metadata is damaged (expired and damaged rows are deleted).
    /// Records no use and counts no read.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: `StoreError` with code `io` or `unavailable`, as `entry(forKey:)`.
    /// - Performs disk I/O: one B-tree lookup.
    public func attributes(forKey key: String) throws -> EntryAttributes? {
        do {
            return try readEntry(forKey: key, withValue: false)?.attributes
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Stores `entry` for `key` with its own expiry (bounded by ``Configuration/timeToLive``) and
    /// metadata, replacing any previous value, and evicts as `setValue(_:forKey:)` does. An entry
    /// without `EntryAttributes.storedAt` is stamped with the time of the write;
    /// one whose expiry has passed already is not stored, and the key's previous value is removed.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key.
    /// - Throws: `StoreError` with code `valueTooLarge` for metadata over
    ///   `EntryAttributes.metadataLimit` or an entry that alone would exceed the
    ///   capacity, `io` when it cannot be written.
    /// - Performs disk I/O: one transaction.
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: String) throws {
        do {
            try writeEntry(entry.value, forKey: key, attributes: entry.attributes)
            counter.recordWrite()
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Replaces the attributes of the entry for `key`, keeping its value: one `UPDATE` of the
    /// row's small columns, the value is not rewritten. The new expiry is bounded by
    /// ``Configuration/timeToLive`` from now; without `EntryAttributes.storedAt`
    /// the entry counts as stored now.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when the key had no unexpired entry (nothing is written).
    /// - Throws: `StoreError` with code `valueTooLarge` for metadata over
    ///   `EntryAttributes.metadataLimit`, `io` when the database cannot be written.
    /// - Performs disk I/O: one transaction.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool {
        do {
            let changed = try writeAttributes(attributes, forKey: key)
            if changed { counter.recordWrite() }
            return changed
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Stores `entry` for `key` only if the key has no unexpired value: the read and the write are
    /// one transaction under SQLite's write lock, so exactly one of any number of concurrent
    /// callers — in this process or others sharing the database — inserts. An expired or damaged
    /// row counts as absent and is replaced. An insertion evicts and counts as a write, as
    /// `setEntry(_:forKey:)`; finding an entry counts as a hit and records its use.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key.
    /// - Returns: `.inserted`, or `.existing` with the entry already there (nothing was written).
    /// - Throws: `StoreError` as `setEntry(_:forKey:)`; `unavailable` when another connection
    ///   keeps the database locked past ``Configuration/busyTimeout``.
    /// - Performs disk I/O: one transaction.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: String) throws -> AddResult<Data> {
        do {
            let result = try addEntry(entry, forKey: key, at: now())
            if result.inserted { counter.recordWrite() } else { counter.recordHit() }
            return result
        } catch {
            counter.recordError()
            throw error
        }
    }

    // MARK: - Store

    /// Returns the entry for `key`, read on the executor.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func entry(forKey key: String) async throws -> StoreEntry<Data>? {
        try await entryOnExecutor(forKey: key, transformedBy: { $0 })
    }

    /// Reads the entry for `key` and passes its value through `transform`, both in one job of the
    /// executor.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored bytes: it runs once, on a hit.
    /// - Returns: The entry with what `transform` made of its value, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed; what `transform` throws.
    public func entry<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await entryOnExecutor(forKey: key, transformedBy: transform)
    }

    /// Returns the attributes of the entry for `key`, read on the executor without the value.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func attributes(forKey key: String) async throws -> EntryAttributes? {
        try await attributesOnExecutor(forKey: key)
    }

    /// Stores `entry` for `key` on the executor.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key.
    /// - Throws: `StoreError` with code `valueTooLarge` or `io`.
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws {
        try await setEntryOnExecutor(entry, forKey: key)
    }

    /// Replaces the attributes of the entry for `key` on the executor, keeping its value.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when the key had no unexpired entry.
    /// - Throws: `StoreError` with code `valueTooLarge` or `io`.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: String) async throws -> Bool {
        try await setAttributesOnExecutor(attributes, forKey: key)
    }

    /// Stores `entry` for `key` on the executor only if the key has no unexpired value, atomically
    /// (also between processes).
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key.
    /// - Returns: `.inserted`, or `.existing` with the entry already there.
    /// - Throws: `StoreError` with code `valueTooLarge`, `unavailable` or `io`.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws -> AddResult<Data> {
        try await addEntryOnExecutor(entry, forKey: key)
    }
}

// The blocking operations of entries, for `BlockingEngine` (which makes their jobs on the executor).
extension SQLiteStore {
    package func blockingEntry(forKey key: String) throws -> StoreEntry<Data>? { try entry(forKey: key) }
    package func blockingAttributes(forKey key: String) throws -> EntryAttributes? { try attributes(forKey: key) }
    package func blockingSetEntry(_ entry: StoreEntry<Data>, forKey key: String) throws { try setEntry(entry, forKey: key) }
    package func blockingSetAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool {
        try setAttributes(attributes, forKey: key)
    }
    package func blockingAddEntry(_ entry: StoreEntry<Data>, forKey key: String) throws -> AddResult<Data> {
        try addEntry(entry, forKey: key)
    }
}
