import CSQLite
import Foundation
import HanekeProtocols
import StoreFolders

/// One connection to a store's database: the only code that touches SQLite's C API.
///
/// `@unchecked Sendable` because it owns C pointers (the connection and its prepared statements),
/// which SQLite lets one thread use at a time: every use goes through the `Locked` box that holds
/// it — the store's state, or the ``Checkpointer``'s for its own connection — and nothing else
/// holds it.
final class Database: @unchecked Sendable {
    /// The `application_id` in the database header: `HNKV`, what makes the file a Haneke store's.
    static let applicationID: Int32 = 0x484E_4B56
    /// The `user_version`: the layout of the `entries` table. Version 2 (0.4.0) added each row's
    /// metadata and its checksum; a database of version 1 (0.3.0) is upgraded when a store opens
    /// it, and read as it is by the inspection (its rows have no metadata).
    static let formatVersion: Int32 = 2
    /// The oldest `user_version` this code reads: 0.3.0's, without metadata.
    static let oldestFormatVersion: Int32 = 1

    /// A row as read: the columns in the order the table keeps them.
    struct Row {
        var id: Int64
        var checksum: UInt64
        var created: Int64
        var expires: Int64?
        var used: Int64
        /// The key as stored, when the row was listed; empty from a lookup, whose caller has it.
        var key: Data
        /// The value, when it was read.
        var value: Data?
        var valueLength: Int
        /// The checksum of the metadata; `nil` for a row without metadata.
        var metadataChecksum: UInt64?
        /// The metadata; empty when the row has none, or when it is longer than
        /// ``metadataLengthLimit`` (then it is not copied: the row is damaged).
        var metadata: Data
        /// The length of the stored metadata (0 when the column is `NULL`).
        var metadataLength: Int

        /// Whether the row's metadata is what its checksum says: none and no checksum, or no more
        /// than ``EntryAttributes/metadataLimit`` bytes that match it.
        var metadataIsIntact: Bool {
            guard let metadataChecksum else { return metadataLength == 0 }
            guard metadataLength <= EntryAttributes.metadataLimit, metadata.count == metadataLength else { return false }
            return metadata.withUnsafeBytes { SQLiteStore.metadataChecksum(id: id, metadata: $0) } == metadataChecksum
        }
    }

    /// Reads of a row not yet written: the last one's time, and how many (at most 3 count).
    struct Use: Sendable, Equatable {
        var time: Int64
        var reads: UInt8

        /// Counts one more read, at `time`.
        mutating func record(at time: Int64) {
            self.time = max(self.time, time)
            reads = min(3, reads + 1)
        }
    }

    /// A row as eviction samples it.
    struct SampledRow: Sendable {
        var id: Int64
        var used: Int64
        /// The bytes of its key, value and metadata.
        var size: Int
        /// Its queue and read counter (see ``policyColumns``).
        var mark: UInt8
        var queued: Int64
    }

    /// What a read found under an id.
    enum Lookup {
        case missing
        /// A row with another key under the same 64-bit id.
        case otherKey
        case found(Row)
    }

    /// The database's path, for messages (it is opened through the folder's descriptor instead).
    let path: String
    /// The folder, held so that its descriptor — through which SQLite opens and deletes the
    /// database's files — stays open as long as the connection.
    private let folder: SharedStoreFolder
    private var handle: OpaquePointer?
    private var statements: [Statement: OpaquePointer] = [:]
    /// The frames in the write-ahead log after this connection's last commit (SQLite's wal hook
    /// writes it); freed after the connection closes.
    private let logFrames = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    /// For a connection with a time limit (the tool's): the instant, in nanoseconds of
    /// `CLOCK_MONOTONIC`, past which every statement is interrupted.
    private let deadline = UnsafeMutablePointer<Int64>.allocate(capacity: 1)
    private let timeLimit: Duration?
    private let busyTimeout: Duration
    /// The most rows one eviction transaction deletes, and pages one vacuum step moves: a
    /// sixteenth of the log's pages. While one connection waits to truncate the log, each other
    /// connection commits at most once more before it waits too, so what the log holds past the
    /// threshold is about one transaction per process: small transactions keep the log within
    /// its room with several processes writing.
    private(set) var rowsPerTransaction = 64
    /// The log's frames past which a commit has the log copied into the database (a passive
    /// checkpoint, which gives way to readers): by ``checkpointer`` when there is one, else by
    /// the commit itself.
    private var checkpointFrames: Int32 = .max
    /// The log's frames past which a commit waits for readers to finish so that the log starts
    /// over (a blocking checkpoint, under the busy timeout): three quarters of the log's pages
    /// when commits run every checkpoint, all of them when a ``Checkpointer`` runs them (which
    /// starts the log over itself past three quarters), so that a commit pays for one only when
    /// the checkpointer fell far behind.
    private var blockingCheckpointFrames: Int32 = .max
    /// The log's frames past which the checkpointer's job starts the log over (see
    /// ``copyLog(restartingFrom:)``): three quarters of the log's pages.
    private(set) var restartFrames: Int32 = .max
    /// Where a commit past ``checkpointFrames`` hands the checkpoint, instead of running it: set
    /// by the store for a connection opened with `.background` checkpoints.
    var checkpointer: Checkpointer?
    /// The checkpoints this connection's commits ran themselves: passive, and blocking (tests).
    private(set) var commitCheckpoints = (passive: 0, blocking: 0)
    /// Whether the table has the metadata columns (version 2); a version 1 database opened without
    /// upgrading it reads every row as having none, and cannot be written.
    private(set) var hasMetadata = true

