public import Foundation
public import HanekeProtocols
public import Logging
import StoreFolders
import Synchronization

/// A least-recently-used store of bytes on disk: one self-describing file per key, named by the MD5
/// of the key.
///
/// ```swift
/// let disk = try FileStore(directory: "/var/cache/myapp", capacity: 500 << 20)
/// try disk.setValue(Data("hello".utf8), forKey: "greeting")     // synchronous, blocks on I/O
/// let greeting = try await disk.value(forKey: "greeting")        // async, on a thread pool
/// ```
///
/// - Files: `<directory>/<H0H1>/<H0…H31>`, the upper-case hex MD5 of the key's UTF-8 bytes, sharded
///   by its first two digits. Each file starts with a header holding the original key (compared on
///   every read), the creation and expiry times, the payload length and the entry's metadata, then
///   the payload (see `setEntry(_:forKey:)` and `attributes(forKey:)`). A file
///   that is damaged, truncated, expired or holds another key is a miss; damaged files are deleted
///   and counted as errors.
/// - The folder is the store's own: a marker file `.haneke-store` says so. A store creates the
///   folder (and its parents) when it is missing and adopts it when it is empty; an existing folder
///   that holds anything but no marker is refused (`notAStore`), never adopted or cleaned. So is a
///   folder that belongs to another user or that others may write to (`unsafeDirectory`). Folders
///   are made `0700` and files `0600` (see ``Access`` to share with a group).
/// - Below the folder, every operation goes through directory descriptors (`openat`, `renameat`,
///   `unlinkat`, `mkdirat`, `fstatat`) and follows no link: a link, a FIFO or a folder planted
///   anywhere inside is a miss or a clear error, never a way out of the folder. The store only ever
///   creates or removes names of its own grammar (`.haneke-store`, `.haneke-journal`,
///   `.haneke-tmp.<pid>.<n>`, shard folders, entry files); anything else is left alone.
/// - Writes go to a temporary file in the same folder, then `renameat` over the final name: a
///   reader never sees a partial value and a crash never leaves one. Temporary files left by a
///   crashed process are deleted when a store opens the folder.
/// - Capacity is disk space: the blocks the files take (`st_blocks × 512`, what `du` counts),
///   the store's marker and journal included (``totalSize`` plus ``metadataSize``). An entry
///   count limit guards the file system's inodes.
/// - Recency and sizes are the store's own index, kept in memory and in an append-only journal in
///   the folder, so the LRU order survives a restart; the journal is written at most
///   ``Configuration/recencyFlushInterval`` after a read or a write, and at `exit()`. Capacity is
///   enforced on the write path, evicting the least recently used entries first.
/// - Opening does not wait for the index: the store walks its folder as a job of an executor of
///   the indexes' own (a few walks at a time, however many stores open) and serves reads, writes and removals meanwhile; the capacity is enforced once the index is
///   complete, and what needs the whole index (``count``, ``totalSize``, ``entries()``,
///   ``trim(toSize:)``, ``removeAll()-91rby``) waits for it (see ``isIndexed`` and
///   ``waitUntilIndexed()-3lm97``).
/// - The async methods run their I/O on an `IOExecutor` (by default the shared one, a bounded
///   number of threads), so they never block Swift's cooperative threads on disk I/O; the hop costs
///   about 1–3 µs. The synchronous methods of the same names do the same work on the caller's
///   thread.
/// - Any number of stores (a server's worker processes, or several stores in one process) may use
///   one folder at once, and the capacity holds for the folder as a whole. Each write is atomic and
///   each read checks the key, so no store ever returns a partial or wrong value. The stores share
///   their accounting and their recency through the journal: each appends its writes and removals
///   (at once, once it knows it is not alone) and its reads (within the flush interval), and reads
///   what the others appended before each write, so each one's index is the folder's and each
///   evicts what exceeds the capacity, least recently used first, whoever used it. A store knows
///   it is not alone when another had the folder open as it opened it (each holds a shared `flock`
///   on the marker), or at its first write after the other opened the folder.
public final class FileStore: Store {
    /// The type of the keys: any string is a valid key.
    public typealias Key = String
    /// The type of the values.
    public typealias Value = Data

    /// Who may read and write a store's files: `FolderAccess` (HanekeProtocols), under the name
    /// this type has always given it.
    public typealias Access = FolderAccess

    /// The name of the marker file that makes a folder a store's: `.haneke-store`, which starts
    /// with the magic `HNKS` and the folder's format version.
    public static let markerFileName = StoreNames.marker

