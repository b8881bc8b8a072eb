public import Foundation
public import HanekeProtocols

/// An in-memory least-recently-used store with count and cost limits and an optional time to live.
///
/// Reads make an entry the most recently used; when a write takes the store over a limit, the least
/// recently used entries are evicted. Every operation is O(1) and thread-safe. The methods are
/// synchronous and never throw; they also satisfy the async `Store` requirements, so a
/// `MemoryStore` is called directly from any code and still composes into chains.
///
/// Linux sends no memory warnings; a server that must shed memory calls ``trim(toCost:)`` or
/// ``removeAll()`` itself.
///
/// ```swift
/// let memory = MemoryStore<String, Data>(countLimit: 1_000, costLimit: 64 << 20)
/// memory.setValue(Data("hello".utf8), forKey: "greeting")
/// let greeting = memory.value(forKey: "greeting")
/// ```
public final class MemoryStore<Key: Hashable & Sendable, Value: Sendable>: Store {
    /// The store's limits.
    public let configuration: Configuration
    /// The name of this store's layer in ``layerStatistics``; `"memory"` by default.
    public let name: String
    @usableFromInline let clock: any StoreClock
    /// `configuration.timeToLive` in seconds, computed once.
    @usableFromInline let timeToLiveSeconds: Double?
    @usableFromInline let cost: @Sendable (Value) -> Int
    @usableFromInline let state: Locked<State>

    // The hot methods are `@inlinable` so that your code gets them specialised for its key and
    // value types (a generic call across modules would look up type metadata on every operation:
    // 10× slower in `make bench`).
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var entries = LRUList<Key, Value>()
        @usableFromInline var statistics = StoreStatistics()

