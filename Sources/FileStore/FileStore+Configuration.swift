public import HanekeProtocols

extension FileStore {
    /// The limits and policies of a `FileStore`.
    public struct Configuration: Sendable {
        /// The most bytes the store's files may take (headers included); the least recently used
        /// entries are evicted to stay within it, and a single value larger than this is refused with
        /// `valueTooLarge`. `100 MiB` by default; `nil` for no limit.
        public var capacity: Int?
        /// The most entries kept. `nil` (no limit) by default.
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

        /// Creates a configuration.
        /// - Parameters:
        ///   - capacity: The most bytes the files may take; `100 MiB` by default, `nil` for no limit.
        ///   - countLimit: The most entries kept; `nil` for no limit.
        ///   - timeToLive: How long an entry stays valid; `nil` for forever.
        ///   - clock: The clock that stamps creation and expiry times.
        ///   - durableWrites: Whether each write is flushed to the disk before it returns.
        public init(
            capacity: Int? = 100 << 20,
            countLimit: Int? = nil,
            timeToLive: Duration? = nil,
            clock: any StoreClock = SystemClock(),
            durableWrites: Bool = false
        ) {
            self.capacity = capacity
            self.countLimit = countLimit
            self.timeToLive = timeToLive
            self.clock = clock
            self.durableWrites = durableWrites
        }
    }
}