    /// The directory the store keeps its files in.
    public let directory: String
    /// The store's limits and policies.
    public let configuration: Configuration
    /// The name of this store's layer in ``layerStatistics``; `"file"` by default.
    public let name: String

    let logger: Logger
    /// Where the async methods, the journal's timed flushes and the release's last flush run.
    public let executor: IOExecutor
    let folder: StoreFolder
    /// The index. Held only for work in memory (the `LRUList`, the metadata size): no system call
    /// runs under it, and no other lock is taken while it is held.
    ///
    /// Lock order, from every nested `withLock` in FileStore (a lock may be held while taking the
    /// ones after it, never the ones before):
    ///
    /// 1. one stripe lock (``stripe(for:)``; never two at once: eviction and `removeAll` take them
    ///    one key after another);
    /// 2. `state`.
    ///
    /// The other locks are never held together with these, nor with each other except as noted:
    /// - the journal's `file` lock, then its `pending` lock (``RecencyJournal/flush()``); taken
    ///   with no stripe and not `state` held, and taking none of the store's locks;
    /// - `RecencyJournal.live` and `RecencyJournal.closing` (process-wide), `lastSession`, the
    ///   folder's `retired` lock, and `openings` (process-wide, the stores being indexed): each held
    ///   alone, for a dictionary, a set or an array edit.
    ///
    /// The thread that builds the index (``startIndexing()``) takes `state` alone to merge what it
    /// found, and the stripes only through eviction, as a write does; no lock is held while anyone
    /// waits for the index.
    ///
    /// Blocking I/O under a lock: a stripe lock is held around one key's file operations (a
    /// `renameat`, or an `fstatat` and an `unlinkat`) by design, so a writer of a key waits for one
    /// file operation of another key in its stripe at most (`removeAll` lists each shard with no
    /// lock held, then removes its files key by key). The journal's `file` lock is held around its
    /// appends and its rewrites; reads and writes only append to its buffer (under `pending`, no
    /// I/O) and leave flushes to the executor, so only flushes, compactions, `removeAll` and
    /// opening wait for it.
    let state: Locked<IndexState>
    let journal: RecencyJournal
    /// This store's shared lock on the folder, and whether another store had it open.
    let presence: FolderPresence
    /// Whether another store shares the folder (it had the folder open when this one opened it, or
    /// its records have been seen in the journal since): this store then appends its writes to the
    /// journal at once (see ``journalWrite(_:at:evicted:)``).
    let sharing: Atomic<Bool>
    let counter = StatisticsCounter()
    /// The file system's allocation unit, for the estimate that refuses a value too large.
    let blockSize: Int
    /// One lock per stripe of keys, ordering the renames and removals of a key's file. Each guards
    /// an unused `Int` rather than nothing: ThreadSanitizer places a zero-sized value's accesses at
    /// the object's header and reports the reference counts kept there as races with them.
    ///
    /// Lock order: a stripe, then `state`, never two stripes at once; the journal's locks are
    /// taken with neither held (see ``state``).
    private let stripes: [Locked<Int>]
    /// When this store opened the directory, in milliseconds: recorded in the journal so that the
    /// next store to open it knows which entries this session used.
    let sessionStart: Int64
    /// The entries read or written during the previous session (after the last session record of
    /// the journal found at open). Its lock is held alone, to set or copy the set.
    let lastSession = Locked<Set<KeyDigest>>([])
    /// When the previous session began, in milliseconds (the time of that session record), or
    /// `nil` when none is recorded. Set with ``lastSession``; its lock is held alone.
    let lastSessionStart = Locked<Int64?>(nil)
    /// Whether the index is complete, and what waits for it (see ``isIndexed``).
    let indexing = Indexing()

    /// What the store knows of its files: recency order, size and last access of each entry.
    struct IndexState: Sendable {
        var entries: LRUList<KeyDigest, EntryRecord>
        /// The bytes the marker and the journal take on disk, counted against the capacity.
        var metadataSize = 0
        /// While the index is being built (`nil` once it is complete): the digests whose entry this
        /// store has set or removed since the walk began — written, read and added, removed,
        /// discarded. What the walk found for them is dropped: the store's own operation knows
        /// better (a file removed stays removed; a file written counts once, with its new size).
        /// Eviction waits for the index meanwhile.
        var settledWhileIndexing: Set<KeyDigest>? = []

