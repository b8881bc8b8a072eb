import HanekeProtocols
import StoreFolders
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The FileStore's own record of recency (not atime, not creation dates, not xattrs): an
/// append-only file `.haneke-journal` in the store's folder, of 25-byte records — a kind (access,
/// write, removal, session start), the key's digest, and a time in milliseconds.
///
/// The journal is also how stores sharing a folder (in several processes, or several in one) learn
/// of each other's writes, removals and reads: each appends to the same file and reads what the
/// others appended since it last looked (``catchUp()``). Appends hold a shared `flock` on the
/// file and a rewrite an exclusive one, so no append is lost to a rewrite: an append that waited
/// for a rewrite finds its descriptor's file replaced and goes to the new one, and its store then
/// reads the new journal whole (``CatchUp/restarted``).
///
/// Records are buffered in memory and appended up to 32 KiB at a time, so reads do not pay a
/// system call each. A buffer reaches the file when it is full, when the store's flush timer fires
/// (at most ``FileStore/Configuration/recencyFlushInterval`` after its first record), when the
/// process exits through `exit()`, and when the store is released: a killed process loses at most
/// the last interval, which only makes the recovered order slightly older. The store rewrites the
/// journal from its index when it opens and whenever the journal has grown to several records per
/// entry, so its size stays proportional to the number of entries.
final class RecencyJournal: Sendable {
    static let magic: [UInt8] = Array("HNKJ".utf8) + [1, 0, 0, 0]
    static let recordSize = 25
    /// The largest journal read when a store opens: room for millions of records.
    static let maximumReadSize = 256 << 20
    /// The buffer's size when it asks for a flush: 1,311 records. The read whose record fills it
    /// hands the flush to the I/O executor, and pays for that thread's wake-up and for the flush's
    /// turns of the store's index lock. At 4 KiB (164 records) that was one read in 164, and it
    /// put a reader's 99th percentile up by about half; at 32 KiB it is under one read in 1,000.
    static let flushThreshold = 32 << 10

    enum Kind: UInt8, Sendable {
        /// The entry was read.
        case access = 1
        /// The entry's file was written: a store that did not write it reads its size from the file.
        case write = 3
        case removal = 2
        /// A store opened the folder at this time (the digest is unused): the start of a session.
        case session = 4
        /// The adaptive eviction policy's queue and read counter for the entry, in the time
        /// field's low byte (`LRUList.adaptiveMark(forKey:)`). Written only by a compaction of a
        /// store with that policy, after every access record, from each queue's oldest entry to
        /// its newest; a reader that does not know this kind skips it.
        case queue = 5
    }

    struct Record: Sendable, Hashable {
        var kind: Kind
        var digest: KeyDigest
        var time: Int64

        /// The record of a session that began at `time` (milliseconds since 1970).
        static func session(startingAt time: Int64) -> Record {
            Record(kind: .session, digest: KeyDigest(high: 0, low: 0), time: time)
        }
    }

    /// What the caller of ``append(_:)`` should do next.
    enum Advice {
        /// Nothing: the record waits in the buffer, and a flush is already due.
        case none
        /// The buffer is full: flush it soon, on the I/O executor (once: the records that follow
        /// before the flush takes the buffer get `.none`).
        case flushNow
        /// This is the first record since the last timed flush: schedule one.
        case scheduleFlush
    }

    private struct Pending: Sendable {
        var bytes: [UInt8] = []
        var flushScheduled = false
        /// A flush of the full buffer has been asked for and has not taken it yet.
        var flushQueued = false
    }

    private struct FileState: Sendable {
        var descriptor: Int32 = -1
        /// The folder's generation the descriptor was opened in (see ``StoreFolder/generation``).
        var generation = -1
        var records = 0
        var allocated = 0
        /// The bytes of the file this journal has read or written: what follows was appended by
        /// other stores since, except ``ownRanges``.
        var readOffset = 0
        /// This journal's own appends past ``readOffset``, oldest first: skipped when catching up.
        var ownRanges: [Range<Int>] = []
        /// The descriptor's file is not the one this journal read: the next ``catchUp()`` reads it
        /// whole.
        var restarted = false
    }

    /// What other stores sharing the folder appended since this journal last looked.
    struct CatchUp: Sendable {
        /// Their records, oldest first.
        var records: [Record] = []
        /// The journal was replaced (another store rewrote it): `records` is the whole new journal,
        /// and what the store knows that it does not mention may be gone.
        var restarted = false
    }

