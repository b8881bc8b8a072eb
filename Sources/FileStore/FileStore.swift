public import Foundation
@_spi(HanekeInternals) public import HanekeProtocols
public import Logging
public import Dispatch
import Synchronization

/// A least-recently-used store of bytes on disk: one self-describing file per key, named by the MD5
/// of the key (DESIGN §5).
///
/// ```swift
/// let disk = try FileStore(directory: "/var/cache/myapp", capacity: 500 << 20)
/// try disk.setValue(Data("hello".utf8), forKey: "greeting")     // synchronous, blocks on I/O
/// let greeting = try await disk.value(forKey: "greeting")        // async, on a thread pool
/// ```
///
/// - Files: `<directory>/<H0H1>/<H0…H31>`, the upper-case hex MD5 of the key's UTF-8 bytes, sharded
///   by its first two digits. Each file starts with a header holding the original key (compared on
///   every read), the creation and expiry times and the payload length, then the payload. A file
///   that is damaged, truncated, expired or holds another key is a miss; damaged files are deleted
///   and counted as errors.
/// - Writes go to a temporary file in the same folder, then `rename(2)` over the final name: a
///   reader never sees a partial value and a crash never leaves one. Temporary files left by a
///   crashed process are deleted when a store opens the directory.
/// - Recency and sizes are the store's own index, kept in memory and in an append-only journal in
///   the directory, so the LRU order survives a restart. Capacity is enforced on the write path,
///   evicting the least recently used entries first.
/// - The async methods run their I/O on a Dispatch queue (by default the global one), so they never
///   block Swift's cooperative threads on disk I/O; the hop costs about 1 µs. The synchronous
///   methods of the same names do the same work on the caller's thread.
/// - Two stores (in one process or two) may share a directory: each write is atomic and each read
///   checks the key, so neither ever returns a partial or wrong value. They do not share capacity
///   accounting or recency: each enforces its capacity over what it knows (what it wrote or read,
///   and what was there when it opened).
public final class FileStore: Store {
    /// The type of the keys: any string is a valid key.
    public typealias Key = String
    /// The type of the values.
    public typealias Value = Data

    /// The directory the store keeps its files in.
    public let directory: String
    /// The store's limits and policies.
    public let configuration: Configuration
    /// The name of this store's layer in ``layerStatistics``; `"file"` by default.
    public let name: String

    let logger: Logger
    let ioQueue: DispatchQueue
    let state: Locked<IndexState>
    let journal: RecencyJournal
    let counter = StatisticsCounter()
    /// One lock per stripe of keys. Each guards an unused `Int` rather than nothing: ThreadSanitizer
    /// places a zero-sized value's accesses at the object's header and reports the reference counts
    /// kept there as races with them.
    private let stripes: [Locked<Int>]
    /// When this store opened the directory, in milliseconds: recorded in the journal so that the
    /// next store to open it knows which entries this session used.
    let sessionStart: Int64
    /// The entries read or written during the previous session (after the last session record of
    /// the journal found at open).
    let lastSession = Locked<Set<KeyDigest>>([])

    /// What the store knows of its files: recency order, size and last access of each entry.
    struct IndexState: Sendable {
        var entries = LRUList<KeyDigest, EntryRecord>()
    }

    /// An entry in the index; its size is the entry's cost in the `LRUList`.
    struct EntryRecord: Sendable {
        var size: Int
        var lastAccess: Int64
        /// The file this store last wrote or indexed for the entry. Eviction deletes the file only
        /// if it is still this one, so a store never deletes another process's newer write.
        var identity: FileIdentity?
    }

    /// An entry taken out of the index whose file is to be deleted.
    struct Victim: Sendable {
        var digest: KeyDigest
        var identity: FileIdentity?
    }