        @usableFromInline init() {}
    }

    /// Creates an empty store.
    /// - Parameters:
    ///   - configuration: The limits.
    ///   - name: The layer name reported in statistics.
    ///   - clock: The clock that decides expiry; the system clock by default.
    ///   - cost: The cost of a value, counted against `costLimit`. `nil` selects the default: the byte
    ///     size for `Data`, `[UInt8]` and `String` (UTF-8), `CostMeasurable.cacheCost` for a value
    ///     that declares one (`JSON` does), and 1 for any other type — pass a cost function when you
    ///     set a `costLimit` for other types.
    public init(
        configuration: Configuration,
        name: String = "memory",
        clock: any StoreClock = SystemClock(),
        cost: (@Sendable (Value) -> Int)? = nil
    ) {
        self.configuration = configuration
        self.name = name
        self.clock = clock
        self.timeToLiveSeconds = configuration.timeToLive?.timeInterval
        self.cost = cost ?? Self.defaultCost()
        self.state = Locked(State())
    }

    /// Creates an empty store with the given limits.
    /// - Parameters:
    ///   - countLimit: The most entries kept; `nil` (no limit) by default.
    ///   - costLimit: The most total cost kept; `nil` (no limit) by default.
    ///   - timeToLive: How long an entry stays valid after it is written; `nil` (forever) by default.
    ///   - name: The layer name reported in statistics; `"memory"` by default.
    ///   - clock: The clock that decides expiry; the system clock by default.
    ///   - cost: The cost of a value; see ``init(configuration:name:clock:cost:)``.
    public convenience init(
        countLimit: Int? = nil,
        costLimit: Int? = nil,
        timeToLive: Duration? = nil,
        name: String = "memory",
        clock: any StoreClock = SystemClock(),
        cost: (@Sendable (Value) -> Int)? = nil
    ) {
        self.init(
            configuration: Configuration(countLimit: countLimit, costLimit: costLimit, timeToLive: timeToLive),
            name: name,
            clock: clock,
            cost: cost
        )
    }

    // MARK: - Synchronous API

    /// Returns the value for `key` and makes it the most recently used, or `nil` when there is none
    /// or it has expired (an expired entry is removed).
    /// - Parameter key: The key to look up.
    /// - Returns: The value, or `nil`.
    /// - Complexity: O(1).
    @inlinable
    public func value(forKey key: Key) -> Value? {
        let now = currentTime()
        return state.withLock { state in
            var expired = false
            let value = state.entries.value(forKey: key, now: now, expired: &expired)
            if value != nil {
                state.statistics.hits += 1
            } else {
                state.statistics.misses += 1
                if expired { state.statistics.evictions += 1 }
            }
            return value
        }
    }

    /// Stores `value` for `key` as the most recently used entry, then evicts the least recently used
    /// entries until the store is within its limits. A value whose cost alone exceeds `costLimit` is
    /// not kept, and any older value for `key` is removed (it would be stale); that counts as an eviction.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Complexity: O(1) amortised, plus O(1) per evicted entry.
    @inlinable
    public func setValue(_ value: Value, forKey key: Key) {
        let valueCost = max(0, cost(value))
        let expiry = timeToLiveSeconds.map { currentTime() + $0 } ?? .infinity
        let limits = configuration
        state.withLock { state in
            state.statistics.writes += 1
            if let costLimit = limits.costLimit, valueCost > costLimit {
                if state.entries.removeValue(forKey: key) { state.statistics.evictions += 1 }
                return
            }
            state.entries.setValue(value, forKey: key, cost: valueCost, expiry: expiry)
            state.statistics.evictions += Self.evict(&state.entries, toCount: limits.countLimit, toCost: limits.costLimit)
        }
    }

    /// Removes the value for `key`; removing a missing key is a no-op.
    /// - Parameter key: The key to remove.
    /// - Complexity: O(1).
    @inlinable
    public func removeValue(forKey key: Key) {
        state.withLock { state in
            state.statistics.removals += 1
            state.entries.removeValue(forKey: key)
        }
    }

    /// Removes every entry and releases the memory they held.
    /// - Complexity: O(n).
    public func removeAll() {
        // The old entries are released after the lock is dropped, so other threads do not wait on
        // the deallocation of a large store.
        let dropped = state.withLock { state in
            defer { state.entries.removeAll() }
            return state.entries
        }
        withExtendedLifetime(dropped) {}
    }

    /// Evicts least recently used entries until the total cost is at most `cost`; how a server sheds
    /// memory, since Linux sends no memory warnings.
    /// - Parameter cost: The total cost to stay within; `0` empties the store.
    /// - Complexity: O(1) per evicted entry.
    public func trim(toCost cost: Int) {
        state.withLock { state in
            state.statistics.evictions += Self.evict(&state.entries, toCount: nil, toCost: max(0, cost))
        }
    }

    /// Evicts least recently used entries until at most `count` remain.
    /// - Parameter count: The number of entries to keep.
    /// - Complexity: O(1) per evicted entry.
    public func trim(toCount count: Int) {
        state.withLock { state in
            state.statistics.evictions += Self.evict(&state.entries, toCount: max(0, count), toCost: nil)
        }
    }

    /// Removes every expired entry now, rather than when it is next read or pushed out.
    /// - Complexity: O(n).
    public func removeExpired() {
        guard configuration.timeToLive != nil else { return }
        let now = currentTime()
        state.withLock { state in
            state.statistics.evictions += state.entries.removeExpired(now: now)
        }
    }

    /// Whether an unexpired value exists for `key`; does not change the recency order or statistics.
    /// - Parameter key: The key to look up.
    /// - Returns: `true` when a read would hit.
    /// - Complexity: O(1).
    public func containsValue(forKey key: Key) -> Bool {
        let now = currentTime()
        return state.withLock { $0.entries.contains(key, now: now) }
    }

    /// The number of entries (expired entries count until they are removed).
    public var count: Int { state.withLock { $0.entries.count } }

    /// The sum of the entries' costs.
    public var totalCost: Int { state.withLock { $0.entries.totalCost } }

    /// The keys from most to least recently used.
    /// - Complexity: O(n).
    public var keysByRecency: [Key] { state.withLock { $0.entries.keysByRecency } }

    /// This store's counters.
    public var statistics: StoreStatistics { state.withLock { $0.statistics } }

    // MARK: - Store

    // The synchronous methods above are the `Store` methods too: a synchronous function satisfies an
    // `async throws` requirement, and an O(1) in-memory operation has no reason to suspend. So
    // `memory.value(forKey:)` needs neither `try` nor `await`, in synchronous and async code alike.

    /// One layer, named ``name``.
    public var layerStatistics: [LayerStatistics] {
        [LayerStatistics(name: name, statistics: statistics)]
    }

    // MARK: - Internals

    @inlinable
    func currentTime() -> Double {
        timeToLiveSeconds == nil ? -.infinity : clock.now().timeIntervalSinceReferenceDate
    }

    @inlinable
    static func evict(_ entries: inout LRUList<Key, Value>, toCount countLimit: Int?, toCost costLimit: Int?) -> Int {
        var evicted = 0
        entries.evict(toCount: countLimit, toCost: costLimit) { _, _ in evicted += 1 }
        return evicted
    }

    private static func defaultCost() -> @Sendable (Value) -> Int {
        if Value.self == Data.self {
            return { unsafeBitCast($0, to: Data.self).count }
        }
        if Value.self == String.self {
            return { unsafeBitCast($0, to: String.self).utf8.count }
        }
        if Value.self == [UInt8].self {
            return { unsafeBitCast($0, to: [UInt8].self).count }
        }
        if Value.self is any CostMeasurable.Type {
            return { ($0 as? any CostMeasurable)?.cacheCost ?? 1 }
        }
        return { _ in 1 }
    }
}