    let folder: StoreFolder
    /// The buffer. Held only to append to it or take it: every read takes it, so no system call
    /// runs under it.
    ///
    /// Lock order: `file`, then `pending` (``flush()`` takes the buffer while it holds the file);
    /// never the other way. Neither is taken with one of the store's locks (a stripe, its index)
    /// held, and neither takes one. `live` and `closing` are held alone.
    private let pending = Locked(Pending())
    /// The descriptor and what is known of the file. Held across the journal's I/O: an append of
    /// a buffer (up to 32 KiB) on a flush, and the whole new journal's write and rename on a
    /// rewrite, during which a flush, ``recordsInFile`` and ``allocatedSize`` wait
    /// (``append(_:)`` does not).
    private let file = Locked(FileState())
    /// Whether flushes wait (``pause()``).
    private let paused = Atomic<Bool>(false)
    /// What the pending flush timers hold instead of the journal (``timerReference()``), emptied
    /// by ``close()``. Held alone.
    private let timerReferences = Locked<[Locked<RecencyJournal?>]>([])

    /// When the store's session began (milliseconds since 1970): the time of its session record.
    let sessionStart: Int64

    /// A journal for the store's folder, flushed at `exit()` until ``close()``.
    /// - Parameters:
    ///   - folder: The store's folder.
    ///   - sessionStart: When the store's session began, in milliseconds since 1970.
    init(folder: StoreFolder, sessionStart: Int64) {
        self.folder = folder
        self.sessionStart = sessionStart
        _ = Self.exitHandler
        Self.live.withLock { $0[ObjectIdentifier(self)] = self }
    }

    /// Flushes the buffer and stops flushing at `exit()`: the store is going. (The registry holds
    /// journals strongly, not weakly: a weak reference would move the journal's reference counts
    /// to a side table and slow every retain on the read path.) Closing twice is harmless.
    func close() {
        try? flush()
        _ = Self.live.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
        file.withLock { state in
            if state.descriptor >= 0 { POSIX.close(state.descriptor) }
            state.descriptor = -1
        }
        // A flush timer would otherwise hold the journal, and through it the folder's descriptor,
        // for up to an interval after the store is gone.
        for reference in timerReferences.withLock({ references in defer { references = [] }; return references }) {
            reference.withLock { $0 = nil }
        }
    }

    /// The journal for a flush timer to hold: ``close()`` empties it, so that a closed journal
    /// (and its folder's descriptor) goes at once, not when the timer fires. The timer calls
    /// ``takeFromTimer(_:)``.
    func timerReference() -> Locked<RecencyJournal?> {
        let reference = Locked<RecencyJournal?>(self)
        timerReferences.withLock { $0.append(reference) }
        return reference
    }

    /// The journal a timer's reference still holds (`nil` once closed), the reference emptied.
    static func takeFromTimer(_ reference: Locked<RecencyJournal?>) -> RecencyJournal? {
        guard let journal = reference.withLock({ journal in defer { journal = nil }; return journal }) else { return nil }
        journal.timerReferences.withLock { $0.removeAll { $0 === reference } }
        return journal
    }

    /// ``close()`` on `executor`, not on the caller's thread. Until it has run, the journal stays
    /// in a list by folder, and ``closePending(inFolder:)`` — called by a store opening the same
    /// folder — runs it first, so the new store reads every record.
    func closeLater(on executor: IOExecutor) {
        let path = folder.path
        Self.closing.withLock { $0[path, default: []].append(self) }
        executor.submit { [self] in
            let mine = Self.closing.withLock { closing -> Bool in
                guard let index = closing[path]?.firstIndex(where: { $0 === self }) else { return false }
                closing[path]!.remove(at: index)
                if closing[path]!.isEmpty { closing[path] = nil }
                return true
            }
            if mine { close() }
        }
    }

    /// Closes, now, the journals of released stores of the folder at `path` whose last records are
    /// still waiting for the executor.
    static func closePending(inFolder path: String) {
        let journals = closing.withLock { $0.removeValue(forKey: path) ?? [] }
        for journal in journals { journal.close() }
    }

    /// Journals of released stores waiting for their last flush, by folder path. Held alone: the
    /// journals are closed after it is released.
    private static let closing = Locked<[String: [RecencyJournal]]>([:])