    /// Opens (and creates, if needed) a store in `directory`, indexing the files already there and
    /// evicting the least recently used ones if they exceed the configured limits.
    /// - Parameters:
    ///   - directory: The path of the store's directory.
    ///   - configuration: Limits and policies.
    ///   - name: The layer name reported in statistics.
    ///   - logger: Where damaged files and failed clean-ups are logged.
    ///   - ioQueue: Where the async methods run their blocking I/O; the global queue by default.
    /// - Throws: `StoreError` with code `io` when the directory cannot be created or read.
    /// - Performs disk I/O: one `stat` per file already in the directory.
    public init(
        directory: String,
        configuration: Configuration = Configuration(),
        name: String = "file",
        logger: Logger = Logger(label: "haneke.file"),
        ioQueue: DispatchQueue = .global()
    ) throws {
        self.directory = directory
        self.configuration = configuration
        self.name = name
        self.logger = logger
        self.ioQueue = ioQueue
        self.state = Locked(IndexState())
        self.journal = RecencyJournal(directory: directory)
        self.stripes = (0..<64).map { _ in Locked(0) }
        self.sessionStart = Self.milliseconds(configuration.clock.now())
        try openDirectory()
    }

    /// Opens a store in `directory` with a capacity in bytes.
    /// - Parameters:
    ///   - directory: The path of the store's directory.
    ///   - capacity: The most bytes its files may take; `nil` for no limit.
    /// - Throws: `StoreError` with code `io` when the directory cannot be created or read.
    public convenience init(directory: String, capacity: Int?) throws {
        try self.init(directory: directory, configuration: Configuration(capacity: capacity))
    }

    /// Opens a store in the directory at a file URL.
    /// - Parameters:
    ///   - directory: A file URL of the store's directory.
    ///   - configuration: Limits and policies.
    ///   - name: The layer name reported in statistics.
    /// - Throws: `StoreError` with code `io` when the directory cannot be created or read.
    public convenience init(directory: URL, configuration: Configuration = Configuration(), name: String = "file") throws {
        try self.init(directory: directory.path, configuration: configuration, name: name)
    }

    deinit {
        try? journal.flush()
    }

    // MARK: - Synchronous API

    /// Returns the value for `key`, or `nil` when there is none, it has expired, or its file is
    /// damaged or belongs to another key (damaged and expired files are deleted).
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `io` when the file exists but cannot be read.
    /// - Performs disk I/O: `open`, one `read`, `close` in the common case.
    public func value(forKey key: String) throws -> Data? {
        try readValue(forKey: key)
    }

    /// Stores `value` for `key`, atomically replacing any previous value, then evicts the least
    /// recently used entries until the store is within its limits.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` with code `valueTooLarge` when the file would exceed the whole capacity,
    ///   `invalidKey` for a key over 16 MiB, `io` when the file cannot be written.
    /// - Performs disk I/O: a temporary file, `writev`, `rename`, and one `unlink` per eviction.
    public func setValue(_ value: Data, forKey key: String) throws {
        try writeValue(value, forKey: key)
    }

    /// Removes the value for `key`; removing a missing key is a no-op.
    /// - Parameter key: The key to remove.
    /// - Throws: `StoreError` with code `io` when the file exists but cannot be removed.
    /// - Performs disk I/O.
    public func removeValue(forKey key: String) throws {
        try deleteValue(forKey: key)
    }

    /// Removes every entry. The store stays usable, also while this runs: writes made after it
    /// returns are kept.
    /// - Throws: `StoreError` with code `io` when the files cannot be removed.
    /// - Performs disk I/O: proportional to the number of files.
    public func removeAll() throws {
        try deleteAll()
    }

    /// Whether a valid, unexpired value exists for `key`; reads the file's header only and does not
    /// change the recency order.
    /// - Parameter key: The key to look up.
    /// - Returns: `true` when a read would hit.
    /// - Performs disk I/O.
    public func containsValue(forKey key: String) -> Bool {
        let digest = KeyDigest(key: key)
        guard let (header, storedKey) = try? readHeader(atPath: path(for: digest)) else { return false }
        return storedKey == key && !isExpired(header)
    }

