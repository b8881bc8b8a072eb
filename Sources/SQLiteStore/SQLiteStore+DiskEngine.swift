package import Foundation
package import HanekeProtocols
package import Logging

extension SQLiteStore: DiskEngine {
    package static var partName: String? { "the database" }

    package static func storedValue(forKey key: String, inFolder folder: String) throws -> Data? {
        try value(forKey: key, inDirectory: folder)
    }

    /// The folder's database as a store with capacity `size` (it evicts only when trimmed), or
    /// `nil` when the folder has none.
    package static func openForTrimming(inFolder folder: String, size: Int, logger: Logger) throws -> SQLiteStore? {
        guard FileManager.default.fileExists(atPath: folder + "/" + databaseFileName) else { return nil }
        return try SQLiteStore(directory: folder, configuration: .init(capacity: max(size, 1)), logger: logger)
    }

    /// ``inspect(directory:access:)`` in the shared shape, or `nil` when the folder has no
    /// database: its rows as entries (the key and the payload are their stored size; they take no
    /// file of their own), its damaged rows, then an unreadable database and a damaged structure
    /// as problems; its files (database, log and index) as its other files. Payloads are not
    /// checked (each row's checksum is).
    package static func inspect(
        folder: String,
        checkingPayloads payloadCheck: DiskInspection.PayloadCheck?,
        progress: (DiskInspection.Progress) -> Void
    ) throws -> DiskInspection? {
        // A database that appears after this test is inspected all the same, without progress.
        if FileManager.default.fileExists(atPath: folder + "/" + databaseFileName) { progress(.started) }
        guard let inspection = try inspect(directory: folder) else { return nil }
        let path = inspection.path
        var problems = inspection.damagedRows.map { row in
            DiskInspection.Problem(kind: row.reason.rawValue, label: "damaged row", path: path, id: row.id, key: row.key, reason: row.explanation)
        }
        if let unreadable = inspection.unreadable {
            problems.append(DiskInspection.Problem(kind: "unreadable", label: "damaged database", path: path, reason: unreadable))
        }
        if let structure = inspection.structuralProblems {
            problems.append(DiskInspection.Problem(kind: "structure", label: "damaged database", path: path, reason: structure))
        }
        return DiskInspection(
            partName: partName, jsonKey: "database", filesDescription: "database, log and index", itemName: "row", folder: folder, path: path,
            entries: inspection.entries.map { DiskInspection.Entry($0, in: path) }, problems: problems,
            examined: inspection.entries.count + inspection.damagedRows.count, metadataSize: inspection.totalSize, foldersSize: 0,
            engineInspection: inspection
        )
    }

    /// ``repair(directory:access:)`` of the inspected folder, when the inspection found problems
    /// (`nil` otherwise, or when the database is gone): a repair leaves the database sound or
    /// removes it, so it keeps no problem.
    package static func repair(_ inspection: DiskInspection, removingForeignFiles: Bool) throws -> DiskInspection.Repair? {
        guard !inspection.problems.isEmpty, let outcome = try repair(directory: inspection.folder) else { return nil }
        let path = inspection.path
        return DiskInspection.Repair(
            removed: outcome.deletedRows.map { row in
                DiskInspection.Problem(kind: row.reason.rawValue, label: "damaged row", path: path, id: row.id, key: row.key, reason: row.explanation)
            },
            kept: [],
            removedFiles: outcome.removedDatabase
        )
    }

    /// The database's pages in use plus the room kept for its log: ``usedSize``.
    package var trimmedSize: Int { usedSize }

    /// The database, its log and the log's index: ``totalSize``.
    package var allocatedSize: Int { totalSize }

    /// `nil`: the database records no sessions (the files' journal beside it does).
    package var previousSessionStart: Date? { nil }

    /// Every row, most recently used first (``entries()``); for the last session, the rows last
    /// used at or after the session's start as the files' journal records it — "the values read
    /// or written during the previous run" — and none when no start is known (as the files' store
    /// loads none when its journal records no earlier session). A row used during the previous run
    /// was last used then or since, so none of them is missed; a row used only in an earlier run
    /// is not loaded.
    package func entriesToPreload(_ selection: PreloadSelection) throws -> [DiskInspection.Entry] {
        let path = directory + "/" + Self.databaseFileName
        let rows: [Entry]
        switch selection {
        case .all: rows = try entries()
        case .usedInLastSession(let since?): rows = try entries().filter { $0.lastAccess >= since }
        case .usedInLastSession(nil): rows = []
        }
        return rows.map { DiskInspection.Entry($0, in: path) }
    }

    /// Reads the value for `key` without counting it or recording a use, and without deleting an
    /// expired or damaged row (a read would): `nil` for an expired row.
    /// - Throws: `StoreError` with code `corrupted` when the row is damaged, `io` when the
    ///   database cannot be read.
    package func blockingPeekValue(forKey key: String) throws -> Data? {
        try blockingPeekEntry(forKey: key)?.value
    }

    /// The entry for `key` with its attributes, read without recording a use; `nil` when expired.
    package func blockingPeekEntry(forKey key: String) throws -> StoreEntry<Data>? {
        let id = Self.id(for: key)
        let now = now()
        var bytes = key
        let row: Database.Row? = try bytes.withUTF8 { bytes in
            try state.withLock { state in
                guard case .found(let row) = try state.database.lookup(id: id, key: UnsafeRawBufferPointer(bytes), withValue: true) else { return nil }
                return row
            }
        }
        guard let row else { return nil }
        if let expires = row.expires, expires <= now { return nil }
        guard Self.isIntact(row, checkingValue: true) else {
            throw StoreError(.corrupted, "The row for key \(Logger.describe(key)) in \(directory)/\(Self.databaseFileName) is damaged (its value or its metadata does not match its checksum)")
        }
        return StoreEntry(value: row.value ?? Data(), attributes: Self.attributes(of: row))
    }
}

extension DiskInspection.Entry {
    /// A row of the database at `path`: its key and value are what it stores; it has no file of
    /// its own.
    init(_ entry: SQLiteStore.Entry, in path: String) {
        self.init(
            key: entry.key, location: path, payloadSize: entry.payloadSize, storedSize: entry.key.utf8.count + entry.payloadSize,
            allocatedSize: 0, created: entry.created, expires: entry.expires, lastAccess: entry.lastAccess
        )
    }
}
