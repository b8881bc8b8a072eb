public import HanekeProtocols

extension MemoryStore {
    /// The limits of a `MemoryStore`. `nil` means no limit.
    public struct Configuration: Sendable, Hashable {
        /// The most entries kept; the eviction policy decides which go first. `nil` (no limit) by default.
        public var countLimit: Int?
        /// The most total cost kept, in the units of the store's cost function (bytes for `Data`
        /// and `String`); the eviction policy decides which go first. `nil` (no limit) by default.
        public var costLimit: Int?
        /// How long an entry stays valid after it is written. `nil` (forever) by default.
        public var timeToLive: Duration?
        /// Which entries go first when a write takes the store over a limit;
        /// `.leastRecentlyUsed` by default. `.adaptive` keeps more of what is read often (a higher
        /// hit ratio on most workloads; BENCHMARKS.md, "Hit ratio").
        public var evictionPolicy: EvictionPolicy

        /// Creates a configuration.
        /// - Parameters:
        ///   - countLimit: The most entries kept; `nil` for no limit.
        ///   - costLimit: The most total cost kept; `nil` for no limit.
        ///   - timeToLive: How long an entry stays valid; `nil` for forever.
        ///   - evictionPolicy: Which entries go first; `.leastRecentlyUsed` by default.
        public init(
            countLimit: Int? = nil,
            costLimit: Int? = nil,
            timeToLive: Duration? = nil,
            evictionPolicy: EvictionPolicy = .leastRecentlyUsed
        ) {
            self.countLimit = countLimit
            self.costLimit = costLimit
            self.timeToLive = timeToLive
            self.evictionPolicy = evictionPolicy
        }
    }
}
