public import Foundation
public import HanekeProtocols
public import Logging
public import Synchronization

/// Layers on this machine — memory, disk, or a chain of them — in front of a Redis tier that
/// other machines share, kept coherent with it: when another client changes or removes a key, or
/// the key expires or is evicted on the server, the key is removed from the local layers.
///
/// ```swift
/// import Foundation
/// import HanekeProtocols
/// import MemoryStore
/// import RedisStore
///
/// func makeStack() throws -> CoherentStore<MemoryStore<String, Data>, RedisStore> {
///     let redis = try RedisStore(url: "redis://127.0.0.1:6379", keyPrefix: "sessions:")
///     return MemoryStore<String, Data>(costLimit: 64 << 20).coherent(with: redis)
/// }
/// ```
///
/// It uses Redis's server-assisted client-side caching (Redis 6 or later, and Valkey), with the
/// server keeping no state per key:
///
/// - **Notices.** A connection of its own subscribes to the invalidation channel; another, which
///   the store sends its own modifications through, turns tracking on for the store's key prefix
///   (`CLIENT TRACKING ON REDIRECT … BCAST PREFIX <prefix> NOLOOP`). The server then notices every
///   key of the prefix that any other client modifies, and every one that expires or is evicted;
///   this machine's own writes empty none of its own layers.
/// - **Reads before notices.** A read that misses the local layers takes a mark of the key before
///   it reads Redis, and stores what it read in the local layers only if no notice (nor write,
///   nor removal) of the key came meanwhile: a notice that overtakes the reply is never undone.
/// - **Lost notices.** When either connection is lost, or the database is flushed, every local
///   layer is emptied, and until both connections are back every read goes to Redis and nothing is
///   kept locally; they are pinged every `pingInterval`. The local layers are also emptied when
///   the store opens: a disk layer may hold what another machine has changed since.
/// - **A bound on trust.** Every value kept locally leaves the local layers `maximumLocalLifetime`
///   after it was kept, whatever notice may have been lost without a connection closing. The bound
///   is kept by a sweep every `sweepInterval`, not by an expiry on each local entry, so that a
///   local hit of ``value(forKey:)`` reads no clock (a clock read would cost about a third of a
///   memory hit): such a hit may serve a value up to `sweepInterval` past the bound (later if the
///   process is starved of CPU). ``entry(forKey:)`` and ``attributes(forKey:)`` are exact: they
///   never serve a local value past the bound, and report the earlier of its own expiry and the
///   bound.
///
/// `shared` is `redis`, or a store over it that keeps its keys (a `CodedStore`
/// of another value type): the keys noticed are `redis`'s, and the writes through `shared` must
/// reach `redis`, or this machine's own writes are noticed to it too (correct, but each then
/// costs a miss).
///
/// With a Redis Cluster (``RedisStore/Configuration-swift.struct/cluster``) each node notices only
/// the keys it holds, so the store follows every node that may hold its keys — each master of the
/// cluster's map, and a node that a redirect names (a slot moving to a new node) before anything
/// is sent there — with a notices connection and a writer on each; the local layers are in use
/// while every one of them is up. A master that fails empties the local layers, and reads go to
/// the cluster until its replica has taken its place and is followed (the map is asked for every
/// `pingInterval` meanwhile). A node that leaves the map empties them too.
///
/// Writes and removals go to Redis, then to the local layers; a write Redis refuses removes the
/// key locally and throws. Reads of the local layers that fail are misses; reads of Redis that
/// fail throw. ``coherence`` counts the notices and the flushes.
public final class CoherentStore<Local: Store, Shared: Store>: Store
where Local.Key == String, Shared.Key == String, Local.Value == Shared.Value {
    /// The type of the keys.
    public typealias Key = String
    /// The type of the values.
    public typealias Value = Local.Value

    /// The layers on this machine.
    public let local: Local
    /// The Redis tier, or a store over it.
    public let shared: Shared
    /// The Redis store whose keys are tracked.
    public let redis: RedisStore
    /// The longest a value is kept locally.
    public let maximumLocalLifetime: Duration
    /// How often values kept longer than ``maximumLocalLifetime`` are removed from the local layers.
    public let sweepInterval: Duration

    private let clock: any StoreClock
    @usableFromInline let logger: Logger
    private let gate = WriteGate()
    private let state: Locked<State>
    /// What reads look at, without a lock. Written under `state`'s lock.
    @usableFromInline let status: StatusCell
    /// When each key kept locally must leave the local layers.
    private let deadlines: Locked<LocalDeadlines>
    /// What the notices' applier and the sweeper work on.
    private let parts: Parts
    /// Removes the keys whose deadline has come, every `sweepInterval`.
    private let sweeper: Task<Void, Never>
    /// The tracking of `redis`'s keys and this store's subscription to its notices.
    private let tracking: (any KeyTracking, subscription: Int)
    private let notices: AsyncStream<(Tracking.Notice, UInt64)>.Continuation
    private let applier: Task<Void, Never>

    private struct State {
        /// Moved by every reset, at once when it is noticed.
        var generation: UInt64 = 0
        var statistics = CoherenceStatistics()
    }

    /// Whether the local layers are in use, and the generation moved by every reset: the
    /// generation shifted left by one, plus 1 while notices arrive and the local layers have been
    /// emptied since they started.
    @usableFromInline
    final class StatusCell: Sendable {
        @usableFromInline let raw = Atomic<UInt64>(0)

        @usableFromInline init() {}

        /// Whether the local layers are in use.
        @inlinable var coherent: Bool { raw.load(ordering: .acquiring) & 1 == 1 }
    }

    /// Keeps `local` coherent with `shared`, whose keys are `redis`'s.
    /// - Parameters:
    ///   - local: The layers on this machine.
    ///   - shared: `redis`, or a store over it.
    ///   - redis: The Redis store whose keys are tracked; its prefix is the tracked prefix.
    ///   - maximumLocalLifetime: The longest a value is kept locally; a minute by default.
    ///   - sweepInterval: How often values kept longer than `maximumLocalLifetime` are removed
    ///     locally; every 100 milliseconds by default.
    ///   - pingInterval: How often the notices' connection is pinged; every second by default.
    ///   - clock: The clock of the local lifetimes.
    ///   - logger: Where local failures are logged.
    public init(
        local: Local, shared: Shared, redis: RedisStore, maximumLocalLifetime: Duration = .seconds(60),
        sweepInterval: Duration = .milliseconds(100), pingInterval: Duration = .seconds(1),
        clock: any StoreClock = SystemClock(), logger: Logger = Logger(label: "haneke.coherence")
    ) {
        self.local = local
        self.shared = shared
        self.redis = redis
        self.maximumLocalLifetime = maximumLocalLifetime
        self.sweepInterval = sweepInterval
        self.clock = clock
        self.logger = logger
        let state = Locked(State())
        self.state = state
        let status = StatusCell()
        self.status = status
        let deadlines = Locked(LocalDeadlines())
        self.deadlines = deadlines
        let (stream, continuation) = AsyncStream.makeStream(of: (Tracking.Notice, UInt64).self)
        notices = continuation
        let parts = Parts(local: local, gate: gate, state: state, status: status, deadlines: deadlines, logger: logger)
        self.parts = parts
        applier = Task {
            for await (notice, generation) in stream {
                await Self.apply(notice, generation: generation, parts)
            }
        }
        sweeper = Task {
            while (try? await Task.sleep(for: sweepInterval)) != nil {
                await Self.removeDue(at: clock.now(), parts)
            }
        }
        let tracking = redis.startTracking(pingInterval: pingInterval)
        let subscription = tracking.subscribe { notice in
            var generation: UInt64 = 0
            if case .reset = notice {
                // Local layers stop serving at once; they serve again once emptied.
                generation = state.withLock { state in
                    state.generation += 1
                    status.raw.store(state.generation << 1, ordering: .releasing)
                    return state.generation
                }
            }
            continuation.yield((notice, generation))
        }
        self.tracking = (tracking, subscription)
    }

    deinit {
        tracking.0.unsubscribe(tracking.subscription)
        notices.finish()
        sweeper.cancel()
    }

    /// The notices received and the flushes made so far, and whether local layers are in use.
    public var coherence: CoherenceStatistics {
        var statistics = state.withLock { $0.statistics }
        statistics.isCoherent = status.coherent
        return statistics
    }

    /// What the notices' applier and the sweeper share with the store.
    private struct Parts: Sendable {
        let local: Local
        let gate: WriteGate
        let state: Locked<State>
        let status: StatusCell
        let deadlines: Locked<LocalDeadlines>
        let logger: Logger
    }

    /// Applies one notice to the local layers, in the order notices came.
    private static func apply(_ notice: Tracking.Notice, generation: UInt64, _ parts: Parts) async {
        switch notice {
        case .invalidated(let keys):
            await remove(keys, counting: \.invalidations, parts)
        case .reset(let coherent):
            do {
                try await parts.gate.changeEveryKey {
                    try await parts.local.removeAll()
                    parts.deadlines.withLock { $0.removeAll() }
                }
            } catch {
                // Local layers that cannot be emptied are not used again until a later reset
                // empties them.
                parts.logger.error("Could not empty the local layers after notices from Redis may have been missed; they stay unused", metadata: ["error": "\(error)"])
                parts.state.withLock { $0.statistics.flushes += 1 }
                return
            }
            parts.state.withLock { state in
                state.statistics.flushes += 1
                if coherent, state.generation == generation { parts.status.raw.store(generation << 1 | 1, ordering: .releasing) }
            }
        }
    }

    /// Removes `keys` from the local layers, counting each in `counter`; if one cannot be removed,
    /// stops using the local layers at once and empties them.
    private static func remove(_ keys: [String], counting counter: WritableKeyPath<CoherenceStatistics, Int>, _ parts: Parts) async {
        for key in keys {
            do {
                try await parts.gate.change(key) { try await parts.local.removeValue(forKey: key) }
                parts.state.withLock { $0.statistics[keyPath: counter] += 1 }
            } catch {
                // The key may still be held locally: stop using the local layers at once, and
                // use them again once they have been emptied.
                parts.logger.error("Could not remove a key from the local layers; emptying them", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
                let generation = parts.state.withLock { state in
                    state.statistics[keyPath: counter] += 1
                    state.generation += 1
                    parts.status.raw.store(state.generation << 1, ordering: .releasing)
                    return state.generation
                }
                await apply(.reset(coherent: true), generation: generation, parts)
            }
        }
    }

    /// Removes from the local layers the keys kept there longer than the bound.
    private static func removeDue(at now: Date, _ parts: Parts) async {
        let due = parts.deadlines.withLock { $0.takeDue(at: now.timeIntervalSinceReferenceDate) }
        if !due.isEmpty { await remove(due, counting: \.expirations, parts) }
    }

    /// Removes from the local layers, now, every value kept there longer than
    /// ``maximumLocalLifetime`` (what the sweep does every ``sweepInterval``).
    public func removeExpiredLocalValues() async {
        await Self.removeDue(at: clock.now(), parts)
    }

    /// Records that `key` is about to be kept locally: it must leave the local layers once the
    /// bound has passed.
    private func startLocalLifetime(of key: String) {
        let deadline = clock.now().timeIntervalSinceReferenceDate + Double(maximumLocalLifetime.saturatingMilliseconds) / 1_000
        deadlines.withLock { $0.keep(key, until: deadline) }
    }

    /// The attributes of a local value of `key` with an expiry no later than the bound, or `nil`
    /// if the bound has passed (the sweep is about to remove the value).
    private func bounded(_ attributes: EntryAttributes, of key: String) -> EntryAttributes? {
        guard let deadline = deadlines.withLock({ $0.deadline(of: key) }),
              clock.now().timeIntervalSinceReferenceDate < deadline else { return nil }
        var attributes = attributes
        let bound = Date(timeIntervalSinceReferenceDate: deadline)
        attributes.expiresAt = min(attributes.expiresAt ?? bound, bound)
        return attributes
    }

    /// Keeps `entry` locally if nothing changed the key since `mark` and the status is still
    /// `expected` (coherent, with no reset since).
    private func keepLocally(_ entry: StoreEntry<Value>, forKey key: String, since mark: UInt64, status expected: UInt64) async {
        await gate.ifUnchanged(key, since: mark) {
            guard status.raw.load(ordering: .acquiring) == expected else { return }
            do {
                startLocalLifetime(of: key)
                try await local.setEntry(entry, forKey: key)
            } catch {
                logger.warning("Could not keep a value read from Redis in the local layers", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
            }
        }
    }

    /// After a write to Redis: the entry kept locally while coherent, or the key removed locally.
    private func afterWrite(_ entry: StoreEntry<Value>?, forKey key: String) async {
        do {
            if let entry, status.coherent {
                startLocalLifetime(of: key)
                try await local.setEntry(entry, forKey: key)
            } else {
                try await local.removeValue(forKey: key)
            }
        } catch {
            logger.warning("Could not update the local layers after a write to Redis", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
        }
    }

    // MARK: - Store

    /// The entry for `key`: from the local layers while they are coherent and the value is within
    /// the local bound (its expiry then the earlier of its own and the bound), otherwise from
    /// Redis (kept locally if no notice of the key came meanwhile).
    /// - Parameter key: The key.
    /// - Returns: The entry, or `nil`.
    /// - Throws: What Redis's read throws; `CancellationError`.
    public func entry(forKey key: String) async throws -> StoreEntry<Value>? {
        let current = status.raw.load(ordering: .acquiring)
        if current & 1 == 1, var entry = try await local.readEntryAsLayer(key, logger: logger),
           let attributes = bounded(entry.attributes, of: key) {
            entry.attributes = attributes
            return entry
        }
        return try await readShared(key, status: current)
    }

    /// Reads Redis's entry for `key`, and keeps it locally (if the status is still `current` and
    /// nothing changed the key meanwhile).
    @usableFromInline
    func readShared(_ key: String, status current: UInt64) async throws -> StoreEntry<Value>? {
        let mark = gate.mark(for: key)
        guard let entry = try await shared.entry(forKey: key) else { return nil }
        if current & 1 == 1 { await keepLocally(entry, forKey: key, since: mark, status: current) }
        return entry
    }

    /// The entry for `key`, transformed (see ``entry(forKey:)``).
    /// - Parameters:
    ///   - key: The key.
    ///   - transform: What to make of the value.
    /// - Returns: The transformed entry, or `nil`.
    /// - Throws: What Redis's read or `transform` throws.
    public func entry<Transformed: Sendable>(
        forKey key: String, transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        try await entry(forKey: key)?.map(transform)
    }

    /// The value for `key`: from the local layers while they are coherent (a value may be served
    /// up to ``sweepInterval`` past the local bound: this read looks at no clock), otherwise from
    /// Redis, as ``entry(forKey:)``.
    /// - Parameter key: The key.
    /// - Returns: The value, or `nil`.
    /// - Throws: What Redis's read throws.
    @inlinable @inline(__always)
    public func value(forKey key: String) async throws -> Value? {
        let current = status.raw.load(ordering: .acquiring)
        if current & 1 == 1, let value = try await local.readAsLayer(key, logger: logger) {
            return value
        }
        return try await readShared(key, status: current)?.value
    }

    /// The attributes of `key`: from the local layers while they are coherent and the value is
    /// within the local bound (its expiry then the earlier of its own and the bound), otherwise
    /// from Redis.
    /// - Parameter key: The key.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: What Redis's read throws.
    public func attributes(forKey key: String) async throws -> EntryAttributes? {
        if status.coherent {
            do {
                if let attributes = try await local.attributes(forKey: key), let bounded = bounded(attributes, of: key) {
                    return bounded
                }
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
            }
        }
        return try await shared.attributes(forKey: key)
    }

    /// Writes `key` in Redis (`write`), then keeps locally the entry `kept` picks from the result
    /// (`nil`: the key is removed locally), all while the key is changing; a failed write removes
    /// the key locally.
    private func writeThrough<Result: Sendable>(
        _ key: String, _ write: () async throws -> Result, keeping kept: (Result) -> StoreEntry<Value>?
    ) async throws -> Result {
        try await gate.change(key) {
            let result: Result
            do {
                result = try await write()
            } catch {
                await afterWrite(nil, forKey: key)
                throw error
            }
            await afterWrite(kept(result), forKey: key)
            return result
        }
    }

    /// Stores `value` in Redis, then locally.
    /// - Throws: What Redis's write throws (the key is then removed locally).
    public func setValue(_ value: Value, forKey key: String) async throws {
        try await writeThrough(key, { try await shared.setValue(value, forKey: key) }, keeping: { StoreEntry(value: value) })
    }

    /// Stores `entry` in Redis, then locally.
    /// - Throws: What Redis's write throws (the key is then removed locally).
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: String) async throws {
        try await writeThrough(key, { try await shared.setEntry(entry, forKey: key) }, keeping: { entry })
    }

    /// Replaces the attributes in Redis; the key is removed locally (the next read keeps it again).
    /// - Returns: Whether Redis had the key.
    /// - Throws: What Redis's write throws.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: String) async throws -> Bool {
        try await writeThrough(key, { try await shared.setAttributes(attributes, forKey: key) }, keeping: { _ in nil })
    }

    /// Stores `entry` in Redis only if it has no unexpired value for `key` (atomically there); what
    /// Redis then holds is kept locally.
    /// - Returns: Whether it was stored, or the entry Redis has.
    /// - Throws: What Redis's write throws (the key is then removed locally).
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: String) async throws -> AddResult<Value> {
        try await writeThrough(key, { try await shared.addEntry(entry, forKey: key) }) { result in
            switch result {
            case .inserted: entry
            case .existing(let existing): existing
            }
        }
    }

    /// Removes `key` locally and from Redis.
    /// - Throws: What Redis's removal throws.
    public func removeValue(forKey key: String) async throws {
        try await gate.change(key) {
            await afterWrite(nil, forKey: key)
            try await shared.removeValue(forKey: key)
        }
    }

    /// Removes every key locally and from Redis.
    /// - Throws: What a layer's removal throws.
    public func removeAll() async throws {
        try await gate.changeEveryKey {
            try await local.removeAll()
            deadlines.withLock { $0.removeAll() }
            try await shared.removeAll()
        }
    }

    /// The local layers' statistics, then Redis's.
    public var layerStatistics: [LayerStatistics] {
        local.layerStatistics + shared.layerStatistics
    }
}

