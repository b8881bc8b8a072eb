import Foundation
import HanekeProtocols
import Logging
import StoreFolders
import Synchronization

/// The recency journal's side of the store: records of reads, writes and removals, their flushes
/// and compactions, the bytes the journal takes against the capacity, what it says of the previous
/// session, and what other stores sharing the folder did.
extension FileStore {
    /// Records an access in the journal; a full buffer is flushed on the executor.
    func journalAccess(_ digest: KeyDigest, at time: Int64) {
        journalRecord(.init(kind: .access, digest: digest, time: time))
    }

    /// Records a write in the journal. Once another store shares the folder, the record is
    /// appended at once (with the removals of what the write evicted), so that the other stores
    /// count the file before they decide what to evict.
    func journalWrite(_ digest: KeyDigest, at time: Int64, evicted victims: [Victim]) {
        journalRecord(.init(kind: .write, digest: digest, time: time))
        removeEvicted(victims)
        if sharing.load(ordering: .relaxed) { flushJournal() }
    }

    func journalRecord(_ record: RecencyJournal.Record) {
        switch journal.append(record) {
        case .none: break
        // Not on the caller's thread: a read or write never waits for the journal's file lock,
        // which a flush or a compaction holds through its I/O.
        case .flushNow: executor.submit { [self] in flushJournal() }
        case .scheduleFlush: scheduleJournalFlush()
        }
    }

    /// Flushes the journal on the I/O queue within the configured interval. The timer holds the
    /// journal until it is closed, not the store (a store released meanwhile has flushed already;
    /// a weak reference to the store would slow every retain of it), and only appends: compaction
    /// and the metadata's size are the write path's (the journal grows by less than a block
    /// between them).
    private func scheduleJournalFlush() {
        let reference = journal.timerReference()
        executor.submit(after: configuration.recencyFlushInterval) { [logger, directory] in
            guard let journal = RecencyJournal.takeFromTimer(reference) else { return }
            journal.scheduledFlushBegins()
            do {
                try journal.flush()
            } catch {
                // A folder deleted behind the store's back loses its journal with it.
                guard (error as? POSIX.Failure)?.code != ENOENT else { return }
                logger.warning("Could not write the recency journal", metadata: ["directory": "\(directory)", "error": "\(error)"])
            }
        }
    }

