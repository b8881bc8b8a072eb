public import Foundation
public import HanekeProtocols

/// An in-memory store with count and cost limits, an optional time to live, and entries that may
/// carry their own expiry and metadata (`setEntry(_:forKey:)`).
///
/// When a write takes the store over a limit, its ``Configuration/evictionPolicy`` picks the entries
/// that go: the least recently used (the default; a read makes its entry the most recently used),
/// or `.adaptive`, S3-FIFO with an adaptive small queue, which keeps more of what is read often (a
/// read then only bumps the entry's counter). Every operation is O(1) and thread-safe. The methods
/// are synchronous and never throw; they also satisfy the async `Store` requirements, so a
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

    /// What the list keeps for a key: the value, and the time stored and metadata of an entry
    /// written with them (by ``setEntry(_:forKey:)``, a promotion, an add). Kept in the list's own
    /// entry rather than in a dictionary beside it: a write with attributes (every promotion) then
    /// hashes and inserts its key once, not twice, and a plain read only skips one field.
    @usableFromInline
    struct Slot: Sendable {
        @usableFromInline var value: Value
        /// `nil` for a value written without attributes.
        @usableFromInline var attributes: StoredAttributes?

        @inlinable
        init(value: Value, attributes: StoredAttributes?) {
            self.value = value
            self.attributes = attributes
        }
    }

    @usableFromInline
    struct State: Sendable {
        @usableFromInline var entries: LRUList<Key, Slot>
        @usableFromInline var statistics = StoreStatistics()
        /// Whether any entry may expire (the store has a time to live, or an entry was written with
        /// an expiry): until then a read does not look at the clock.
        @usableFromInline var mayExpire: Bool

        @usableFromInline init(mayExpire: Bool, entries: LRUList<Key, Slot>) {
            self.mayExpire = mayExpire
            self.entries = entries
        }

        /// Removes `key`; whether it was there.
        @inlinable @discardableResult
        mutating func remove(_ key: Key) -> Bool {
            entries.removeValue(forKey: key)
        }

        /// Evicts entries in the policy's order to the limits; how many.
        @inlinable
        mutating func evict(toCount countLimit: Int?, toCost costLimit: Int?) -> Int {
            var evicted = 0
            entries.evict(toCount: countLimit, toCost: costLimit) { _, _ in evicted += 1 }
            return evicted
        }
    }

    /// The attributes of a live entry kept as `slot`, with `expiry`.
    @usableFromInline
    static func attributes(of slot: Slot, expiry: Double) -> EntryAttributes {
        EntryAttributes(
            expiresAt: expiry == .infinity ? nil : Date(timeIntervalSinceReferenceDate: expiry),
            storedAt: slot.attributes?.storedAt,
            metadata: slot.attributes?.metadata ?? Data()
        )
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
        let entries = LRUList<Key, Slot>(
            policy: configuration.evictionPolicy, countLimit: configuration.countLimit, costLimit: configuration.costLimit
        )
        self.state = Locked(State(mayExpire: configuration.timeToLive != nil, entries: entries))
    }

    /// Creates an empty store with the given limits.
    /// - Parameters:
    ///   - countLimit: The most entries kept; `nil` (no limit) by default.
    ///   - costLimit: The most total cost kept; `nil` (no limit) by default.
    ///   - timeToLive: How long an entry stays valid after it is written; `nil` (forever) by default.
    ///   - evictionPolicy: Which entries go first when a write takes the store over a limit;
    ///     `.leastRecentlyUsed` by default.
    ///   - name: The layer name reported in statistics; `"memory"` by default.
    ///   - clock: The clock that decides expiry; the system clock by default.
    ///   - cost: The cost of a value; see ``init(configuration:name:clock:cost:)``.
    public convenience init(
        countLimit: Int? = nil,
        costLimit: Int? = nil,
        timeToLive: Duration? = nil,
        evictionPolicy: EvictionPolicy = .leastRecentlyUsed,
        name: String = "memory",
        clock: any StoreClock = SystemClock(),
        cost: (@Sendable (Value) -> Int)? = nil
    ) {
        self.init(
            configuration: Configuration(
                countLimit: countLimit, costLimit: costLimit, timeToLive: timeToLive, evictionPolicy: evictionPolicy
            ),
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
    @inlinable @inline(__always)
    public func value(forKey key: Key) -> Value? {
        state.withLock { state in
            var expired = false
            let now = state.mayExpire ? clockSeconds() : -.infinity
            let value = state.entries.value(forKey: key, now: now, expired: &expired)?.value
            if value != nil {
                state.statistics.hits += 1
            } else {
                Self.recordMiss(of: key, expired: expired, in: &state)
            }
            return value
        }
    }

    /// Counts a miss, and the eviction of an expired entry. Out of line:
    /// a hit's code stays small enough to be inlined into the caller.
    @usableFromInline
    static func recordMiss(of key: Key, expired: Bool, in state: inout State) {
        state.statistics.misses += 1
        if expired { state.statistics.evictions += 1 }
    }

    /// Returns the entry for `key` — its value passed through `transform`, its expiry, the time it
    /// was stored and its metadata — and makes it the most recently used, or `nil` when there is none
    /// or it has expired. `transform` runs after the lock is released.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil`.
    /// - Throws: What `transform` throws.
    /// - Complexity: O(1).
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) throws -> StoreEntry<Transformed>? {
        try readEntry(forKey: key, transformedBy: transform)
    }

    func readEntry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) throws -> StoreEntry<Transformed>? {
        try readEntry(forKey: key)?.map(transform)
    }

    /// Returns the entry for `key`, or `nil`; see `entry(forKey:transformedBy:)`.
    /// - Parameter key: The key to look up.
    /// - Returns: The entry, or `nil`.
    public func entry(forKey key: Key) -> StoreEntry<Value>? {
        readEntry(forKey: key)
    }

    /// `readEntry(forKey:transformedBy:)` without a transform: no closure, no generic parameter of
    /// its own (an HTTP fetcher's memory hit reads the entry on every call).
    func readEntry(forKey key: Key) -> StoreEntry<Value>? {
        var attributes = EntryAttributes()
        let value = state.withLock { state -> Value? in
            var expired = false
            var expiry = Double.infinity
            guard let slot = state.entries.value(forKey: key, now: clockSeconds, expired: &expired, expiry: &expiry) else {
                Self.recordMiss(of: key, expired: expired, in: &state)
                return nil
            }
            state.statistics.hits += 1
            attributes = Self.attributes(of: slot, expiry: expiry)
            return slot.value
        }
        guard let value else { return nil }
        return StoreEntry(value: value, attributes: attributes)
    }

    /// The expiry, time stored and metadata of the entry for `key`, or `nil` when there is none or
    /// it has expired; does not change the recency order or statistics.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    public func attributes(forKey key: Key) -> EntryAttributes? {
        readAttributes(forKey: key)
    }

    func readAttributes(forKey key: Key) -> EntryAttributes? {
        state.withLock { state in
            state.entries.peekValueAndExpiry(forKey: key, now: clockSeconds).map { Self.attributes(of: $0.value, expiry: $0.expiry) }
        }
    }

    /// Stores `entry` for `key` with its own expiry (bounded by the store's time to live) and
    /// metadata, as the most recently used entry; see ``setValue(_:forKey:)`` for the limits. An
    /// entry that has already expired removes the key.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError.valueTooLarge` when the metadata is over its limit.
    @inlinable
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) throws {
        try writeEntry(entry, forKey: key)
    }

    @inlinable
    func writeEntry(_ entry: StoreEntry<Value>, forKey key: Key) throws {
        try entry.attributes.checkMetadataSize(forKey: key)
        let now = clock.now()
        let expiry = Self.expiry(of: entry.attributes, writtenAt: now, timeToLive: timeToLiveSeconds)
        store(entry.value, attributes: StoredAttributes(entry.attributes, writtenAt: now), forKey: key, expiry: expiry, now: now.timeIntervalSinceReferenceDate)
    }

    /// Replaces the expiry, time stored and metadata of the entry for `key`, keeping its value and
    /// its place in the recency order.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there is no unexpired entry for `key`.
    /// - Throws: `StoreError.valueTooLarge` when the metadata is over its limit.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) throws -> Bool {
        try writeAttributes(attributes, forKey: key)
    }

    func writeAttributes(_ attributes: EntryAttributes, forKey key: Key) throws -> Bool {
        try attributes.checkMetadataSize(forKey: key)
        let now = clock.now()
        let expiry = Self.expiry(of: attributes, writtenAt: now, timeToLive: timeToLiveSeconds)
        let nowSeconds = now.timeIntervalSinceReferenceDate
        let kept = StoredAttributes(attributes, writtenAt: now)
        return state.withLock { state in
            state.entries.peekValueAndExpiry(forKey: key, now: { nowSeconds }) != nil
                && state.entries.update(key, expiry: expiry, value: { $0.attributes = kept })
        }
    }

    /// Stores `entry` for `key` only if the key has no unexpired value, atomically.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: `StoreError.valueTooLarge` when the metadata is over its limit.
    @discardableResult
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) throws -> AddResult<Value> {
        try insertIfAbsent(entry, forKey: key)
    }

    func insertIfAbsent(_ entry: StoreEntry<Value>, forKey key: Key) throws -> AddResult<Value> {
        try entry.attributes.checkMetadataSize(forKey: key)
        let now = clock.now()
        let nowSeconds = now.timeIntervalSinceReferenceDate
        let expiry = Self.expiry(of: entry.attributes, writtenAt: now, timeToLive: timeToLiveSeconds)
        let kept = StoredAttributes(entry.attributes, writtenAt: now)
        let valueCost = max(0, cost(entry.value))
        let limits = configuration
        return state.withLock { state -> AddResult<Value> in
            var expired = false
            if let found = state.entries.valueAndExpiry(forKey: key, now: { nowSeconds }, expired: &expired) {
                state.statistics.hits += 1
                return .existing(StoreEntry(value: found.value.value, attributes: Self.attributes(of: found.value, expiry: found.expiry)))
            }
            if expired { state.statistics.evictions += 1 }
            Self.insert(entry.value, attributes: kept, cost: valueCost, forKey: key, expiry: expiry, now: nowSeconds, limits: limits, into: &state)
            return .inserted
        }
    }

    /// Stores `value` for `key` as the most recently used entry, then evicts entries in the policy's
    /// order (least recently used first, by default) until the store is within its limits. A value whose cost alone exceeds `costLimit` is
    /// not kept, and any older value for `key` is removed (it would be stale); that counts as an eviction.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Complexity: O(1) amortised, plus O(1) per evicted entry.
    @inlinable
    public func setValue(_ value: Value, forKey key: Key) {
        guard let timeToLiveSeconds else {
            store(value, attributes: nil, forKey: key, expiry: .infinity, now: -.infinity)
            return
        }
        let now = clock.now().timeIntervalSinceReferenceDate
        store(value, attributes: nil, forKey: key, expiry: now + timeToLiveSeconds, now: now)
    }

    /// Writes `value` (with `attributes`, or none) under the lock, then evicts to the limits; an
    /// expiry at or before `now` removes the key instead.
    @inlinable
    func store(_ value: Value, attributes: StoredAttributes?, forKey key: Key, expiry: Double, now: Double) {
        let valueCost = max(0, cost(value))
        let limits = configuration
        state.withLock { state in
            Self.insert(value, attributes: attributes, cost: valueCost, forKey: key, expiry: expiry, now: now, limits: limits, into: &state)
        }
    }

    @inlinable
    static func insert(
        _ value: Value, attributes: StoredAttributes?, cost valueCost: Int, forKey key: Key, expiry: Double, now: Double,
        limits: Configuration, into state: inout State
    ) {
        state.statistics.writes += 1
        if let costLimit = limits.costLimit, valueCost > costLimit {
            if state.remove(key) { state.statistics.evictions += 1 }
            return
        }
        if expiry <= now {
            state.remove(key)
            return
        }
        state.entries.setValue(Slot(value: value, attributes: attributes), forKey: key, cost: valueCost, expiry: expiry)
        if expiry != .infinity { state.mayExpire = true }
        state.statistics.evictions += state.evict(toCount: limits.countLimit, toCost: limits.costLimit)
    }

    /// Lets `update` change the value of `key` in place (its cost, expiry and attributes stay, and
    /// it counts as a read for recency); whether there was one. For a layer that keeps something
    /// beside each value (Haneke's memory layer keeps a tag of its key's change counter).
    /// - Parameters:
    ///   - key: The key.
    ///   - update: What to make of the value, under the store's lock.
    /// - Returns: `false`, changing nothing, when there is no entry for `key`.
    /// - Complexity: O(1).
    @discardableResult
    package func updateValue(forKey key: Key, _ update: (inout Value) -> Void) -> Bool {
        state.withLock { state in state.entries.refresh(key) { update(&$0.value) } }
    }

    /// Removes the value for `key`; removing a missing key is a no-op.
    /// - Parameter key: The key to remove.
    /// - Complexity: O(1).
    @inlinable
    public func removeValue(forKey key: Key) {
        state.withLock { state in
            state.statistics.removals += 1
            state.remove(key)
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

    /// Evicts entries in the policy's order (least recently used first, by default) until the total
    /// cost is at most `cost`; how a server sheds memory, since Linux sends no memory warnings.
    /// - Parameter cost: The total cost to stay within; `0` empties the store.
    /// - Complexity: O(1) per evicted entry.
    public func trim(toCost cost: Int) {
        state.withLock { state in
            state.statistics.evictions += state.evict(toCount: nil, toCost: max(0, cost))
        }
    }

    /// Evicts entries in the policy's order (least recently used first, by default) until at most
    /// `count` remain.
    /// - Parameter count: The number of entries to keep.
    /// - Complexity: O(1) per evicted entry.
    public func trim(toCount count: Int) {
        state.withLock { state in
            state.statistics.evictions += state.evict(toCount: max(0, count), toCost: nil)
        }
    }

    /// Removes every expired entry now, rather than when it is next read or pushed out.
    /// - Complexity: O(n).
    public func removeExpired() {
        let now = clock.now().timeIntervalSinceReferenceDate
        state.withLock { state in
            state.statistics.evictions += state.entries.removeExpired(now: now) { _ in }
        }
    }

    /// Whether an unexpired value exists for `key`; does not change the recency order or statistics.
    /// - Parameter key: The key to look up.
    /// - Returns: `true` when a read would hit.
    /// - Complexity: O(1).
    public func containsValue(forKey key: Key) -> Bool {
        state.withLock { $0.entries.peekValueAndExpiry(forKey: key, now: clockSeconds) != nil }
    }

    /// The number of entries (expired entries count until they are removed).
    public var count: Int { state.withLock { $0.entries.count } }

    /// The sum of the entries' costs.
    public var totalCost: Int { state.withLock { $0.entries.totalCost } }

    /// The keys from most to least recently used. Under the adaptive policy, the main queue's keys
    /// from newest to oldest, then the small queue's.
    /// - Complexity: O(n).
    public var keysByRecency: [Key] { state.withLock { $0.entries.keysByRecency } }

    // The entry methods again, async: in async code Swift prefers an async overload, and without
    // these a call on a `MemoryStore` would pick `Store`'s defaults (which keep no attributes).

    /// The synchronous `entry(forKey:transformedBy:)`, for async callers.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil`.
    /// - Throws: What `transform` throws.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try readEntry(forKey: key, transformedBy: transform)
    }

    /// The attributes of the entry for `key`, for async callers (it never throws).
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        readAttributes(forKey: key)
    }

    /// Stores `entry` for `key`, for async callers; see the synchronous `setEntry(_:forKey:)`.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: `StoreError.valueTooLarge` when the metadata is over its limit.
    @inlinable
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try writeEntry(entry, forKey: key)
    }

    /// Replaces the attributes of the entry for `key`, for async callers.
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when there is no unexpired entry for `key`.
    /// - Throws: `StoreError.valueTooLarge` when the metadata is over its limit.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try writeAttributes(attributes, forKey: key)
    }

    /// Adds `entry` for `key` if absent, for async callers.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: `StoreError.valueTooLarge` when the metadata is over its limit.
    @discardableResult
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try insertIfAbsent(entry, forKey: key)
    }

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

    /// The clock in seconds since the reference date; read only for entries that expire.
    @inlinable
    func clockSeconds() -> Double {
        clock.now().timeIntervalSinceReferenceDate
    }

    /// What an entry's attributes become in the store: its expiry bounded by the time to live, in
    /// seconds since the reference date (infinity for never).
    @inlinable
    static func expiry(of attributes: EntryAttributes, writtenAt now: Date, timeToLive: Double?) -> Double {
        attributes.expiry(writtenAt: now, storeTimeToLive: timeToLive)?.timeIntervalSinceReferenceDate ?? .infinity
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

/// The time stored and metadata of a `MemoryStore` entry written with them, shared by its copies.
@usableFromInline
final class StoredAttributes: Sendable {
    @usableFromInline let storedAt: Date
    @usableFromInline let metadata: Data

    /// The attributes kept for an entry written at `now` (its own time stored, or `now`).
    @usableFromInline
    init(_ attributes: EntryAttributes, writtenAt now: Date) {
        storedAt = attributes.storedAt ?? now
        metadata = attributes.metadata
    }
}
