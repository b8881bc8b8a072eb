import Dispatch
import Foundation
import HanekeProtocols
import Logging
import StoreFolders
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension FileStore {
    /// Whether the store has finished indexing the files it found when it opened.
    ///
    /// A store opens without walking its folder: ``init(directory:configuration:name:logger:executor:)``
    /// checks the folder and returns, and a job of an executor of the indexes' own (at most twice
    /// as many walks at once as there are cores, at least 4) walks the folder (one
    /// `fstatat` per file), replays the recency journal and merges what it found into the index.
    /// Reads, writes and removals work meanwhile, and their effects win over what the walk found:
    /// a key removed while the store indexes stays removed, a key written is counted once, with its
    /// new size. The capacity and the count limit are enforced once the index is complete (the
    /// least recently used entries are then evicted, once), not during the walk.
    ///
    /// What needs the whole index waits for it: ``count``, ``totalSize``, ``metadataSize``,
    /// ``entries()``, ``keys()``, ``entriesUsedInLastSession()``, ``trim(toSize:)``,
    /// ``removeAll()-91rby`` and ``flush()``. To wait without blocking a thread, `await`
    /// ``waitUntilIndexed()-3lm97`` first.
    ///
    /// The recency journal is rewritten once the index is complete; this session's records reach
    /// it after that (or at `exit()`). A store released while it indexes lives until its index is
    /// complete, and a store that opens the same folder in the same process builds its own index
    /// after it, so that it reads the whole journal.
    public var isIndexed: Bool {
        indexing.isComplete
    }

    /// Suspends until the store has indexed the files it found when it opened (see
    /// ``isIndexed``), without blocking a thread; returns at once when it has.
    ///
    /// Once it returns, ``count``, ``totalSize`` and the other members that need the whole index
    /// answer without waiting.
    public func waitUntilIndexed() async {
        guard !indexing.isComplete else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            indexing.whenComplete { continuation.resume() }
        }
    }

    /// Blocks the calling thread until the store has indexed the files it found when it opened
    /// (see ``isIndexed``); returns at once when it has. The index is built on an executor of the
    /// indexes' own, never on the I/O executor nor on Swift's cooperative threads, so any number of
    /// threads may wait without keeping it from finishing; from async code, prefer
    /// `await waitUntilIndexed()`, which blocks no thread.
    public func waitUntilIndexed() {
        indexing.wait()
    }

    /// The progress of the index built in the background (see ``isIndexed``).
    final class Indexing: Sendable {
        /// Left once the index is complete (and the capacity enforced): what blocked threads wait
        /// on.
        private let group = DispatchGroup()
        private let complete = Atomic<Bool>(false)
        /// What runs once the index is complete (`nil` once it is): the resumptions of suspended
        /// waiters, run by the thread that completes it rather than by a Dispatch queue, whose
        /// threads may all be waiting for indexes.
        private let onCompletion = Locked<[@Sendable () -> Void]?>([])

        init() {
            group.enter()
        }

        var isComplete: Bool { complete.load(ordering: .acquiring) }

        func wait() {
            guard !isComplete else { return }
            group.wait()
        }

        /// Runs `action` once the index is complete: at once if it is.
        func whenComplete(_ action: @escaping @Sendable () -> Void) {
            let queued = onCompletion.withLock { actions -> Bool in
                guard actions != nil else { return false }
                actions!.append(action)
                return true
            }
            if !queued { action() }
        }

        func finish() {
            complete.store(true, ordering: .releasing)
            group.leave()
            for action in onCompletion.withLock({ actions in defer { actions = nil }; return actions ?? [] }) { action() }
        }
    }

    /// Where the walk that builds the index is, for tests that act between its steps.
    package enum IndexingStep: Sendable {
        /// The walk is about to start.
        case walking
        /// The walk and the journal's replay are done; what they found is about to be merged into
        /// the index.
        case merging
    }

    /// The folders of this process whose index a store is building, each with the builds of the
    /// stores that opened it since, in order: a store that opens a folder builds its index after
    /// the stores that opened it before have built theirs (and, if they have been released, have
    /// written their journal), so that it reads their whole journal. Held alone, for an array
    /// edit.
    private static let openings = Locked<[String: [@Sendable () -> Void]]>([:])

    /// The threads that build indexes: a store opening costs a job, not a thread, and however many
    /// stores open at once, at most this many walk their folders.
    /// Its own threads (see `ThreadPool`), twice as many as the active processors, at least 4: a
    /// walk mostly waits for `fstatat`.
    static let indexingExecutor = ThreadPool(width: max(4, 2 * ProcessInfo.processInfo.activeProcessorCount), name: "haneke.index")

    /// Starts building the index as a job of ``indexingExecutor`` — once the stores of this
    /// process that opened the same folder before have built theirs: the last of them submits it,
    /// so that no job ever holds a thread while it waits. The job holds the store until the index
    /// is complete; a store released meanwhile goes (and writes its journal) when it is done.
    func startIndexing() {
        let path = directory
        let holder = Locked<FileStore?>(self)
        let build: @Sendable () -> Void = {
            Self.buildIndex(of: holder)
            // The store goes here if it was released while indexing: its journal is then in the
            // list that the next store opening the folder closes first.
            holder.withLock { $0 = nil }
            let next = Self.openings.withLock { openings -> (@Sendable () -> Void)? in
                guard let waiting = openings[path], !waiting.isEmpty else {
                    openings[path] = nil
                    return nil
                }
                openings[path] = Array(waiting.dropFirst())
                return waiting[0]
            }
            if let next { Self.indexingExecutor.submit(next) }
        }
        let first = Self.openings.withLock { openings -> Bool in
            guard openings[path] != nil else {
                openings[path] = []
                return true
            }
            openings[path]!.append(build)
            return false
        }
        if first { Self.indexingExecutor.submit(build) }
    }

    private static func buildIndex(of holder: Locked<FileStore?>) {
        guard let store = holder.withLock({ $0 }) else { return }
        store.buildIndex()
    }

    /// Builds the index: walks the folder (one `fstatat` per file), replays the recency journal,
    /// orders the files by it (files the journal does not know — written by another process, or
    /// after the last flush before a crash — by their modification time), merges them under what
    /// this store did meanwhile, evicts what exceeds the limits, and rewrites the journal.
    /// Temporary files of crashed writers are deleted; nothing else is.
    private func buildIndex() {
        // A store released before this one started building has its last records written now.
        RecencyJournal.closePending(inFolder: directory)
        configuration.indexingHook?(.walking)
        let found = walkFolder()
        let records = journal.readForOpening()
        lastSession.withLock { $0 = Self.usedSinceLastSessionRecord(records) }
        lastSessionStart.withLock { $0 = records.last { $0.kind == .session }?.time }
        var walked = Self.makeIndex(configuration)
        for (file, lastAccess, mark) in Self.recencyOrder(of: found, journal: records, policy: configuration.evictionPolicy) {
            walked.setValue(
                EntryRecord(fileSize: file.size, allocated: file.allocated, lastAccess: lastAccess, identity: file.identity),
                forKey: file.digest, cost: file.allocated, expiry: .infinity
            )
            if let mark { walked.restoreAdaptiveMark(mark, forKey: file.digest) }
        }
        configuration.indexingHook?(.merging)
        state.withLock { state in
            // What this store wrote, read, removed or discarded during the walk is known better than
            // the walk knew it; it is also more recent than anything the walk found.
            for digest in state.settledWhileIndexing ?? [] { walked.removeValue(forKey: digest) }
            for digest in state.entries.keysByRecency.reversed() {
                if let record = state.entries.peekValue(forKey: digest) {
                    walked.setValue(record, forKey: digest, cost: record.allocated, expiry: .infinity)
                }
            }
            state.entries = walked
            state.settledWhileIndexing = nil
        }
        func rewriteJournal() {
            do {
                // What other stores sharing the folder did since the journal was read counts too.
                try journal.rewrite(catchingUp: { apply($0, evicting: false) }, with: currentRecencyRecords)
            } catch {
                logger.warning("Could not rewrite the recency journal", metadata: ["directory": "\(directory)", "error": "\(error)"])
            }
        }
        rewriteJournal()
        // Evictions here are not journaled one by one: the journal is rewritten after them.
        if updateMetadataSize(journaling: false) {
            rewriteJournal()
            updateMetadataSize()
        }
        // The records of reads and writes made during the walk follow the rewritten journal.
        journal.resume()
        flushJournal()
        indexing.finish()
    }

    /// Walks the folder: the entry files found, and abandoned temporary files deleted. A walk that
    /// fails part way is logged and gives what it found.
    private func walkFolder() -> [FoundFile] {
        var found: [FoundFile] = []
        var foreign = 0
        // File times are the system's, whatever clock the store was given.
        let now = Self.milliseconds(Date())
        do {
            try folder.walk { item, directory in
                switch item {
                case .entry(let digest, let status):
                    found.append(FoundFile(
                        digest: digest,
                        size: min(status.size, Self.largestIndexedSize),
                        allocated: min(status.allocated, Self.largestIndexedSize),
                        modified: status.modified,
                        identity: status.identity
                    ))
                case .temporary(let location, let writer, let status) where Self.isAbandoned(writer: writer, status: status, now: now):
                    location.name.withCString { name in
                        // Only if it is still the file examined.
                        if POSIX.status(of: name, in: directory)?.identity == status.identity { _ = unlinkat(directory, name, 0) }
                    }
                case .misplaced, .foreign:
                    foreign += 1
                default:
                    break
                }
            }
        } catch {
            logger.warning(
                "Could not index the whole FileStore directory; the files not listed are not counted until read",
                metadata: ["directory": "\(directory)", "error": "\(error)"]
            )
        }
        if foreign > 0 {
            logger.warning(
                "The store's folder holds things that are not its own; they are left alone (haneke verify lists them)",
                metadata: ["directory": "\(directory)", "count": "\(foreign)"]
            )
        }
        return found
    }
}

