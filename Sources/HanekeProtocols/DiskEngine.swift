package import Foundation
package import Logging

/// A disk store as a `Cache` and the `haneke` tool see it: what they do with every engine that keeps
/// a store folder (`FileStore`'s files, `SQLiteStore`'s database), so that they loop over the
/// engines rather than name each one.
///
/// The engines are listed once, in the Haneke module (`diskEngines`); adding one is a module that
/// conforms to this protocol and a line there.
package protocol DiskEngine: BlockingEngine {
    // MARK: - A folder, without a store open (the tool)

    /// How the tool's output names this engine's part of a folder ("the database"), or `nil` for
    /// the engine whose part is the folder itself (its lines carry no name).
    static var partName: String? { get }

    /// The value stored for `key` in the store folder `folder`, read without opening a store and
    /// changing nothing (`haneke get`): the payload as written, an LZ4 frame for a compressed
    /// store. `nil` when this engine holds no valid, unexpired entry for the key there.
    /// - Throws: `StoreError` with code `corrupted` for a damaged entry, `notAStore` or `io`.
    static func storedValue(forKey key: String, inFolder folder: String) throws -> Data?

    /// A store of this engine on `folder` for `haneke trim`, which evicts only when it is trimmed,
    /// or `nil` when the folder holds none of this engine's files.
    /// - Parameters:
    ///   - folder: A store folder.
    ///   - size: The size the folder is to be trimmed to, for an engine whose store needs a capacity.
    ///   - logger: Where the store logs.
    static func openForTrimming(inFolder folder: String, size: Int, logger: Logger) throws -> Self?

    /// Examines this engine's part of the store folder `folder` without changing it, for `haneke
    /// inspect`, `verify` and `stats`: its entries, what is wrong, its sizes, in the shape every
    /// engine shares, with the engine's wording for the tool's output.
    /// - Parameters:
    ///   - folder: A store folder.
    ///   - payloadCheck: Judges every payload, for an engine that can read them on its way
    ///     (`nil`: headers only); an engine that checks its values otherwise ignores it.
    ///   - progress: Told when the examination starts (only when the engine has a part in the
    ///     folder) and how far it is.
    /// - Returns: What was found, or `nil` when the folder holds none of this engine's files.
    /// - Throws: `StoreError` with code `notAStore`, `unsafeDirectory` or `io`; damage is not an
    ///   error but a problem of the inspection.
    static func inspect(
        folder: String,
        checkingPayloads payloadCheck: DiskInspection.PayloadCheck?,
        progress: (DiskInspection.Progress) -> Void
    ) throws -> DiskInspection?

    /// Removes what is wrong in this engine's part of a folder, as far as it is the engine's to
    /// remove (`haneke verify --repair`).
    /// - Parameters:
    ///   - inspection: What ``inspect(folder:checkingPayloads:progress:)`` found.
    ///   - removingForeignFiles: Whether files with names the engine never makes, in folders it
    ///     made, are removed too.
    /// - Returns: What was done, or `nil` when there was nothing to repair (no problems, or the
    ///   part is gone).
    /// - Throws: `StoreError` with code `notAStore` or `unsafeDirectory` for a folder the caller
    ///   may not repair, `io` when a file cannot be changed.
    static func repair(_ inspection: DiskInspection, removingForeignFiles: Bool) throws -> DiskInspection.Repair?

    // MARK: - A store

    /// The number of entries.
    var count: Int { get }
    /// The bytes the entries take on disk, what a `Cache` reports as its size.
    var totalSize: Int { get }
    /// The bytes ``trim(toSize:)`` brings within its size (what the capacity counts).
    var trimmedSize: Int { get }
    /// Every byte the engine's files take on disk, as `du` counts them.
    var allocatedSize: Int { get }

    /// Evicts the least recently used entries until ``trimmedSize`` is at most `size`.
    func trim(toSize size: Int) throws
    /// Writes what the store buffers (records of uses) to disk now.
    func flush() throws

    // MARK: - Preloading (a `Cache` format's memory)

    /// When the session before this store's began — the previous opening of its folder, as the
    /// engine records it — or `nil` when the engine records no sessions or none is recorded. Read
    /// once ``BlockingEngine/waitUntilReady()`` has returned.
    var previousSessionStart: Date? { get }

    /// The entries a format's preloading reads into memory, most recently used first: every entry,
    /// or those read or written during the previous session — by the engine's own record of it,
    /// or, for an engine that records no sessions, those last used at or after the session's
    /// start that another engine recorded (none when no start is known).
    /// - Parameter selection: Which entries.
    /// - Returns: The entries; only their keys and last accesses are used.
    /// - Throws: `StoreError` when the engine cannot list them.
    /// - Performs disk I/O (blocks: call it on the engine's executor, once
    ///   ``BlockingEngine/waitUntilReady()`` has returned).
    func entriesToPreload(_ selection: PreloadSelection) throws -> [DiskInspection.Entry]

    /// The value for `key`, read without counting it or recording a use (background work such as
    /// preloading must not look like use); `nil` for an expired entry. Nothing is changed.
    /// - Throws: `StoreError` with code `corrupted` for a damaged entry, `io`.
    /// - Performs disk I/O (blocks).
    func blockingPeekValue(forKey key: String) throws -> Data?

    /// ``blockingPeekValue(forKey:)`` with the entry's attributes (expiry, time stored, metadata),
    /// for preloading into memory an entry that expires there when it does on disk. The default
    /// reads the value and gives no attributes.
    /// - Throws: `StoreError` with code `corrupted` for a damaged entry, `io`.
    /// - Performs disk I/O (blocks).
    func blockingPeekEntry(forKey key: String) throws -> StoreEntry<Data>?
}

extension DiskEngine {
    /// ``totalSize``, once the store is ready, asked on its executor (it may be system calls);
    /// 0 when it cannot be known.
    package func totalSizeOnExecutor() async -> Int {
        await waitUntilReady()
        return (try? await executor.run { self.totalSize }) ?? 0
    }

    /// ``count``, once the store is ready, asked on its executor; 0 when it cannot be known.
    package func countOnExecutor() async -> Int {
        await waitUntilReady()
        return (try? await executor.run { self.count }) ?? 0
    }

    /// ``blockingPeekValue(forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func peekValueOnExecutor(forKey key: String) async throws -> Data? {
        try await executor.run { try self.blockingPeekValue(forKey: key) }
    }

    package func blockingPeekEntry(forKey key: String) throws -> StoreEntry<Data>? {
        try blockingPeekValue(forKey: key).map { StoreEntry(value: $0) }
    }

    /// ``blockingPeekEntry(forKey:)`` as one job of the executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func peekEntryOnExecutor(forKey key: String) async throws -> StoreEntry<Data>? {
        try await executor.run { try self.blockingPeekEntry(forKey: key) }
    }

    /// ``flush()``, once the store is ready, on its executor.
    /// - Throws: What it throws; `CancellationError` if cancelled before it ran.
    package func flushOnExecutor() async throws {
        await waitUntilReady()
        try await executor.run { try self.flush() }
    }
}