    /// The statements prepared once. The table keeps the small columns first (the metadata before
    /// the key and the value in a database created with it), so that reading them never walks a
    /// large value's overflow pages. In a database upgraded from version 1 the metadata columns
    /// come after the value (`ALTER TABLE … ADD COLUMN` appends): reading a large value's
    /// metadata walks its overflow pages there.
    enum Statement: String, CaseIterable {
        case select = "SELECT id, checksum, created, expires, used, key, value, metadata_checksum, metadata FROM entries WHERE id = ?1"
        case selectHeader = "SELECT id, checksum, created, expires, used, key, length(value), metadata_checksum, metadata FROM entries WHERE id = ?1"
        /// Writes a row, replacing any row under its id: the new row takes the mark and queue
        /// time `?10`, `?11`, as a new entry. (Keeping a rewritten row's queue and counter, with
        /// `ON CONFLICT … DO UPDATE`, cost 2,800 more instructions a set, 7.5 %.)
        case upsert = """
            INSERT OR REPLACE INTO entries(id, checksum, created, expires, used, key, value, metadata_checksum, metadata, mark, queued)
            VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
            """
        /// Replaces a row's attributes, keeping its value, when it holds the key and has not
        /// expired at `?5` (now).
        case updateAttributes = """
            UPDATE entries SET created = ?3, expires = ?4, used = max(used, ?5), metadata_checksum = ?6, metadata = ?7
            WHERE id = ?1 AND key = ?2 AND (expires IS NULL OR expires > ?5)
            """
        case delete = "DELETE FROM entries WHERE id = ?1"
        case deleteKey = "DELETE FROM entries WHERE id = ?1 AND key = ?2"
        /// Records reads of a row: its last use `?2` (when later), and `?3` reads added to its counter
        /// (saturating at 3), its queue kept.
        case touch = "UPDATE entries SET used = max(used, ?2), mark = (mark & 128) | min(3, (mark & 3) + ?3) WHERE id = ?1"
        /// Moves a row to the queue and counter of mark `?2`, queued at `?3`.
        case requeue = "UPDATE entries SET mark = ?2, queued = ?3 WHERE id = ?1"
        case window = "SELECT id, used, length(key) + length(value) + ifnull(length(metadata), 0), mark, queued FROM entries WHERE id >= ?1 ORDER BY id LIMIT ?2"
        case windowWrapped = "SELECT id, used, length(key) + length(value) + ifnull(length(metadata), 0), mark, queued FROM entries WHERE id < ?1 ORDER BY id LIMIT ?2"
        case pageCount = "PRAGMA page_count"
        case freelistCount = "PRAGMA freelist_count"
        case count = "SELECT count(*) FROM entries"
        case all = "SELECT id, checksum, created, expires, used, key, length(value), metadata_checksum, metadata FROM entries ORDER BY used DESC"
        case allWithValues = "SELECT id, checksum, created, expires, used, key, value, metadata_checksum, metadata FROM entries ORDER BY used DESC"

        /// The statements that write.
        static let writes: Set<Statement> = [.upsert, .updateAttributes, .delete, .deleteKey, .touch, .requeue]
        /// The statements that name the eviction policy's columns, which a store's connection adds
        /// to a database without them: prepared only where the table has them.
        static let policy: Set<Statement> = [.upsert, .touch, .requeue, .window, .windowWrapped]

        /// The statement's SQL for a table with or without the metadata columns: without them,
        /// every row reads as having none (and the statements that write them are not prepared).
        func sql(hasMetadata: Bool) -> String {
            guard !hasMetadata else { return rawValue }
            return rawValue
                .replacingOccurrences(of: "metadata_checksum, metadata FROM", with: "NULL, NULL FROM")
                .replacingOccurrences(of: "length(metadata)", with: "NULL")
        }
    }

