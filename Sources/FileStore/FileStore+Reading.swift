public import Foundation
public import HanekeProtocols
import Logging
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

extension FileStore {
    package func blockingValue(forKey key: String) throws -> Data? {
        try blockingRead(forKey: key, withAttributes: false)?.value
    }

    /// The value for `key` and its attributes, or `nil` (blocks: disk I/O).
    @usableFromInline
    package func blockingEntry(forKey key: String) throws -> StoreEntry<Data>? {
        try blockingRead(forKey: key, withAttributes: true)
    }

    /// What opening an entry file found.
    enum OpenedEntry {
        /// The file, open for reading.
        case opened(Int32)
        /// No file.
        case absent
        /// Something that is not an entry file (discarded).
        case foreign
    }

    /// Opens `key`'s entry file for reading; a foreign object in its place is discarded. A failure
    /// to open counts as an error and throws `io`.
    func openEntryForReading(_ digest: KeyDigest, key: String) throws -> OpenedEntry {
        do {
            guard let opened = try openEntry(digest, path: path(for: digest)) else { return .absent }
            return .opened(opened)
        } catch let foreign as ForeignObject {
            discardForeignObject(of: digest, reason: foreign.reason)
            return .foreign
        } catch {
            counter.recordError()
            throw Self.ioError("Could not open \(path(for: digest)) for key \(Logger.describe(key))", error)
        }
    }

    /// Reads the whole file for `key`: the value, and its attributes when `withAttributes` is set
    /// (empty otherwise). A file that is damaged, expired or holds another key is deleted (if it is
    /// still the file read) and is a miss.
    /// - Parameter countingMisses: Whether a miss counts in the statistics (an add-if-absent that
    ///   finds no entry counts a write instead).
    func blockingRead(forKey key: String, withAttributes: Bool, countingMisses: Bool = true) throws -> StoreEntry<Data>? {
        let digest = KeyDigest(key: key)
        let root = folder.descriptor
        let sizeHint = state.withLock { $0.entries.peekValue(forKey: digest)?.fileSize }
        let descriptor: Int32
        switch try openEntryForReading(digest, key: key) {
        case .opened(let opened):
            descriptor = opened
        case .absent:
            if sizeHint != nil { forgetVanishedFile(of: digest, root: root) }
            if countingMisses { counter.recordMiss() }
            return nil
        case .foreign:
            if countingMisses { counter.recordMiss() }
            return nil
        }
        defer { POSIX.close(descriptor) }

        let time = now()
        let outcome: EntryFile.Outcome<Read>
        do {
            outcome = try EntryFile.read(
                descriptor, path: self.path(for: digest), knownSize: sizeHint, extent: .whole, sizeLimit: configuration.capacity,
                Self.reading(key, at: time, withAttributes: withAttributes)
            )
        } catch where error.isNotARegularFile {
            discardForeignObject(of: digest, reason: "not a regular file (\(error))")
            if countingMisses { counter.recordMiss() }
            return nil
        } catch {
            counter.recordError()
            throw Self.ioError("Could not read \(self.path(for: digest)) for key \(Logger.describe(key))", error)
        }
        switch outcome {
        case .entry(.value(let entry, let fileSize)):
            recordAccess(to: digest, at: time, descriptor: descriptor, fileSize: fileSize)
            counter.recordHit()
            return entry
        case .entry(.expired):
            discardFile(descriptor, digest: digest)
            counter.recordEvictions()
            if countingMisses { counter.recordMiss() }
            return nil
        case .entry(.otherKey):
            logger.warning("A file holds another key than its name says; deleting it", metadata: ["path": "\(self.path(for: digest))"])
            discardFile(descriptor, digest: digest)
            counter.recordError()
            if countingMisses { counter.recordMiss() }
            return nil
        case .damaged(let damage):
            logger.warning("Deleting a damaged cache file", metadata: ["path": "\(self.path(for: digest))", "reason": "\(damage)"])
            discardFile(descriptor, digest: digest)
            counter.recordError()
            if countingMisses { counter.recordMiss() }
            return nil
        }
    }

    /// The largest file read on the caller's thread when its pages are cached: a copy from the
    /// page cache of more would hold a cooperative thread too long.
    package static let largestReadWithoutWaiting = 1 << 20

