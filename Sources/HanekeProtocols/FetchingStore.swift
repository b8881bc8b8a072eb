public import Foundation
public import Logging

/// A store that ends in a fetcher: ``fetch(_:)`` reads the layers and, on a full miss, asks the
/// fetcher once per key however many callers are waiting (single flight).
///
/// Made by ``Store/fetching(from:freshness:clock:logger:)``. As a ``Store`` it reads and writes its layers only;
/// the fetcher is asked by ``fetch(_:)``.
///
/// This is the package's one read-through path: Haneke's `Cache` keeps one `FetchingStore` per
/// format and passes the fetcher with each call.
///
/// Its ``Freshness`` gives values a lifetime, refreshes a value in the background once it reaches
/// a given age (the read returns the current value at once; one refresh per key runs, and a failed
/// one keeps the value), and serves an expired value for a while when the fetcher fails. With a
/// stale window `W`, every entry is kept in the layers `W` longer than its expiry; through this
/// store's own methods an entry still expires when it should, and its reported expiry is its own.
public final class FetchingStore<Base: Store, Source: Fetcher>: Store
where Base.Key == Source.Key, Base.Value == Source.Value {
    /// The type of the keys.
    public typealias Key = Base.Key
    /// The type of the values.
    public typealias Value = Base.Value

    /// The layers read before the fetcher.
    public let base: Base
    /// The source of original values.
    public let fetcher: Source
    @usableFromInline let logger: Logger
    /// Moves when a flight has filled the layers or a value was set or removed through this store.
    /// A caller whose read missed and who sees no movement since knows the layers are unchanged, so
    /// its flight need not read them again; a flight that sees its key change does not write back.
    @usableFromInline package let writes = WriteGate()
    private let flights = SingleFlight<Key, Value>()
    private let fetcherCounter: StatisticsCounter
    /// The lifetime, refresh and stale-window policy.
    public let freshness: Freshness
    /// The clock that decides age and expiry (the layers' clock).
    public let clock: any StoreClock
    /// Whether reads look at each entry's age (a refresh or a stale window is set).
    @usableFromInline let readsAttributes: Bool
    /// Whether the store's own fetcher judges the entries it stored (``Fetcher/judgesStoredEntries``).
    @usableFromInline let fetcherJudges: Bool
    private let staleWindow: Double
    private let timeToLive: Double?
    private let refreshAfter: Double?
    private let ages = Locked(AgeState())

    private struct AgeState: Sendable {
        var statistics = FreshnessStatistics()
        /// The background refresh of each key under way.
        var refreshing: [Key: Task<Void, Never>] = [:]
        /// After a failed refresh, no other before this time.
        var notBefore: [Key: Date] = [:]
        /// Keys whose stale value was served after a failure, logged once until fetched again.
        var servingStale: Set<Key> = []
    }

    /// Puts `fetcher` behind `base`. Prefer ``Store/fetching(from:freshness:clock:logger:)``.
    /// - Parameters:
    ///   - freshness: Lifetimes, background refresh and the stale window; none by default.
    ///   - clock: The clock that decides age and expiry; give the layers the same one.
    ///   - base: The layers read before the fetcher.
    ///   - fetcher: The source of original values.
    ///   - logger: Where layer failures are logged.
    public convenience init(
        base: Base,
        fetcher: Source,
        freshness: Freshness = Freshness(),
        clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke")
    ) {
        self.init(base: base, fetcher: fetcher, freshness: freshness, clock: clock, logger: logger, fetcherCounter: StatisticsCounter())
    }

    /// Puts `fetcher` behind `base`, counting the fetcher's calls in `fetcherCounter` (which
    /// several stores may share: a `Cache` counts every format's fetches together).
    package init(
        base: Base, fetcher: Source, freshness: Freshness = Freshness(), clock: any StoreClock = SystemClock(),
        logger: Logger, fetcherCounter: StatisticsCounter
    ) {
        self.base = base
        self.fetcher = fetcher
        self.logger = logger
        self.fetcherCounter = fetcherCounter
        self.freshness = freshness
        self.clock = clock
        readsAttributes = freshness.readsAttributes
        fetcherJudges = fetcher.judgesStoredEntries
        staleWindow = max(0, freshness.serveStaleFor?.timeInterval ?? 0)
        timeToLive = freshness.timeToLive?.timeInterval
        refreshAfter = freshness.refreshAfter?.timeInterval
    }

    /// Returns the value for `key` from the first layer that has it, or from the fetcher.
    ///
    /// On a full miss one flight per key starts: it reads the layers again when anything may have
    /// filled them since this caller's read (another flight, or a write through this store), calls
    /// the fetcher, writes the value to every layer and hands it to every
    /// waiter (the write is skipped when the key was set or removed through this store meanwhile,
    /// or every waiter has gone). A failure reaches every waiter and is not cached. Cancelling one waiter ends only that
    /// waiter's call, with `CancellationError`; when every waiter has been cancelled the fetcher call
    /// is cancelled too. Every call returns or throws exactly once.
    ///
    /// A layer that throws is treated as a miss; bytes that do not decode are removed from their
    /// layer and the fetcher is asked. When the fetcher judges its entries
    /// (``Fetcher/judgesStoredEntries``, as `NetworkFetcher` does by HTTP's rules), an entry found
    /// is served, served while one background revalidation runs, revalidated first, or fetched
    /// again, as the fetcher's ``Fetcher/reuse(of:forKey:at:)`` says.
    /// - Parameter key: The key whose value is wanted.
    /// - Returns: The cached or fetched value.
    /// - Throws: The fetcher's error, or `CancellationError`.
    @inlinable @inline(__always)
    public func fetch(_ key: Key) async throws -> Value {
        try Task.checkCancellation()
        let generation = writes.totalMark
        if !readsAttributes, !fetcherJudges, let value = try await base.readAsLayer(key, logger: logger) {
            return value
        }
        return try await fetchMissingOrCheckingAge(key, readAt: generation, from: fetcher)
    }

    /// What ``fetch(_:)`` does after its hot path (a hit read without looking at ages): a miss's
    /// flight, or a read that decides by the entry's age. Out of line, so that the hot path is one
    /// read and one `await`.
    @usableFromInline
    func fetchMissingOrCheckingAge(_ key: Key, readAt generation: UInt64, from source: some Fetcher<Key, Value>) async throws -> Value {
        if readsAttributes || source.judgesStoredEntries { return try await fetchCheckingAge(key, readAt: generation, from: source) }
        return try await fetchMissing(key, readAt: generation, from: source)
    }

    /// ``fetch(_:)`` with another fetcher than the store's own for this call (a caller that joins
    /// a flight under way gets that flight's value, whatever fetcher it passed).
    ///
    /// ``fetch(_:)`` spells out these five lines rather than calling this: the extra async call
    /// cost a hot read 47 instructions (1,691 against 1,738, `MemoryProbe chain get`).
    ///
    /// With a fetcher that judges its entries, an entry it calls fresh is served here too, inlined
    /// (out of line, the generic path cost an HTTP memory hit about a microsecond).
    @inlinable
    package func fetch(_ key: Key, from source: some Fetcher<Key, Value>) async throws -> Value {
        try Task.checkCancellation()
        let generation = writes.totalMark
        if !readsAttributes {
            if !source.judgesStoredEntries {
                if let value = try await base.readAsLayer(key, logger: logger) { return value }
            } else {
                // Read once: a miss, or an entry the fetcher does not call fresh, goes on from here.
                guard let entry = try await base.readEntryAsLayer(key, logger: logger) else {
                    return try await fetchMissing(key, readAt: generation, from: source)
                }
                let now = clock.now()
                let reuse = source.reuse(of: entry.attributes, forKey: key, at: now)
                if reuse == .fresh { return entry.value }
                return try await fetchJudged(key, entry: entry, reuse: reuse, at: now, readAt: generation, from: source)
            }
        }
        return try await fetchMissingOrCheckingAge(key, readAt: generation, from: source)
    }

    /// The miss path of ``fetch(_:)``, kept out of line.
    @usableFromInline
    func fetchMissing(
        _ key: Key, readAt generation: UInt64, from source: some Fetcher<Key, Value>, stored: StoreEntry<Value>? = nil
    ) async throws -> Value {
        try await flights.value(for: key) { [self] in
            defer { writes.recordFill() }
            return try await produce(key, readAt: generation, from: source, stored: stored)
        }
    }

    /// ``fetch(_:)`` when a refresh or a stale window is set, or the fetcher judges its entries:
    /// reads the entry and decides by its age, or by the fetcher's judgement.
    @usableFromInline
    func fetchCheckingAge(_ key: Key, readAt generation: UInt64, from source: some Fetcher<Key, Value>) async throws -> Value {
        guard let entry = try await base.readEntryAsLayer(key, logger: logger) else {
            return try await fetchMissing(key, readAt: generation, from: source)
        }
        let now = clock.now()
        if source.judgesStoredEntries {
            // Past its expiry in the layers (inside a stale window): the fetcher revalidates it.
            let reuse = isStale(entry.attributes, at: now) ? .revalidate : source.reuse(of: entry.attributes, forKey: key, at: now)
            return try await fetchJudged(key, entry: entry, reuse: reuse, at: now, readAt: generation, from: source)
        }
        if !isStale(entry.attributes, at: now) {
            if let refreshAfter, let storedAt = entry.attributes.storedAt, now >= storedAt.addingTimeInterval(refreshAfter) {
                startRefresh(key, at: now, from: source)
            } else {
                ages.withLock { $0.statistics.freshHits += 1 }
            }
            return entry.value
        }
        // Expired, inside the stale window: the fetcher is asked; if it fails the stale value is served.
        do {
            return try await fetchMissing(key, readAt: generation, from: source)
        } catch {
            if error is CancellationError || Task.isCancelled { throw error }
            recordStaleServed(key, "The fetcher failed; serving the expired value inside its stale window", error: error)
            return entry.value
        }
    }

    /// What a read does with an entry its judging fetcher did not call fresh: serves it while one
    /// background revalidation runs, revalidates it first, or fetches anew. Whether a failed
    /// revalidation may serve it is the fetcher's decision (``FetchOutcome/servingStored``): its
    /// rules (`must-revalidate`) govern, not the stale window.
    @usableFromInline
    func fetchJudged(
        _ key: Key, entry: StoreEntry<Value>, reuse: StoredEntryReuse, at now: Date, readAt generation: UInt64,
        from source: some Fetcher<Key, Value>
    ) async throws -> Value {
        switch reuse {
        case .fresh:
            if readsAttributes { ages.withLock { $0.statistics.freshHits += 1 } }
            return entry.value
        case .staleWhileRevalidate:
            startRefresh(key, at: now, from: source, stored: entry, readAt: generation)
            return entry.value
        case .revalidate:
            return try await fetchMissing(key, readAt: generation, from: source, stored: entry)
        case .refetch:
            return try await fetchMissing(key, readAt: generation, from: source)
        }
    }

    /// Whether an entry read from the layers is past its own expiry (its stored expiry less the
    /// stale window).
    private func isStale(_ attributes: EntryAttributes, at now: Date) -> Bool {
        guard let expiresAt = attributes.expiresAt else { return false }
        return now >= expiresAt.addingTimeInterval(-staleWindow)
    }

    /// Starts the background refresh of `key` (a revalidation of `stored`, when given) unless one
    /// is under way or one failed less than `refreshAfter` ago; counts the read as a stale hit.
    /// `generation` is the total mark taken before `stored` was read: a write since makes the
    /// refresh read the layers again rather than revalidate what it replaced.
    private func startRefresh(
        _ key: Key, at now: Date, from source: some Fetcher<Key, Value>, stored: StoreEntry<Value>? = nil, readAt generation: UInt64? = nil
    ) {
        ages.withLock { state in
            state.statistics.staleHits += 1
            guard state.refreshing[key] == nil else { return }
            if let notBefore = state.notBefore[key], now < notBefore { return }
            state.notBefore[key] = nil
            state.statistics.refreshes += 1
            // Made under the lock (it runs later), so no second read can start another.
            state.refreshing[key] = Task { [self] in
                do {
                    _ = try await flights.value(for: key) { [self] in
                        defer { writes.recordFill() }
                        return try await produce(key, readAt: generation ?? writes.totalMark, from: source, stored: stored, refreshing: true)
                    }
                } catch {
                    let retry = clock.now().addingTimeInterval(refreshAfter ?? Self.revalidationBackoff)
                    ages.withLock { ages in
                        ages.statistics.refreshFailures += 1
                        ages.notBefore[key] = retry
                    }
                    logger.debug("A background refresh failed; the current value is kept", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
                }
                ages.withLock { _ = $0.refreshing.removeValue(forKey: key) }
            }
        }
    }

    /// Waits until every background refresh under way has ended (for tests and shutdown).
    public func waitForRefreshes() async {
        while let refresh = ages.withLock({ $0.refreshing.values.first }) {
            await refresh.value
        }
    }

    /// The counts of fresh and stale reads, refreshes, and stale values served on error.
    public var freshnessStatistics: FreshnessStatistics { ages.withLock { $0.statistics } }

    /// Reads the layers the way ``fetch(_:)`` does, without asking the fetcher: a failing layer is
    /// a miss, and so is an entry past its own expiry (inside the stale window).
    package func readFreshAsLayer(_ key: Key) async throws -> Value? {
        guard staleWindow > 0 else { return try await base.readAsLayer(key, logger: logger) }
        guard let entry = try await base.readEntryAsLayer(key, logger: logger) else { return nil }
        return isStale(entry.attributes, at: clock.now()) ? nil : entry.value
    }

    /// Reads the layers only (the fetcher is not asked); an entry past its own expiry is a miss.
    /// - Parameter key: The key to look up.
    /// - Returns: The cached value, or `nil`.
    /// - Throws: What the layers throw.
    public func value(forKey key: Key) async throws -> Value? {
        guard staleWindow > 0 else { return try await base.value(forKey: key) }
        return try await entry(forKey: key, transformedBy: { $0 })?.value
    }

    /// Reads the entry from the layers, with its own expiry (the stale window taken off); an
    /// entry past it is a miss.
    /// - Parameters:
    ///   - key: The key to look up.
    ///   - transform: What to make of the value.
    /// - Returns: The entry, or `nil`.
    /// - Throws: What the layers throw.
    public func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        guard var entry = try await base.entry(forKey: key, transformedBy: transform) else { return nil }
        guard staleWindow > 0 else { return entry }
        if isStale(entry.attributes, at: clock.now()) { return nil }
        entry.attributes = withoutStaleWindow(entry.attributes)
        return entry
    }

    /// The attributes from the layers, with the entry's own expiry.
    /// - Parameter key: The key to look up.
    /// - Returns: The attributes, or `nil`.
    /// - Throws: What the layers throw.
    public func attributes(forKey key: Key) async throws -> EntryAttributes? {
        guard let attributes = try await base.attributes(forKey: key) else { return nil }
        guard staleWindow > 0 else { return attributes }
        return isStale(attributes, at: clock.now()) ? nil : withoutStaleWindow(attributes)
    }

    /// Writes to the layers, with the policy's lifetime.
    /// - Parameters:
    ///   - value: The value to store.
    ///   - key: The key to store it under.
    /// - Throws: What the layers throw.
    public func setValue(_ value: Value, forKey key: Key) async throws {
        try await writes.change(key) { try await write(StoreEntry(value: value), forKey: key) }
    }

    /// Writes the entry to the layers; one without an expiry gets the policy's lifetime.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Throws: What the layers throw.
    public func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await writes.change(key) { try await write(entry, forKey: key) }
    }

    /// Replaces the attributes in the layers (the stale window added to the expiry).
    /// - Parameters:
    ///   - attributes: The new attributes.
    ///   - key: The key whose entry changes.
    /// - Returns: `false` when no layer had the key.
    /// - Throws: What the layers throw.
    @discardableResult
    public func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await writes.change(key) { try await base.setAttributes(withStaleWindow(attributes), forKey: key) }
    }

    /// Adds the entry to the layers if absent; an entry past its own expiry counts as absent.
    /// - Parameters:
    ///   - entry: The value and its attributes.
    ///   - key: The key to store it under.
    /// - Returns: `.inserted`, or `.existing` with the entry that is there.
    /// - Throws: What the layers throw.
    public func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await writes.change(key) {
            let stamped = stamped(entry)
            var result = try await base.addEntry(stamped, forKey: key)
            if let existing = result.existing, isStale(existing.attributes, at: clock.now()) {
                try await base.removeValue(forKey: key)
                result = try await base.addEntry(stamped, forKey: key)
            }
            return result.existing.map { .existing(StoreEntry(value: $0.value, attributes: withoutStaleWindow($0.attributes))) } ?? .inserted
        }
    }

    /// Writes `entry` to the layers: as it is when the policy is empty, else stamped with the time
    /// stored and the policy's lifetime plus the stale window.
    private func write(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        if freshness.isNone, entry.attributes == EntryAttributes() {
            try await base.setValue(entry.value, forKey: key)
        } else {
            try await base.setEntry(stamped(entry), forKey: key)
        }
    }

    /// A fetched `entry` whose own lifetime (a fetcher's, such as HTTP freshness and retention)
    /// ends no later than the policy's ``Freshness/timeToLive`` from now: the shorter wins. A
    /// value given to a `set` keeps the lifetime it was given, the caller's explicit choice.
    private func boundedByTheTimeToLive(_ entry: StoreEntry<Value>) -> StoreEntry<Value> {
        guard let timeToLive, let own = entry.attributes.expiresAt else { return entry }
        var entry = entry
        entry.attributes.expiresAt = min(own, clock.now().addingTimeInterval(timeToLive))
        return entry
    }

    /// `entry` with its time stored, its lifetime (its own, else the policy's) and the stale window.
    private func stamped(_ entry: StoreEntry<Value>) -> StoreEntry<Value> {
        guard !freshness.isNone else { return entry }
        let now = clock.now()
        var entry = entry
        entry.attributes.storedAt = entry.attributes.storedAt ?? now
        entry.attributes.expiresAt = entry.attributes.expiresAt ?? timeToLive.map { now.addingTimeInterval($0) }
        entry.attributes = withStaleWindow(entry.attributes)
        return entry
    }

    private func withStaleWindow(_ attributes: EntryAttributes) -> EntryAttributes {
        var attributes = attributes
        attributes.expiresAt = attributes.expiresAt?.addingTimeInterval(staleWindow)
        return attributes
    }

    private func withoutStaleWindow(_ attributes: EntryAttributes) -> EntryAttributes {
        var attributes = attributes
        attributes.expiresAt = attributes.expiresAt?.addingTimeInterval(-staleWindow)
        return attributes
    }

    /// Removes `key` from the layers.
    /// - Parameter key: The key to remove.
    /// - Throws: What the layers throw.
    public func removeValue(forKey key: Key) async throws {
        try await writes.change(key) { try await base.removeValue(forKey: key) }
    }

    /// Empties the layers.
    /// - Throws: What the layers throw.
    public func removeAll() async throws {
        try await writes.changeEveryKey { try await base.removeAll() }
    }

    /// The layers of `base`, then a layer named `"fetcher"`: its `hits` are values the fetcher
    /// produced and its `errors` the calls that failed.
    public var layerStatistics: [LayerStatistics] {
        base.layerStatistics + [LayerStatistics(name: "fetcher", statistics: fetcherCounter.snapshot)]
    }

    /// The number of flights under way, for tests and diagnostics.
    public var flightsInProgress: Int { flights.count }

    /// The number of callers waiting on the flight for `key`, for tests.
    package func waiterCount(for key: Key) -> Int {
        flights.waiterCount(for: key)
    }

    /// Calls the fetcher (with `stored`, the entry to revalidate) and writes what it produced.
    /// `refreshing` when a background refresh runs it: a stored value served because the source
    /// failed was then served to no one, and is a failed refresh.
    private func produce(
        _ key: Key, readAt generation: UInt64, from source: some Fetcher<Key, Value>, stored: StoreEntry<Value>?,
        refreshing: Bool = false
    ) async throws -> Value {
        let keyMark = writes.mark(for: key)
        var stored = stored
        // Read again only if something may have filled the layers since this caller's read.
        if writes.totalMark != generation {
            if source.judgesStoredEntries {
                stored = nil
                if let entry = try await readFreshEntryAsLayer(key) {
                    switch source.reuse(of: entry.attributes, forKey: key, at: clock.now()) {
                    case .fresh, .staleWhileRevalidate: return entry.value
                    case .revalidate: stored = entry
                    case .refetch: break
                    }
                }
            } else if let value = try await readFreshAsLayer(key) {
                return value
            }
        }
        try Task.checkCancellation()
        let outcome: FetchOutcome<Value>
        do {
            outcome = try await source.fetch(key, stored: stored)
        } catch {
            if !(error is CancellationError) {
                fetcherCounter.recordError()
                logger.debug("The fetcher failed", metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"])
            }
            throw error
        }
        if case .servingStored = outcome {
            fetcherCounter.recordError()
        } else {
            fetcherCounter.recordHit()
            if readsAttributes || source.judgesStoredEntries {
                ages.withLock { ages in
                    ages.servingStale.remove(key)
                    ages.notBefore[key] = nil
                }
            }
        }
        let value: Value
        var change: (() async throws -> Void)?
        switch outcome {
        case .store(let fetched):
            value = fetched.value
            change = { [self] in try await write(boundedByTheTimeToLive(fetched), forKey: key) }
        case .doNotStore(let fetched):
            value = fetched
            if stored != nil { change = { [self] in try await base.removeValue(forKey: key) } }
        case .notModified(let attributes):
            guard let stored else { throw Self.noStoredEntry(key, "notModified") }
            value = stored.value
            change = { [self] in
                let updated = stamped(boundedByTheTimeToLive(StoreEntry(value: stored.value, attributes: attributes)))
                if try await !base.setAttributes(updated.attributes, forKey: key) {
                    try await base.setEntry(updated, forKey: key)   // evicted meanwhile: kept again, whole
                }
            }
        case .servingStored:
            guard let stored else { throw Self.noStoredEntry(key, "servingStored") }
            if refreshing {
                // Served to no one: the read that started the refresh had its value already.
                let retry = clock.now().addingTimeInterval(refreshAfter ?? Self.revalidationBackoff)
                ages.withLock { ages in
                    ages.statistics.refreshFailures += 1
                    ages.notBefore[key] = retry
                }
            } else {
                recordStaleServed(key, "The source failed; serving the stored value, as its rules allow", error: nil)
            }
            return stored.value
        }
        guard !Task.isCancelled, let change else { return value }
        // A value set or removed meanwhile wins over the fetched one.
        await writes.ifUnchanged(key, since: keyMark) {
            do {
                try await change()
            } catch {
                logger.warning(
                    "Could not store a fetched value in every layer",
                    metadata: ["key": "\(Logger.describe(key))", "error": "\(error)"]
                )
            }
        }
        return value
    }

    /// Counts a stale value served because its source failed, and logs it once until the key is
    /// fetched again.
    private func recordStaleServed(_ key: Key, _ message: Logger.Message, error: (any Error)?) {
        let first = ages.withLock { ages in
            ages.statistics.staleHits += 1
            ages.statistics.staleServedOnError += 1
            return ages.servingStale.insert(key).inserted
        }
        guard first else { return }
        var metadata: Logger.Metadata = ["key": "\(Logger.describe(key))"]
        if let error { metadata["error"] = "\(error)" }
        logger.warning(message, metadata: metadata)
    }

    /// Seconds before another background revalidation of a key whose last one failed, when no
    /// `refreshAfter` says: a source that is down is not asked again on every read.
    private static var revalidationBackoff: Double { 1 }

    /// The error of a fetcher that answered about a stored entry it was not given.
    private static func noStoredEntry(_ key: Key, _ outcome: String) -> StoreError {
        StoreError(.unavailable, "The fetcher answered \(outcome) for key \(Logger.describe(key)), but it was given no stored entry")
    }

    /// The value the layers hold for `key` if `source` calls it fresh, without asking the source
    /// (a request that may not reach the origin: `only-if-cached`); `nil` otherwise.
    package func storedValue(_ key: Key, judgedBy source: some Fetcher<Key, Value>) async throws -> Value? {
        guard let entry = try await readFreshEntryAsLayer(key) else { return nil }
        guard source.judgesStoredEntries else { return entry.value }
        return source.reuse(of: entry.attributes, forKey: key, at: clock.now()) == .fresh ? entry.value : nil
    }

    /// Reads the entry the way ``readFreshAsLayer(_:)`` reads a value.
    private func readFreshEntryAsLayer(_ key: Key) async throws -> StoreEntry<Value>? {
        guard let entry = try await base.readEntryAsLayer(key, logger: logger) else { return nil }
        return isStale(entry.attributes, at: clock.now()) ? nil : entry
    }
}