    /// Opens (creating when missing) the database `name` of `folder`, which must not be a link.
    /// SQLite opens, deletes and tests its files (the database, its log, the log's index) through
    /// the folder's descriptor (``SharedStoreFolder/descriptorPath(of:)``, the "haneke-folder"
    /// VFS), never through a path that a rename of a parent folder could redirect.
    /// - Parameters:
    ///   - exclusive: Whether the connection keeps its locks until it closes
    ///     (`locking_mode = EXCLUSIVE`, set before the first read so that the log's index is kept
    ///     in memory).
    ///   - cacheSize: The most bytes SQLite's page cache holds for the connection.
    ///   - upgrade: Whether a database of an older format (version 1, 0.3.0's) is upgraded to
    ///     this one (a store's connection); otherwise it is read as it is, and not written.
    ///   - checkpointing: Where the log is copied into the database: by the commits (`.commits`,
    ///     the default), by a ``Checkpointer`` the store sets (`.background`: until it is set, by
    ///     the commits), or by SQLite's own automatic checkpoint (`.sqlite`, benchmarks only).
    /// - Throws: `StoreError` with code `notAStore` for a file that is not a Haneke store's
    ///   database, `corrupted` for one SQLite cannot read, `unavailable` for one another connection
    ///   keeps locked, `io` otherwise.
    init(
        folder: SharedStoreFolder, name: String = SQLiteStore.databaseFileName, readOnly: Bool, durable: Bool, pageSize: Int, walPages: Int, busyTimeout: Duration,
        exclusive: Bool = false, cacheSize: Int = 2 << 20, timeLimit: Duration? = nil, upgrade: Bool = false,
        checkpointing: SQLiteStore.Checkpointing = .commits
    ) throws {
        self.folder = folder
        self.path = folder.path + "/" + name
        self.timeLimit = timeLimit
        self.busyTimeout = busyTimeout
        logFrames.initialize(to: 0)
        if let timeLimit {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            deadline.initialize(to: (Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)).saturatingAdding(timeLimit.saturatingNanoseconds))
        } else {
            deadline.initialize(to: .max)
        }
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE
        flags |= readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        // Thrown once every property is set: the deinit frees what was allocated.
        let vfs = haneke_sqlite_register_folder_vfs()
        guard vfs == SQLITE_OK else { throw StoreError(.io, "Could not register SQLite's file system for store folders (SQLite code \(vfs))") }
        let opened = sqlite3_open_v2(try folder.descriptorPath(of: name), &handle, flags, "haneke-folder")
        guard opened == SQLITE_OK else {
            let error = failure(opened, "Could not open the database \(path)")
            sqlite3_close_v2(handle)
            handle = nil
            throw error
        }
        do {
            _ = haneke_sqlite_defensive(handle)
            if timeLimit != nil { haneke_sqlite_set_deadline(handle, deadline) }
            sqlite3_busy_timeout(handle, Int32(clamping: max(0, busyTimeout.saturatingMilliseconds)))
            if exclusive { try execute("PRAGMA locking_mode = EXCLUSIVE") }
            try execute("PRAGMA trusted_schema = OFF")
            // A negative size is in KiB.
            try execute("PRAGMA cache_size = -\(max(1, cacheSize / 1_024))")
            if try integer("SELECT count(*) FROM sqlite_schema") == 0, !readOnly {
                // A new database: the page size and incremental vacuum are fixed before the first
                // table. Other processes may be creating it at the same time: the table is made in
                // a transaction that holds the write lock, by whichever finds it still missing.
                try execute("PRAGMA page_size = \(pageSize)")
                try execute("PRAGMA auto_vacuum = INCREMENTAL")
                try useWriteAheadLog()
                try transaction {
                    guard try integer("SELECT count(*) FROM sqlite_schema") == 0 else { return }
                    try execute("""
                        CREATE TABLE entries(
                            id INTEGER PRIMARY KEY, checksum INTEGER NOT NULL, created INTEGER NOT NULL,
                            expires INTEGER, used INTEGER NOT NULL, metadata_checksum INTEGER, metadata BLOB,
                            \(Self.policyColumns.joined(separator: ", ")),
                            key BLOB NOT NULL, value BLOB NOT NULL);
                        PRAGMA application_id = \(Self.applicationID);
                        PRAGMA user_version = \(Self.formatVersion);
                        """)
                }
            }
            // Read after the schema: another process creating the database commits the table,
            // the application id and the version together, so a database with a table shows them.
            let application = try integer("PRAGMA application_id")
            var version = try integer("PRAGMA user_version")
            if application != Int64(Self.applicationID) {
                throw StoreError(.notAStore, "\(path) is an SQLite database but not a Haneke store's (application id \(application)); refusing to use it")
            } else if !(Int64(Self.oldestFormatVersion)...Int64(Self.formatVersion)).contains(version) {
                throw StoreError(.notAStore, "\(path) is a store database of format version \(version), which this version of Haneke cannot read (it reads versions \(Self.oldestFormatVersion) to \(Self.formatVersion))")
            } else if try text("SELECT type FROM sqlite_schema WHERE name = 'entries'") != "table"
                || integer("SELECT count(*) FROM sqlite_schema WHERE type IN ('view', 'trigger')") != 0 {
                // A view can be endless, a trigger can do anything on a write: neither is a store's.
                throw StoreError(.notAStore, "\(path) has the store's header but not its schema (its entries are not a plain table, or it has views or triggers); refusing to use it")
            }
            if version < Int64(Self.formatVersion), upgrade, !readOnly {
                try upgradeFormat()
                version = try integer("PRAGMA user_version")
            }
            let metadataColumns = try integer("SELECT count(*) FROM pragma_table_info('entries') WHERE name IN ('metadata_checksum', 'metadata')")
            guard version == Int64(Self.formatVersion) ? metadataColumns == 2 : metadataColumns == 0 else {
                throw StoreError(.notAStore, "\(path) has the store's header but not its schema (format version \(version) with \(metadataColumns) of the 2 metadata columns); refusing to use it")
            }
            hasMetadata = metadataColumns == 2
            if !readOnly {
                try useWriteAheadLog()
                try execute("PRAGMA synchronous = \(durable ? "FULL" : "NORMAL")")
                try execute("PRAGMA journal_size_limit = \(walPages * pageSize)")
                // The checkpoints are the store's own (below), not SQLite's automatic one: that
                // one is passive only, and with other processes reading and writing the same
                // database it can never start the log over, which then grows without bound
                // (checkpoint starvation). A wal hook replaces SQLite's automatic checkpoint.
                if checkpointing == .sqlite {
                    try execute("PRAGMA wal_autocheckpoint = \(walPages)")
                } else {
                    haneke_sqlite_count_log_frames(handle, logFrames)
                    checkpointFrames = Int32(clamping: max(1, walPages / 2))
                    restartFrames = Int32(clamping: max(2, walPages * 3 / 4))
                    blockingCheckpointFrames = checkpointing == .background ? Int32(clamping: max(3, walPages)) : restartFrames
                }
                rowsPerTransaction = max(2, walPages / 16)
                // Databases written before eviction sampled rows kept an index of uses, which
                // every write updated; nothing reads it now.
                try execute("DROP INDEX IF EXISTS entries_by_use")
                if hasMetadata, upgrade { try addPolicyColumns() }
            }
            let hasPolicyColumns = try integer(Self.policyColumnCount) == 2
            for statement in Statement.allCases
            where !(readOnly && Statement.writes.contains(statement)) && (hasMetadata || ![.upsert, .updateAttributes].contains(statement))
                && (hasPolicyColumns || !Statement.policy.contains(statement)) {
                var prepared: OpaquePointer?
                let rc = sqlite3_prepare_v3(handle, statement.sql(hasMetadata: hasMetadata), -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
                guard rc == SQLITE_OK, let prepared else { throw failure(rc, "Could not prepare a statement on \(path)") }
                statements[statement] = prepared
            }
        } catch {
            close()
            throw error
        }
    }