    /// Flushes the journal and compacts it when it holds several records per entry. (Compacting
    /// more often keeps the journal smaller but costs every read: at two records per entry a read
    /// of 4 KiB took about 10% longer, measured with FileProbe. The journal's blocks count
    /// against the capacity either way.)
    func flushJournal() {
        // Until the index is complete, the records wait (see `RecencyJournal.pause()`); building
        // the index flushes them when it is done.
        guard !journal.isPaused else { return }
        do {
            try journal.flush()
            if journal.recordsInFile > 4 * state.withLock({ $0.entries.count }) + 16_384 {
                // Unless another store sharing the folder has just compacted it.
                try journal.rewrite(unlessReplaced: true, catchingUp: { apply($0, evicting: false) }, with: currentRecencyRecords)
            }
            updateMetadataSize()
        } catch {
            // A folder deleted behind the store's back loses its journal with it.
            guard (error as? POSIX.Failure)?.code != ENOENT else { return }
            logger.warning("Could not write the recency journal", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
    }

    /// Counts the marker's and the journal's blocks against the capacity, evicting what no longer
    /// fits (each eviction journaled unless `journaling` is false). Must not be called with a
    /// stripe lock held.
    /// - Returns: Whether it evicted anything.
    @discardableResult
    func updateMetadataSize(journaling: Bool = true) -> Bool {
        let size = (POSIX.status(of: StoreNames.marker, in: folder.descriptor)?.allocated ?? 0) + journal.allocatedSize
        let victims = state.withLock { state in
            state.metadataSize = size
            return evictToLimits(&state)
        }
        removeEvicted(victims, journaling: journaling)
        return !victims.isEmpty
    }

    /// What the capacity keeps free for the journal beyond what it takes: a timed flush (which
    /// does not evict) appends at most one buffer, two blocks at the most.
    var journalReserve: Int { 2 * blockSize }

    /// The bytes the entries may take: the capacity less the marker, the journal and its reserve.
    func entryCapacity(_ capacity: Int, metadataSize: Int) -> Int {
        max(0, capacity - metadataSize - journalReserve)
    }

    /// The index as journal records, least recently used first, with this session's start placed
    /// before the first entry used since the session began (so a later store can tell which entries
    /// this session used). Under the adaptive policy the access records are in order of last
    /// access, and the queue records follow, in queue order.
    func currentRecencyRecords() -> [RecencyJournal.Record] {
        var (records, queues): ([RecencyJournal.Record], [RecencyJournal.Record]) = state.withLock { state in
            let order = state.entries.keysByRecency.reversed()
            var accesses = order.map { digest in
                RecencyJournal.Record(kind: .access, digest: digest, time: state.entries.peekValue(forKey: digest)?.lastAccess ?? 0)
            }
            guard state.entries.policy == .adaptive else { return (accesses, []) }
            accesses.sort { $0.time < $1.time }
            let queues = order.map { digest in
                RecencyJournal.Record(kind: .queue, digest: digest, time: Int64(state.entries.adaptiveMark(forKey: digest) ?? 0))
            }
            return (accesses, queues)
        }
        let start = sessionStart
        let marker = RecencyJournal.Record.session(startingAt: start)
        records.insert(marker, at: records.firstIndex { $0.time > start } ?? records.count)
        return records + queues
    }

    /// The entries read or written during the previous session — between the last two times a
    /// store opened this directory, as the journal records it (Haneke's "last session" preload) —
    /// most recently used first. Empty when no earlier session is recorded.
    /// - Returns: The entries, read from their headers.
    /// - Performs disk I/O: one header read per entry. Waits for the index first (see
    ///   ``isIndexed``).
    public func entriesUsedInLastSession() -> [Entry] {
        waitUntilIndexed()
        let used = lastSession.withLock { $0 }
        guard !used.isEmpty else { return [] }
        return entries(where: { used.contains($0) })
    }

    // MARK: - Other stores sharing the folder

    /// Reads what other stores sharing the folder appended to the journal since this store last
    /// looked, and applies it; when none did, this costs one `fstat`. Called before every write
    /// (so that it evicts over the folder's whole content) and before each compaction. Must not be
    /// called with a stripe lock held.
    /// - Parameter evicting: Whether to evict what then exceeds the limits (as a write would).
    func catchUp(evicting: Bool = true) {
        // While the index is built, the opening reads the journal whole when it is done.
        guard !journal.isPaused else { return }
        do {
            apply(try journal.catchUp(), evicting: evicting)
        } catch {
            // The flushes that follow fail too and say so (a warning per flush, not per write).
            logger.debug("Could not read the recency journal", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
    }

    /// Brings the index up to what other stores sharing the folder did: for each key they wrote or
    /// removed (or read, when this store does not know it), the index takes what the folder holds
    /// now — the file's size and identity, most recently used, or nothing; a key they only read
    /// becomes the most recently used. After a journal another store rewrote (`restarted`), the
    /// entries the new journal does not name are kept only if their files are still there.
    /// - Parameter evicting: Whether to evict what exceeds the limits afterwards (not while the
    ///   journal's lock is held for a rewrite: the metadata's update after it evicts).
    func apply(_ news: RecencyJournal.CatchUp, evicting: Bool) {
        guard !news.records.isEmpty || news.restarted else { return }
        if !news.records.isEmpty { sharing.store(true, ordering: .relaxed) }
        // Each key once, in the order of its last record.
        var last: [KeyDigest: (position: Int, record: RecencyJournal.Record)] = [:]
        // Another store's queues are its own: this one keeps what it learned.
        for (position, record) in news.records.enumerated() where record.kind != .session && record.kind != .queue {
            last[record.digest] = (position, record)
        }
        for (_, record) in last.values.sorted(by: { $0.position < $1.position }) {
            if record.kind == .access {
                let known = state.withLock { state in
                    // A rewritten journal lists every entry: it does not make one more recent here.
                    news.restarted ? state.entries.contains(record.digest, now: -.infinity)
                        : state.entries.refresh(record.digest) { $0.lastAccess = max($0.lastAccess, record.time) }
                }
                if known { continue }
            }
            reconcile(record.digest, usedAt: record.time)
        }
        if news.restarted {
            let unnamed = state.withLock { state in state.entries.keysByRecency.filter { last[$0] == nil } }
            for digest in unnamed { reconcile(digest, usedAt: nil) }
        }
        if evicting {
            removeEvicted(state.withLock { evictToLimits(&$0) })
        }
    }

    /// Makes the index say what the folder holds for `digest` now: its file's size and identity,
    /// used at `time` (the most recently used), or nothing when there is no file. With no `time`,
    /// only forgets an entry whose file is gone.
    private func reconcile(_ digest: KeyDigest, usedAt time: Int64?) {
        stripe(for: digest).withLock { _ in
            let found = (try? folder.withShard(digest.shard, create: false) { shard in
                POSIX.status(of: digest.hex, in: shard)
            }) ?? nil
            state.withLock { state in
                guard let status = found, status.isFile else {
                    state.entries.removeValue(forKey: digest)
                    return
                }
                guard let time else { return }
                let allocated = min(status.allocated, Self.largestIndexedSize)
                state.entries.setValue(
                    EntryRecord(fileSize: min(status.size, Self.largestIndexedSize), allocated: allocated, lastAccess: time, identity: status.identity),
                    forKey: digest, cost: allocated, expiry: .infinity
                )
            }
        }
    }
}
