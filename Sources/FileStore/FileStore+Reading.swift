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
            guard let opened = try POSIX.openForReading(path) else {
                if sizeHint != nil { forgetVanishedFile(of: digest) }
                counter.recordMiss()
                return nil
            }
            descriptor = opened
        } catch {
            if error.code == EISDIR {
                counter.recordMiss()
                return nil
            }
            counter.recordError()
            throw StoreError(.io, "Could not open \(path) for key \(Logger.describe(key)): \(error)", cause: error)
        }
        defer { POSIX.close(descriptor) }

        let outcome: ReadOutcome
        do {
            outcome = try readEntry(descriptor, path: path, sizeHint: sizeHint, key: key)
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
            state.withLock { state in
                state.entries.setValue(EntryRecord(size: fileSize, lastAccess: time), forKey: digest, cost: fileSize, expiry: .infinity)
            }
            journalAccess(digest, at: time)
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

    /// Reads and checks one whole file: header, key, and a size that matches the header exactly.
    ///
    /// The index's size lets the common case read the file with one `read` and no `fstat`; the
    /// payload is handed out without a copy (the `Data` owns the read buffer).
    func readEntry(_ descriptor: Int32, path: String, sizeHint: Int?, key: String) throws -> ReadOutcome {
        let knownSize = try sizeHint ?? POSIX.size(of: descriptor, path: path)
        var reader = WholeFileReader(descriptor: descriptor, path: path, expectedSize: knownSize)
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
        var reader = WholeFileReader(descriptor: descriptor, path: path, expectedSize: min(size, 4096))
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
        stripe(for: digest).withLock { _ in
            guard let identity, let current = POSIX.identity(ofPath: path), current.isSameFile(as: identity) else { return }
            do {
                try POSIX.unlink(path)
            } catch {
                logger.warning("Could not delete a damaged or expired file", metadata: ["path": "\(path)", "error": "\(error)"])
                return
            }
            _ = state.withLock { $0.entries.removeValue(forKey: digest) }
        }
        journalRecord(.init(kind: .removal, digest: digest, time: now()))
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

/// Reads a file into one `malloc`ed buffer, as far as asked, growing it when a header announces
/// more than was expected.
struct WholeFileReader {
    let descriptor: Int32
    let path: String
    private(set) var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    /// Bytes read so far.
    private(set) var count = 0
    private var reachedEnd = false

    init(descriptor: Int32, path: String, expectedSize: Int) {
        self.descriptor = descriptor
        self.path = path
        self.capacity = max(expectedSize, EntryHeader.fixedSize)
        self.buffer = malloc(capacity)!
    }

    /// Makes sure the first `needed` bytes are read; `false` if the file is shorter.
    mutating func ensure(_ needed: Int) throws -> Bool {
        if count >= needed { return true }
        if count == 0 {
            count = try POSIX.read(descriptor, into: buffer, count: capacity, at: 0, path: path)
            reachedEnd = count < capacity
            if count >= needed { return true }
        }
        if reachedEnd { return false }
        if needed > capacity {
            buffer = realloc(buffer, needed)!
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
        buffer = malloc(1)!
        capacity = 1
        return Data(bytesNoCopy: base + offset, count: payloadCount, deallocator: .custom { pointer, _ in
            free(pointer - offset)
        })
    }

    func deallocate() {
        free(buffer)
    }
}