    /// Upgrades a database of version 1 (0.3.0's) to this format: adds the metadata columns
    /// (`NULL`, none, in every row: the rows' checksums stay valid) and sets the version, in one
    /// transaction under the write lock. Other processes may be opening the same database at
    /// once: whichever takes the lock first upgrades it, and the others find it done inside their
    /// own transaction. A process of 0.3.0 that has it open already goes on reading and writing it
    /// (its statements name their columns; its rows get no metadata); one that opens it later
    /// refuses its version.
    private func upgradeFormat() throws {
        try transaction {
            guard try integer("PRAGMA user_version") == Int64(Self.oldestFormatVersion) else { return }
            try execute("""
                ALTER TABLE entries ADD COLUMN metadata_checksum INTEGER;
                ALTER TABLE entries ADD COLUMN metadata BLOB;
                PRAGMA user_version = \(Self.formatVersion);
                """)
        }
    }

    /// The columns of the eviction policy's state, in each row: its queue and read counter
    /// (`mark`: 128 for the small queue, plus the counter, 0 to 3), and when it entered its queue
    /// (`queued`, in the store's queue time: milliseconds × 1,024 plus a sequence). A row that a
    /// version without them wrote (they add nothing to the format version, so such a version
    /// still opens and writes the database) reads as in the small queue, unread, queued first.
    static let policyColumns = ["mark INTEGER NOT NULL DEFAULT 128", "queued INTEGER NOT NULL DEFAULT 0"]
    /// How many of the policy's columns the table has (2, or 0 before they were added).
    static let policyColumnCount = "SELECT count(*) FROM pragma_table_info('entries') WHERE name IN ('mark', 'queued')"

    /// Adds the eviction policy's columns to a table without them (made by an earlier version), in
    /// a transaction under the write lock: whichever process opening the database takes the lock
    /// first adds them, and the others find them there. `ALTER TABLE … ADD COLUMN` with a constant
    /// default rewrites no row. They come after the value there: reading them for a large value
    /// walks its overflow pages.
    private func addPolicyColumns() throws {
        guard try integer(Self.policyColumnCount) != 2 else { return }
        try transaction {
            guard try integer(Self.policyColumnCount) == 0 else { return }
            try execute(Self.policyColumns.map { "ALTER TABLE entries ADD COLUMN \($0);" }.joined(separator: "\n"))
        }
    }

    /// Closes the connection now (the last one checkpoints the log into the database and deletes
    /// it); later calls, and the `deinit`, do nothing more. Nothing may use the database after it.
    func close() {
        for statement in statements.values { sqlite3_finalize(statement) }
        statements = [:]
        // The last connection checkpoints the log into the database and deletes it.
        sqlite3_close_v2(handle)
        handle = nil
    }

    deinit {
        close()
        logFrames.deallocate()
        deadline.deallocate()
    }

    /// After a commit of this connection, once the log holds ``checkpointFrames``: asks the
    /// ``checkpointer`` to copy it into the database, and returns at once. Without one, copies it
    /// here (a passive checkpoint, which gives way to readers and to another connection's
    /// checkpoint). Once the log holds ``blockingCheckpointFrames`` — the copies could not start
    /// it over, as other connections kept reading it or the checkpointer fell behind — copies it
    /// and truncates it here, waiting for readers and retrying while another connection
    /// checkpoints, within the busy timeout. A failure is left to the next commit.
    private func checkpointIfDue() {
        let frames = logFrames.pointee
        guard frames >= checkpointFrames, sqlite3_get_autocommit(handle) != 0 else { return }
        if let checkpointer, frames < blockingCheckpointFrames {
            // Asked again at each commit while the log stays past the threshold: a request while
            // its job is queued or running costs one lock.
            checkpointer.request()
            return
        }
        logFrames.pointee = 0
        guard frames >= blockingCheckpointFrames else {
            commitCheckpoints.passive += 1
            sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            return
        }
        commitCheckpoints.blocking += 1
        checkpointWaiting(SQLITE_CHECKPOINT_TRUNCATE)
    }

