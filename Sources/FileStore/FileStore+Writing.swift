package import Foundation
package import HanekeProtocols
import Logging
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

extension FileStore {
    package func blockingSetValue(_ value: Data, forKey key: String) throws {
        try blockingSetEntry(StoreEntry(value: value), forKey: key)
    }

    /// Stores `entry` for `key`, atomically replacing any previous value, then evicts what exceeds
    /// the limits (blocks: disk I/O). Without metadata the file is a version 1 file, as 0.3.0 wrote.
    package func blockingSetEntry(_ entry: StoreEntry<Data>, forKey key: String) throws {
        try checkWritable(entry.attributes, forKey: key)
        let write = try prepareWrite(entry.attributes, payloadLength: entry.value.count, forKey: key)
        guard let victims = try replaceFile(with: write, payload: .data(entry.value), forKey: key, ifStill: nil) else { return }
        try finishWrite(write, forKey: key, evicted: victims)
    }

    /// A file about to be written: its header and when.
    struct PreparedWrite {
        var digest: KeyDigest
        /// The header's bytes, key and metadata included.
        var header: [UInt8]
        /// The length of the whole file.
        var fileSize: Int
        /// When it is written (the index's and the journal's time), milliseconds since 1970.
        var time: Int64
    }

    /// Refuses a key over 16 MiB (`invalidKey`) and metadata over its limit (`valueTooLarge`).
    func checkWritable(_ attributes: EntryAttributes, forKey key: String) throws {
        let keyLength = key.utf8.count
        guard keyLength <= EntryHeader.maximumKeyLength else {
            counter.recordError()
            throw StoreError(.invalidKey, "A key of \(keyLength) bytes is longer than the FileStore limit of \(EntryHeader.maximumKeyLength) bytes")
        }
        do {
            try attributes.checkMetadataSize(forKey: key)
        } catch {
            counter.recordError()
            throw error
        }
    }

    /// Checks that the file fits the capacity, catches up with the other stores sharing the folder,
    /// and makes the header: `storedAt` (the time of the write when `nil`) as the creation time,
    /// and the expiry bounded by the store's ``Configuration/timeToLive``.
    func prepareWrite(_ attributes: EntryAttributes, payloadLength: Int, forKey key: String) throws -> PreparedWrite {
        let fileSize = EntryHeader.length(keyLength: key.utf8.count, metadataLength: attributes.metadata.count) + payloadLength
        if let capacity = configuration.capacity {
            // What the file will take on disk: whole blocks.
            let needed = (fileSize + blockSize - 1) / blockSize * blockSize
            let metadata = state.withLock { $0.metadataSize }
            let available = entryCapacity(capacity, metadataSize: metadata)
            if needed > available {
                counter.recordError()
                throw StoreError(
                    .valueTooLarge,
                    "The value for key \(Logger.describe(key)) needs \(needed) bytes on disk, more than the \(available) bytes the capacity of \(directory) leaves for entries (\(capacity) bytes, of which the store's marker and journal take \(metadata + journalReserve))"
                )
            }
        }
        // What other stores sharing the folder wrote counts before this write evicts.
        catchUp()
        let time = now()
        let created = attributes.storedAt.map(Self.milliseconds(clamping:)) ?? time
        let header = EntryHeader.encode(
            key: key, created: created, expires: expiry(of: attributes, writtenAt: time), payloadLength: payloadLength, metadata: attributes.metadata
        )
        return PreparedWrite(digest: KeyDigest(key: key), header: header, fileSize: fileSize, time: time)
    }

    /// The expiry of an entry written at `time`: its own, or the store's time to live after the
    /// write, whichever comes first (``EntryAttributes/expiry(writtenAt:storeTimeToLive:)``, in
    /// milliseconds so that a plain write's expiry is exactly what it has always been).
    func expiry(of attributes: EntryAttributes, writtenAt time: Int64) -> Int64? {
        let bound = configuration.timeToLive.map { Self.expiry(after: $0, from: time) }
        guard let own = attributes.expiresAt.map(Self.milliseconds(clamping:)) else { return bound }
        let expiry = bound.map { min($0, own) } ?? own
        return expiry == 0 ? 1 : max(expiry, Int64.min + 1)   // 0 reads as "never"
    }