    deinit {
        file.withLock { state in
            if state.descriptor >= 0 { POSIX.close(state.descriptor) }
        }
    }

    private var path: String { folder.path(of: StoreNames.journal) }

    /// The records of the journal file, oldest first, for a reader that is not a store (the
    /// tool's inspection): nothing is created or locked. A missing, foreign or partly written file
    /// gives what could be read: recency is a hint, never a reason to fail.
    static func readRecords(in folder: StoreFolder) -> [Record] {
        let path = folder.path(of: StoreNames.journal)
        guard let fd = try? POSIX.openFile(StoreNames.journal, in: folder.descriptor, flags: O_RDONLY | O_NONBLOCK, path: path) else { return [] }
        defer { POSIX.close(fd) }
        guard let status = try? POSIX.status(of: fd, path: path), status.isFile else { return [] }
        return read(fd, from: 0, to: status.size, skipping: [], path: path).records
    }

    /// The journal's records as a store opening the folder finds them, oldest first; from then on
    /// ``catchUp()`` gives what other stores append. A journal that cannot be opened or read gives
    /// no records (recency is a hint, never a reason to fail opening a store).
    func readForOpening() -> [Record] {
        file.withLock { state in
            guard (try? ensureOpen(&state)) != nil,
                  let status = try? POSIX.status(of: state.descriptor, path: path) else { return [] }
            let (records, end) = Self.read(state.descriptor, from: 0, to: status.size, skipping: [], path: path)
            state.readOffset = end
            state.ownRanges = []
            state.restarted = false
            return records
        }
    }

    /// What other stores appended since this journal last looked, or the whole journal when another
    /// store replaced it (``CatchUp/restarted``).
    /// - Performs disk I/O: one `fstat`, and a read of what is new.
    func catchUp() throws -> CatchUp {
        try file.withLock { state throws in
            try openUnlessOpen(&state)
            return try catchUp(&state)
        }
    }

    /// ``catchUp()`` with the file lock held and the descriptor open.
    private func catchUp(_ state: inout FileState) throws -> CatchUp {
        let status = try POSIX.status(of: state.descriptor, path: path)
        if status.links == 0 {
            // Replaced since it was opened: the new file, whole.
            try ensureOpen(&state)
            return try catchUp(&state)
        }
        state.records = max(0, status.size - Self.magic.count) / Self.recordSize
        state.allocated = status.allocated
        let restarted = state.restarted
        state.restarted = false
        guard status.size > state.readOffset else { return CatchUp(restarted: restarted) }
        let (records, end) = Self.read(state.descriptor, from: state.readOffset, to: status.size, skipping: state.ownRanges, path: path)
        state.readOffset = end
        state.ownRanges.removeAll { $0.upperBound <= end }
        return CatchUp(records: records, restarted: restarted)
    }

    /// Decodes the whole records of `fd` from `start` (0: from the beginning, checking the magic;
    /// otherwise a record's boundary) to `end`, skipping the byte ranges `skipped`.
    /// - Returns: The records, and where the last whole record read ends (where to start next time).
    private static func read(_ fd: Int32, from start: Int, to end: Int, skipping skipped: [Range<Int>], path: @autoclosure () -> String) -> (records: [Record], end: Int) {
        let checksMagic = start == 0
        let recordsStart = checksMagic ? magic.count : start
        guard end >= recordsStart else { return ([], start) }
        // A whole journal too large to be ours (or a planted one) is ignored, not loaded; what
        // others appended is read a bounded part at a time.
        if checksMagic && end > maximumReadSize { return ([], start) }
        let wholeEnd = recordsStart + min(end - recordsStart, maximumReadSize) / recordSize * recordSize
        var bytes = [UInt8](repeating: 0, count: wholeEnd - start)
        let read = bytes.withUnsafeMutableBytes { buffer in
            (try? POSIX.read(fd, into: buffer.baseAddress!, count: buffer.count, at: start, path: path())) ?? 0
        }
        if checksMagic {
            // Not a journal: nothing to read in it, now or again at the next catch-up.
            guard read >= magic.count, Array(bytes[0..<magic.count]) == magic else { return ([], read < magic.count ? start : wholeEnd) }
        }
        let readEnd = start + read
        var records: [Record] = []
        records.reserveCapacity(read / recordSize)
        var position = recordsStart
        bytes.withUnsafeBytes { buffer in
            while position + recordSize <= readEnd {
                if let range = skipped.first(where: { $0.contains(position) }) {
                    position = range.upperBound
                    continue
                }
                let offset = position - start
                if let kind = Kind(rawValue: buffer[offset]) {
                    let digest = KeyDigest(bytes: UnsafeRawBufferPointer(rebasing: buffer[(offset + 1)..<(offset + 17)]))
                    var time: UInt64 = 0
                    for i in (0..<8).reversed() { time = time << 8 | UInt64(buffer[offset + 17 + i]) }
                    records.append(Record(kind: kind, digest: digest, time: Int64(bitPattern: time)))
                }
                position += recordSize
            }
        }
        return (records, position)
    }

