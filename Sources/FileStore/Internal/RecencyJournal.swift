@_spi(HanekeInternals) import HanekeProtocols

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The FileStore's own record of recency (DESIGN §5: not atime, not creation dates, not xattrs):
/// an append-only file `journal` in the store's directory, of 25-byte records — a kind (access,
/// removal, clear), the key's digest, and a time in milliseconds.
///
/// Records are buffered in memory and appended 4 KiB at a time, so reads do not pay a system call
/// each; a crash loses at most the last buffer, which only makes the recovered order slightly older.
/// The store rewrites the journal from its index when it opens and whenever the journal has grown
/// to several records per entry, so its size stays proportional to the number of entries.
final class RecencyJournal: Sendable {
    static let fileName = "journal"
    static let magic: [UInt8] = Array("HNKJ".utf8) + [1, 0, 0, 0]
    static let recordSize = 25
    /// The largest journal read when a store opens: room for millions of records.
    static let maximumReadSize = 256 << 20
    private static let flushThreshold = 4096

    enum Kind: UInt8, Sendable {
        case access = 1
        case removal = 2
        case clear = 3
        /// A store opened the directory at this time (the digest is unused): the start of a session.
        case session = 4
    }

    struct Record: Sendable, Hashable {
        var kind: Kind
        var digest: KeyDigest
        var time: Int64
    }

    private struct FileState: Sendable {
        var descriptor: Int32 = -1
        var records = 0
    }

    let path: String
    private let directory: String
    private let pending = Locked<[UInt8]>([])
    private let file = Locked(FileState())

    init(directory: String) {
        self.directory = directory
        self.path = directory + "/" + Self.fileName
    }

    deinit {
        file.withLock { state in
            if state.descriptor >= 0 { POSIX.close(state.descriptor) }
        }
    }

    /// The records of the journal file, oldest first. A missing, foreign or partly written file
    /// gives what could be read: recency is a hint, never a reason to fail opening a store.
    static func readRecords(directory: String) -> [Record] {
        let path = directory + "/" + fileName
        guard let fd = try? POSIX.openForReading(path) else { return [] }
        defer { POSIX.close(fd) }
        // A journal is a hint; one too large to be ours (or a planted one) is ignored, not loaded.
        guard let size = try? POSIX.size(of: fd, path: path), size >= magic.count, size <= maximumReadSize else { return [] }
        var bytes = [UInt8](repeating: 0, count: size)
        let read = bytes.withUnsafeMutableBytes { buffer in
            (try? POSIX.read(fd, into: buffer.baseAddress!, count: size, at: 0, path: path)) ?? 0
        }
        guard read >= magic.count, Array(bytes[0..<magic.count]) == magic else { return [] }
        var records: [Record] = []
        records.reserveCapacity((read - magic.count) / recordSize)
        bytes.withUnsafeBytes { buffer in
            var offset = magic.count
            while offset + recordSize <= read {
                if let kind = Kind(rawValue: buffer[offset]) {
                    let digest = KeyDigest(bytes: UnsafeRawBufferPointer(rebasing: buffer[(offset + 1)..<(offset + 17)]))
                    var time: UInt64 = 0
                    for i in (0..<8).reversed() { time = time << 8 | UInt64(buffer[offset + 17 + i]) }
                    records.append(Record(kind: kind, digest: digest, time: Int64(bitPattern: time)))
                }
                offset += recordSize
            }
        }
        return records
    }

    /// Buffers a record; returns `true` when the buffer is full and should be flushed.
    func append(_ record: Record) -> Bool {
        pending.withLock { buffer in
            Self.encode(record, into: &buffer)
            return buffer.count >= Self.flushThreshold
        }
    }

    /// The number of records in the file (not counting the buffer).
    var recordsInFile: Int { file.withLock { $0.records } }

    /// Appends the buffered records to the file, creating it again if it was deleted.
    func flush() throws {
        try file.withLock { state throws in
            let bytes = pending.withLock { buffer in
                defer { buffer.removeAll(keepingCapacity: true) }
                return buffer
            }
            guard !bytes.isEmpty else { return }
            try ensureOpen(&state)
            try bytes.withUnsafeBytes { buffer throws in
                try POSIX.append(state.descriptor, buffer, path: path)
            }
            state.records += bytes.count / Self.recordSize
        }
    }

    /// Replaces the journal with `records` (oldest first), atomically.
    func rewrite(with records: [Record]) throws {
        var bytes = Self.magic
        bytes.reserveCapacity(Self.magic.count + records.count * Self.recordSize)
        for record in records { Self.encode(record, into: &bytes) }
        try file.withLock { state throws in
            let temporary = path + ".tmp.\(POSIX.processID)"
            try POSIX.makeDirectories(directory)
            let fd = try POSIX.createExclusivelyReplacing(temporary)
            do {
                try bytes.withUnsafeBytes { buffer throws in
                    try POSIX.append(fd, buffer, path: temporary)
                }
                POSIX.close(fd)
                try POSIX.rename(temporary, path)
            } catch {
                POSIX.close(fd)
                _ = try? POSIX.unlink(temporary)
                throw error
            }
            if state.descriptor >= 0 { POSIX.close(state.descriptor) }
            state.descriptor = -1
            state.records = records.count
            try ensureOpen(&state)
        }
    }

    /// Forgets the buffered records (after `removeAll`, which rewrites the journal).
    func discardPending() {
        pending.withLock { $0.removeAll(keepingCapacity: true) }
    }

    private func ensureOpen(_ state: inout FileState) throws {
        if state.descriptor >= 0 {
            // The directory may have been deleted behind the store's back: start a new journal.
            if let identity = try? POSIX.identity(of: state.descriptor, path: path), identity.links > 0 { return }
            POSIX.close(state.descriptor)
            state.descriptor = -1
            state.records = 0
        }
        try POSIX.makeDirectories(directory)
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIX.fail("open", path) }
        if try POSIX.size(of: fd, path: path) == 0 {
            try Self.magic.withUnsafeBytes { buffer throws in try POSIX.append(fd, buffer, path: path) }
        }
        state.descriptor = fd
    }

    private static func encode(_ record: Record, into buffer: inout [UInt8]) {
        buffer.append(record.kind.rawValue)
        for i in (0..<8).reversed() { buffer.append(UInt8(truncatingIfNeeded: record.digest.high >> (8 * i))) }
        for i in (0..<8).reversed() { buffer.append(UInt8(truncatingIfNeeded: record.digest.low >> (8 * i))) }
        let time = UInt64(bitPattern: record.time)
        for i in 0..<8 { buffer.append(UInt8(truncatingIfNeeded: time >> (8 * i))) }
    }
}