    /// The entry for `key` read on the calling thread, if the kernel can serve it without reading
    /// the disk: the path looked up from its caches only (`openat2` with `RESOLVE_CACHED`), the
    /// bytes copied from the page cache only (`preadv2` with `RWF_NOWAIT`). A hit of a file the
    /// index knows, of at most ``largestReadWithoutWaiting`` bytes, whose pages are all cached, is
    /// served and counted here (`.some`), without a hop to the executor; its descriptor is handed
    /// to ``DescriptorCloser``, which closes it off this thread. Anything else — a page
    /// or a name not cached, a miss, a file to delete, an error — is `nil`: nothing was changed
    /// or counted, and the caller reads the usual way, on the executor.
    @usableFromInline
    package func entryWithoutWaiting(forKey key: String, withAttributes: Bool) -> StoreEntry<Data>? {
        let digest = KeyDigest(key: key)
        guard let sizeHint = state.withLock({ $0.entries.peekValue(forKey: digest)?.fileSize }),
              sizeHint <= Self.largestReadWithoutWaiting,
              let descriptor = POSIX.openEntryWithoutWaiting(in: folder.descriptor, digest)
        else { return nil }
        // Closed off this thread, a moment later (see `DescriptorCloser`).
        defer { DescriptorCloser.shared.close(descriptor) }
        let time = now()
        let outcome = try? EntryFile.read(
            descriptor, path: self.path(for: digest), knownSize: sizeHint, extent: .whole, sizeLimit: configuration.capacity, waiting: false,
            Self.reading(key, at: time, withAttributes: withAttributes)
        )
        guard case .entry(.value(let entry, _))? = outcome, refreshRecency(of: digest, at: time) else { return nil }
        journalAccess(digest, at: time)
        counter.recordHit()
        return entry
    }

    /// What a read makes of an entry file it read whole: its value (and attributes when
    /// `withAttributes`), unless it holds another key or has expired at `time`.
    static func reading(_ key: String, at time: Int64, withAttributes: Bool) -> (EntryHeader, inout WholeFileReader) -> Read {
        { header, reader in
            guard reader.hasKey(key, header: header) else { return .otherKey }
            guard !header.isExpired(at: time) else { return .expired }
            let attributes = withAttributes ? Self.attributes(of: header, in: reader) : EntryAttributes()
            return .value(StoreEntry(value: reader.takePayload(header: header), attributes: attributes), fileSize: header.fileLength)
        }
    }

    /// Moves `digest` to the front of the recency order if the index knows it; `false` if not.
    func refreshRecency(of digest: KeyDigest, at time: Int64) -> Bool {
        state.withLock { state in
            state.entries.refresh(digest) { $0.lastAccess = time }
        }
    }

    /// The attributes of `key`'s entry, read from its header, key and metadata only (never the
    /// payload), or `nil`. Like ``containsValue(forKey:)``, it neither counts as a read nor changes
    /// the recency order; a damaged or expired file found is deleted as a read deletes it.
    package func blockingAttributes(forKey key: String) throws -> EntryAttributes? {
        let digest = KeyDigest(key: key)
        guard case .opened(let descriptor) = try openEntryForReading(digest, key: key) else { return nil }
        defer { POSIX.close(descriptor) }

        let time = now()
        let outcome: EntryFile.Outcome<AttributesRead>
        do {
            outcome = try EntryFile.read(descriptor, path: self.path(for: digest), knownSize: nil, extent: .header, sizeLimit: configuration.capacity) { header, reader in
                guard reader.hasKey(key, header: header) else { return .otherKey }
                guard !header.isExpired(at: time) else { return .expired }
                return .attributes(Self.attributes(of: header, in: reader))
            }
        } catch where error.isNotARegularFile {
            discardForeignObject(of: digest, reason: "not a regular file (\(error))")
            return nil
        } catch {
            counter.recordError()
            throw Self.ioError("Could not read \(self.path(for: digest)) for key \(Logger.describe(key))", error)
        }
        switch outcome {
        case .entry(.attributes(let attributes)):
            return attributes
        case .entry(.expired):
            discardFile(descriptor, digest: digest)
            counter.recordEvictions()
            return nil
        case .entry(.otherKey):
            return nil   // another key's entry, valid: not this key's to delete on a header read
        case .damaged(let damage):
            logger.warning("Deleting a damaged cache file", metadata: ["path": "\(self.path(for: digest))", "reason": "\(damage)"])
            discardFile(descriptor, digest: digest)
            counter.recordError()
            return nil
        }
    }

    /// What reading a file's header for a key found.
    private enum AttributesRead {
        case attributes(EntryAttributes)
        case expired
        case otherKey
    }

    /// An entry's attributes, from its checked header and the reader that holds its metadata.
    static func attributes(of header: EntryHeader, in reader: WholeFileReader) -> EntryAttributes {
        EntryAttributes(expiresAt: header.expires.map(date), storedAt: date(header.created), metadata: reader.metadata(header: header))
    }

    /// What reading a whole, valid file for a key found.
    enum Read {
        case value(StoreEntry<Data>, fileSize: Int)
        case expired
        /// The file is whole and valid but holds another key (a collision, or a file moved by hand).
        case otherKey
    }