    /// Buffers a record and says whether a flush is needed now or should be scheduled.
    func append(_ record: Record) -> Advice {
        pending.withLock { pending in
            Self.encode(record, into: &pending.bytes)
            if pending.bytes.count >= Self.flushThreshold {
                if pending.flushQueued { return .none }
                pending.flushQueued = true
                return .flushNow
            }
            if pending.flushScheduled { return .none }
            pending.flushScheduled = true
            return .scheduleFlush
        }
    }

    /// Called when a scheduled flush runs, before it flushes: records buffered from now on
    /// schedule the next one.
    func scheduledFlushBegins() {
        pending.withLock { $0.flushScheduled = false }
    }

    /// The number of records in the file (not counting the buffer).
    var recordsInFile: Int { file.withLock { $0.records } }

    /// The bytes the journal file takes on disk, as of its last flush or rewrite.
    var allocatedSize: Int { file.withLock { $0.allocated } }

    /// Makes flushes (timed, full buffer, on ``close()``) keep the records in the buffer until
    /// ``resume()``: while a store builds its index, the walk reads the journal as the previous
    /// session left it, and the rewrite that follows starts the file again. At `exit()` the
    /// records are appended all the same (no rewrite will follow), after a record of this
    /// session's start, which only the rewrite would have written (``flushAtExit()``).
    func pause() {
        paused.store(true, ordering: .releasing)
    }

    /// Lets flushes write again (the caller flushes what waited).
    func resume() {
        paused.store(false, ordering: .releasing)
    }

    /// Whether flushes wait (``pause()``).
    var isPaused: Bool { paused.load(ordering: .acquiring) }

    /// Appends the buffered records to the file, creating it again if it was deleted. Never creates
    /// the store's folder: when that is gone, the records are dropped with an error. Does nothing
    /// while paused (``pause()``), unless `evenIfPaused`.
    func flush(evenIfPaused: Bool = false) throws {
        guard evenIfPaused || !isPaused else { return }
        try file.withLock { state throws in
            let bytes = pending.withLock { pending in
                defer {
                    pending.bytes.removeAll(keepingCapacity: true)
                    pending.flushQueued = false
                }
                return pending.bytes
            }
            guard !bytes.isEmpty else { return }
            try openUnlessOpen(&state)
            // Under the file's shared lock, so that no rewrite replaces the file between the check
            // and the append; a rewrite that did while this waited sends the records to the new file.
            while true {
                let descriptor = state.descriptor
                Self.lock(descriptor, LOCK_SH)
                let replaced = Result { () throws(POSIX.Failure) in try POSIX.status(of: descriptor, path: path).links == 0 }
                guard case .success(false) = replaced else {
                    Self.lock(descriptor, LOCK_UN)
                    _ = try replaced.get()
                    try ensureOpen(&state)
                    continue
                }
                let end = Result { try append(bytes, to: descriptor) }
                Self.lock(descriptor, LOCK_UN)
                let last = try end.get()
                state.ownRanges.append((last - bytes.count)..<last)
                state.records = max(0, last - Self.magic.count) / Self.recordSize
                state.allocated = (try? POSIX.status(of: descriptor, path: path).allocated) ?? state.allocated
                return
            }
        }
    }

