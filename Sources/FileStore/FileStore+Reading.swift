import Foundation
@_spi(HanekeInternals) import HanekeProtocols
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension FileStore {
    /// What reading one file found.
    enum ReadOutcome {
        case value(Data, fileSize: Int, header: EntryHeader)
        /// The file is whole and valid but holds another key (a collision, or a file moved by hand).
        case otherKey
        /// The file is damaged: why.
        case damaged(String)
    }

    func readValue(forKey key: String) throws -> Data? {
        let digest = KeyDigest(key: key)
        let path = path(for: digest)
        let sizeHint = state.withLock { $0.entries.peekValue(forKey: digest)?.size }
        let descriptor: Int32
        do {
            switch try POSIX.openEntry(path) {
            case .file(let opened):
                descriptor = opened
            case .missing:
                if sizeHint != nil { forgetVanishedFile(of: digest) }
                counter.recordMiss()
                return nil
            case .symbolicLink:
                discardForeignObject(at: path, digest: digest, reason: "a symbolic link")
                counter.recordMiss()
                return nil
            }
        } catch {
            counter.recordError()
            throw StoreError(.io, "Could not open \(path) for key \(Logger.describe(key)): \(error)", cause: error)
        }
        defer { POSIX.close(descriptor) }

        let outcome: ReadOutcome
        do {
            outcome = try readEntry(descriptor, path: path, sizeHint: sizeHint, key: key)
        } catch let failure as POSIX.Failure where failure.isNotARegularFile {
            discardForeignObject(at: path, digest: digest, reason: "not a regular file (\(failure))")
            counter.recordMiss()
            return nil
        } catch {
            counter.recordError()
            throw StoreError(.io, "Could not read \(path) for key \(Logger.describe(key)): \(error)", cause: error)
        }
        switch outcome {
        case .value(let data, let fileSize, let header):
            let time = now()
            if let expires = header.expires, time >= expires {
                discardFile(descriptor, path: path, digest: digest)
                counter.recordEvictions()
                counter.recordMiss()
                return nil
            }
            recordAccess(to: digest, at: time, descriptor: descriptor, path: path, fileSize: fileSize)
            counter.recordHit()
            return data
        case .otherKey:
            logger.warning("A file holds another key than its name says; deleting it", metadata: ["path": "\(path)"])
            discardFile(descriptor, path: path, digest: digest)
            counter.recordError()
            counter.recordMiss()
            return nil
        case .damaged(let reason):
            logger.warning("Deleting a damaged cache file", metadata: ["path": "\(path)", "reason": "\(reason)"])
            discardFile(descriptor, path: path, digest: digest)
            counter.recordError()
            counter.recordMiss()
            return nil
        }
    }

    /// Makes a read entry the most recently used. An entry the index knows only changes its recency:
    /// its size and identity are the writer's to set, and a read racing a removal or an overwrite
    /// must not bring back or resize an entry. An entry the index does not know (written by another
    /// process) is added, under its key's stripe lock, only if the file read is still the one at the path.
    private func recordAccess(to digest: KeyDigest, at time: Int64, descriptor: Int32, path: String, fileSize: Int) {
        let known = state.withLock { state in
            state.entries.refresh(digest) { $0.lastAccess = time }
        }
        if !known, let identity = try? POSIX.identity(of: descriptor, path: path) {
            let victims = stripe(for: digest).withLock { _ -> [Victim] in
                guard identity.links > 0, let current = POSIX.identity(ofPath: path), current.isSameFile(as: identity) else { return [] }
                return state.withLock { state in
                    if !state.entries.contains(digest, now: -.infinity) {
                        state.entries.setValue(
                            EntryRecord(size: fileSize, lastAccess: time, identity: identity),
                            forKey: digest, cost: fileSize, expiry: .infinity
                        )
                    }
                    return evictToLimits(&state.entries)
                }
            }
            removeEvicted(victims)
        }
        journalAccess(digest, at: time)
    }

    /// Reads and checks one whole file: header, key, and a size that matches the header exactly.
    ///
    /// The index's size lets the common case read the file with one `read` and no `fstat`; the
    /// payload is handed out without a copy (the `Data` owns the read buffer).
    func readEntry(_ descriptor: Int32, path: String, sizeHint: Int?, key: String) throws -> ReadOutcome {
        let knownSize = try sizeHint ?? POSIX.size(of: descriptor, path: path)
        // The first read takes the whole file in the common case; a huge (or sparse, or lying) file
        // is only read further once its checked header says how long it is.
        var reader = try WholeFileReader(descriptor: descriptor, path: path, expectedSize: min(knownSize, WholeFileReader.firstReadLimit))
        defer { reader.deallocate() }

        guard try reader.ensure(EntryHeader.fixedSize) else {
            return .damaged("the file is \(reader.count) bytes, shorter than a header")
        }
        let header: EntryHeader
        do {
            header = try EntryHeader.decode(reader.bytes(0..<EntryHeader.fixedSize))
        } catch {
            return .damaged("\(error)")
        }
        if let capacity = configuration.capacity, header.fileLength > capacity {
            return .damaged("the header announces \(header.fileLength) bytes, more than the store's capacity of \(capacity)")
        }
        guard try reader.ensure(header.fileLength) else {
            return .damaged("the header announces \(header.fileLength) bytes but the file has \(reader.count)")
        }
        if reader.count > header.fileLength || (sizeHint == nil && knownSize > header.fileLength) {
            return .damaged("the file has \(max(reader.count, knownSize) - header.fileLength) bytes after its payload")
        }
        var key = key
        let sameKey = key.withUTF8 { wanted in
            wanted.count == header.keyLength
                && wanted.elementsEqual(reader.bytes(EntryHeader.fixedSize..<header.length))
        }
        guard sameKey else { return .otherKey }
        let data = reader.takePayload(offset: header.length, count: header.payloadLength)
        return .value(data, fileSize: header.fileLength, header: header)
    }

    /// Reads the header and key of the file at `path`, checking that the file's size matches.
    /// - Returns: `nil` when there is no file.
    func readHeader(atPath path: String) throws -> (EntryHeader, String)? {
        guard let descriptor = try POSIX.openForReading(path) else { return nil }
        defer { POSIX.close(descriptor) }
        let size = try POSIX.size(of: descriptor, path: path)
        var reader = try WholeFileReader(descriptor: descriptor, path: path, expectedSize: min(size, 4096))
        defer { reader.deallocate() }
        guard try reader.ensure(EntryHeader.fixedSize) else {
            throw StoreError(.corrupted, "\(path) is \(size) bytes, shorter than a header")
        }
        let header = try EntryHeader.decode(reader.bytes(0..<EntryHeader.fixedSize))
        guard size == header.fileLength, try reader.ensure(header.length) else {
            throw StoreError(.corrupted, "\(path) is \(size) bytes but its header announces \(header.fileLength)")
        }
        guard let key = String(validating: reader.bytes(EntryHeader.fixedSize..<header.length), as: UTF8.self) else {
            throw StoreError(.corrupted, "the key stored in \(path) is not valid UTF-8")
        }
        return (header, key)
    }

    /// Deletes a file found damaged or expired, unless it was replaced meanwhile (the name then
    /// holds a new, valid file), and forgets it in the index.
    func discardFile(_ descriptor: Int32, path: String, digest: KeyDigest) {
        let identity = try? POSIX.identity(of: descriptor, path: path)
        let removed = stripe(for: digest).withLock { _ -> Bool in
            guard let identity, let current = POSIX.identity(ofPath: path), current.isSameFile(as: identity) else { return false }
            do {
                try POSIX.unlink(path)
            } catch {
                logger.warning("Could not delete a damaged or expired file", metadata: ["path": "\(path)", "error": "\(error)"])
                return false
            }
            _ = state.withLock { $0.entries.removeValue(forKey: digest) }
            return true
        }
        if removed { journalRecord(.init(kind: .removal, digest: digest, time: now())) }
    }

    /// Removes something that is not an entry file from an entry's path — a symbolic link (never
    /// followed), a folder, a FIFO — and counts it as an error: it is a miss, never a hang or a crash.
    func discardForeignObject(at path: String, digest: KeyDigest, reason: String) {
        logger.warning("Removing what is not a cache file from an entry's path", metadata: ["path": "\(path)", "reason": "\(reason)"])
        counter.recordError()
        stripe(for: digest).withLock { _ in
            do {
                try POSIX.removeTree(path)
            } catch {
                logger.warning("Could not remove it", metadata: ["path": "\(path)", "error": "\(error)"])
            }
            _ = state.withLock { $0.entries.removeValue(forKey: digest) }
        }
    }

    /// Forgets an indexed entry whose file is gone (deleted behind the store's back), unless a
    /// write has just put it back.
    func forgetVanishedFile(of digest: KeyDigest) {
        stripe(for: digest).withLock { _ in
            guard POSIX.identity(ofPath: path(for: digest)) == nil else { return }
            _ = state.withLock { $0.entries.removeValue(forKey: digest) }
        }
    }
}