        /// Records that this store has set or removed the entry of `digest` (see
        /// ``settledWhileIndexing``).
        mutating func settle(_ digest: KeyDigest) {
            settledWhileIndexing?.insert(digest)
        }
    }

    /// An entry in the index; the bytes it takes on disk are also its cost in the `LRUList`.
    struct EntryRecord: Sendable {
        /// The length of the file, header included.
        var fileSize: Int
        /// The bytes the file takes on disk.
        var allocated: Int
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

    /// Opens (and creates, if needed) a store in `directory`, and starts indexing the files already
    /// there in the background; once they are indexed, the least recently used are evicted if they
    /// exceed the configured limits (see ``isIndexed``).
    /// - Parameters:
    ///   - directory: The path of the store's directory: a new or empty folder, or one a store made.
    ///   - configuration: Limits and policies.
    ///   - name: The layer name reported in statistics.
    ///   - logger: Where damaged files and failed clean-ups are logged.
    ///   - executor: Where the async methods run their blocking I/O; `IOExecutor.shared` by default.
    /// - Throws: `StoreError` with code `notAStore` when the folder holds files but is not a
    ///   store's, `unsafeDirectory` when it belongs to another user or others may write to it, `io`
    ///   when it cannot be created or read.
    /// - Performs disk I/O: opens and checks the folder and its marker. The files already there are
    ///   indexed afterwards (one `fstatat` each), as a job of the indexes' own executor.
    public init(
        directory: String,
        configuration: Configuration = Configuration(),
        name: String = "file",
        logger: Logger = Logger(label: "haneke.file"),
        executor: IOExecutor = .shared
    ) throws {
        self.directory = directory
        self.configuration = configuration
        self.name = name
        self.logger = logger
        self.executor = executor
        RecencyJournal.closePending(inFolder: directory)
        self.folder = try StoreFolder(path: directory, access: configuration.access, purpose: .store)
        self.presence = FolderPresence(folder: folder.descriptor)
        self.sharing = Atomic(presence.othersPresent)
        if presence.othersPresent {
            logger.debug(
                "Another store has this folder open (in another process, or another FileStore in this one); the two share its capacity through the journal",
                metadata: ["directory": "\(directory)"]
            )
        }
        self.blockSize = max(512, (try? POSIX.status(of: folder.descriptor, path: directory).blockSize) ?? 4096)
        self.state = Locked(IndexState(entries: Self.makeIndex(configuration)))
        let sessionStart = Self.milliseconds(configuration.clock.now())
        self.sessionStart = sessionStart
        self.journal = RecencyJournal(folder: folder, sessionStart: sessionStart)
        self.stripes = (0..<64).map { _ in Locked(0) }
        // What the marker and the journal take, for the size checks of writes made while indexing
        // (a journal is written once the store is indexed: a block at least).
        let metadata = (POSIX.status(of: StoreNames.marker, in: folder.descriptor)?.allocated ?? 0)
            + max(POSIX.status(of: StoreNames.journal, in: folder.descriptor)?.allocated ?? 0, blockSize)
        state.withLock { $0.metadataSize = metadata }
        // The journal is read by the walk and rewritten after it: this session's records wait.
        journal.pause()
        startIndexing()
    }

    /// Opens a store in `directory` with a capacity in bytes.
    /// - Parameters:
    ///   - directory: The path of the store's directory.
    ///   - capacity: The most bytes its files may take on disk; `nil` for no limit.
    /// - Throws: `StoreError` with code `notAStore`, `unsafeDirectory` or `io` (see
    ///   ``init(directory:configuration:name:logger:executor:)``).
    public convenience init(directory: String, capacity: Int?) throws {
        try self.init(directory: directory, configuration: Configuration(capacity: capacity))
    }

    /// Opens a store in the directory at a file URL.
    /// - Parameters:
    ///   - directory: A file URL of the store's directory.
    ///   - configuration: Limits and policies.
    ///   - name: The layer name reported in statistics.
    /// - Throws: `StoreError` with code `notAStore`, `unsafeDirectory` or `io` (see
    ///   ``init(directory:configuration:name:logger:executor:)``).
    public convenience init(directory: URL, configuration: Configuration = Configuration(), name: String = "file") throws {
        try self.init(directory: directory.path, configuration: configuration, name: name)
    }

    /// The journal's last records are written on the executor, not on the thread that releases the
    /// store (which may be one of Swift's cooperative threads); a store opened on the same folder
    /// in this process writes them first.
    deinit {
        journal.closeLater(on: executor)
    }

