public import Foundation
public import HanekeProtocols
import Logging
import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

/// Entries with attributes of their own — an expiry, the time they were stored, metadata — and
/// add-if-absent.
///
/// The attributes live in the entry file's header (version 2 when there is metadata; see
/// `EntryHeader`): the creation time is the entry's `storedAt`, the expiry its `expiresAt`
/// (bounded by ``Configuration/timeToLive``), and the metadata follows the key. Reading them
/// reads the header only. Rewriting them writes a new file — the new header, then the payload
/// copied from the old file by the kernel (`copy_file_range`, which shares the blocks on file
/// systems that can) — and renames it over the old one, so a reader sees the old file or the new
/// one, never a header half rewritten. Adding links a finished temporary file to the entry's name
/// (`linkat`, which fails when a file is there), so of any number of writers, in any number of
/// processes, one creates the entry.
extension FileStore {
    // MARK: - Synchronous API

    /// Returns the entry for `key` — its value, expiry, the time it was stored and its metadata —
    /// or `nil` when there is none, it has expired, or its file is damaged (damaged and expired
    /// files are deleted).
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `StoreError` with code `io` when the file exists but cannot be read.
    /// - Performs disk I/O: `openat2`, one `read`, `close` in the common case.
    public func entry(forKey key: String) throws -> StoreEntry<Data>? {
        try blockingEntry(forKey: key)
    }

    /// Returns the attributes of the entry for `key`, read from its file's header, key and metadata
    /// without reading the value, or `nil` when there is none or it has expired. Does not count as
    /// a read nor change the recency order.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: `StoreError` with code `io` when the file exists but cannot be read.
    /// - Performs disk I/O: `openat2`, `fstat`, one `read` of at most 4 KiB (more only for a longer
    ///   key and metadata), `close`.
    public func attributes(forKey key: String) throws -> EntryAttributes? {
        try blockingAttributes(forKey: key)
    }