/// Reads a file into one `malloc`ed buffer, as far as asked, growing it only when the file really
/// is as long as its header announces (so a lying header cannot make a read allocate gigabytes).
struct WholeFileReader {
    /// The most the first read takes before the header has been checked.
    static let firstReadLimit = 16 << 20

    let descriptor: Int32
    let path: String
    private(set) var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    /// Whether `buffer` is still this reader's to free (not handed to a `Data`).
    private var ownsBuffer = true
    /// Bytes read so far.
    private(set) var count = 0
    private var reachedEnd = false

    init(descriptor: Int32, path: String, expectedSize: Int) throws(POSIX.Failure) {
        self.descriptor = descriptor
        self.path = path
        self.capacity = max(expectedSize, EntryHeader.fixedSize)
        guard let buffer = malloc(capacity) else { throw POSIX.Failure(call: "malloc", path: path, code: ENOMEM) }
        self.buffer = buffer
    }

    /// Makes sure the first `needed` bytes are read; `false` if the file is shorter.
    mutating func ensure(_ needed: Int) throws(POSIX.Failure) -> Bool {
        if count >= needed { return true }
        if count == 0 {
            count = try POSIX.read(descriptor, into: buffer, count: capacity, at: 0, path: path)
            reachedEnd = count < capacity
            if count >= needed { return true }
        }
        if reachedEnd { return false }
        if needed > capacity {
            // Grow only for a file that is at least that long.
            guard try POSIX.size(of: descriptor, path: path) >= needed else { return false }
            guard let grown = realloc(buffer, needed) else { throw POSIX.Failure(call: "realloc", path: path, code: ENOMEM) }
            buffer = grown
            capacity = needed
        }
        let read = try POSIX.read(descriptor, into: buffer + count, count: needed - count, at: count, path: path)
        count += read
        if count < needed {
            reachedEnd = true
            return false
        }
        return true
    }

    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: buffer + range.lowerBound, count: range.count)
    }

    /// The payload as `Data`. Normally the `Data` takes over the buffer (no copy); a payload much
    /// smaller than its header (a huge key) is copied so the key's memory is released.
    mutating func takePayload(offset: Int, count payloadCount: Int) -> Data {
        if payloadCount == 0 { return Data() }
        if offset > 4096, offset > payloadCount {
            return Data(bytes: buffer + offset, count: payloadCount)
        }
        let base = buffer
        ownsBuffer = false
        return Data(bytesNoCopy: base + offset, count: payloadCount, deallocator: .custom { pointer, _ in
            free(pointer - offset)
        })
    }

    func deallocate() {
        if ownsBuffer { free(buffer) }
    }
}
