public import Foundation
public import HanekeProtocols
public import Logging
import SeededRandom
import StoreFolders

/// A disk store for small values: one SQLite database in a store folder, a row per entry.
///
/// ```swift
/// let small = try SQLiteStore(directory: "/var/cache/myapp/small", capacity: 100 << 20)
/// try small.setValue(Data("hello".utf8), forKey: "greeting")      // sync, on the caller's thread
/// let greeting = try await small.value(forKey: "greeting")        // async, on a thread pool
/// ```
///
/// A `FileStore` keeps a file per entry: a 512-byte value takes a whole 4 KiB block, and opening
/// a store examines every file. Here values share the database's 4 KiB pages, so 512-byte values
/// take about 1.5× their size on disk instead of about 8×, and opening reads one page. From about
/// 16 KiB a file per entry reads faster; `SizeRoutedStore` sends each value to the engine that
/// suits its size.
///
/// The key's MD5 picks the row, as it picks the file name in `FileStore`: its high 64 bits are the
/// row's integer primary key, so a read is one B-tree lookup. The key is stored and compared, so
/// that two keys whose MD5s share their high bits never see each other's values (the later one
/// replaces the earlier). Each row carries a checksum (xxHash's XXH3) of its value: a damaged row
/// is a miss and is deleted, never a wrong value.
///
/// - The database is `.haneke-values.sqlite` in a store folder (the marker `.haneke-store`, the
///   same checks as `FileStore`: the user's own folder, not writable by others), created private to
///   the user, opened through a path without links and never through a link itself. A `FileStore`
///   may share the folder: each leaves the other's files alone.
/// - Each row keeps its entry's attributes: its expiry (its own, bounded by
///   ``Configuration/timeToLive``), when its value was first stored, and its metadata with a
///   checksum of its own, so that `attributes(forKey:)` and
///   `setAttributes(_:forKey:)` read and replace them without the value.
///   `addEntry(_:forKey:)` is one transaction under SQLite's write lock. A database
///   of 0.3.0 (format version 1) is upgraded when a store opens it.
/// - Writes are transactions in SQLite's write-ahead log: a process killed at any point leaves the
///   database as it was after its last completed write (`durableWrites` for power loss).
/// - Eviction follows ``Configuration/evictionPolicy`` as far as a random sample shows: it takes
///   its victims from the oldest quarter of a sample of rows (the least recently used, or the
///   oldest of each adaptive queue), so no index of uses is updated on every write. Uses are kept
///   in memory and written in one transaction per ``Configuration/recencyFlushInterval``, never
///   one write per read. Each row keeps the adaptive policy's queue and read counter, so what it
///   learned survives a restart.
/// - Any number of processes (a server's workers) may use one folder at once, and the capacity
///   holds for the folder as a whole: each counts the database's pages, which they share, plus the
///   room kept for SQLite's log. Each write is a transaction under SQLite's lock (a writer waits
///   ``Configuration/busyTimeout`` for another's, then fails with `unavailable`). The store runs
///   its own checkpoints, so that the log stays within its room while other processes read it:
///   SQLite's own would let it grow without bound. They run on the store's ``executor``, on a
///   connection of their own: a set whose commit takes the log past half its room asks for one
///   and returns; past three quarters the job starts the log over (writers wait for the lock
///   while it copies what is left, but run nothing). Only a commit that takes the log to all of
///   its room — the job fell that far behind — truncates it itself. A store with
///   ``Configuration/exclusiveAccess`` runs them on its commits, as no other connection can
///   open the database.
/// - The database's files are opened, deleted and tested through the folder held open, never
///   through its path; a database deleted or replaced under the store is opened again at the next
///   change, which is made there.
public final class SQLiteStore: Store {
    /// The type of the keys.
    public typealias Key = String
    /// The type of the values.
    public typealias Value = Data

    /// The name of the database file in the store folder: `.haneke-values.sqlite` (SQLite adds
    /// `-wal` and `-shm` beside it while it is open).
    public static let databaseFileName = StoreNames.smallValues

    /// The store's folder.
    public let directory: String
    /// The limits and policies.
    public let configuration: Configuration
    /// The name of this store's layer in ``layerStatistics``; `"sqlite"` by default.
    public let name: String
    /// Where the async methods run their blocking work.
    public let executor: IOExecutor

    let logger: Logger
    let folder: SharedStoreFolder
    let state: Locked<State>
    let counter = StatisticsCounter()
    /// Copies SQLite's log into the database off the writers' path; `nil` for a store with
    /// ``Configuration/exclusiveAccess`` (no other connection can open the database: its commits
    /// run the checkpoints).
    let checkpointer: Checkpointer?
    /// The bytes of the database's pages.
    static let pageSize = 4_096
    /// The log's scale, in pages: a sixteenth of the capacity, from 8 to 1,000. Once the log holds
    /// half of this, a commit asks the ``checkpointer`` to copy it into the database, on the
    /// executor; past three quarters, the checkpointer starts it over, waiting for readers. Only
    /// once it holds all of it (the checkpointer fell behind) does a commit wait for readers and
    /// truncate it itself.
    let logPages: Int
    /// The bytes kept within the capacity for the log and its index: twice ``logPages`` and a
    /// margin, so that the log stays within it while several processes write at once (each
    /// commit adds to it until one of them truncates it).
    let reserve: Int