extension FileStore {
    /// An entry file found by a walk of the folder.
    struct FoundFile {
        var digest: KeyDigest
        var size: Int
        var allocated: Int
        var modified: Int64
        var identity: FileIdentity
    }

    /// The most one file counts for in the index (256 TiB): a sparse or hostile file cannot overflow
    /// the total size, and a file this large is over any capacity anyway.
    static let largestIndexedSize = 1 << 48

    /// A temporary file is abandoned when its writer is no longer running, or when it is over an
    /// hour old (its process id may have been reused).
    static func isAbandoned(writer: Int32, status: FileStatus, now: Int64) -> Bool {
        (writer != POSIX.processID && !POSIX.processExists(writer)) || status.modified < now - 3_600_000
    }

    /// The digests read or written after the journal's last session record (by record order, not
    /// by time, so clocks cannot blur it), minus those removed since.
    static func usedSinceLastSessionRecord(_ records: [RecencyJournal.Record]) -> Set<KeyDigest> {
        guard let start = records.lastIndex(where: { $0.kind == .session }) else { return [] }
        var used = Set<KeyDigest>()
        for record in records[(start + 1)...] {
            switch record.kind {
            case .access, .write: used.insert(record.digest)
            case .removal: used.remove(record.digest)
            case .session, .queue: break
            }
        }
        return used
    }

