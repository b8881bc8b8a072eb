public import Foundation
public import HanekeProtocols
import Logging
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

extension SQLiteStore {
    /// What ``inspect(directory:access:)`` found in a store folder's database.
    public struct Inspection: Sendable {
        /// The database's path.
        public var path: String
        /// Every valid row, most recently used first (by the uses written so far), expired ones
        /// included.
        public var entries: [Entry]
        /// The rows that are damaged: a read of their key would be a miss.
        public var damagedRows: [DamagedRow]
        /// What SQLite's `PRAGMA quick_check` found wrong with the file's structure, or `nil` when
        /// it is sound (also `nil` when ``unreadable`` is set: the check could not run).
        public var structuralProblems: String?
        /// Why the database cannot be read at all, or `nil` when it can. ``entries`` then lists
        /// only the rows read before the failure (none when it could not be opened).
        public var unreadable: String?
        /// The bytes the database file takes on disk (`du`'s count).
        public var databaseSize: Int
        /// The bytes SQLite's log (`-wal`) takes on disk; 0 when there is none.
        public var logSize: Int
        /// The bytes the log's index (`-shm`) takes on disk; 0 when there is none.
        public var logIndexSize: Int

        /// The bytes the database, its log and the log's index take on disk.
        public var totalSize: Int { databaseSize + logSize + logIndexSize }

        /// The problems a repair would deal with: damaged rows, plus one for a damaged structure
        /// or an unreadable database.
        public var problemCount: Int {
            damagedRows.count + (structuralProblems == nil ? 0 : 1) + (unreadable == nil ? 0 : 1)
        }
    }

    /// A row that is not a valid entry, as ``inspect(directory:access:)`` finds it.
    public struct DamagedRow: Sendable, Hashable {
        /// Why a row is damaged.
        public enum Reason: String, Sendable, Hashable, CaseIterable {
            /// The value does not match the row's checksum.
            case checksumMismatch
            /// The key's MD5 (its high 64 bits) is not the row's id: the row is misplaced.
            case keyDoesNotMatchID
            /// The key is not valid UTF-8, so no `String` key can be its.
            case keyNotUTF8
            /// The metadata does not match its checksum (or is longer than any entry's).
            case metadataChecksumMismatch
        }

        /// The row's id (the high 64 bits of its key's MD5, as stored).
        public var id: Int64
        /// The stored key, invalid UTF-8 replaced by U+FFFD.
        public var key: String
        /// Why the row is damaged.
        public var reason: Reason

        /// The reason in words.
        public var explanation: String {
            switch reason {
            case .checksumMismatch: "the value does not match its checksum"
            case .keyDoesNotMatchID: "the key's MD5 is not the row's id (a misplaced row)"
            case .keyNotUTF8: "the key is not valid UTF-8"
            case .metadataChecksumMismatch: "the metadata does not match its checksum"
            }
        }
    }

    /// What ``repair(directory:access:)`` did.
    public struct Repair: Sendable {
        /// The damaged rows deleted.
        public var deletedRows: [DamagedRow]
        /// Whether the database files were removed (the database could not be read, or its
        /// structure stayed damaged once the damaged rows were gone); its entries are lost, as a
        /// cache's may be.
        public var removedDatabase: Bool
    }

