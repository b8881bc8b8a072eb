extension MemoryStore {
    /// The limits of a `MemoryStore`. `nil` means no limit.
    public struct Configuration: Sendable, Hashable {
        /// The most entries kept; the least recently used go first. `nil` (no limit) by default.
        public var countLimit: Int?
        /// The most total cost kept, in the units of the store's cost function (bytes for `Data`
        /// and `String`); the least recently used go first. `nil` (no limit) by default.
        public var costLimit: Int?
        /// How long an entry stays valid after it is written. `nil` (forever) by default.
        public var timeToLive: Duration?

        /// Creates a configuration.
        /// - Parameters:
        ///   - countLimit: The most entries kept; `nil` for no limit.
        ///   - costLimit: The most total cost kept; `nil` for no limit.
        ///   - timeToLive: How long an entry stays valid; `nil` for forever.
        public init(countLimit: Int? = nil, costLimit: Int? = nil, timeToLive: Duration? = nil) {
            self.countLimit = countLimit
            self.costLimit = costLimit
            self.timeToLive = timeToLive
        }
    }
}