extension Store {
    /// Ends this store (or chain) in a fetcher; call ``FetchingStore/fetch(_:)`` to read through.
    ///
    /// On a full miss the fetcher is called once per key, whatever the number of concurrent callers,
    /// and its value is written to every layer. See ``FetchingStore/fetch(_:)`` for the guarantees.
    /// - Parameters:
    ///   - freshness: Lifetimes, background refresh and the stale window; none by default.
    ///   - clock: The clock that decides age and expiry; give the layers the same one.
    ///   - fetcher: The source of original values.
    ///   - logger: Where layer failures are logged.
    /// - Returns: A store with a `fetch(_:)` method.
    public func fetching<Source: Fetcher>(
        from fetcher: Source,
        freshness: Freshness = Freshness(),
        clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke")
    ) -> FetchingStore<Self, Source> where Source.Key == Key, Source.Value == Value {
        FetchingStore(base: self, fetcher: fetcher, freshness: freshness, clock: clock, logger: logger)
    }

    /// Ends this store (or chain) in a closure that produces original values.
    /// - Parameters:
    ///   - freshness: Lifetimes, background refresh and the stale window; none by default.
    ///   - clock: The clock that decides age and expiry; give the layers the same one.
    ///   - logger: Where layer failures are logged.
    ///   - body: Produces the value for a key.
    /// - Returns: A store with a `fetch(_:)` method.
    public func fetching(
        freshness: Freshness = Freshness(),
        clock: any StoreClock = SystemClock(),
        logger: Logger = Logger(label: "haneke"),
        _ body: @escaping @Sendable (Key) async throws -> Value
    ) -> FetchingStore<Self, ClosureFetcher<Key, Value>> {
        FetchingStore(base: self, fetcher: ClosureFetcher(body), freshness: freshness, clock: clock, logger: logger)
    }
}
