public import HanekeProtocols

extension FileStore {
    /// The limits and policies of a `FileStore`.
    public struct Configuration: Sendable {
        /// The most bytes the store's files may take on disk — allocated blocks, what `du` counts,
        /// the store's marker and journal included, and two blocks kept free for the journal's next
        /// writes (a 100-byte value takes a whole block, 4 KiB on most file systems). Entries are
        /// evicted in the order of ``evictionPolicy`` to stay within it, and a single value that would take more is refused with `valueTooLarge`. `100 MiB` by default;
        /// `nil` for no limit.
        public var capacity: Int?
        /// The most entries kept: one file (one inode) each. `1,000,000` by default, which also
        /// bounds the index's memory (about 150 bytes an entry); `nil` for no limit.
        public var countLimit: Int?
        /// How long an entry stays valid after it is written; expired entries are misses and are
        /// deleted when read. `nil` (forever) by default.
        public var timeToLive: Duration?
        /// The clock that stamps creation and expiry times; the system clock by default.
        public var clock: any StoreClock
        /// Whether each write is flushed to the disk (`fsync` of the file and of its folder) before
        /// it returns, so that it survives a power loss. `false` by default: a cache can refetch, and
        /// on these machines `fsync` makes a 4 KiB write about 50–100× slower (1.4–4 ms instead of
        /// about 30 µs). Without it, a crash of the process still never leaves a partial value.
        public var durableWrites: Bool
        /// Who may read and write the store's files. `.owner` by default: folders `0700`, files
        /// `0600`.
        public var access: Access
        /// The longest a read or a write waits before its recency record reaches the journal on
        /// disk, so that a process killed without warning keeps the order of all but its last
        /// moments. `1 second` by default. Records are written in batches, never one system call
        /// per read; `exit()` and releasing the store write them at once.
        public var recencyFlushInterval: Duration
        /// Which entries go first when a write takes the store over a limit; `.leastRecentlyUsed`
        /// by default. `.adaptive` splits the capacity (in bytes) between S3-FIFO's two queues and
        /// keeps more of what is read often; its queues and read counters are journaled with the
        /// recency order, so a restart keeps what it learned.
        public var evictionPolicy: EvictionPolicy
        /// Called by the thread that builds the index at each of its steps (for tests, which hold
        /// it there to act while the store indexes); `nil` by default.
        package var indexingHook: (@Sendable (IndexingStep) -> Void)?

        /// Creates a configuration.
        /// - Parameters:
        ///   - capacity: The most bytes the files may take on disk; `100 MiB` by default, `nil` for
        ///     no limit.
        ///   - countLimit: The most entries kept; `1,000,000` by default, `nil` for no limit.
        ///   - timeToLive: How long an entry stays valid; `nil` for forever.
        ///   - clock: The clock that stamps creation and expiry times.
        ///   - durableWrites: Whether each write is flushed to the disk before it returns.
        ///   - access: Who may read and write the files; `.owner` by default.
        ///   - recencyFlushInterval: The longest a recency record waits for the journal; `1 second`
        ///     by default.
        ///   - evictionPolicy: Which entries go first; `.leastRecentlyUsed` by default.
        public init(
            capacity: Int? = 100 << 20,
            countLimit: Int? = 1_000_000,
            timeToLive: Duration? = nil,
            clock: any StoreClock = SystemClock(),
            durableWrites: Bool = false,
            access: Access = .owner,
            recencyFlushInterval: Duration = .seconds(1),
            evictionPolicy: EvictionPolicy = .leastRecentlyUsed
        ) {
            self.capacity = capacity
            self.countLimit = countLimit
            self.timeToLive = timeToLive
            self.clock = clock
            self.durableWrites = durableWrites
            self.access = access
            self.recencyFlushInterval = recencyFlushInterval
            self.evictionPolicy = evictionPolicy
        }
    }
}