    /// Stores `entry` for `key` with its own expiry and metadata, atomically replacing any previous
    /// value, then evicts the least recently used entries until the store is within its limits.
    /// The expiry is the entry's or ``Configuration/timeToLive`` after the write, whichever comes
    /// first; an entry without `storedAt` is stamped with the time of the write.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` with code `valueTooLarge` for metadata over
    ///   `EntryAttributes.metadataLimit` or a file larger than the capacity, `invalidKey` for a key
    ///   over 16 MiB, `io` when the file cannot be written.
    /// - Performs disk I/O: a temporary file, `writev`, `renameat`, and one `unlinkat` per eviction.
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: String) throws {
        try blockingSetEntry(entry, forKey: key)
    }

    /// Replaces the attributes of the entry for `key`, keeping its value: a new file with the new
    /// header and the old payload (copied in the kernel, never read into memory) is renamed over
    /// the old one, so readers never see a partial header. The expiry is bounded by
    /// ``Configuration/timeToLive`` after this write; without `storedAt`, the time of this write.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when the key has no unexpired entry (nothing is written).
    /// - Throws: `StoreError` with code `valueTooLarge` for metadata over its limit, `io` when the
    ///   file cannot be read or written.
    /// - Performs disk I/O: a header read, a temporary file, `copy_file_range`, `renameat`.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool {
        try blockingSetAttributes(attributes, forKey: key)
    }

    /// Stores `entry` for `key` only if the key has no unexpired entry, atomically — also between
    /// processes sharing the folder. An expired, damaged or misnamed file at the key's name counts
    /// as none and is replaced.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Returns: `.inserted`, or `.existing` with the entry that was there (then nothing was
    ///   written, and the read counts as a hit).
    /// - Throws: `StoreError` as ``setEntry(_:forKey:)-5wd60``.
    /// - Performs disk I/O: a temporary file, an exclusive `flock` of the shard folder, `linkat`;
    ///   when a file is there, a read of it.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: String) throws -> AddResult<Data> {
        try blockingAddEntry(entry, forKey: key)
    }

    // MARK: - Store

    /// Returns the entry for `key`, reading the file on the I/O executor.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func entry(forKey key: String) async throws -> StoreEntry<Data>? {
        try await entryOnExecutor(forKey: key, transformedBy: { $0 })
    }

    /// Reads the file for `key` and passes its bytes through `transform`, both in one job of the I/O
    /// executor, or on the caller's thread when the kernel has the file cached (as
    /// ``value(forKey:transformedBy:)`` does), and returns them with the entry's attributes.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored bytes, on the executor (or the caller's thread).
    /// - Returns: The entry with what `transform` made of its bytes, or `nil` on a miss.
    /// - Throws: `StoreError` with code `io`; what `transform` throws; `CancellationError` if
    ///   cancelled before it ran.
    @inlinable
    public func entry<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        // Inlinable, so that your code gets it specialised for `Transformed`: a generic call would
        // look up the metadata of `StoreEntry<Transformed>` on every read (4,000 instructions of a
        // 66,000-instruction warm read, `FileProbe warm`).
        if let entry = entryWithoutWaiting(forKey: key, withAttributes: true) {
            return try await ReadWithoutHop.transform(entry, on: executor, transform)
        }
        return try await executor.run { [self] in try blockingEntry(forKey: key).map { try $0.map(transform) } }
    }

    /// Reads the attributes of the entry for `key` from its header on the I/O executor.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func attributes(forKey key: String) async throws -> EntryAttributes? {
        try await attributesOnExecutor(forKey: key)
    }

    /// Stores `entry` for `key`, writing the file on the I/O executor.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` (`valueTooLarge`, `invalidKey`, `io`); `CancellationError` if
    ///   cancelled before it ran.
    public func setEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws {
        try await setEntryOnExecutor(entry, forKey: key)
    }

    /// Replaces the attributes of the entry for `key` on the I/O executor.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when the key has no unexpired entry.
    /// - Throws: `StoreError` (`valueTooLarge`, `io`); `CancellationError` if cancelled before it ran.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: String) async throws -> Bool {
        try await setAttributesOnExecutor(attributes, forKey: key)
    }

    /// Stores `entry` for `key` if it has no unexpired entry, atomically, on the I/O executor.
    /// - Parameters:
    ///   - entry: The bytes and their attributes.
    ///   - key: The key to store them under.
    /// - Returns: `.inserted`, or `.existing` with the entry that was there.
    /// - Throws: `StoreError` (`valueTooLarge`, `invalidKey`, `io`); `CancellationError` if
    ///   cancelled before it ran.
    public func addEntry(_ entry: StoreEntry<Data>, forKey key: String) async throws -> AddResult<Data> {
        try await addEntryOnExecutor(entry, forKey: key)
    }

    // MARK: - Blocking implementations

    /// How many times ``blockingSetAttributes(_:forKey:)`` starts again when the file changed
    /// under it, and ``blockingAddEntry(_:forKey:)`` tries to link after removing a stale file.
    static let contendedAttempts = 8

    package func blockingSetAttributes(_ attributes: EntryAttributes, forKey key: String) throws -> Bool {
        try checkWritable(attributes, forKey: key)
        let digest = KeyDigest(key: key)
        for _ in 0..<Self.contendedAttempts {
            guard case .opened(let descriptor) = try openEntryForReading(digest, key: key) else { return false }
            defer { POSIX.close(descriptor) }
            let time = now()
            let outcome: EntryFile.Outcome<HeaderRead>
            let identity: FileIdentity
            do {
                identity = try POSIX.status(of: descriptor, path: path(for: digest)).identity
                outcome = try EntryFile.read(descriptor, path: path(for: digest), knownSize: nil, extent: .header, sizeLimit: configuration.capacity) { header, reader in
                    guard reader.hasKey(key, header: header) else { return .otherKey }
                    return header.isExpired(at: time) ? .expired : .header(header)
                }
            } catch where error.isNotARegularFile {
                discardForeignObject(of: digest, reason: "not a regular file (\(error))")
                return false
            } catch {
                counter.recordError()
                throw Self.ioError("Could not read \(path(for: digest)) for key \(Logger.describe(key))", error)
            }
            let found: EntryHeader
            switch outcome {
            case .entry(.header(let header)):
                found = header
            case .entry(.otherKey):
                return false
            case .entry(.expired):
                discardFile(descriptor, digest: digest)
                counter.recordEvictions()
                return false
            case .damaged(let damage):
                logger.warning("Deleting a damaged cache file", metadata: ["path": "\(path(for: digest))", "reason": "\(damage)"])
                discardFile(descriptor, digest: digest)
                counter.recordError()
                return false
            }
            let write = try prepareWrite(attributes, payloadLength: found.payloadLength, forKey: key)
            let payload = Payload.copy(from: descriptor, offset: found.length, length: found.payloadLength)
            guard let victims = try replaceFile(with: write, payload: payload, forKey: key, ifStill: identity) else {
                continue   // written or removed meanwhile: read what is there now
            }
            try finishWrite(write, forKey: key, evicted: victims)
            return true
        }
        counter.recordError()
        throw StoreError(.io, "Could not set the attributes of key \(Logger.describe(key)) in \(directory): its file kept changing (\(Self.contendedAttempts) attempts)")
    }

    package func blockingAddEntry(_ entry: StoreEntry<Data>, forKey key: String) throws -> AddResult<Data> {
        try checkWritable(entry.attributes, forKey: key)
        let write = try prepareWrite(entry.attributes, payloadLength: entry.value.count, forKey: key)
        let digest = write.digest
        var attempt = 0
        while true {
            do {
                let outcome = try folder.withShard(digest.shard, create: true) { shard -> Added in
                    try add(write, value: entry.value, forKey: key, in: shard)
                }
                switch outcome {
                case .inserted(let victims)?:
                    try finishWrite(write, forKey: key, evicted: victims)
                    return .inserted
                case .existing(let existing)?:
                    return .existing(existing)
                case nil:
                    throw POSIX.fail("openat", folder.path(of: digest.shard), code: ENOENT)
                }
            } catch let error as StoreError {
                throw error
            } catch {
                // The shard folder vanished (deleted by hand) meanwhile: once more, in a new one.
                if let failure = error as? POSIX.Failure, failure.code == ENOENT, attempt == 0 {
                    attempt += 1
                    continue
                }
                counter.recordError()
                throw writeError(error, key: key, digest: digest)
            }
        }
    }

    /// What reading the header of the file whose attributes change found.
    private enum HeaderRead {
        case header(EntryHeader)
        case expired
        case otherKey
    }

    /// What ``add(_:value:forKey:in:)`` did.
    private enum Added {
        case inserted([Victim])
        case existing(StoreEntry<Data>)
    }

    /// Writes the temporary file, then, holding the shard folder's `flock` (which orders the adds
    /// of every process, and of every store of this one, in the shard), links it to the entry's
    /// name. When a file is there: a valid, unexpired entry of the key is returned; anything else
    /// (expired, damaged, another key's) is deleted if it is still the file read, and the link is
    /// tried again.
    private func add(_ write: PreparedWrite, value: Data, forKey key: String, in shard: Int32) throws -> Added {
        let digest = write.digest
        let name = digest.hex
        let temporary = StoreNames.temporary()
        let temporaryPath = folder.path(of: digest.shard + "/" + temporary)
        let status = try writeTemporaryFile(temporary, in: shard, header: write.header, payload: .data(value), path: temporaryPath)
        defer { _ = try? POSIX.unlink(temporary, in: shard, path: temporaryPath) }
        let lock = try ShardLock(shard, path: folder.path(of: digest.shard))
        defer { lock.release() }
        for _ in 0..<Self.contendedAttempts {
            let linked = try stripe(for: digest).withLock { _ throws(POSIX.Failure) -> [Victim]? in
                guard linkat(shard, temporary, shard, name, 0) == 0 else {
                    if errno == EEXIST { return nil }
                    throw POSIX.fail("linkat", path(for: digest))
                }
                return state.withLock { recordWritten(&$0, digest, write: write, status: status) }
            }
            if let linked { return .inserted(linked) }
            // A file is there: the entry, or something stale that the read deletes (unless it was
            // replaced meanwhile), after which the link is tried again.
            if let existing = try blockingRead(forKey: key, withAttributes: true, countingMisses: false) {
                return .existing(existing)
            }
        }
        counter.recordError()
        throw StoreError(.io, "Could not add key \(Logger.describe(key)) to \(directory): the file at its name kept changing (\(Self.contendedAttempts) attempts)")
    }
}

/// An exclusive `flock(2)` of a shard folder, held while an add links its file: it orders the
/// adds of one key across processes (and across the stores of one process, whose stripe locks are
/// their own), so that only one finds the name free. Only adds take it.
private struct ShardLock {
    let descriptor: Int32

    /// Opens the shard folder for reading (an `O_PATH` descriptor cannot be locked) and locks it,
    /// waiting for the holder.
    init(_ shard: Int32, path: @autoclosure () -> String) throws(POSIX.Failure) {
        guard let opened = try POSIX.openFolder(".", in: shard, forListing: true, path: path()) else {
            throw POSIX.fail("openat", path(), code: ENOENT)
        }
        while flock(opened, LOCK_EX) != 0 {
            guard errno == EINTR else {
                let failure = POSIX.fail("flock", path())
                POSIX.close(opened)
                throw failure
            }
        }
        descriptor = opened
    }

    func release() {
        _ = flock(descriptor, LOCK_UN)
        POSIX.close(descriptor)
    }
}