    /// The path of the file that holds (or would hold) the value for `key`:
    /// `<directory>/<H0H1>/<H0…H31>`, the upper-case hex MD5 of the key's UTF-8 bytes.
    /// - Parameter key: Any string.
    /// - Returns: The file's path.
    public func path(forKey key: String) -> String {
        path(for: KeyDigest(key: key))
    }

    /// The total size of the store's files, headers included, as far as this store knows.
    public var totalSize: Int { state.withLock { $0.entries.totalCost } }

    /// The number of entries, as far as this store knows.
    public var count: Int { state.withLock { $0.entries.count } }

    /// Evicts least recently used entries until the files take at most `size` bytes.
    /// - Parameter size: The total size to stay within; `0` empties the store.
    /// - Performs disk I/O: one `unlink` per evicted entry.
    public func trim(toSize size: Int) {
        let victims = state.withLock { state in
            Self.evict(&state.entries, countLimit: nil, capacity: max(0, size))
        }
        removeEvicted(victims)
    }

    /// Writes the buffered recency records to the journal, so that the LRU order survives even an
    /// abrupt end of the process. Called automatically every few hundred operations and when the
    /// store is released.
    /// - Throws: `StoreError` with code `io` when the journal cannot be written.
    public func flush() throws {
        do {
            try journal.flush()
        } catch {
            throw StoreError(.io, "Could not write the recency journal of \(directory): \(error)", cause: error)
        }
    }

    /// This store's counters.
    public var statistics: StoreStatistics { counter.snapshot }

    // MARK: - Store

    /// Returns the value for `key`, reading the file on the I/O queue.
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func value(forKey key: String) async throws -> Data? {
        try await BlockingIO.run(on: ioQueue) { try self.readValue(forKey: key) }
    }

    /// Stores `value` for `key`, writing the file on the I/O queue.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` (`valueTooLarge`, `invalidKey`, `io`); `CancellationError` if
    ///   cancelled before it ran.
    public func setValue(_ value: Data, forKey key: String) async throws {
        try await BlockingIO.run(on: ioQueue) { try self.writeValue(value, forKey: key) }
    }

