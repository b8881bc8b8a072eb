public import HanekeProtocols

extension SQLiteStore {
    /// The limits and policies of an `SQLiteStore`.
    public struct Configuration: Sendable {
        /// The most bytes the store's files may take on disk — what `du` counts: the database's
        /// pages in use, plus room kept for its write-ahead log and the log's index (a sixteenth of
        /// the capacity, at most 4 MiB, and 32 KiB). Entries are evicted to stay within it in the
        /// order of ``evictionPolicy`` as far as a random sample shows (the oldest quarter of a
        /// sample of four times the rows to delete; exact order in a store of at most 64 rows). Freed pages
        /// are reused, and returned to the file system when the database is larger than the
        /// capacity allows. A single entry that would take more is refused with `valueTooLarge`.
        /// `100 MiB` by default; `nil` for no limit.
        public var capacity: Int?
        /// How long an entry stays valid after it is written; expired entries are misses and are
        /// deleted when read. `nil` (forever) by default.
        public var timeToLive: Duration?
        /// The clock that stamps creation, expiry and use; the system clock by default.
        public var clock: any StoreClock
        /// Whether each write reaches the disk before it returns (SQLite's `synchronous = FULL`),
        /// so that it survives a power loss. `false` by default (`NORMAL`): a write survives the
        /// process being killed, and a power loss can only lose the last writes, never damage the
        /// database.
        public var durableWrites: Bool
        /// Who may read and write the store's files. `.owner` by default: folder `0700`, files `0600`.
        public var access: FolderAccess
        /// The longest a read waits before its use is written to the database (uses are kept in
        /// memory and written in one transaction, never one write per read). `1 second` by default.
        public var recencyFlushInterval: Duration
        /// Whether the store keeps the database locked from its first use until it is released.
        /// `false` by default: other processes (a `haneke` command on a live cache, another server
        /// process) and other stores in this process may open the same database, and each
        /// transaction takes and releases SQLite's file locks. `true` skips those locks — on this
        /// project's benchmark machine a get is 1.5–1.7 µs faster and a set 3–5 µs — and keeps
        /// the log's index in memory instead of a `-shm` file; meanwhile any other opening of the
        /// database waits ``busyTimeout`` and fails with `unavailable`.
        public var exclusiveAccess: Bool
        /// How long an operation waits for a lock another connection holds (a write in another
        /// process, or a store with ``exclusiveAccess``) before it fails with `unavailable`.
        /// `5 seconds` by default.
        public var busyTimeout: Duration
        /// The most memory SQLite's page cache may hold for this store: the database's recently
        /// read pages, so that reading one of them again costs no system call. `32 MiB` by default
        /// (python-diskcache's default); the memory is taken as pages are read, so a smaller
        /// database takes less.
        public var pageCacheSize: Int
        /// Which entries eviction gives up first: `.leastRecentlyUsed` (the default) or `.adaptive`,
        /// which keeps entries read more than once against a scan of new ones. Each row keeps its
        /// queue and read counter, so what the policy learned survives a restart; the ghost of
        /// recently evicted keys, and the small queue's share it has learned, start again at each
        /// opening. Processes sharing the database may use different policies: every store keeps
        /// both policies' state up to date.
        public var evictionPolicy: EvictionPolicy
        /// Where SQLite's log is copied into the database: `.background` by default (the only
        /// choice for a store in use; benchmarks measure the others beside it).
        @_spi(Benchmarks) public var checkpointing: Checkpointing = .background

        /// Creates a configuration.
        /// - Parameters:
        ///   - capacity: The most bytes the files may take on disk; `100 MiB` by default, `nil` for
        ///     no limit.
        ///   - timeToLive: How long an entry stays valid; `nil` for forever.
        ///   - clock: The clock that stamps creation, expiry and use.
        ///   - durableWrites: Whether each write reaches the disk before it returns.
        ///   - access: Who may read and write the files; `.owner` by default.
        ///   - recencyFlushInterval: The longest a use waits to be written; `1 second` by default.
        ///   - exclusiveAccess: Whether the store keeps the database locked while it lives; `false`
        ///     by default.
        ///   - busyTimeout: How long an operation waits for another connection's lock; `5 seconds`
        ///     by default.
        ///   - pageCacheSize: The most memory SQLite's page cache may hold; `32 MiB` by default.
        ///   - evictionPolicy: Which entries go first; `.leastRecentlyUsed` by default.
        public init(
            capacity: Int? = 100 << 20,
            timeToLive: Duration? = nil,
            clock: any StoreClock = SystemClock(),
            durableWrites: Bool = false,
            access: FolderAccess = .owner,
            recencyFlushInterval: Duration = .seconds(1),
            exclusiveAccess: Bool = false,
            busyTimeout: Duration = .seconds(5),
            pageCacheSize: Int = 32 << 20,
            evictionPolicy: EvictionPolicy = .leastRecentlyUsed
        ) {
            self.capacity = capacity
            self.timeToLive = timeToLive
            self.clock = clock
            self.durableWrites = durableWrites
            self.access = access
            self.recencyFlushInterval = recencyFlushInterval
            self.exclusiveAccess = exclusiveAccess
            self.busyTimeout = busyTimeout
            self.pageCacheSize = pageCacheSize
            self.evictionPolicy = evictionPolicy
        }
    }

    /// Where SQLite's log is copied into the database (a checkpoint), for benchmarks to compare.
    @_spi(Benchmarks) public enum Checkpointing: Sendable, Hashable {
        /// On a job of the store's executor, with a connection of its own, once the log holds half
        /// its room; a commit runs a blocking checkpoint itself only once the log holds all of it.
        case background
        /// On the commit that takes the log past half its room (a passive checkpoint), or past three
        /// quarters (a blocking one): the store's behaviour before `.background`.
        case commits
        /// SQLite's automatic (passive) checkpoint on the commit that takes the log past its room,
        /// and nothing that bounds it when other processes keep reading it: the store's behaviour
        /// before it ran its own checkpoints.
        case sqlite
    }
}