    // MARK: - Synchronous API

    /// Returns the value for `key`, or `nil` when there is none, it has expired, or its file is
    /// damaged or belongs to another key (damaged and expired files are deleted).
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `io` when the file exists but cannot be read.
    /// - Performs disk I/O: `openat2`, one `read`, `close` in the common case.
    public func value(forKey key: String) throws -> Data? {
        try blockingValue(forKey: key)
    }

    /// Stores `value` for `key`, atomically replacing any previous value, then evicts the least
    /// recently used entries until the store is within its limits.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` with code `valueTooLarge` when the file would take more than the whole
    ///   capacity, `invalidKey` for a key over 16 MiB, `io` when the file cannot be written.
    /// - Performs disk I/O: a temporary file, `writev`, `renameat`, and one `unlinkat` per eviction.
    public func setValue(_ value: Data, forKey key: String) throws {
        try blockingSetValue(value, forKey: key)
    }

    /// Removes the value for `key`; removing a missing key is a no-op.
    /// - Parameter key: The key to remove.
    /// - Throws: `StoreError` with code `io` when the file exists but cannot be removed.
    /// - Performs disk I/O.
    public func removeValue(forKey key: String) throws {
        try blockingRemoveValue(forKey: key)
    }

    /// Removes every entry. The store stays usable, also while this runs: writes made after it
    /// returns are kept. Files that are not the store's are left where they are.
    /// - Throws: `StoreError` with code `io` when the files cannot be removed.
    /// - Performs disk I/O: proportional to the number of files. Waits for the index first (see
    ///   ``isIndexed``).
    public func removeAll() throws {
        waitUntilIndexed()
        try blockingRemoveAll()
    }

    /// Whether a valid, unexpired value exists for `key`; reads the file's header only and does not
    /// change the recency order.
    /// - Parameter key: The key to look up.
    /// - Returns: `true` when a read would hit.
    /// - Performs disk I/O.
    public func containsValue(forKey key: String) -> Bool {
        let digest = KeyDigest(key: key)
        let now = now()
        let outcome = try? readEntry(digest, extent: .header, knownSize: nil) { header, reader in
            reader.hasKey(key, header: header) && !header.isExpired(at: now)
        }
        if case .entry(true)? = outcome { return true }
        return false
    }

    /// The path of the file that holds (or would hold) the value for `key`:
    /// `<directory>/<H0H1>/<H0…H31>`, the upper-case hex MD5 of the key's UTF-8 bytes.
    /// - Parameter key: Any string.
    /// - Returns: The file's path.
    public func path(forKey key: String) -> String {
        path(for: KeyDigest(key: key))
    }

    /// The bytes the entries' files take on disk — allocated blocks, what `du` counts — as far as
    /// this store knows (what other stores sharing the folder did included, as of their last
    /// journal records); `0` when the store is empty. The capacity bounds this figure plus
    /// ``metadataSize``.
    ///
    /// Blocks the calling thread until the store has indexed the files it found when it opened
    /// (see ``isIndexed``); from async code, `await` ``waitUntilIndexed()-3lm97`` first.
    public var totalSize: Int {
        waitUntilIndexed()
        catchUp(evicting: false)
        return state.withLock { $0.entries.totalCost }
    }

    /// The bytes the store's own files, its marker and its journal, take on disk. `du -s` of the
    /// folder is ``totalSize`` plus this, plus the folders themselves.
    ///
    /// Blocks the calling thread until the store is indexed (see ``isIndexed``).
    public var metadataSize: Int {
        waitUntilIndexed()
        return state.withLock { $0.metadataSize }
    }

    /// The number of entries, as far as this store knows.
    ///
    /// Blocks the calling thread until the store is indexed (see ``isIndexed``); from async code,
    /// `await` ``waitUntilIndexed()-3lm97`` first.
    public var count: Int {
        waitUntilIndexed()
        catchUp(evicting: false)
        return state.withLock { $0.entries.count }
    }

    /// Evicts least recently used entries until the store's files take at most `size` bytes on disk
    /// (its marker and journal included, and two blocks kept free for the journal, so a size below
    /// theirs empties the store).
    /// - Parameter size: The total size to stay within; `0` empties the store.
    /// - Throws: `StoreError` with code `io` when some evicted files could not be deleted (after
    ///   trying every one): how many, and the first failure as the cause.
    /// - Performs disk I/O: one `unlinkat` per evicted entry. Waits for the index first (see
    ///   ``isIndexed``).
    public func trim(toSize size: Int) throws {
        waitUntilIndexed()
        catchUp(evicting: false)
        let victims = state.withLock { state in
            Self.evict(&state.entries, countLimit: nil, capacity: entryCapacity(size, metadataSize: state.metadataSize))
        }
        let failures = removeEvicted(victims)
        if let first = failures.first {
            throw Self.ioError(
                "Could not delete \(failures.count) of the \(victims.count) files evicted from \(directory)",
                first
            )
        }
    }