    /// Orders files from least to most recently used: the journal's order for the files it knows,
    /// with the other files merged in by modification time. Returns each file with its last access
    /// and, under the adaptive policy, its queue and read counter (`nil` for a file the journal does
    /// not know): the journal is replayed through adaptive queues (a write enters the small queue,
    /// a read bumps the counter, a queue record restores what a compaction saved), and the files
    /// come from each queue's oldest entry to its newest, small queue first.
    static func recencyOrder(
        of files: [FoundFile], journal: [RecencyJournal.Record], policy: EvictionPolicy = .leastRecentlyUsed
    ) -> [(FoundFile, Int64, UInt8?)] {
        var replay = LRUList<KeyDigest, Int64>(policy: policy, countLimit: nil, costLimit: nil)
        for record in journal {
            switch record.kind {
            case .access, .write: replay.setValue(record.time, forKey: record.digest, cost: 0, expiry: .infinity)
            case .removal: replay.removeValue(forKey: record.digest)
            case .queue: replay.restoreAdaptiveMark(UInt8(truncatingIfNeeded: record.time), forKey: record.digest)
            case .session: break
            }
        }
        var byDigest = Dictionary(files.map { ($0.digest, $0) }, uniquingKeysWith: { first, _ in first })
        var known: [(FoundFile, Int64, UInt8?)] = []
        for digest in replay.keysByRecency.reversed() {
            if let file = byDigest.removeValue(forKey: digest) {
                known.append((file, replay.peekValue(forKey: digest) ?? file.modified, replay.adaptiveMark(forKey: digest)))
            }
        }
        let unknown = byDigest.values.sorted { ($0.modified, $0.digest.high, $0.digest.low) < ($1.modified, $1.digest.high, $1.digest.low) }
            .map { ($0, $0.modified, UInt8?.none) }

        var merged: [(FoundFile, Int64, UInt8?)] = []
        merged.reserveCapacity(known.count + unknown.count)
        var i = 0
        var j = 0
        while i < known.count || j < unknown.count {
            if j == unknown.count || (i < known.count && known[i].1 <= unknown[j].1) {
                merged.append(known[i])
                i += 1
            } else {
                merged.append(unknown[j])
                j += 1
            }
        }
        return merged
    }
}