    /// Milliseconds since 1970 of a date a caller gave, clamped to what the header holds.
    static func milliseconds(clamping date: Date) -> Int64 {
        max(date.millisecondsSince1970, Int64.min + 1)
    }

    /// Where a new file's payload comes from.
    enum Payload {
        /// Bytes in memory.
        case data(Data)
        /// A range of an open file: the payload of the file it replaces, copied by the kernel.
        case copy(from: Int32, offset: Int, length: Int)
    }

    /// Writes a temporary file and renames it over the entry's name, then records it in the index
    /// and evicts what exceeds the limits (the victims are returned, to delete with no lock held).
    /// - Parameter identity: With one, the file is renamed only if the entry's file is still that
    ///   file; `nil` is returned otherwise (and nothing changes).
    func replaceFile(with write: PreparedWrite, payload: Payload, forKey key: String, ifStill identity: FileIdentity?) throws -> [Victim]? {
        let digest = write.digest
        let name = digest.hex
        var attempt = 0
        while true {
            do {
                return try folder.withShard(digest.shard, create: true) { shard -> [Victim]? in
                    let temporary = StoreNames.temporary()
                    let status = try writeTemporaryFile(temporary, in: shard, header: write.header, payload: payload, path: folder.path(of: digest.shard + "/" + temporary))
                    do {
                        let victims = try stripe(for: digest).withLock { _ throws(POSIX.Failure) -> [Victim]? in
                            if let identity {
                                guard POSIX.status(of: name, in: shard)?.identity == identity else { return nil }
                            }
                            try POSIX.rename(temporary, to: name, in: shard, path: path(for: digest))
                            return state.withLock { recordWritten(&$0, digest, write: write, status: status) }
                        }
                        if victims == nil { _ = try? POSIX.unlink(temporary, in: shard, path: "") }
                        return victims
                    } catch {
                        _ = try? POSIX.unlink(temporary, in: shard, path: "")
                        throw error
                    }
                } ?? []
            } catch {
                // The shard folder vanished (deleted by hand) between creating the temporary file
                // and renaming it: write again into a new folder, once.
                if let failure = error as? POSIX.Failure, failure.code == ENOENT, attempt == 0 {
                    attempt += 1
                    continue
                }
                counter.recordError()
                throw writeError(error, key: key, digest: digest)
            }
        }
    }

    /// Records a file just put at an entry's name in the index, and evicts what exceeds the limits.
    /// Call with `state` locked, under the key's stripe lock.
    func recordWritten(_ state: inout IndexState, _ digest: KeyDigest, write: PreparedWrite, status: FileStatus) -> [Victim] {
        state.settle(digest)
        state.entries.setValue(
            EntryRecord(fileSize: write.fileSize, allocated: status.allocated, lastAccess: write.time, identity: status.identity),
            forKey: digest,
            cost: status.allocated,
            expiry: .infinity
        )
        return evictToLimits(&state)
    }

    /// After a file is in place: flushes its folder (with ``Configuration/durableWrites``),
    /// counts the write, journals it, and deletes what it evicted.
    func finishWrite(_ write: PreparedWrite, forKey key: String, evicted victims: [Victim]) throws {
        if configuration.durableWrites {
            do {
                try synchronizeShard(write.digest.shard)
            } catch {
                counter.recordError()
                throw Self.ioError("Could not flush the folder of \(path(for: write.digest)) to disk after writing key \(Logger.describe(key))", error)
            }
        }
        counter.recordWrite()
        journalWrite(write.digest, at: write.time, evicted: victims)
    }