    /// Removes the value for `key` on the I/O queue.
    /// - Parameter key: The key to remove.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func removeValue(forKey key: String) async throws {
        try await BlockingIO.run(on: ioQueue) { try self.deleteValue(forKey: key) }
    }

    /// Removes every entry on the I/O queue.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func removeAll() async throws {
        try await BlockingIO.run(on: ioQueue) { try self.deleteAll() }
    }

    /// One layer, named ``name``.
    public var layerStatistics: [LayerStatistics] {
        [LayerStatistics(name: name, statistics: counter.snapshot)]
    }

    // MARK: - Shared internals

    func path(for digest: KeyDigest) -> String {
        digest.path(in: directory)
    }

    func shardPath(for digest: KeyDigest) -> String {
        directory + "/" + digest.shard
    }

    /// The lock that orders renames and removals of one key's file (never held for reads, and
    /// never around the index lock's I/O: only around one `rename` or `unlink`).
    func stripe(for digest: KeyDigest) -> Locked<Int> {
        stripes[Int(digest.firstByte & 63)]
    }

    /// Runs `body` with every stripe locked: no file can be renamed or removed meanwhile.
    func withAllStripes<T>(_ body: () throws -> T) rethrows -> T {
        func lock(from index: Int) throws -> T {
            guard index < stripes.count else { return try body() }
            return try stripes[index].withLock { _ in try lock(from: index + 1) }
        }
        return try lock(from: 0)
    }

    /// A temporary name unique in this process (the counter is shared by every store, so two stores
    /// on one directory never collide) and, with the process id, on this machine.
    func nextTemporaryName() -> String {
        ".tmp.\(POSIX.processID).\(Self.temporaryCounter.wrappingAdd(1, ordering: .relaxed).newValue)"
    }

    private static let temporaryCounter = Atomic<UInt64>(0)

    func now() -> Int64 {
        Self.milliseconds(configuration.clock.now())
    }

    func isExpired(_ header: EntryHeader) -> Bool {
        guard let expires = header.expires else { return false }
        return now() >= expires
    }

    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// Records an access in the journal, flushing it when its buffer is full.
    func journalAccess(_ digest: KeyDigest, at time: Int64) {
        journalRecord(.init(kind: .access, digest: digest, time: time))
    }

    func journalRecord(_ record: RecencyJournal.Record) {
        guard journal.append(record) else { return }
        flushJournal()
    }

    /// Flushes the journal and compacts it when it holds several records per entry.
    func flushJournal() {
        do {
            try journal.flush()
            let entries = count
            if journal.recordsInFile > 4 * entries + 16_384 {
                try journal.rewrite(with: currentRecencyRecords())
            }
        } catch {
            logger.warning("Could not write the recency journal", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
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
    /// - Performs disk I/O: one header read per entry.
    public func entriesUsedInLastSession() -> [Entry] {
        let used = lastSession.withLock { $0 }
        guard !used.isEmpty else { return [] }
        return entries(where: { used.contains($0) })
    }

    /// Reads the value for `key` without counting it or changing the recency order, on the I/O
    /// queue: for background work (preloading) that must not look like use.
    /// - Parameter key: The key.
    /// - Returns: The value, or `nil` when there is no valid, unexpired entry.
    /// - Throws: `StoreError` with code `corrupted` or `io`.
    public func peekValue(forKey key: String) async throws -> Data? {
        let directory = self.directory
        return try await BlockingIO.run(on: ioQueue) { () throws -> Data? in
            try FileStore.payload(forKey: key, inDirectory: directory)
        }
    }

    /// Removes least recently used entries from the index until it is within the limits; returns
    /// them so their files can be deleted outside the lock.
    static func evict(_ entries: inout LRUList<KeyDigest, EntryRecord>, countLimit: Int?, capacity: Int?) -> [Victim] {
        var victims: [Victim] = []
        entries.evict(toCount: countLimit, toCost: capacity) { digest, record in
            victims.append(Victim(digest: digest, identity: record.identity))
        }
        return victims
    }

    /// `evict` to the configured count limit and capacity.
    func evictToLimits(_ entries: inout LRUList<KeyDigest, EntryRecord>) -> [Victim] {
        Self.evict(&entries, countLimit: configuration.countLimit, capacity: configuration.capacity)
    }

    /// Deletes the files of evicted entries — unless the key was written or read again since it was
    /// evicted (it is then back in the index, and its file must stay), or the file at the path is no
    /// longer the one this store knew (another process has written it since). Must not be called
    /// with a stripe lock held.
    /// - Parameter journaling: Whether to journal the removals; opening does not, since it rewrites
    ///   the journal from the index afterwards.
    func removeEvicted(_ victims: [Victim], journaling: Bool = true) {
        guard !victims.isEmpty else { return }
        let time = now()
        for victim in victims {
            let path = path(for: victim.digest)
            let removed = stripe(for: victim.digest).withLock { _ -> Bool in
                guard !state.withLock({ $0.entries.contains(victim.digest, now: -.infinity) }) else { return false }
                if let known = victim.identity {
                    guard let current = POSIX.identity(ofPath: path), current.isSameFile(as: known) else { return false }
                }
                do {
                    return try POSIX.unlink(path)
                } catch {
                    counter.recordError()
                    logger.warning("Could not delete an evicted file", metadata: ["error": "\(error)"])
                    return false
                }
            }
            if removed, journaling { journalRecord(.init(kind: .removal, digest: victim.digest, time: time)) }
        }
        counter.recordEvictions(victims.count)
    }
}
