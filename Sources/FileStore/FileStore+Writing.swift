package import Foundation
import HanekeProtocols
import Logging
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

extension FileStore {
    package func blockingSetValue(_ value: Data, forKey key: String) throws {
        let keyLength = key.utf8.count
        guard keyLength <= EntryHeader.maximumKeyLength else {
            counter.recordError()
            throw StoreError(.invalidKey, "A key of \(keyLength) bytes is longer than the FileStore limit of \(EntryHeader.maximumKeyLength) bytes")
        }
        let fileSize = EntryHeader.fixedSize + keyLength + value.count
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
        let digest = KeyDigest(key: key)
        let created = now()
        let expires = configuration.timeToLive.map { Self.expiry(after: $0, from: created) }
        let header = EntryHeader.encode(key: key, created: created, expires: expires, payloadLength: value.count)
        let name = digest.hex

        var victims: [Victim] = []
        var attempt = 0
        while true {
            do {
                victims = try folder.withShard(digest.shard, create: true) { shard -> [Victim] in
                    let temporary = StoreNames.temporary()
                    let status = try writeTemporaryFile(temporary, in: shard, header: header, value: value, path: folder.path(of: digest.shard + "/" + temporary))
                    do {
                        return try stripe(for: digest).withLock { _ throws(POSIX.Failure) in
                            try POSIX.rename(temporary, to: name, in: shard, path: path(for: digest))
                            return state.withLock { state in
                                state.settle(digest)
                                state.entries.setValue(
                                    EntryRecord(fileSize: fileSize, allocated: status.allocated, lastAccess: created, identity: status.identity),
                                    forKey: digest,
                                    cost: status.allocated,
                                    expiry: .infinity
                                )
                                return evictToLimits(&state)
                            }
                        }
                    } catch {
                        _ = try? POSIX.unlink(temporary, in: shard, path: "")
                        throw error
                    }
                } ?? []
                break
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
        if configuration.durableWrites {
            do {
                try synchronizeShard(digest.shard)
            } catch {
                counter.recordError()
                throw Self.ioError("Could not flush the folder of \(path(for: digest)) to disk after writing key \(Logger.describe(key))", error)
            }
        }
        counter.recordWrite()
        journalWrite(digest, at: created, evicted: victims)
    }

    private func writeError(_ error: any Error, key: String, digest: KeyDigest) -> StoreError {
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
    private func writeTemporaryFile(_ name: String, in shard: Int32, header: [UInt8], value: Data, path: @autoclosure () -> String) throws(POSIX.Failure) -> FileStatus {
        let descriptor = try folder.createFile(name, in: shard, path: path())
        do {
            try Self.withBytes(of: header) { (headerBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                try Self.withBytes(of: value) { (valueBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                    try POSIX.writeAll(descriptor, headerBytes, valueBytes, path: path())
                }
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
    private func synchronizeShard(_ shard: String) throws {
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
