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
/// - In a process, the store has one connection, and every statement on it runs under the store's
///   lock: a read or a write holds the lock across SQLite's I/O, so the synchronous methods block
///   (call them off Swift's cooperative pool), and the async ones run them on the ``executor``.
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

    /// Writes the uses within the flush interval, once per interval.
    func scheduleFlush(_ state: inout State) {
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