    /// Appends `bytes` (whole records) to the journal's descriptor; returns where they end. Never
    /// truncates (other stores append to the same file): a write cut short by a full disk is padded
    /// to a record's boundary with zeros, which no reader takes for a record.
    private func append(_ bytes: [UInt8], to descriptor: Int32) throws -> Int {
        var written = 0
        let failure: POSIX.Failure? = bytes.withUnsafeBytes { buffer in
            while written < buffer.count {
                let n = write(descriptor, buffer.baseAddress! + written, buffer.count - written)
                if n > 0 {
                    written += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return POSIX.fail("write", path)
                }
            }
            return nil
        }
        if let failure {
            if written % Self.recordSize != 0 {
                let padding = [UInt8](repeating: 0, count: Self.recordSize - written % Self.recordSize)
                _ = padding.withUnsafeBytes { write(descriptor, $0.baseAddress!, $0.count) }
            }
            throw failure
        }
        return Int(lseek(descriptor, 0, SEEK_CUR))
    }

    /// Replaces the journal with `records()` (oldest first), atomically: a temporary file in the
    /// store's folder, then `renameat` over the journal (replacing whatever was at its name, a link
    /// included, never following it). Holds the journal's exclusive lock throughout: other stores'
    /// appends wait, and what they appended before is first read and given to `catchingUp`, so
    /// that `records()` (called after it) can include it.
    ///
    /// Lock order: `catchingUp` and `records` run with the journal's `file` lock held, and may take
    /// the store's stripes and index (which nothing holds while it takes the journal's locks).
    /// - Parameter unlessReplaced: Gives up (returning `false`) when another store replaced the
    ///   journal while this one waited for its lock (a compaction that another store just did).
    /// - Returns: Whether the journal was rewritten.
    @discardableResult
    func rewrite(unlessReplaced: Bool = false, catchingUp apply: (CatchUp) -> Void = { _ in }, with records: () -> [Record]) throws -> Bool {
        try file.withLock { state throws in
            try openUnlessOpen(&state)
            var old = state.descriptor
            Self.lock(old, LOCK_EX)
            while (try? POSIX.status(of: old, path: path))?.links == 0 {
                Self.lock(old, LOCK_UN)
                try ensureOpen(&state)
                if unlessReplaced { return false }
                old = state.descriptor
                Self.lock(old, LOCK_EX)
            }
            // Unlocked at the end, or closed (which unlocks it) once the new file replaced it; never
            // unlocked after it is closed, when its number may be another file's.
            var detached = false
            defer {
                if detached {
                    POSIX.close(old)
                } else if state.descriptor == old {
                    Self.lock(old, LOCK_UN)
                }
            }
            apply(try catchUp(&state))
            let records = records()
            var bytes = Self.magic
            bytes.reserveCapacity(Self.magic.count + records.count * Self.recordSize)
            for record in records { Self.encode(record, into: &bytes) }

            let root = folder.descriptor
            let temporary = StoreNames.temporary()
            let fd = try folder.createFile(temporary, in: root, path: folder.path(of: temporary))
            // Closed once, before the rename (closing it again when the rename failed would close
            // whatever file another thread had opened under the reused number).
            let appended = Result { () throws(POSIX.Failure) in try POSIX.append(fd, bytes, path: folder.path(of: temporary)) }
            POSIX.close(fd)
            do {
                try appended.get()
                try POSIX.rename(temporary, to: StoreNames.journal, in: root, path: path)
            } catch {
                _ = try? POSIX.unlink(temporary, in: root, path: folder.path(of: temporary))
                throw error
            }
            // The old file stays open (and locked) until the end: its number is not reused meanwhile.
            state.descriptor = -1
            detached = true
            try ensureOpen(&state)
            // This journal wrote the new file: what follows it is other stores'.
            state.readOffset = bytes.count
            state.ownRanges = []
            state.restarted = false
            state.records = records.count
            return true
        }
    }

    /// Forgets the buffered records (before `removeAll` rewrites the journal).
    func discardPending() {
        pending.withLock { pending in
            pending.bytes.removeAll(keepingCapacity: true)
            pending.flushQueued = false
        }
    }

    /// Opens the journal unless a descriptor of it in this folder is open. Whether its file was
    /// replaced or deleted since is for the caller's own `fstat` to tell (catching up, appending and
    /// rewriting each take one), not for another one here.
    private func openUnlessOpen(_ state: inout FileState) throws {
        if state.descriptor < 0 || state.generation != folder.generation { try ensureOpen(&state) }
    }