    /// Examines the database of the store folder `directory` without changing it: every row,
    /// its checksum and whether its key is its id's, and SQLite's `quick_check` of the structure.
    /// - Parameters:
    ///   - directory: A store's folder (it holds the marker `.haneke-store`).
    ///   - access: Who may read and write the files, as the store was configured.
    /// - Returns: What was found, or `nil` when the folder holds no database.
    /// - Throws: `StoreError` with code `notAStore` when the folder is not a store's, or the
    ///   database is an SQLite database that is not a Haneke store's (or of a newer format);
    ///   `unsafeDirectory` as `FileStore` does; `io` when the files cannot be read. A database
    ///   damaged beyond reading is not an error: ``Inspection/unreadable`` says why.
    /// - Performs disk I/O: reads every row, values included, and every page once more for the
    ///   check. The connection writes nothing, but SQLite makes its log and the log's index while
    ///   it is open (and removes them when it closes, unless another process has the database
    ///   open or this one may not write the folder); a log left by a process that crashed is
    ///   copied into the database, as any store opening it would.
    public static func inspect(directory: String, access: FolderAccess = .owner) throws -> Inspection? {
        let folder = try SharedStoreFolder(path: directory, access: access, inspecting: true)
        guard let databaseSize = folder.allocatedSize(of: databaseFileName) else { return nil }
        try checkDatabaseFiles(in: folder)
        var inspection = Inspection(
            path: folder.path + "/" + databaseFileName, entries: [], damagedRows: [], structuralProblems: nil,
            unreadable: nil, databaseSize: databaseSize, logSize: 0, logIndexSize: 0
        )
        if folder.length(of: databaseFileName) != 0 {
            do {
                let database = try openForReading(folder)
                try examine(database, into: &inspection)
            } catch let error as StoreError where error.code == .corrupted {
                inspection.unreadable = error.message
            }
        }
        inspection.logSize = folder.allocatedSize(of: databaseFileName + "-wal") ?? 0
        inspection.logIndexSize = folder.allocatedSize(of: databaseFileName + "-shm") ?? 0
        return inspection
    }

    /// Deletes the damaged rows of the database of the store folder `directory`; removes the
    /// database files instead when SQLite cannot read them, or when its structure is still damaged
    /// once those rows are gone (the entries are lost, as a cache's may be). Only a store's folder
    /// is changed, and only its database files. Stop the processes using the store first: a
    /// database removed under them is one they keep writing to.
    /// - Parameters:
    ///   - directory: A store's folder (it holds the marker `.haneke-store`).
    ///   - access: Who may read and write the files, as the store was configured.
    /// - Returns: What was done (then nothing is wrong with the database, or it is gone), or `nil`
    ///   when the folder holds no database.
    /// - Throws: `StoreError` with code `notAStore` when the folder is not a store's, or the
    ///   database is not a Haneke store's (it is left alone); `unsafeDirectory` as `FileStore`
    ///   does; `io` when the files cannot be changed.
    /// - Performs disk I/O: reads every row, and writes one transaction.
    public static func repair(directory: String, access: FolderAccess = .owner) throws -> Repair? {
        // Checked as for reading first: opened for a store, an empty folder would be marked one.
        _ = try SharedStoreFolder(path: directory, access: access, inspecting: true)
        let folder = try SharedStoreFolder(path: directory, access: access)
        guard folder.allocatedSize(of: databaseFileName) != nil else { return nil }
        try checkDatabaseFiles(in: folder)
        var repair = Repair(deletedRows: [], removedDatabase: false)
        if folder.length(of: databaseFileName) == 0 {
            // A database created but never initialised (its creator stopped at once): nothing to keep.
            try removeDatabase(in: folder)
            repair.removedDatabase = true
            return repair
        }
        var structure: String?
        do {
            let database = try Database(folder: folder, readOnly: false, durable: true, pageSize: pageSize, walPages: 1_000, busyTimeout: .seconds(5), timeLimit: inspectionTimeLimit)
            var inspection = Inspection(
                path: database.path, entries: [], damagedRows: [], structuralProblems: nil,
                unreadable: nil, databaseSize: 0, logSize: 0, logIndexSize: 0
            )
            try examine(database, into: &inspection)
            if let unreadable = inspection.unreadable { throw StoreError(.corrupted, unreadable) }
            if !inspection.damagedRows.isEmpty {
                try database.transaction {
                    for row in inspection.damagedRows { try database.delete(id: row.id) }
                }
                repair.deletedRows = inspection.damagedRows
            }
            structure = try database.structuralProblems()
            if structure == nil { try database.checkpoint() }
        } catch let error as StoreError where error.code == .corrupted {
            structure = error.message
        }
        if structure != nil {
            try removeDatabase(in: folder)
            repair.removedDatabase = true
        }
        return repair
    }

