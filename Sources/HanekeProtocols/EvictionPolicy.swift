/// How a bounded store chooses the entries it gives up when a write takes it over a limit.
///
/// ```swift
/// import MemoryStore
///
/// let memory = MemoryStore<String, String>(countLimit: 10_000, evictionPolicy: .adaptive)
/// memory.setValue("value", forKey: "key")
/// ```
public enum EvictionPolicy: String, Sendable, Hashable, Codable, CaseIterable {
    /// Least recently used first: every read makes its entry the most recently used. The default,
    /// and the best choice when a key read once is likely to be read again soon and rarely after.
    case leastRecentlyUsed = "lru"
    /// S3-FIFO with a small queue sized by evidence. A new key enters a small FIFO queue; a key read
    /// while there moves to the main queue when it reaches the small queue's end, and one never read
    /// leaves (its key is remembered, without its value, in a "ghost"). The main queue keeps a 2-bit
    /// read counter per entry and gives an entry read since it last came round another turn. A miss
    /// on a key the small queue gave up recently grows the small queue; a miss on a key the main
    /// queue gave up recently shrinks it. One-hit wonders and scans pass through the small queue
    /// without pushing out what is read often, and a workload where only recency matters gets a
    /// small queue large enough to behave like LRU. A read only bumps a counter: it moves nothing.
    case adaptive
}