    /// Writes the buffered recency records to the journal now, rather than within
    /// ``Configuration/recencyFlushInterval``. Waits for the index first (see ``isIndexed``): until
    /// the store has indexed its folder, its records wait, so that the walk reads the journal as
    /// the previous session left it.
    /// - Throws: `StoreError` with code `io` when the journal cannot be written.
    public func flush() throws {
        waitUntilIndexed()
        do {
            try journal.flush()
            updateMetadataSize()
        } catch {
            throw Self.ioError("Could not write the recency journal of \(directory)", error)
        }
    }

    /// This store's counters.
    public var statistics: StoreStatistics { counter.snapshot }

    // MARK: - Store

    /// Returns the value for `key`, reading the file on the I/O executor.
    /// - Parameter key: The key to look up.
    /// - Returns: The stored bytes, or `nil`.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func value(forKey key: String) async throws -> Data? {
        try await valueOnExecutor(forKey: key)
    }

    /// Reads the file for `key` and passes its bytes through `transform`, both in one job of the I/O
    /// executor: a `CompressedStore` or a `CodedStore` over this store decompresses and decodes
    /// there, and the caller's task resumes once, with the result. A file whose name and pages the
    /// kernel has cached is read on the caller's thread instead, without a hop, and a value of up
    /// to 64 KiB is transformed there too.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the stored bytes, on the executor (or the caller's thread).
    /// - Returns: What `transform` made of them, or `nil` on a miss.
    /// - Throws: `StoreError` with code `io`; what `transform` throws; `CancellationError` if
    ///   cancelled before it ran.
    public func value<Transformed: Sendable>(
        forKey key: String,
        transformedBy transform: @escaping @Sendable (Data) throws -> Transformed
    ) async throws -> Transformed? {
        try await valueOnExecutor(forKey: key, transformedBy: transform)
    }

    /// Stores `value` for `key`, writing the file on the I/O executor.
    /// - Parameters:
    ///   - value: The bytes to store.
    ///   - key: The key to store them under.
    /// - Throws: `StoreError` (`valueTooLarge`, `invalidKey`, `io`); `CancellationError` if
    ///   cancelled before it ran.
    public func setValue(_ value: Data, forKey key: String) async throws {
        try await setValueOnExecutor(value, forKey: key)
    }

    /// Removes the value for `key` on the I/O executor.
    /// - Parameter key: The key to remove.
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func removeValue(forKey key: String) async throws {
        try await removeValueOnExecutor(forKey: key)
    }

    /// Removes every entry on the I/O executor, once the store is indexed (waiting for the index
    /// blocks no thread; see ``isIndexed``).
    /// - Throws: `StoreError` with code `io`; `CancellationError` if cancelled before it ran.
    public func removeAll() async throws {
        try await removeAllOnExecutor()
    }

    /// One layer, named ``name``.
    public var layerStatistics: [LayerStatistics] {
        [LayerStatistics(name: name, statistics: counter.snapshot)]
    }

    // MARK: - Shared internals

    func path(for digest: KeyDigest) -> String {
        digest.path(in: directory)
    }

    /// The lock that orders renames and removals of one key's file (never held for reads: only
    /// around one key's `renameat` or `unlinkat` and the `openat` and `fstatat` that check it; see
    /// ``state`` for the lock order).
    func stripe(for digest: KeyDigest) -> Locked<Int> {
        stripes[Int(digest.firstByte & 63)]
    }

    func now() -> Int64 {
        Self.milliseconds(configuration.clock.now())
    }

    static func milliseconds(_ date: Date) -> Int64 {
        date.millisecondsSince1970
    }

    /// A `StoreError` with code `io` for a failed operation, carrying the system call's error
    /// number (a `StoreError` already made is passed on).
    static func ioError(_ message: String, _ error: any Error) -> StoreError {
        .ioFailure(message, error)
    }