    /// Reads the value stored for `key` in the database of the store folder `directory`, without
    /// changing anything: no use is recorded, and an expired or damaged row is not deleted.
    /// - Parameters:
    ///   - key: The key.
    ///   - directory: A store's folder.
    ///   - access: Who may read and write the files, as the store was configured.
    ///   - now: What time it is, for expiry.
    /// - Returns: The value, or `nil` when there is no database, no row for `key`, or its row has
    ///   expired.
    /// - Throws: `StoreError` with code `corrupted` when the row for `key` is damaged or the
    ///   database cannot be read; `notAStore`, `unsafeDirectory` or `io` as
    ///   ``inspect(directory:access:)`` does.
    public static func value(forKey key: String, inDirectory directory: String, access: FolderAccess = .owner, now: Date = Date()) throws -> Data? {
        let folder = try SharedStoreFolder(path: directory, access: access, inspecting: true)
        guard folder.allocatedSize(of: databaseFileName) != nil else { return nil }
        try checkDatabaseFiles(in: folder)
        guard folder.length(of: databaseFileName) != 0 else { return nil }
        let database = try openForReading(folder)
        let id = Self.id(for: key)
        var bytes = key
        let lookup = try bytes.withUTF8 { try database.lookup(id: id, key: UnsafeRawBufferPointer($0), withValue: true) }
        guard case .found(let row) = lookup else { return nil }
        if let expires = row.expires, Double(expires) / 1_000 <= now.timeIntervalSince1970 { return nil }
        guard isIntact(row, checkingValue: true) else {
            throw StoreError(.corrupted, "The row for key \(Logger.describe(key)) in \(folder.path)/\(databaseFileName) is damaged (its value or its metadata does not match its checksum)")
        }
        return row.value ?? Data()
    }

    /// Reads every row and checks the structure, adding what is found to `inspection`; a read
    /// that fails on damage sets ``Inspection/unreadable``.
    private static func examine(_ database: Database, into inspection: inout Inspection) throws {
        do {
            try database.allRows(withValues: true) { row in
                if let reason = damage(of: row) {
                    inspection.damagedRows.append(DamagedRow(id: row.id, key: String(decoding: row.key, as: UTF8.self), reason: reason))
                } else {
                    inspection.entries.append(Entry(row: row))
                }
            }
        } catch let error as StoreError where error.code == .corrupted {
            inspection.unreadable = error.message
            return
        }
        do {
            inspection.structuralProblems = try database.structuralProblems()
        } catch let error as StoreError where error.code == .corrupted {
            inspection.structuralProblems = error.message
        }
    }

    /// Why `row` is damaged, or `nil` when it is a valid entry.
    private static func damage(of row: Database.Row) -> DamagedRow.Reason? {
        guard let key = String(validating: row.key, as: UTF8.self) else { return .keyNotUTF8 }
        guard id(for: key) == row.id else { return .keyDoesNotMatchID }
        let sum = (row.value ?? Data()).withUnsafeBytes { checksum(id: row.id, value: $0) }
        guard sum == row.checksum else { return .checksumMismatch }
        return row.metadataIsIntact ? nil : .metadataChecksumMismatch
    }

    /// Opens the database at `path` to read it, writing nothing. A connection that may write is
    /// tried first: it is the last to close that deletes SQLite's log and its index, which a
    /// read-only connection makes when they are missing and leaves behind. When this process may
    /// not write the files, read-only.
    private static func openForReading(_ folder: SharedStoreFolder) throws -> Database {
        do {
            return try Database(folder: folder, readOnly: false, durable: false, pageSize: pageSize, walPages: 1_000, busyTimeout: .seconds(5), timeLimit: inspectionTimeLimit)
        } catch let error as StoreError where error.code == .io {
            return try Database(folder: folder, readOnly: true, durable: false, pageSize: pageSize, walPages: 1_000, busyTimeout: .seconds(5), timeLimit: inspectionTimeLimit)
        }
    }

    /// The longest the inspection API (and so `haneke inspect`, `get`, `verify`) works on one
    /// database: past it, the statement running is interrupted and the call throws `timeout`.
    static let inspectionTimeLimit = Duration.seconds(60)

    /// Removes the database, its log and the log's index.
    private static func removeDatabase(in folder: SharedStoreFolder) throws {
        for name in StoreNames.smallValuesCompanions + [databaseFileName] {
            try folder.removeFile(name)
        }
    }
}