    struct State: Sendable {
        var database: Database
        /// Uses not yet written: when each row was last read, and how many times, by id.
        var uses: [Int64: Database.Use] = [:]
        var flushScheduled = false
        /// Where eviction windows start: the same sequence in every run (ids are hashes already,
        /// so any fixed sequence of starts samples rows at random).
        var evictionStarts = SeededRandomNumberGenerator(seed: 16)
        /// The adaptive policy's small-queue share and ghost; `nil` under LRU or without a capacity.
        var balance: SmallQueueBalance?
        /// The queue time last given to a row.
        var lastQueued: Int64 = 0

        /// Writes the uses kept in memory to the database and forgets them.
        mutating func writeUses() throws {
            try database.touch(uses)
            uses = [:]
        }

        /// Keeps a read of the row `id` at `time` (milliseconds) until the uses are written.
        mutating func recordUse(_ id: Int64, at time: Int64) {
            uses[id, default: Database.Use(time: time, reads: 0)].record(at: time)
        }

        /// The queue time of a row entering a queue at `now` (milliseconds): `now` × 1,024, or one
        /// past the last time given when that is later, so that rows entering in the same
        /// millisecond keep their order.
        mutating func nextQueued(at now: Int64) -> Int64 {
            let scaled = now.multipliedReportingOverflow(by: 1_024)
            lastQueued = max(lastQueued == .max ? .max : lastQueued + 1, scaled.overflow ? (now < 0 ? .min : .max) : scaled.partialValue)
            return lastQueued
        }
    }

    /// Opens the store in `directory`, creating the folder and the database when missing.
    /// - Parameters:
    ///   - directory: The store's folder (shared with a `FileStore`, or of its own).
    ///   - configuration: Limits and policies.
    ///   - name: The layer name reported in statistics.
    ///   - logger: Where damaged rows are logged.
    ///   - executor: Where the async methods run; `IOExecutor.shared` by default.
    /// - Throws: `StoreError` with code `notAStore` when the folder holds files but is not a
    ///   store's, or its database is not a Haneke store's; `unsafeDirectory` when the folder belongs
    ///   to another user or others may write to it; `corrupted` when the database is damaged beyond
    ///   reading (`haneke verify --repair` removes it); `unavailable` when another connection
    ///   keeps it locked past `configuration.busyTimeout` (a store with `exclusiveAccess`); `io`
    ///   otherwise.
    /// - Performs blocking disk I/O: opens the database (reads its first page), whatever its size;
    ///   creating it, or recovering its log after a crash, writes and flushes (`fsync`). From async
    ///   code, open the store off Swift's cooperative threads — on its `IOExecutor` with
    ///   `try await executor.run { try SQLiteStore(directory: …) }`, as `Cache` does.
    public init(
        directory: String,
        configuration: Configuration = Configuration(),
        name: String = "sqlite",
        logger: Logger = Logger(label: "haneke.sqlite"),
        executor: IOExecutor = .shared
    ) throws {
        self.directory = directory
        self.configuration = configuration
        self.name = name
        self.logger = logger
        self.executor = executor
        folder = try SharedStoreFolder(path: directory, access: configuration.access)
        logPages = Self.logPages(forCapacity: configuration.capacity)
        reserve = Self.logRoom(forCapacity: configuration.capacity)
        let database = try Self.openDatabase(in: folder, configuration: configuration, logPages: logPages)
        if Self.checkpointing(configuration) == .background {
            let (folder, logPages) = (folder, logPages)
            let checkpointer = Checkpointer(executor: executor) {
                // A small page cache: a checkpoint copies the log's pages without it.
                try Database(
                    folder: folder, readOnly: false, durable: configuration.durableWrites, pageSize: Self.pageSize,
                    walPages: logPages, busyTimeout: configuration.busyTimeout, cacheSize: 256 << 10
                )
            }
            database.checkpointer = checkpointer
            self.checkpointer = checkpointer
        } else {
            checkpointer = nil
        }
        var state = State(database: database)
        if configuration.evictionPolicy == .adaptive, let capacity = configuration.capacity {
            state.balance = SmallQueueBalance(countLimit: nil, costLimit: capacity)
        }
        self.state = Locked(state)
    }

    /// The log's scale, in pages, for a store of `capacity` bytes (see ``logPages``).
    static func logPages(forCapacity capacity: Int?) -> Int {
        capacity.map { min(1_000, max(8, $0 / pageSize / 16)) } ?? 1_000
    }

    /// The bytes of a store's capacity kept for SQLite's log and the log's index, which rows never
    /// take: twice the log's scale (a sixteenth of the capacity in pages, from 8 to 1,000) and 8
    /// pages more, plus 32 KiB. A store whose rows must have room for `bytes` needs a capacity of
    /// about `bytes` plus this.
    /// - Parameter capacity: The store's capacity in bytes; `nil` for none.
    /// - Returns: The bytes kept, which ``usedSize`` counts besides the pages in use.
    public static func logRoom(forCapacity capacity: Int?) -> Int {
        (2 * logPages(forCapacity: capacity) + 8) * pageSize + 32_768
    }