    private func ensureOpen(_ state: inout FileState) throws {
        if state.descriptor >= 0 {
            // The journal, or the whole folder, may have been deleted behind the store's back.
            if state.generation == folder.generation,
               let status = try? POSIX.status(of: state.descriptor, path: path), status.links > 0 { return }
            POSIX.close(state.descriptor)
            state.descriptor = -1
        }
        let root = folder.descriptor
        let generation = folder.generation
        var fd: Int32 = -1
        for attempt in 0..<2 {
            do {
                // `nil`: not even `O_CREAT` could make it, so the store's folder itself is gone.
                guard let opened = try POSIX.openFile(StoreNames.journal, in: root, flags: O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK, mode: folder.access.fileMode, path: path) else {
                    throw POSIX.fail("openat", path, code: ENOENT)
                }
                fd = opened
                break
            } catch let failure as POSIX.Failure where attempt == 0 && (failure.code == ELOOP || failure.code == ENXIO) {
                // A link or a FIFO at the journal's name: the name is the store's, the thing is not
                // a journal. Remove it (a link itself, never what it points to) and start a new one.
                try POSIX.unlink(StoreNames.journal, in: root, path: path)
            }
        }
        do {
            let status = try POSIX.status(of: fd, path: path)
            guard status.isFile else { throw POSIX.fail("open", path, code: EINVAL) }
            if folder.access == .ownerAndGroup { _ = fchmod(fd, folder.access.fileMode) }
            if status.size == 0 {
                // Another store may be creating it too: one magic, written under the exclusive lock.
                Self.lock(fd, LOCK_EX)
                defer { Self.lock(fd, LOCK_UN) }
                if try POSIX.status(of: fd, path: path).size == 0 {
                    try POSIX.append(fd, Self.magic, path: path)
                }
            }
            let opened = try POSIX.status(of: fd, path: path)
            state.records = max(0, opened.size - Self.magic.count) / Self.recordSize
            state.allocated = opened.allocated
        } catch {
            POSIX.close(fd)
            throw error
        }
        state.descriptor = fd
        state.generation = generation
        // A file this journal has not read: the next catch-up reads it whole.
        state.readOffset = 0
        state.ownRanges = []
        state.restarted = true
    }

    /// `flock`, retried when interrupted. A file system without `flock` leaves the journal
    /// unlocked: stores sharing a folder there may lose a few records to a rewrite, which only
    /// makes their recency older.
    private static func lock(_ descriptor: Int32, _ operation: Int32) {
        while flock(descriptor, operation) != 0 && errno == EINTR {}
    }

    /// Appends a record's 25 bytes: the kind, the digest big-endian, the time little-endian (built
    /// in a stack buffer and copied at once: this is on every read).
    private static func encode(_ record: Record, into buffer: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: recordSize) { bytes in
            let raw = UnsafeMutableRawBufferPointer(bytes)
            raw[0] = record.kind.rawValue
            raw.storeBytes(of: record.digest.high.bigEndian, toByteOffset: 1, as: UInt64.self)
            raw.storeBytes(of: record.digest.low.bigEndian, toByteOffset: 9, as: UInt64.self)
            raw.storeBytes(of: UInt64(bitPattern: record.time).littleEndian, toByteOffset: 17, as: UInt64.self)
            buffer.append(contentsOf: UnsafeBufferPointer(bytes))
        }
    }

    // MARK: - Exit

    /// Every journal of a store alive in the process, for the flush at exit. Held alone: the
    /// journals are flushed after it is released.
    private static let live = Locked<[ObjectIdentifier: RecencyJournal]>([:])

    /// Installed once: `exit()` (a plain `exit(0)` included) flushes every journal's buffer, so a
    /// process that never releases its stores (a global, a `Shared` cache) keeps its recency.
    private static let exitHandler: Void = {
        atexit { RecencyJournal.flushEveryJournal() }
    }()

    private static func flushEveryJournal() {
        let journals = live.withLock { Array($0.values) }
        for journal in journals { try? journal.flushAtExit() }
    }

    /// The flush at `exit()`, even while paused. While paused, the file is still the journal the
    /// previous sessions left, and this session's start is not in it (the rewrite after the index
    /// would have placed it): it goes before the buffered records, all of which are this
    /// session's, so that the next store knows which entries this session used. Without it the
    /// records would join the previous session's, and a `.lastSession` preload would load nothing.
    func flushAtExit() throws {
        if isPaused {
            let marker = Record.session(startingAt: sessionStart)
            var bytes: [UInt8] = []
            Self.encode(marker, into: &bytes)
            pending.withLock { $0.bytes.insert(contentsOf: bytes, at: 0) }
        }
        try flush(evenIfPaused: true)
    }
}
