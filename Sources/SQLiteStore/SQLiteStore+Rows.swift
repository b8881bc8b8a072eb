import Foundation
import HanekeProtocols
import Logging
import StoreFolders

// Reading and writing rows: a key's row id, times in milliseconds, the checks of a row, and the
// writes that evict to fit, each under the store's lock and through `change`, which opens the
// database again when it was replaced behind the store's back.
extension SQLiteStore {
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
    func change<T>(_ state: inout State, _ body: (Database) throws -> T) throws -> T {
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
}
