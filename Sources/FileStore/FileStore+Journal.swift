import Foundation
import HanekeProtocols
import Logging
import StoreFolders

/// The recency journal's side of the store: records of reads, writes and removals, their flushes
/// and compactions, the bytes the journal takes against the capacity, and what it says of the
/// previous session.
extension FileStore {
    /// Records an access in the journal; a full buffer is flushed on the executor.
    func journalAccess(_ digest: KeyDigest, at time: Int64) {
        journalRecord(.init(kind: .access, digest: digest, time: time))
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
    /// journal, not the store (a store released meanwhile has flushed already; a weak reference to
    /// the store would slow every retain of it), and only appends: compaction and the metadata's
    /// size are the write path's (the journal grows by less than a block between them).
    private func scheduleJournalFlush() {
        executor.submit(after: configuration.recencyFlushInterval) { [journal, logger, directory] in
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
                try journal.rewrite(with: currentRecencyRecords())
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
    /// this session used).
    func currentRecencyRecords() -> [RecencyJournal.Record] {
        var records: [RecencyJournal.Record] = state.withLock { state in
            state.entries.keysByRecency.reversed().map { digest in
                RecencyJournal.Record(kind: .access, digest: digest, time: state.entries.peekValue(forKey: digest)?.lastAccess ?? 0)
            }
        }
        let start = sessionStart
        let marker = RecencyJournal.Record(kind: .session, digest: KeyDigest(high: 0, low: 0), time: start)
        records.insert(marker, at: records.firstIndex { $0.time > start } ?? records.count)
        return records
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
}