    /// Opens a store in `directory` with a capacity in bytes.
    /// - Parameters:
    ///   - directory: The store's folder.
    ///   - capacity: The most bytes its files may take on disk; `nil` for no limit.
    /// - Throws: `StoreError` (see ``init(directory:configuration:name:logger:executor:)``).
    public convenience init(directory: String, capacity: Int?) throws {
        try self.init(directory: directory, configuration: Configuration(capacity: capacity))
    }

    /// Uses not yet written are written, and the database closed, on the executor rather than on
    /// the thread that releases the store (which may be one of Swift's cooperative threads). The
    /// job closes the connection itself, so that once it has run the database is closed (its log
    /// checkpointed and deleted) — not whenever the executor lets go of the job.
    deinit {
        let (database, uses) = state.withLock { ($0.database, $0.uses) }
        let checkpointer = checkpointer
        executor.submit {
            try? database.touch(uses)
            checkpointer?.close()
            database.close()
        }
    }

    /// Where a store of `configuration` copies SQLite's log into the database: the
    /// configuration's choice, except by the commits for a store with exclusive access (no other
    /// connection can open the database).
    static func checkpointing(_ configuration: Configuration) -> Checkpointing {
        configuration.exclusiveAccess && configuration.checkpointing == .background ? .commits : configuration.checkpointing
    }

    static func openDatabase(in folder: SharedStoreFolder, configuration: Configuration, logPages: Int) throws -> Database {
        try folder.prepareFile(databaseFileName)
        try checkDatabaseFiles(in: folder, database: false)
        let database = try Database(
            folder: folder, readOnly: false, durable: configuration.durableWrites, pageSize: pageSize,
            walPages: logPages, busyTimeout: configuration.busyTimeout, exclusive: configuration.exclusiveAccess,
            cacheSize: configuration.pageCacheSize, upgrade: true, checkpointing: checkpointing(configuration)
        )
        database.recordOpenedCompanions()
        return database
    }

    /// Checks that the database and SQLite's companion files (its log, the log's index, a rollback
    /// journal), where they exist, are plain files of the user's own that no one else may write.
    static func checkDatabaseFiles(in folder: SharedStoreFolder, database: Bool = true) throws {
        if database { try folder.checkFile(databaseFileName) }
        for companion in StoreNames.smallValuesCompanions { try folder.checkFile(companion) }
    }

    // MARK: - Synchronous API