    /// Opens the entry file of `digest` (never through a link) and reads it with the one reader.
    /// - Returns: `nil` when there is no file; otherwise the checked file or its damage.
    /// - Throws: `POSIX.Failure` when the file exists but cannot be read; `ForeignObject` for a
    ///   link, a folder or a FIFO at the entry's name.
    func readEntry<T>(
        _ digest: KeyDigest,
        extent: EntryFile.Extent,
        knownSize: Int?,
        _ body: (EntryHeader, inout WholeFileReader) -> T
    ) throws -> EntryFile.Outcome<T>? {
        let path = path(for: digest)
        guard let descriptor = try openEntry(digest, path: path) else { return nil }
        defer { POSIX.close(descriptor) }
        // (A `catch … where` clause here crashes the 6.3.1 compiler: go through `Result`.)
        let result = Result { () throws(POSIX.Failure) -> EntryFile.Outcome<T> in
            try EntryFile.read(descriptor, path: path, knownSize: knownSize, extent: extent, sizeLimit: configuration.capacity, body)
        }
        switch result {
        case .success(let outcome): return outcome
        case .failure(let failure) where failure.isNotARegularFile: throw ForeignObject(reason: "not a regular file (\(failure))")
        case .failure(let failure): throw failure
        }
    }

    /// Opens the entry file of `digest` for reading; `nil` when there is none.
    /// - Throws: `ForeignObject` for a symbolic link; `POSIX.Failure` otherwise.
    func openEntry(_ digest: KeyDigest, path: @autoclosure () -> String) throws -> Int32? {
        switch try POSIX.openEntry(in: folder.descriptor, digest, path: path()) {
        case .file(let descriptor): return descriptor
        case .missing: return nil
        case .symbolicLink: throw ForeignObject(reason: "a symbolic link")
        }
    }

    /// Something that is not an entry file at an entry's name (or a link where its shard folder
    /// should be).
    struct ForeignObject: Error {
        var reason: String
    }

    /// Reads the value for `key` without counting it or changing the recency order, on the I/O
    /// executor: for background work (preloading) that must not look like use. An expired entry is
    /// `nil` by this store's clock.
    /// - Parameter key: The key.
    /// - Returns: The value, or `nil` when there is no valid, unexpired entry.
    /// - Throws: `StoreError` with code `corrupted` for a damaged file, `io` when it cannot be read.
    public func peekValue(forKey key: String) async throws -> Data? {
        try await executor.run { try self.blockingPeekValue(forKey: key) }
    }

    /// ``peekValue(forKey:)``'s read, on the calling thread (blocks: disk I/O).
    /// - Parameter key: The key.
    /// - Returns: The value, or `nil` when there is no valid, unexpired entry.
    /// - Throws: `StoreError` with code `corrupted` for a damaged file, `io` when it cannot be read.
    package func blockingPeekValue(forKey key: String) throws -> Data? {
        try blockingPeekEntry(forKey: key)?.value
    }

    /// ``blockingPeekValue(forKey:)`` with the entry's attributes (blocks: disk I/O).
    /// - Parameter key: The key.
    /// - Returns: The entry, or `nil` when there is no valid, unexpired entry.
    /// - Throws: `StoreError` with code `corrupted` for a damaged file, `io` when it cannot be read.
    package func blockingPeekEntry(forKey key: String) throws -> StoreEntry<Data>? {
        let digest = KeyDigest(key: key)
        let now = self.now()
        let outcome: EntryFile.Outcome<StoreEntry<Data>?>?
        do {
            outcome = try readEntry(digest, extent: .whole, knownSize: nil) { header, reader in
                guard reader.hasKey(key, header: header), !header.isExpired(at: now) else { return nil }
                return StoreEntry(value: reader.takePayload(header: header), attributes: Self.attributes(of: header, in: reader))
            }
        } catch let foreign as ForeignObject {
            throw StoreError(.corrupted, "\(path(for: digest)) is \(foreign.reason), not an entry file")
        } catch {
            throw Self.ioError("Could not read \(path(for: digest)) for key \(Logger.describe(key))", error)
        }
        switch outcome {
        case nil: return nil
        case .entry(let value)?: return value
        case .damaged(let damage)?: throw StoreError(.corrupted, "\(path(for: digest)) is damaged: \(damage)")
        }
    }
}

// The async API above is one job of the executor per call, made by `BlockingEngine`.
extension FileStore: BlockingEngine {
    /// `removeAll`, sizes and flushes wait for the index first, suspended rather than on a thread.
    package func waitUntilReady() async {
        await waitUntilIndexed()
    }
}