/// What a ``CoherentStore`` has received and done.
public struct CoherenceStatistics: Sendable, Hashable {
    /// Keys noticed as changed on the server, counted once removed from the local layers.
    public var invalidations = 0
    /// Times the local layers were emptied: when the store opened, and after every lost
    /// connection or flushed database.
    public var flushes = 0
    /// Keys removed from the local layers because they were kept there as long as the bound
    /// (``CoherentStore/maximumLocalLifetime``) allows.
    public var expirations = 0
    /// Whether the local layers are in use: notices arrive, and the layers were emptied since
    /// they started.
    public var isCoherent = false

    /// Creates statistics with every count at zero.
    public init() {}
}

extension Store where Key == String, Value == Data {
    /// These layers kept coherent with `redis` (see ``CoherentStore``).
    /// - Parameters:
    ///   - redis: The Redis tier that other machines share.
    ///   - maximumLocalLifetime: The longest a value is kept locally; a minute by default.
    ///   - logger: Where local failures are logged.
    /// - Returns: The layers, then Redis, read and written as one store.
    public func coherent(
        with redis: RedisStore, maximumLocalLifetime: Duration = .seconds(60), logger: Logger = Logger(label: "haneke.coherence")
    ) -> CoherentStore<Self, RedisStore> {
        CoherentStore(local: self, shared: redis, redis: redis, maximumLocalLifetime: maximumLocalLifetime, logger: logger)
    }
}