    /// Returns the value for `key`, or `nil` when there is none, it has expired, or its row is
    /// damaged (expired and damaged rows are deleted).
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `io` when the database cannot be read, `unavailable` when
    ///   another connection keeps it locked (see `Configuration.exclusiveAccess`).
    /// - Performs disk I/O: one B-tree lookup, usually in SQLite's page cache.
    public func value(forKey key: String) throws -> Data? {
        do {
            let value = try readEntry(forKey: key, withValue: true)?.value
            counter.recordRead(value != nil)
            return value
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Stores `value` for `key`, replacing any previous value, and evicts entries (in the order of
    /// ``Configuration/evictionPolicy``, as far as a sample shows) when the files would take more
    /// than the capacity.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key.
    /// - Throws: `StoreError` with code `valueTooLarge` when the entry alone would exceed the
    ///   capacity, `io` when it cannot be written.
    /// - Performs disk I/O: one transaction.
    public func setValue(_ value: Data, forKey key: String) throws {
        do {
            try writeEntry(value, forKey: key, attributes: nil)
            counter.recordWrite()
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Removes the value for `key`; removing a missing key is a no-op.
    /// - Parameter key: The key.
    /// - Throws: `StoreError` with code `io` when the database cannot be written.
    public func removeValue(forKey key: String) throws {
        let id = Self.id(for: key)
        var key = key
        let removed = try key.withUTF8 { key in
            try state.withLock { state -> Bool in
                state.uses[id] = nil
                // Only the row of this key: another key's row under the same id stays.
                return try change(&state) { try $0.delete(id: id, key: UnsafeRawBufferPointer(key)) }
            }
        }
        if removed { counter.recordRemoval() }
    }

    /// Removes every value and returns the freed pages to the file system.
    /// - Throws: `StoreError` with code `io` when the database cannot be written.
    public func removeAll() throws {
        try state.withLock { state in
            state.uses = [:]
            try change(&state) { database in
                try database.deleteAll()
                try database.releaseFreePages()
                try database.checkpoint()
            }
        }
    }

    /// Whether there is a valid, unexpired value for `key`, without reading it.
    /// - Parameter key: The key.
    /// - Returns: Whether a read would hit (unless the row is damaged).
    public func containsValue(forKey key: String) -> Bool {
        let id = Self.id(for: key)
        let now = now()
        var key = key
        return key.withUTF8 { key in
            state.withLock { state in
                guard case .found(let row)? = try? state.database.lookup(id: id, key: UnsafeRawBufferPointer(key), withValue: false) else { return false }
                return row.expires.map { $0 > now } ?? true
            }
        }
    }

    /// The number of entries.
    /// - Performs disk I/O: counts the rows.
    public var count: Int { state.withLock { (try? $0.database.count()) ?? 0 } }

    /// The bytes the store's files take on disk now — the database, its log and the log's index —
    /// as `du` counts them.
    public var totalSize: Int {
        ([Self.databaseFileName] + StoreNames.smallValuesCompanions)
            .reduce(0) { $0 + (folder.allocatedSize(of: $1) ?? 0) }
    }

    /// The bytes the capacity counts: the database's pages in use plus the room kept for its log.
    public var usedSize: Int {
        state.withLock { state in
            guard let pages = try? state.database.pages() else { return 0 }
            return (pages.total - pages.free) * Self.pageSize + reserve
        }
    }

    /// Evicts entries in the order of ``Configuration/evictionPolicy`` as far as a sample shows,
    /// until the pages in use (and the room kept for the log) take at most `size` bytes, and
    /// returns freed pages to the file system.
    /// - Parameter size: The most bytes to keep.
    /// - Throws: `StoreError` with code `io` when the database cannot be written.
    public func trim(toSize size: Int) throws {
        try state.withLock { state in
            try evict(&state, toFit: size)
            try state.database.releaseFreePages()
        }
    }

    /// Writes the uses kept in memory to the database now, and copies SQLite's log into the
    /// database file (which then holds every value by itself).
    /// - Throws: `StoreError` with code `io` when the database cannot be written.
    public func flush() throws {
        try state.withLock { state in
            try state.writeUses()
            try state.database.checkpoint()
        }
    }

    /// Every entry, most recently used first (by the uses written so far), without the values.
    /// - Returns: The entries.
    /// - Throws: `StoreError` when the database cannot be read.
    public func entries() throws -> [Entry] {
        try state.withLock { state in
            try state.writeUses()
            var entries: [Entry] = []
            try state.database.allRows(withValues: false) { entries.append(Entry(row: $0)) }
            return entries
        }
    }

    /// This store's counters.
    public var statistics: StoreStatistics { counter.snapshot }

    // MARK: - Store

    /// Returns the value for `key`, read on the executor.
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func value(forKey key: String) async throws -> Data? {
        try await valueOnExecutor(forKey: key)
    }

    /// Reads the value for `key` and passes it through `transform`, both in one job of the
    /// executor: a decorator's decompression or decoding runs there, and the caller resumes once.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored bytes: it runs once, on a hit.
    /// - Returns: What `transform` made of the value, or `nil` on a miss.
    /// - Throws: `StoreError` when the store failed; what `transform` throws.
    public func value<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> Transformed? {
        try await valueOnExecutor(forKey: key, transformedBy: transform)
    }

    /// Stores `value` for `key` on the executor.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key.
    /// - Throws: `StoreError` with code `valueTooLarge` or `io`.
    public func setValue(_ value: Data, forKey key: String) async throws {
        try await setValueOnExecutor(value, forKey: key)
    }

    /// Removes the value for `key` on the executor.
    /// - Parameter key: The key.
    /// - Throws: `StoreError` with code `io`.
    public func removeValue(forKey key: String) async throws {
        try await removeValueOnExecutor(forKey: key)
    }

    /// Removes every value on the executor.
    /// - Throws: `StoreError` with code `io`.
    public func removeAll() async throws {
        try await removeAllOnExecutor()
    }

    /// This store's counters, as one layer named ``name``.
    public var layerStatistics: [LayerStatistics] { [LayerStatistics(name: name, statistics: statistics)] }

    // MARK: - Reading and writing

    /// The row id of `key`: the high 64 bits of its MD5.
    static func id(for key: String) -> Int64 {
        Int64(bitPattern: SharedStoreFolder.digestHigh(of: key))
    }

    func now() -> Int64 {
        Self.milliseconds(configuration.clock.now())
    }

    /// `date` in whole milliseconds since 1970, rounded down; clamped to what an `Int64` holds.
    static func milliseconds(_ date: Date) -> Int64 {
        date.millisecondsSince1970
    }

    /// The instant of a row's time, in milliseconds since 1970.
    static func date(_ milliseconds: Int64) -> Date {
        Date(millisecondsSince1970: milliseconds)
    }

    /// The expiry of a write at `now` (milliseconds): the entry's own, bounded by the store's
    /// ``Configuration/timeToLive`` (``EntryAttributes/expiry(writtenAt:storeTimeToLive:)`` in
    /// whole milliseconds); `nil` for never.
    func expiry(of attributes: EntryAttributes?, writtenAt now: Int64) -> Int64? {
        let bound = configuration.timeToLive.map { now.saturatingAdding($0.saturatingMilliseconds) }
        let own = attributes?.expiresAt.map(Self.milliseconds)
        switch (own, bound) {
        case let (own?, bound?): return min(own, bound)
        case let (own, bound): return own ?? bound
        }
    }

    /// The attributes a row keeps: its expiry, its creation time (when it was first stored) and its
    /// metadata.
    static func attributes(of row: Database.Row) -> EntryAttributes {
        EntryAttributes(expiresAt: row.expires.map(date), storedAt: date(row.created), metadata: row.metadata)
    }

    private enum Read {
        case hit(Database.Row)
        case miss
        case damaged
    }

    /// Reads the row of `key`: its value (when `withValue`; else the value is not read) and its
    /// attributes, or `nil` when there is none, it has expired (it is deleted), or it is damaged —
    /// its value (when read) or its metadata does not match its checksum (it is deleted, and
    /// logged). A read of the value records a use.
    func readEntry(forKey key: String, withValue: Bool) throws -> (value: Data?, attributes: EntryAttributes)? {
        let id = Self.id(for: key)
        let now = now()
        var key = key
        let read = try key.withUTF8 { key in
            try state.withLock { state -> Read in
                let lookup: Database.Lookup
                do {
                    lookup = try state.database.lookup(id: id, key: UnsafeRawBufferPointer(key), withValue: withValue)
                } catch let error as StoreError where error.code == .corrupted {
                    // A damaged page: whatever was in it is a miss.
                    logger.error("The database is damaged; reading as a miss", metadata: ["directory": "\(directory)", "error": "\(error)"])
                    return .miss
                }
                guard case .found(let row) = lookup else { return .miss }
                if let expires = row.expires, expires <= now {
                    state.uses[id] = nil
                    try state.database.delete(id: id)
                    return .miss
                }
                guard Self.isIntact(row, checkingValue: withValue) else {
                    state.uses[id] = nil
                    _ = try? state.database.delete(id: id)
                    return .damaged
                }
                if withValue {
                    state.recordUse(id, at: now)
                    scheduleFlush(&state)
                }
                return .hit(row)
            }
        }
        switch read {
        case .hit(let row):
            return (row.value, Self.attributes(of: row))
        case .miss:
            return nil
        case .damaged:
            logger.warning("A damaged row was read as a miss and deleted", metadata: [
                "directory": "\(directory)", "key": "\(Logger.describe(key))",
            ])
            return nil
        }
    }

    /// Whether a row read for its key matches its checksums: its metadata's, and its value's when
    /// the value was read.
    static func isIntact(_ row: Database.Row, checkingValue: Bool) -> Bool {
        guard row.metadataIsIntact else { return false }
        guard checkingValue else { return true }
        return (row.value ?? Data()).withUnsafeBytes { checksum(id: row.id, value: $0) } == row.checksum
    }

    /// Refuses an entry that could never fit: its value, key and metadata with the log's room
    /// over the capacity.
    private func checkSize(of value: Data, metadata: Data, forKey key: String) throws {
        guard let capacity = configuration.capacity, value.count + key.utf8.count + metadata.count + reserve > capacity else { return }
        throw StoreError(
            .valueTooLarge,
            "A value of \(value.count) bytes for key \(Logger.describe(key)) does not fit an SQLiteStore of capacity \(capacity) bytes (\(reserve) of them kept for its log)"
        )
    }

    /// What a write does: stores the row, or — for an entry that has expired already — removes
    /// the key's row.
    private enum Write {
        case store(created: Int64, expires: Int64?)
        case remove
    }

    /// How an entry written at `now` is kept: a plain value (`attributes` `nil`) with the store's
    /// lifetime, created now; an entry with its own expiry bounded by it, created at its
    /// `storedAt` or now; removed when that expiry has passed.
    private func write(of attributes: EntryAttributes?, at now: Int64) -> Write {
        let expires = expiry(of: attributes, writtenAt: now)
        if let expires, expires <= now { return .remove }
        return .store(created: attributes?.storedAt.map(Self.milliseconds) ?? now, expires: expires)
    }

    /// Stores `value` for `key` with `attributes` (`nil`: a plain value), replacing any row under
    /// its id, then evicts to fit the capacity; an entry expired already removes the key instead.
    func writeEntry(_ value: Data, forKey key: String, attributes: EntryAttributes?) throws {
        let id = Self.id(for: key)
        let now = now()
        let metadata = attributes?.metadata ?? Data()
        if let attributes { try attributes.checkMetadataSize(forKey: key) }
        try checkSize(of: value, metadata: metadata, forKey: key)
        var key = key
        try key.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            switch write(of: attributes, at: now) {
            case .remove:
                try state.withLock { state in
                    state.uses[id] = nil
                    _ = try change(&state) { try $0.delete(id: id, key: key) }
                }
            case .store(let created, let expires):
                try value.withUnsafeBytes { bytes in
                    try metadata.withUnsafeBytes { metadata in
                        let sum = checksum(id: id, value: bytes)
                        try state.withLock { state in
                            let (mark, queued) = admission(&state, id: id, size: key.count + bytes.count + metadata.count, at: now)
                            try change(&state) {
                                try $0.upsert(
                                    id: id, checksum: sum, created: created, expires: expires, used: now, key: key, value: bytes, metadata: metadata,
                                    mark: mark, queued: queued
                                )
                            }
                            // Reads not yet written stay, and count for the rewritten row.
                            if let capacity = configuration.capacity { try evict(&state, toFit: capacity) }
                        }
                    }
                }
            }
        }
    }

    /// Replaces the attributes of the unexpired row of `key`, keeping its value; whether there
    /// was one.
    func writeAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool {
        try attributes.checkMetadataSize(forKey: key)
        let id = Self.id(for: key)
        let now = now()
        // An expiry that has passed already is written all the same: the entry is then a miss,
        // deleted by the next read.
        let expires = expiry(of: attributes, writtenAt: now)
        let created = attributes.storedAt.map(Self.milliseconds) ?? now
        var key = key
        return try key.withUTF8 { key in
            try attributes.metadata.withUnsafeBytes { metadata in
                try state.withLock { state in
                    try change(&state) {
                        try $0.updateAttributes(id: id, key: UnsafeRawBufferPointer(key), created: created, expires: expires, now: now, metadata: metadata)
                    }
                }
            }
        }
    }

    /// What an add-if-absent found, in its transaction.
    private enum Addition {
        case inserted
        case existing(Database.Row)
        /// Stored over a damaged row of the key.
        case insertedOverDamage
    }

    /// Stores `entry` for `key` unless the key has an unexpired, intact row — in one transaction
    /// under SQLite's write lock, so also atomic between processes — and evicts to fit the
    /// capacity after an insertion.
    func addEntry(_ entry: StoreEntry<Data>, forKey key: String, at now: Int64) throws -> AddResult<Data> {
        try entry.attributes.checkMetadataSize(forKey: key)
        try checkSize(of: entry.value, metadata: entry.attributes.metadata, forKey: key)
        let id = Self.id(for: key)
        let write = write(of: entry.attributes, at: now)
        var keyBytes = key
        let addition = try keyBytes.withUTF8 { key in
            let key = UnsafeRawBufferPointer(key)
            return try entry.value.withUnsafeBytes { bytes in
                try entry.attributes.metadata.withUnsafeBytes { metadata in
                    let sum = checksum(id: id, value: bytes)
                    return try state.withLock { state -> Addition in
                        let (mark, queued) = admission(&state, id: id, size: key.count + bytes.count + metadata.count, at: now)
                        let addition = try change(&state) { database in
                            try database.transaction { () -> Addition in
                                var damaged = false
                                if case .found(let row) = try database.lookup(id: id, key: key, withValue: true), row.expires.map({ $0 > now }) ?? true {
                                    guard !Self.isIntact(row, checkingValue: true) else { return .existing(row) }
                                    damaged = true
                                }
                                switch write {
                                case .remove:
                                    // Expired already: the key is left without a row, as after a write and a read.
                                    _ = try database.delete(id: id, key: key)
                                case .store(let created, let expires):
                                    try database.upsert(
                                        id: id, checksum: sum, created: created, expires: expires, used: now, key: key, value: bytes,
                                        metadata: metadata, mark: mark, queued: queued
                                    )
                                }
                                return damaged ? .insertedOverDamage : .inserted
                            }
                        }
                        switch addition {
                        case .inserted, .insertedOverDamage:
                            if let capacity = configuration.capacity { try evict(&state, toFit: capacity) }
                        case .existing:
                            state.recordUse(id, at: now)
                            scheduleFlush(&state)
                        }
                        return addition
                    }
                }
            }
        }
        switch addition {
        case .inserted:
            return .inserted
        case .insertedOverDamage:
            logger.warning("A damaged row was replaced by an added entry", metadata: ["directory": "\(directory)", "key": "\(Logger.describe(key))"])
            return .inserted
        case .existing(let row):
            return .existing(StoreEntry(value: row.value ?? Data(), attributes: Self.attributes(of: row)))
        }
    }

    /// Runs a change on the database, and checks that the file changed is still the one at the
    /// database's name in the folder. When it was deleted or replaced behind the store's back (a
    /// write to it would be acknowledged and lost), opens the database at the name again — making
    /// a new one, and the folder too if that was deleted — and runs the change there.
    ///
    /// The moved database's log and the log's index stay at their names (SQLite neither copies
    /// the log into a moved database nor deletes it): a connection opened at the name would take
    /// them for the new database's and read the old database's pages over it (10 rows of the old
    /// database, none of the new one's). So the old connection is closed first, and the companion
    /// files it had open are removed when they are still at their names.
    private func change<T>(_ state: inout State, _ body: (Database) throws -> T) throws -> T {
        let result = try body(state.database)
        guard state.database.hasMoved() else { return result }
        logger.warning("The store's database was deleted or replaced behind its back; opening it again", metadata: ["directory": "\(directory)"])
        let moved = state.database
        // Compared while the connection still holds them open, so that no other file can have
        // taken their inodes; removed once it has closed.
        let stale = moved.openedCompanions.filter { folder.identity(of: $0.key) == $0.value }
        // The checkpointer's connection first, so that the store's is the last one to the old files.
        checkpointer?.closeConnection()
        moved.close()
        _ = try folder.reopenIfDeleted()
        for (name, identity) in stale where folder.identity(of: name) == identity {
            try folder.removeFile(name)
        }
        state.database = try Self.openDatabase(in: folder, configuration: configuration, logPages: logPages)
        state.database.checkpointer = checkpointer
        state.uses = [:]
        return try body(state.database)
    }

    /// The rows one read of a sample takes, in id order from a random id.
    static let evictionWindow = 64
    /// How many times the rows it deletes eviction samples: it deletes the least recently used
    /// quarter of its sample.
    static let evictionOversampling = 4
    /// The most rows one round samples (a trim to a small size deletes in several rounds).
    static let evictionSampleLimit = 4_096
    /// A row's mark in the small queue, unread (the policy's columns: see `Database.policyColumns`).
    static let smallQueueMark = SmallQueueBalance.smallQueueBit

    /// The mark and queue time of a row written at `now` whose key, value and metadata take
    /// `size` bytes: under the adaptive policy, the main queue for a key the ghost says proved
    /// itself, the small queue otherwise; under LRU, always the small queue (so that a store opened
    /// later with the adaptive policy finds every row in a queue).
    private func admission(_ state: inout State, id: Int64, size: Int, at now: Int64) -> (mark: UInt8, queued: Int64) {
        let toMain = state.balance?.admitsToMain(hash: Int(truncatingIfNeeded: id), cost: Self.pagesBytes(ofRow: size), count: 0, totalCost: 0) ?? false
        return (toMain ? 0 : Self.smallQueueMark, state.nextQueued(at: now))
    }

    /// Deletes rows in the order of the configuration's eviction policy, as far as a sample shows,
    /// until the pages in use and the log's room fit `size`, and returns free pages to the file
    /// system when the file alone is over it.
    ///
    /// There is no index of uses or queues (keeping one up to date cost about 3 µs of every
    /// write). Each round samples ``evictionOversampling`` times the rows it needs to delete —
    /// windows of ``evictionWindow`` rows in id order from pseudo-random ids, and ids are hashes,
    /// so the sample is random — and takes its victims from the oldest quarter of the sample:
    /// under LRU the least recently used rows, under the adaptive policy the oldest rows of each
    /// queue (see ``evictAdaptively(_:from:toFree:budget:size:used:)``). A store of no more rows than a
    /// window evicts in exact order.
    private func evict(_ state: inout State, toFit size: Int) throws {
        var pages = try state.database.pages()
        var used = (pages.total - pages.free) * Self.pageSize + reserve
        guard used > size || pages.total * Self.pageSize + reserve > size else { return }
        if used > size {
            try state.writeUses()
            // Down to 95 % of the limit, so that the next writes do not each evict again.
            var excess = used - size + size / 20
            var evicted = 0
            // In transactions of a bounded number of rows (random rows: each may be on a page
            // of its own), each followed by a checkpoint when due, so that the log stays within
            // the room kept for it.
            let rowsPerTransaction = state.database.rowsPerTransaction
            while excess > 0 {
                let (deleted, changed) = try state.database.transaction { () -> (deleted: Int, changed: Int) in
                    var deleted = 0
                    var changed = 0
                    while excess > 0, changed < rowsPerTransaction {
                        let sample = try evictionSample(&state, forBytes: excess)
                        if sample.isEmpty { break }
                        let budget = rowsPerTransaction - changed
                        let round = state.balance == nil
                            ? try evictLeastRecentlyUsed(&state, from: sample, toFree: &excess, budget: budget)
                            : try evictAdaptively(&state, from: sample, toFree: &excess, budget: budget, size: size, used: used - reserve)
                        deleted += round.deleted
                        changed += round.deleted + round.moved
                        if round.deleted + round.moved == 0 { break }
                    }
                    return (deleted, changed)
                }
                evicted += deleted
                if changed == 0 { break }
            }
            counter.recordEvictions(evicted)
            pages = try state.database.pages()
            used = (pages.total - pages.free) * Self.pageSize + reserve
        }
        if pages.total * Self.pageSize + reserve > size {
            try state.database.releaseFreePages()
        }
    }

    /// What one round of eviction did: the rows it deleted, and the rows it moved between queues.
    private typealias EvictionRound = (deleted: Int, moved: Int)

    /// Deletes the least recently used quarter of `sample` (at most `budget` rows), until
    /// `excess` bytes are freed.
    private func evictLeastRecentlyUsed(
        _ state: inout State, from sample: [Database.SampledRow], toFree excess: inout Int, budget: Int
    ) throws -> EvictionRound {
        let count = min(max(1, sample.count / Self.evictionOversampling), budget)
        var deleted = 0
        for row in sample.sorted(by: { ($0.used, $0.id) < ($1.used, $1.id) }).prefix(count) where excess > 0 {
            try state.database.delete(id: row.id)
            excess -= Self.pagesBytes(ofRow: row.size)
            deleted += 1
        }
        return (deleted, 0)
    }

    /// The adaptive policy's round (S3-FIFO with a ghost-balanced small queue, as `MemoryStore`
    /// keeps it, over a sample): the oldest quarter of the sample's rows of each queue, oldest
    /// first. While the small queue holds at least its share of the capacity (estimated from the
    /// sample's share of bytes in it, of the `used` bytes of rows), its rows go first: one read while in it moves to the main
    /// queue, one unread is deleted and remembered in the ghost; otherwise the main queue's rows
    /// go round again with their counter decremented, or are deleted at zero. Moves are written
    /// to the row, so a restart finds the queues as they were.
    private func evictAdaptively(
        _ state: inout State, from sample: [Database.SampledRow], toFree excess: inout Int, budget: Int, size: Int, used: Int
    ) throws -> EvictionRound {
        guard var balance = state.balance else { return (0, 0) }
        defer { state.balance = balance }
        func oldestQuarter(_ rows: [Database.SampledRow]) -> ArraySlice<Database.SampledRow> {
            rows.sorted { ($0.queued, $0.id) < ($1.queued, $1.id) }.prefix(max(1, rows.count / Self.evictionOversampling))
        }
        let sampledBytes = sample.reduce(0) { $0 + Self.pagesBytes(ofRow: $1.size) }
        let small = oldestQuarter(sample.filter { $0.mark & Self.smallQueueMark != 0 })
        let main = oldestQuarter(sample.filter { $0.mark & Self.smallQueueMark == 0 })
        let sampledSmallBytes = sample.reduce(0) { $0 + ($1.mark & Self.smallQueueMark != 0 ? Self.pagesBytes(ofRow: $1.size) : 0) }
        var smallBytes = Int(Double(used) * Double(sampledSmallBytes) / Double(max(1, sampledBytes)))
        let rowsLeft = used / max(1, sampledBytes / sample.count)
        var (nextSmall, nextMain) = (small.startIndex, main.startIndex)
        var round: EvictionRound = (0, 0)
        while excess > 0, round.deleted + round.moved < budget, nextSmall < small.endIndex || nextMain < main.endIndex {
            let fromSmall = nextSmall < small.endIndex && (smallBytes >= balance.smallTarget(of: size) || nextMain == main.endIndex)
            let row: Database.SampledRow
            if fromSmall {
                row = small[nextSmall]
                nextSmall += 1
            } else {
                row = main[nextMain]
                nextMain += 1
            }
            let bytes = Self.pagesBytes(ofRow: row.size)
            let counter = row.mark & SmallQueueBalance.counterMask
            if fromSmall { smallBytes -= bytes }
            if counter > 0 {
                // Promoted with its counter, or once round the main queue with one less.
                try state.database.requeue(id: row.id, mark: fromSmall ? counter : counter - 1, queued: state.nextQueued(at: now()))
                round.moved += 1
            } else {
                try state.database.delete(id: row.id)
                balance.recordEviction(hash: Int(truncatingIfNeeded: row.id), cost: bytes, fromMain: !fromSmall, liveCount: rowsLeft)
                excess -= bytes
                round.deleted += 1
            }
        }
        return round
    }

    /// The bytes of pages a row of `size` key and value bytes takes: its bytes and about 1 % of
    /// them for the B-tree around them.
    private static func pagesBytes(ofRow size: Int) -> Int { size + size / 100 + 16 }

    /// Rows sampled at random for eviction: enough windows to hold ``evictionOversampling`` times
    /// the rows that free `bytes` (at most ``evictionSampleLimit``), or the whole table when it
    /// is that small.
    private func evictionSample(_ state: inout State, forBytes bytes: Int) throws -> [Database.SampledRow] {
        var sample: [Int64: Database.SampledRow] = [:]
        var wanted = 1
        var sampledBytes = 0
        while sample.count < wanted {
            let before = sample.count
            for row in try state.database.window(from: Int64(bitPattern: state.evictionStarts.next()), limit: Self.evictionWindow)
            where sample.updateValue(row, forKey: row.id) == nil {
                sampledBytes += Self.pagesBytes(ofRow: row.size)
            }
            // A window that adds nothing has gone round a table no larger than the sample.
            guard sample.count > before else { break }
            wanted = min(Self.evictionSampleLimit, Self.evictionOversampling * (bytes / max(1, sampledBytes / sample.count) + 1))
        }
        return Array(sample.values)
    }

    /// Writes the uses within the flush interval, once per interval.
    private func scheduleFlush(_ state: inout State) {
        guard !state.flushScheduled else { return }
        state.flushScheduled = true
        executor.submit(after: configuration.recencyFlushInterval) { [weak self] in
            guard let self else { return }
            do {
                try self.state.withLock { state in
                    state.flushScheduled = false
                    try state.writeUses()
                }
            } catch {
                logger.warning("Could not record uses", metadata: ["directory": "\(directory)", "error": "\(error)"])
            }
        }
    }
}

extension SQLiteStore {
    /// One entry of an `SQLiteStore`, as ``SQLiteStore/entries()`` lists it.
    public struct Entry: Sendable, Hashable {
        /// The key.
        public var key: String
        /// The size of the value, in bytes.
        public var payloadSize: Int
        /// When the value was first stored: when it was written, or the time its entry gave
        /// (`EntryAttributes.storedAt`).
        public var created: Date
        /// When the value expires, or `nil` for never.
        public var expires: Date?
        /// When the entry was last read or written, as far as the database knows.
        public var lastAccess: Date

        /// The size of the entry's metadata, in bytes.
        public var metadataSize: Int

        init(row: Database.Row) {
            key = String(decoding: row.key, as: UTF8.self)
            payloadSize = row.valueLength
            created = SQLiteStore.date(row.created)
            expires = row.expires.map(SQLiteStore.date)
            lastAccess = SQLiteStore.date(row.used)
            metadataSize = row.metadataLength
        }
    }
}

// The async API is one job of the executor per call, made by `BlockingEngine` from the synchronous
// API.
extension SQLiteStore: BlockingEngine {
    package func blockingValue(forKey key: String) throws -> Data? { try value(forKey: key) }
    package func blockingSetValue(_ value: Data, forKey key: String) throws { try setValue(value, forKey: key) }
    package func blockingRemoveValue(forKey key: String) throws { try removeValue(forKey: key) }
    package func blockingRemoveAll() throws { try removeAll() }
}