    /// Makes a read entry the most recently used. An entry the index knows only changes its recency:
    /// its size and identity are the writer's to set, and a read racing a removal or an overwrite
    /// must not bring back or resize an entry. An entry the index does not know (written by another
    /// process) is added, under its key's stripe lock, only if the file read is still the one at its
    /// name.
    func recordAccess(to digest: KeyDigest, at time: Int64, descriptor: Int32, fileSize: Int) {
        if !refreshRecency(of: digest, at: time), let status = try? POSIX.status(of: descriptor, path: path(for: digest)), status.links > 0 {
            let victims = stripe(for: digest).withLock { _ -> [Victim] in
                let current = try? folder.withShard(digest.shard, create: false) { shard in
                    POSIX.status(of: digest.hex, in: shard)?.identity
                }
                guard current == status.identity else { return [] }
                return state.withLock { state in
                    if !state.entries.contains(digest, now: -.infinity) {
                        state.settle(digest)
                        let allocated = min(status.allocated, Self.largestIndexedSize)
                        state.entries.setValue(
                            EntryRecord(fileSize: fileSize, allocated: allocated, lastAccess: time, identity: status.identity),
                            forKey: digest, cost: allocated, expiry: .infinity
                        )
                    }
                    return evictToLimits(&state)
                }
            }
            removeEvicted(victims)
        }
        journalAccess(digest, at: time)
    }

    /// Deletes a file found damaged, expired or holding another key — unless it was replaced
    /// meanwhile (the name then holds a new, valid file) — and forgets it in the index.
    func discardFile(_ descriptor: Int32, digest: KeyDigest) {
        guard let identity = try? POSIX.status(of: descriptor, path: path(for: digest)).identity else { return }
        let removed = stripe(for: digest).withLock { _ -> Result<Bool, any Error> in
            do {
                guard try removeFile(of: digest, ifStill: identity) else { return .success(false) }
            } catch {
                return .failure(error)
            }
            state.withLock { state in
                state.settle(digest)
                state.entries.removeValue(forKey: digest)
            }
            return .success(true)
        }
        // Logged and journaled with no lock held.
        switch removed {
        case .success(true): journalRecord(.init(kind: .removal, digest: digest, time: now()))
        case .success(false): break
        case .failure(let error):
            logger.warning("Could not delete a damaged or expired file", metadata: ["path": "\(path(for: digest))", "error": "\(error)"])
        }
    }

    /// Handles something that is not an entry file at an entry's name — a symbolic link (never
    /// followed), a FIFO, a folder — and counts it as an error: it is a miss, never a hang or a
    /// crash. The name is the store's, so a link or a FIFO there is removed (the link itself, never
    /// what it points to); a folder only when it is empty (a store never empties a folder it did
    /// not make). A link where the shard folder should be is left alone.
    func discardForeignObject(of digest: KeyDigest, reason: String) {
        let path = path(for: digest)
        logger.warning("What is at an entry's name is not an entry file", metadata: ["path": "\(path)", "reason": "\(reason)"])
        counter.recordError()
        let outcome = stripe(for: digest).withLock { _ -> Result<Bool, any Error> in
            defer {
                state.withLock { state in
                    state.settle(digest)
                    state.entries.removeValue(forKey: digest)
                }
            }
            do {
                let removed = try folder.withShard(digest.shard, create: false) { shard -> Bool in
                    let name = digest.hex
                    guard let status = POSIX.status(of: name, in: shard) else { return true }
                    if status.isFolder { return try POSIX.removeEmptyFolder(name, in: shard, path: path) }
                    if !status.isFile { try POSIX.unlink(name, in: shard, path: path) }
                    return true
                }
                return .success(removed ?? true)
            } catch {
                return .failure(error)
            }
        }
        // Logged with no lock held.
        switch outcome {
        case .success(true): break
        case .success(false):
            logger.warning("Leaving a folder that is not empty at an entry's name", metadata: ["path": "\(path)"])
        case .failure(let error):
            logger.warning("Could not remove it", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    /// Forgets an indexed entry whose file is gone (deleted behind the store's back), unless a
    /// write has just put it back. When the store's whole folder was deleted, it is made again.
    func forgetVanishedFile(of digest: KeyDigest, root: Int32) {
        _ = try? folder.reopenIfDeleted(root)
        stripe(for: digest).withLock { _ in
            let present = (try? folder.withShard(digest.shard, create: false) { POSIX.status(of: digest.hex, in: $0) != nil }) ?? nil
            guard present != true else { return }
            state.withLock { state in
                state.settle(digest)
                state.entries.removeValue(forKey: digest)
            }
        }
    }
}