    func writeError(_ error: any Error, key: String, digest: KeyDigest) -> StoreError {
        if let failure = error as? POSIX.Failure, failure.code == ENOTDIR {
            return StoreError(
                .io,
                "Could not write the value for key \(Logger.describe(key)) to \(path(for: digest)): \(folder.path(of: digest.shard)), where its shard folder should be, is not a folder (a store never follows a link, nor removes what it did not make)",
                cause: failure,
                posixCode: failure.posixCode
            )
        }
        return Self.ioError("Could not write the value for key \(Logger.describe(key)) to \(path(for: digest))", error)
    }

    /// Writes header and payload into a new temporary file in the shard folder and returns the
    /// file's status (identity and blocks). A file it could not finish is removed; a name it could
    /// not create is left alone (it may be another writer's).
    func writeTemporaryFile(_ name: String, in shard: Int32, header: [UInt8], payload: Payload, path: @autoclosure () -> String) throws(POSIX.Failure) -> FileStatus {
        let descriptor = try folder.createFile(name, in: shard, path: path())
        do {
            switch payload {
            case .data(let value):
                try Self.withBytes(of: header) { (headerBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                    try Self.withBytes(of: value) { (valueBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                        try POSIX.writeAll(descriptor, headerBytes, valueBytes, path: path())
                    }
                }
            case .copy(let source, let offset, let length):
                try Self.withBytes(of: header) { (headerBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                    try POSIX.writeAll(descriptor, headerBytes, UnsafeRawBufferPointer(start: nil, count: 0), path: path())
                }
                try FileCopy.copy(length, from: source, at: offset, to: descriptor, at: header.count, path: path())
            }
            if configuration.durableWrites {
                try POSIX.synchronize(descriptor, path: path())
            }
            let status = try POSIX.status(of: descriptor, path: path())
            POSIX.close(descriptor)
            return status
        } catch {
            POSIX.close(descriptor)
            _ = try? POSIX.unlink(name, in: shard, path: path())
            throw error
        }
    }

    /// `fsync` of a shard folder, so that a rename into it is on the disk.
    func synchronizeShard(_ shard: String) throws {
        guard let descriptor = try POSIX.openFolder(shard, in: folder.descriptor, forListing: true, path: folder.path(of: shard)) else { return }
        defer { POSIX.close(descriptor) }
        try POSIX.synchronize(descriptor, path: folder.path(of: shard))
    }

    /// `withUnsafeBytes` with a typed error.
    private static func withBytes<T>(of data: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws(POSIX.Failure) -> T) throws(POSIX.Failure) -> T {
        let result = data.withUnsafeBytes { bytes in Result { () throws(POSIX.Failure) -> T in try body(bytes) } }
        return try result.get()
    }

    /// The expiry, in milliseconds since 1970, of an entry written at `created` with a time to live;
    /// clamped so that no duration overflows, and never 0 (which the header reads as "never").
    static func expiry(after timeToLive: Duration, from created: Int64) -> Int64 {
        let expiry = created.saturatingAdding(timeToLive.saturatingMilliseconds)
        return expiry == 0 ? 1 : max(expiry, Int64.min + 1)
    }

    package func blockingRemoveValue(forKey key: String) throws {
        let digest = KeyDigest(key: key)
        do {
            try stripe(for: digest).withLock { _ throws in
                _ = try removeFile(of: digest, ifStill: nil)
                state.withLock { state in
                    state.settle(digest)
                    state.entries.removeValue(forKey: digest)
                }
            }
        } catch {
            counter.recordError()
            throw writeError(error, key: key, digest: digest)
        }
        counter.recordRemoval()
        journalRecord(.init(kind: .removal, digest: digest, time: now()))
    }

    /// Removes every entry file, shard by shard, and empty shard folders. Only entry files and
    /// abandoned temporary files are deleted: anything else stays where it is (and keeps its shard
    /// folder). A shard is listed with no lock held; each entry is then removed as a removal of its
    /// key is, under its stripe lock for one `fstatat` and one `unlinkat`, so a write waits for
    /// one file's removal at most, never for a listing. A write that lands after its key's file
    /// was removed is kept.
    package func blockingRemoveAll() throws {
        journal.discardPending()
        // What the index holds, by shard: entries whose files are already gone are forgotten too.
        var indexed = [[KeyDigest]](repeating: [], count: 256)
        state.withLock { state in
            for digest in state.entries.keysByRecency { indexed[Int(digest.firstByte)].append(digest) }
        }
        var shards = Set(indexed.indices.filter { !indexed[$0].isEmpty }.map(UInt8.init))
        var failures: [any Error] = []
        let now = Self.milliseconds(Date())
        do {
            try POSIX.forEachName(in: folder.descriptor, path: directory) { name in
                if let shard = StoreNames.shard(name) { shards.insert(shard) }
            }
        } catch {
            failures.append(error)
        }
        for shard in shards.sorted() {
            do {
                try deleteShard(shard, indexed: indexed[Int(shard)], now: now)
            } catch {
                failures.append(error)
            }
        }
        do {
            try journal.rewrite(catchingUp: { apply($0, evicting: false) }, with: currentRecencyRecords)
            updateMetadataSize()
        } catch {
            failures.append(error)
        }
        if let first = failures.first {
            counter.recordError()
            throw Self.ioError("Could not remove every entry of \(directory) (\(failures.count) failure\(failures.count == 1 ? "" : "s"))", first)
        }
    }

    /// Removes one shard's entry files (and abandoned temporary files) and forgets `indexed`, then
    /// removes the shard folder if it is empty.
    private func deleteShard(_ shard: UInt8, indexed: [KeyDigest], now: Int64) throws {
        let shardName = StoreNames.shardName(shard)
        // Only real folders: a link or a file at a shard's name is not the store's.
        guard POSIX.status(of: shardName, in: folder.descriptor)?.isFolder == true else {
            forget(indexed)
            return
        }
        let listed = try folder.withShard(shardName, create: false) { descriptor -> Bool in
            var entries: [KeyDigest: FileName] = [:]
            var abandoned: [FileName] = []
            try POSIX.forEachName(in: descriptor, path: folder.path(of: shardName)) { name in
                switch StoreNames.classifyInShard(name, shard: shard) {
                case .entry(let digest): entries[digest] = FileName(name)
                case .temporary(let writer):
                    let status = POSIX.status(of: POSIX.cString(name), in: descriptor)
                    if let status, status.isFile, Self.isAbandoned(writer: writer, status: status, now: now) {
                        abandoned.append(FileName(name))
                    }
                default: break
                }
            }
            for name in abandoned {
                try remove(name, in: descriptor, shardName: shardName)
            }
            for digest in Set(indexed).union(entries.keys) {
                try stripe(for: digest).withLock { _ throws in
                    if let name = entries[digest] {
                        try remove(name, in: descriptor, shardName: shardName)
                    }
                    _ = state.withLock { $0.entries.removeValue(forKey: digest) }
                }
            }
            return true
        }
        if listed == nil { forget(indexed) }   // the shard folder went meanwhile
        try POSIX.removeEmptyFolder(shardName, in: folder.descriptor, path: folder.path(of: shardName))
    }

    /// Removes a file, a link or a FIFO at one of the store's names in a shard; a folder stays
    /// (the store never empties a folder it did not make), and so does a name already gone.
    private func remove(_ name: FileName, in descriptor: Int32, shardName: String) throws {
        try name.withCString { entry throws in
            guard POSIX.status(of: entry, in: descriptor)?.kind != .folder else { return }
            _ = try POSIX.unlink(entry, in: descriptor, path: folder.path(of: shardName + "/" + name.description))
        }
    }

    /// Drops index entries whose files are gone with their shard.
    private func forget(_ digests: [KeyDigest]) {
        guard !digests.isEmpty else { return }
        state.withLock { state in
            for digest in digests { state.entries.removeValue(forKey: digest) }
        }
    }
}
