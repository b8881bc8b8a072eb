/// Counters of one store (one layer of a chain), as a snapshot.
///
/// Each store counts what it sees itself, so a chain's statistics are the statistics of its layers
/// (see ``Store/layerStatistics``). An error is counted by the layer that threw it or dropped a damaged
/// entry; a chain logs it but does not count it again.
public struct StoreStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Reads that returned a value.
    public var hits: Int
    /// Reads that returned nothing (including expired entries).
    public var misses: Int
    /// Values stored.
    public var writes: Int
    /// Explicit removals of one key (`removeValue(forKey:)`, whether or not the key was present).
    public var removals: Int
    /// Entries the store dropped on its own: over a limit, or past their time to live.
    public var evictions: Int
    /// Operations that failed, and damaged entries found and dropped.
    public var errors: Int

    /// Creates a snapshot; every counter is `0` by default.
    public init(hits: Int = 0, misses: Int = 0, writes: Int = 0, removals: Int = 0, evictions: Int = 0, errors: Int = 0) {
        self.hits = hits
        self.misses = misses
        self.writes = writes
        self.removals = removals
        self.evictions = evictions
        self.errors = errors
    }

    /// Hits divided by reads, or `nil` before the first read.
    public var hitRate: Double? {
        let reads = hits + misses
        return reads == 0 ? nil : Double(hits) / Double(reads)
    }

    /// The counters on one line, for logs and command-line output.
    public var description: String {
        "hits \(hits), misses \(misses), writes \(writes), removals \(removals), evictions \(evictions), errors \(errors)"
    }

    /// Adds the counters of two snapshots.
    public static func + (lhs: StoreStatistics, rhs: StoreStatistics) -> StoreStatistics {
        StoreStatistics(
            hits: lhs.hits + rhs.hits,
            misses: lhs.misses + rhs.misses,
            writes: lhs.writes + rhs.writes,
            removals: lhs.removals + rhs.removals,
            evictions: lhs.evictions + rhs.evictions,
            errors: lhs.errors + rhs.errors
        )
    }
}