    /// The checkpointer's job, on its own connection: copies what it can of the log into the
    /// database without waiting for anyone (a passive checkpoint, which writers of this and other
    /// processes go on committing beside). Writers that commit meanwhile keep the log from
    /// starting over, so once it holds `restartFrames` frames it is copied again and started over
    /// (a restart checkpoint): that waits for the write lock and for readers, within the busy
    /// timeout, and holds the lock while it copies what the passive copy left — a writer waits
    /// for that, but runs no checkpoint. The file keeps its size (`journal_size_limit` bounds
    /// it), so that writers do not grow it again block by block as after a truncation.
    /// - Parameter restartFrames: The log's frames from which it is started over.
    /// - Returns: Whether the log was started over.
    @discardableResult
    func copyLog(restartingFrom restartFrames: Int32) -> Bool {
        var log: Int32 = 0
        var copied: Int32 = 0
        guard sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, &log, &copied) == SQLITE_OK, log >= restartFrames else { return false }
        return checkpointWaiting(SQLITE_CHECKPOINT_RESTART)
    }

    /// Runs a checkpoint that waits (`mode` restart or truncate): SQLite waits (its busy handler)
    /// for the writer's lock and for readers, but not for the lock of a checkpoint another
    /// connection is running, which is retried here every 0.5 ms within the busy timeout.
    /// - Returns: Whether it ran.
    @discardableResult
    private func checkpointWaiting(_ mode: Int32) -> Bool {
        retryingWhileBusy { sqlite3_wal_checkpoint_v2(handle, nil, mode, nil, nil) } == SQLITE_OK
    }

    /// Runs `body` (an SQLite call) again every 0.5 ms while it answers `SQLITE_BUSY` without
    /// having waited (SQLite calls no busy handler for these), within the busy timeout.
    /// - Returns: Its last result code.
    private func retryingWhileBusy(_ body: () -> Int32) -> Int32 {
        let deadline = ContinuousClock.now + busyTimeout
        while true {
            let rc = body()
            guard rc & 0xff == SQLITE_BUSY, ContinuousClock.now < deadline else { return rc }
            usleep(500)
        }
    }

    /// Puts the database in WAL mode (a no-op when it is). Changing the mode takes the database's
    /// exclusive lock, which SQLite does not wait for: when other processes are opening the same
    /// new database, one of them holds a lock and the change answers `SQLITE_BUSY` at once.
    private func useWriteAheadLog() throws {
        let rc = retryingWhileBusy { sqlite3_exec(handle, "PRAGMA journal_mode = WAL", nil, nil, nil) }
        guard rc == SQLITE_OK else { throw failure(rc, "Could not run PRAGMA journal_mode = WAL on \(path)") }
    }

    // MARK: - Rows

    /// The row under `id` when it holds `key`.
    func lookup(id: Int64, key: UnsafeRawBufferPointer, withValue: Bool) throws -> Lookup {
        let statement = try use(withValue ? .select : .selectHeader)
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, id)
        let rc = sqlite3_step(statement)
        switch rc {
        case SQLITE_DONE: return .missing
        case SQLITE_ROW: break
        default: throw failure(rc, "Could not read from \(path)")
        }
        let length = Int(sqlite3_column_bytes(statement, 5))
        guard length == key.count, length == 0 || memcmp(sqlite3_column_blob(statement, 5), key.baseAddress!, length) == 0 else {
            return .otherKey
        }
        return .found(row(statement, withValue: withValue, listed: false))
    }

    /// Every row, most recently used first; values only when asked.
    /// - Throws: `StoreError` with code `io` past ``maximumListedRows`` rows (no store of this
    ///   package holds as many: a 4 KiB page holds a few rows at least, so that many rows would be a
    ///   database of tens of gigabytes of tiny values).
    func allRows(withValues: Bool, _ body: (Row) throws -> Void) throws {
        let statement = try use(withValues ? .allWithValues : .all)
        defer { sqlite3_reset(statement) }
        var listed = 0
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw failure(rc, "Could not list \(path)") }
            listed += 1
            guard listed <= Self.maximumListedRows else {
                throw StoreError(.io, "Could not list \(path): it has more than \(Self.maximumListedRows) rows, more than any store of this package keeps")
            }
            try body(row(statement, withValue: withValues, listed: true))
        }
    }

    /// The most rows ``allRows(withValues:_:)`` lists: 50 million.
    static let maximumListedRows = 50_000_000

    private func row(_ statement: OpaquePointer, withValue: Bool, listed: Bool) -> Row {
        // Read after the value's blob (a column's bytes stay valid until the next column is
        // converted); a damaged row's metadata longer than any entry's is not copied.
        let metadataLength = sqlite3_column_type(statement, 8) == SQLITE_NULL ? 0 : Int(sqlite3_column_bytes(statement, 8))
        return Row(
            id: sqlite3_column_int64(statement, 0),
            checksum: UInt64(bitPattern: sqlite3_column_int64(statement, 1)),
            created: sqlite3_column_int64(statement, 2),
            expires: sqlite3_column_type(statement, 3) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, 3),
            used: sqlite3_column_int64(statement, 4),
            key: listed ? blob(statement, 5) : Data(),
            value: withValue ? blob(statement, 6) : nil,
            valueLength: withValue ? Int(sqlite3_column_bytes(statement, 6)) : Int(sqlite3_column_int64(statement, 6)),
            metadataChecksum: sqlite3_column_type(statement, 7) == SQLITE_NULL ? nil : UInt64(bitPattern: sqlite3_column_int64(statement, 7)),
            metadata: metadataLength <= EntryAttributes.metadataLimit ? blob(statement, 8) : Data(),
            metadataLength: metadataLength
        )
    }

    private func blob(_ statement: OpaquePointer, _ column: Int32) -> Data {
        let count = Int(sqlite3_column_bytes(statement, column))
        guard count > 0, let bytes = sqlite3_column_blob(statement, column) else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// Writes a row, replacing any row under its id; `metadata` empty for none (`NULL`).
    /// The row takes `mark` and `queued` (a rewrite of a key enters its queue again).
    func upsert(
        id: Int64, checksum: UInt64, created: Int64, expires: Int64?, used: Int64,
        key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, metadata: UnsafeRawBufferPointer,
        mark: UInt8, queued: Int64
    ) throws {
        let statement = try use(.upsert)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        sqlite3_bind_int64(statement, 1, id)
        sqlite3_bind_int64(statement, 2, Int64(bitPattern: checksum))
        sqlite3_bind_int64(statement, 3, created)
        if let expires { sqlite3_bind_int64(statement, 4, expires) } else { sqlite3_bind_null(statement, 4) }
        sqlite3_bind_int64(statement, 5, used)
        // SQLITE_STATIC (nil): the bytes outlive the step, which is all SQLite reads them in.
        sqlite3_bind_blob(statement, 6, key.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(key.count), nil)
        sqlite3_bind_blob(statement, 7, value.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(value.count), nil)
        bindMetadata(metadata, id: id, to: statement, at: 8)
        sqlite3_bind_int64(statement, 10, Int64(mark))
        sqlite3_bind_int64(statement, 11, queued)
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE else { throw failure(rc, "Could not write to \(path)") }
        checkpointIfDue()
    }

    /// Replaces the attributes of the row under `id` when it holds `key` and has not expired at
    /// `now`, keeping its value (and so its checksum); whether there was such a row.
    func updateAttributes(
        id: Int64, key: UnsafeRawBufferPointer, created: Int64, expires: Int64?, now: Int64, metadata: UnsafeRawBufferPointer
    ) throws -> Bool {
        let statement = try use(.updateAttributes)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        sqlite3_bind_int64(statement, 1, id)
        // SQLITE_STATIC (nil): the bytes outlive the step.
        sqlite3_bind_blob(statement, 2, key.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(key.count), nil)
        sqlite3_bind_int64(statement, 3, created)
        if let expires { sqlite3_bind_int64(statement, 4, expires) } else { sqlite3_bind_null(statement, 4) }
        sqlite3_bind_int64(statement, 5, now)
        bindMetadata(metadata, id: id, to: statement, at: 6)
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE else { throw failure(rc, "Could not write to \(path)") }
        defer { checkpointIfDue() }
        return sqlite3_changes(handle) > 0
    }

    /// Binds the metadata's checksum at `index` and its bytes after it: both `NULL` for none.
    private func bindMetadata(_ metadata: UnsafeRawBufferPointer, id: Int64, to statement: OpaquePointer, at index: Int32) {
        if metadata.isEmpty {
            sqlite3_bind_null(statement, index)
            sqlite3_bind_null(statement, index + 1)
        } else {
            sqlite3_bind_int64(statement, index, Int64(bitPattern: SQLiteStore.metadataChecksum(id: id, metadata: metadata)))
            // SQLITE_STATIC (nil): the bytes outlive the step.
            sqlite3_bind_blob(statement, index + 1, metadata.baseAddress!, Int32(metadata.count), nil)
        }
    }

    /// Deletes the row under `id`; whether there was one.
    @discardableResult
    func delete(id: Int64) throws -> Bool {
        let statement = try use(.delete)
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, id)
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE else { throw failure(rc, "Could not delete from \(path)") }
        defer { checkpointIfDue() }
        return sqlite3_changes(handle) > 0
    }

    /// Deletes the row under `id` when it holds `key`; whether there was one.
    func delete(id: Int64, key: UnsafeRawBufferPointer) throws -> Bool {
        let statement = try use(.deleteKey)
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        sqlite3_bind_int64(statement, 1, id)
        // SQLITE_STATIC (nil): the bytes outlive the step.
        sqlite3_bind_blob(statement, 2, key.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(key.count), nil)
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE else { throw failure(rc, "Could not delete from \(path)") }
        defer { checkpointIfDue() }
        return sqlite3_changes(handle) > 0
    }

    /// Records reads of rows: when each was last read, and how many reads to add to its counter.
    func touch(_ uses: [Int64: Use]) throws {
        guard !uses.isEmpty else { return }
        // In transactions of ``rowsPerTransaction`` rows (each on a page of its own, as likely as
        // not): a second of reads in one transaction could fill the log's room by itself.
        let uses = Array(uses)
        for start in stride(from: 0, to: uses.count, by: rowsPerTransaction) {
            try transaction {
                let statement = try use(.touch)
                for (id, use) in uses[start..<min(uses.count, start + rowsPerTransaction)] {
                    sqlite3_bind_int64(statement, 1, id)
                    sqlite3_bind_int64(statement, 2, use.time)
                    sqlite3_bind_int64(statement, 3, Int64(use.reads))
                    let rc = sqlite3_step(statement)
                    sqlite3_reset(statement)
                    guard rc == SQLITE_DONE else { throw failure(rc, "Could not record uses in \(path)") }
                }
            }
        }
    }

    /// Moves the row under `id` to the queue and counter `mark` names, queued at `queued`.
    func requeue(id: Int64, mark: UInt8, queued: Int64) throws {
        let statement = try use(.requeue)
        defer { sqlite3_reset(statement) }
        sqlite3_bind_int64(statement, 1, id)
        sqlite3_bind_int64(statement, 2, Int64(mark))
        sqlite3_bind_int64(statement, 3, queued)
        let rc = sqlite3_step(statement)
        guard rc == SQLITE_DONE else { throw failure(rc, "Could not write to \(path)") }
        checkpointIfDue()
    }

    /// Up to `limit` rows in id order from `start`, going on from the lowest id when the table
    /// ends first: their ids, last uses, key-plus-value sizes and policy marks. Ids are hashes, so
    /// the rows after a random id are a random sample.
    func window(from start: Int64, limit: Int) throws -> [SampledRow] {
        var rows: [SampledRow] = []
        rows.reserveCapacity(limit)
        for statement in [Statement.window, .windowWrapped] where rows.count < limit {
            let prepared = try use(statement)
            defer { sqlite3_reset(prepared) }
            sqlite3_bind_int64(prepared, 1, start)
            sqlite3_bind_int64(prepared, 2, Int64(limit - rows.count))
            while true {
                let rc = sqlite3_step(prepared)
                if rc == SQLITE_DONE { break }
                guard rc == SQLITE_ROW else { throw failure(rc, "Could not list \(path)") }
                rows.append(SampledRow(
                    id: sqlite3_column_int64(prepared, 0), used: sqlite3_column_int64(prepared, 1), size: Int(sqlite3_column_int64(prepared, 2)),
                    mark: UInt8(truncatingIfNeeded: sqlite3_column_int64(prepared, 3)), queued: sqlite3_column_int64(prepared, 4)
                ))
            }
        }
        return rows
    }

    // MARK: - Pages and transactions

    /// The database's pages, and how many of them are free.
    func pages() throws -> (total: Int, free: Int) {
        (Int(try single(.pageCount)), Int(try single(.freelistCount)))
    }

    func count() throws -> Int { Int(try single(.count)) }

    /// The most bytes SQLite's page cache holds for this connection.
    func pageCacheSize() throws -> Int {
        let size = try integer("PRAGMA cache_size")
        return Int(size < 0 ? -size * 1_024 : size * Int64(SQLiteStore.pageSize))
    }

    /// Returns free pages to the file system (the database file shrinks).
    /// Moves pages in from the end of the file a few at a time, each step its own transaction
    /// followed by a checkpoint when due, so that no step writes much more to the log than an
    /// eviction's transaction.
    func releaseFreePages() throws {
        var free = try single(.freelistCount)
        while free > 0 {
            // Moving a page also writes its parent and its pointer-map page: half as many pages
            // as an eviction's rows make a step of about the same size in the log.
            try execute("PRAGMA incremental_vacuum(\(max(1, rowsPerTransaction / 2)))")
            checkpointIfDue()
            let left = try single(.freelistCount)
            // A database without incremental vacuum keeps its free pages.
            guard left < free else { return }
            free = left
        }
    }

    /// Copies the log into the database and truncates the log.
    /// Copies the whole log into the database and empties it, waiting within the busy timeout for
    /// readers, the writer, and a checkpoint another connection is running (the store's
    /// checkpointer's): `PRAGMA wal_checkpoint` reported that one in its row and succeeded, so a
    /// flush could return with values still only in the log.
    /// - Throws: `StoreError` (`unavailable` when it could not run within the busy timeout).
    func checkpoint() throws {
        let rc = retryingWhileBusy { sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil) }
        guard rc == SQLITE_OK else { throw failure(rc, "Could not copy the log into \(path)") }
    }

    func deleteAll() throws {
        try execute("DELETE FROM entries")
        checkpointIfDue()
    }

    /// SQLite's own check of the file's structure: `nil` when sound, else what is wrong.
    func structuralProblems() throws -> String? {
        var problems: [String] = []
        try rows("PRAGMA quick_check") { problems.append($0) }
        return problems == ["ok"] ? nil : problems.joined(separator: "; ")
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            checkpointIfDue()
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func use(_ statement: Statement) throws -> OpaquePointer {
        guard let prepared = statements[statement] else {
            throw StoreError(.io, hasMetadata ? "\(path) is open for reading only" : "\(path) is of format version \(Self.oldestFormatVersion) and open without upgrading it: it can be read, not written")
        }
        return prepared
    }

    private func single(_ statement: Statement) throws -> Int64 {
        let prepared = try use(statement)
        defer { sqlite3_reset(prepared) }
        let rc = sqlite3_step(prepared)
        guard rc == SQLITE_ROW else { throw failure(rc, "Could not read from \(path)") }
        return sqlite3_column_int64(prepared, 0)
    }

    private func execute(_ sql: String) throws {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw failure(rc, "Could not run \(sql.prefix(40)) on \(path)") }
    }

    private func integer(_ sql: String) throws -> Int64 {
        Int64(try text(sql) ?? "") ?? 0
    }

    /// SQLite's companion files of the database (its log, the log's index) that this connection
    /// has open, by name, as they were when it opened: if the database is replaced behind the
    /// store's back, they stay at their names, and a connection opened at the name would read the
    /// old database's pages from them (see ``SQLiteStore``'s `change`).
    private(set) var openedCompanions: [String: FileIdentity] = [:]

    /// Records which companion files (log, log's index) this connection has open: called once
    /// the connection has read the database (which opens them in WAL mode).
    func recordOpenedCompanions() {
        for name in StoreNames.smallValuesCompanions {
            if let identity = folder.identity(of: name) { openedCompanions[name] = identity }
        }
    }

    /// Whether the database file this connection has open is no longer the one at its name in the
    /// folder: deleted, or replaced by another file (SQLite's `SQLITE_FCNTL_HAS_MOVED`, one `stat`
    /// through the folder's descriptor).
    func hasMoved() -> Bool {
        var moved: Int32 = 0
        return sqlite3_file_control(handle, "main", SQLITE_FCNTL_HAS_MOVED, &moved) == SQLITE_OK && moved != 0
    }

    /// Runs `sql`, whatever rows it returns (tests).
    func run(_ sql: String) throws { try rows(sql) { _ in } }

    /// The first column of the last row `sql` returns, as text; `nil` when it returns none (tests
    /// read the policy's columns with it too).
    func text(_ sql: String) throws -> String? {
        var result: String?
        try rows(sql) { result = $0 }
        return result
    }

    private func rows(_ sql: String, _ body: (String) -> Void) throws {
        var statement: OpaquePointer?
        let prepared = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard prepared == SQLITE_OK, let statement else { throw failure(prepared, "Could not run \(sql) on \(path)") }
        defer { sqlite3_finalize(statement) }
        while true {
            let rc = sqlite3_step(statement)
            if rc == SQLITE_DONE { return }
            guard rc == SQLITE_ROW else { throw failure(rc, "Could not run \(sql) on \(path)") }
            body(sqlite3_column_text(statement, 0).map { String(cString: $0) } ?? "")
        }
    }

    /// A `StoreError` for an SQLite result code: `corrupted` for a damaged or foreign file,
    /// `notAStore` for a link, `unavailable` for a lock held too long by another connection, `io`
    /// for the rest, with SQLite's message.
    private func failure(_ rc: Int32, _ message: String) -> StoreError {
        let detail = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
        switch rc & 0xFF {
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return StoreError(.corrupted, "\(message): the database is damaged (\(detail))")
        case SQLITE_IOERR where rc == SQLITE_IOERR | (2 << 8):   // SQLITE_IOERR_SHORT_READ
            return StoreError(.corrupted, "\(message): the database is damaged (shorter than its pages say)")
        case SQLITE_CANTOPEN where rc == SQLITE_CANTOPEN | (6 << 8):   // SQLITE_CANTOPEN_SYMLINK
            return StoreError(.notAStore, "\(message): it is a symbolic link (\(detail))")
        case SQLITE_FULL:
            return StoreError(.io, "\(message): the disk is full (\(detail))", posixCode: .ENOSPC)
        case SQLITE_INTERRUPT where timeLimit != nil:
            return StoreError(.timeout, "\(message): gave up after \(timeLimit!) (the tool's limit for one database)")
        case SQLITE_BUSY:
            return StoreError(.unavailable, "\(message): another connection holds the database's lock — a write in another process, or a store with exclusive access (\(detail))")
        default:
            return StoreError(.io, "\(message): \(detail) (SQLite code \(rc))")
        }
    }
}

/// The checksum of a row: xxHash's XXH3 (64 bits) of the value, seeded with the row's id, so that
/// a value moved to another row does not check.
func checksum(id: Int64, value: UnsafeRawBufferPointer) -> UInt64 {
    XXH3_64bits_withSeed(value.baseAddress, value.count, UInt64(bitPattern: id))
}

extension SQLiteStore {
    /// The checksum of a row's metadata, kept in a column of its own so that the metadata is
    /// checked without reading the value, and replaced without rewriting it: XXH3 (64 bits) of
    /// the metadata, seeded with the row's id and `METADATA` (so that neither metadata moved to
    /// another row nor a value's checksum checks).
    static func metadataChecksum(id: Int64, metadata: UnsafeRawBufferPointer) -> UInt64 {
        XXH3_64bits_withSeed(metadata.baseAddress, metadata.count, UInt64(bitPattern: id) ^ 0x4D45_5441_4441_5441)
    }
}
