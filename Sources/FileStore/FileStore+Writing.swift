import Foundation
@_spi(HanekeInternals) import HanekeProtocols
import Logging

extension FileStore {
    func writeValue(_ value: Data, forKey key: String) throws {
        let keyLength = key.utf8.count
        guard keyLength <= EntryHeader.maximumKeyLength else {
            counter.recordError()
            throw StoreError(.invalidKey, "A key of \(keyLength) bytes is longer than the FileStore limit of \(EntryHeader.maximumKeyLength) bytes")
        }
        let fileSize = EntryHeader.fixedSize + keyLength + value.count
        if let capacity = configuration.capacity, fileSize > capacity {
            counter.recordError()
            throw StoreError(
                .valueTooLarge,
                "The value for key \(Logger.describe(key)) needs \(fileSize) bytes on disk, more than the whole capacity of \(capacity) bytes of \(directory)"
            )
        }
        let digest = KeyDigest(key: key)
        let created = now()
        let expires = configuration.timeToLive.map { Self.expiry(after: $0, from: created) }
        let header = EntryHeader.encode(key: key, created: created, expires: expires, payloadLength: value.count)
        let shard = shardPath(for: digest)
        let destination = path(for: digest)

        var victims: [Victim] = []
        var attempt = 0
        while true {
            let temporary = shard + "/" + nextTemporaryName()
            do {
                let identity = try writeTemporaryFile(temporary, inShard: shard, header: header, value: value)
                do {
                    victims = try stripe(for: digest).withLock { _ throws(POSIX.Failure) in
                        try POSIX.rename(temporary, destination)
                        return state.withLock { state in
                            state.entries.setValue(
                                EntryRecord(size: fileSize, lastAccess: created, identity: identity),
                                forKey: digest,
                                cost: fileSize,
                                expiry: .infinity
                            )
                            return evictToLimits(&state.entries)
                        }
                    }
                } catch {
                    _ = try? POSIX.unlink(temporary)
                    throw error
                }
                break
            } catch {
                // The shard folder vanished (removeAll, or deleted by hand) between creating the
                // temporary file and renaming it: write again into a new folder, once.
                if (error as? POSIX.Failure)?.isNotFound == true, attempt == 0 {
                    attempt += 1
                    continue
                }
                counter.recordError()
                throw StoreError(.io, "Could not write the value for key \(Logger.describe(key)) to \(destination): \(error)", cause: error)
            }
        }
        if configuration.durableWrites {
            do {
                try POSIX.synchronizeDirectory(shard)
            } catch {
                counter.recordError()
                throw StoreError(.io, "Could not flush \(shard) to disk after writing key \(Logger.describe(key)): \(error)", cause: error)
            }
        }
        counter.recordWrite()
        journalAccess(digest, at: created)
        removeEvicted(victims)
    }

    /// Writes header and payload into a new temporary file (creating the shard folder and the store's
    /// directory if they are missing) and returns the file's identity. A file it could not finish is
    /// removed; a name it could not create is left alone (it may be another writer's).
    private func writeTemporaryFile(_ path: String, inShard shard: String, header: [UInt8], value: Data) throws(POSIX.Failure) -> FileIdentity {
        let descriptor = try createTemporaryFile(path, inShard: shard)
        do {
            try Self.withBytes(of: header) { (headerBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                try Self.withBytes(of: value) { (valueBytes: UnsafeRawBufferPointer) throws(POSIX.Failure) in
                    try POSIX.writeAll(descriptor, headerBytes, valueBytes, path: path)
                }
            }
            if configuration.durableWrites {
                try POSIX.synchronize(descriptor, path: path)
            }
            let identity = try POSIX.identity(of: descriptor, path: path)
            POSIX.close(descriptor)
            return identity
        } catch {
            POSIX.close(descriptor)
            _ = try? POSIX.unlink(path)
            throw error
        }
    }

    /// `withUnsafeBytes` with a typed error.
    private static func withBytes<T>(of data: some ContiguousBytes, _ body: (UnsafeRawBufferPointer) throws(POSIX.Failure) -> T) throws(POSIX.Failure) -> T {
        let result = data.withUnsafeBytes { bytes in Result { () throws(POSIX.Failure) -> T in try body(bytes) } }
        return try result.get()
    }

    /// The expiry, in milliseconds since 1970, of an entry written at `created` with a time to live;
    /// clamped so that no duration overflows, and never 0 (which the header reads as "never").
    static func expiry(after timeToLive: Duration, from created: Int64) -> Int64 {
        let (seconds, attoseconds) = timeToLive.components
        let (fromSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        let milliseconds = overflow ? (seconds < 0 ? Int64.min : Int64.max) : fromSeconds &+ attoseconds / 1_000_000_000_000_000
        let (sum, sumOverflow) = created.addingReportingOverflow(milliseconds)
        let expiry = sumOverflow ? (milliseconds < 0 ? Int64.min + 1 : Int64.max) : sum
        return expiry == 0 ? 1 : expiry
    }

    private func createTemporaryFile(_ path: String, inShard shard: String) throws(POSIX.Failure) -> Int32 {
        do {
            return try POSIX.createExclusively(path)
        } catch {
            guard error.isNotFound else { throw error }
        }
        try POSIX.makeDirectories(shard)
        return try POSIX.createExclusively(path)
    }

    func deleteValue(forKey key: String) throws {
        let digest = KeyDigest(key: key)
        let path = path(for: digest)
        do {
            try stripe(for: digest).withLock { _ throws in
                try POSIX.unlink(path)
                _ = state.withLock { $0.entries.removeValue(forKey: digest) }
            }
        } catch {
            counter.recordError()
            throw StoreError(.io, "Could not remove \(path) for key \(Logger.describe(key)): \(error)", cause: error)
        }
        counter.recordRemoval()
        journalRecord(.init(kind: .removal, digest: digest, time: now()))
    }

    func deleteAll() throws {
        var trash: [String] = []
        do {
            try withAllStripes {
                state.withLock { $0.entries.removeAll() }
                journal.discardPending()
                var shards: [String] = []
                _ = try POSIX.forEachEntry(in: directory) { name, _ in
                    if Self.isShardName(name) { shards.append(name) }
                }
                for shard in shards {
                    let destination = directory + "/.trash" + nextTemporaryName()
                    try POSIX.rename(directory + "/" + shard, destination)
                    trash.append(destination)
                }
                try journal.rewrite(with: [])
            }
            for folder in trash {
                try POSIX.removeTree(folder)
            }
            try POSIX.makeDirectories(directory)
        } catch {
            counter.recordError()
            throw StoreError(.io, "Could not remove every entry of \(directory): \(error)", cause: error)
        }
    }

    /// Whether `name` is a shard folder's: two upper-case hexadecimal digits.
    static func isShardName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return utf8.count == 2 && utf8.allSatisfy { (48...57).contains($0) || (65...70).contains($0) }
    }
}
