import HanekeProtocols
import Logging

/// A store opened in the background: `open` runs on an I/O executor as soon as the wrapper is made
/// (a `FileStore` walks its folder when it opens), and every operation waits for that first
/// attempt — suspending, never blocking a thread. So a `Cache` can be created anywhere, on a
/// cooperative thread or as a global (`Shared`), without its caller waiting on the disk.
///
/// A store that cannot be opened (a folder that is not a store's, another user's, a database
/// another process keeps locked, a full disk) is **unavailable**, loudly:
/// - reads are misses (the format works from its memory layer), but writes and removals throw
///   `unavailable` with the reason as the cause, so `Cache.set` and `Cache.remove` report it;
/// - every key written or removed meanwhile is remembered, and when a later attempt opens the
///   store those keys are removed from it before it serves anything: a value removed (a revoked
///   token) or replaced while the layer was unavailable is never served again from it;
/// - after ``retryInterval`` the next operation starts another attempt in the background (the
///   operations meanwhile do not wait for it: an open can wait out a lock for seconds).
///
/// Concurrency: one `Locked` box holds the phase and the remembered keys. An operation decides
/// under the lock whether it runs on the open store or records its key, and an attempt that opened
/// the store marks it open under the same lock only once no remembered key is left, so no key
/// recorded while the store was unavailable is missed.
final class OpeningStore<Base: Store>: Store {
    typealias Key = Base.Key
    typealias Value = Base.Value

    let name: String
    /// How long after a failed attempt the next one may start; `5 seconds` for a cache's folders.
    let retryInterval: Duration
    private let what: String
    private let executor: IOExecutor
    private let logger: Logger
    private let open: @Sendable () throws -> Base
    private let first: Task<Void, Never>
    private let state: Locked<State>

    private struct State: Sendable {
        var phase: Phase = .opening
        /// Keys written or removed while the store was unavailable, to remove from it once it opens.
        var stale: Set<Key> = []
        /// Whether `removeAll` was asked while the store was unavailable.
        var staleAll = false
        /// The retry running now, if any (operations wait for the first attempt, ``first``, only).
        var attempt: Task<Void, Never>?
    }

    private enum Phase: Sendable {
        case opening
        case open(Base)
        case unavailable(StoreError, since: ContinuousClock.Instant)
    }

    /// What an operation runs on.
    private enum Target {
        case store(Base)
        case unavailable(StoreError)
    }

    /// Starts opening the store.
    /// - Parameters:
    ///   - name: The layer's name in statistics, before the store is open.
    ///   - executor: Where `open` runs.
    ///   - logger: Where a failure to open is reported.
    ///   - what: What is being opened, for the log and errors (a folder's path).
    ///   - retryInterval: How long after a failed attempt the next may start.
    ///   - open: Opens the store; blocking work.
    init(
        name: String,
        executor: IOExecutor,
        logger: Logger,
        what: String,
        retryInterval: Duration = .seconds(5),
        open: @escaping @Sendable () throws -> Base
    ) {
        self.name = name
        self.what = what
        self.executor = executor
        self.logger = logger
        self.retryInterval = retryInterval
        self.open = open
        let state = Locked(State())
        self.state = state
        first = Task { [executor, open, logger, what, name] in
            await Self.attempt(state: state, executor: executor, open: open, logger: logger, what: what, name: name, retrying: false)
        }
    }

    /// Opens the store on the executor; once open, removes the keys remembered meanwhile, then
    /// marks it open. A failure (of the open or of a removal) leaves it unavailable.
    private static func attempt(
        state: Locked<State>, executor: IOExecutor, open: @escaping @Sendable () throws -> Base,
        logger: Logger, what: String, name: String, retrying: Bool
    ) async {
        do {
            let base = try await executor.run(open)
            while true {
                let (keys, all) = state.withLock { state -> (Set<Key>, Bool) in
                    if state.stale.isEmpty && !state.staleAll {
                        state.phase = .open(base)
                        state.attempt = nil
                    }
                    defer { (state.stale, state.staleAll) = ([], false) }
                    return (state.stale, state.staleAll)
                }
                if keys.isEmpty && !all { break }
                do {
                    if all { try await base.removeAll() }
                    for key in keys { try await base.removeValue(forKey: key) }
                } catch {
                    // Not removed: still remembered, and the store stays unavailable.
                    state.withLock { state in
                        state.stale.formUnion(keys)
                        state.staleAll = state.staleAll || all
                    }
                    throw StoreError(.unavailable, "The values changed while it could not be used could not be removed from it", cause: error)
                }
            }
            if retrying {
                logger.notice("The cache folder can be used again", metadata: ["folder": "\(what)", "layer": "\(name)"])
            }
        } catch {
            let failure = StoreError(.unavailable, "The layer '\(name)' (\(what)) could not be opened", cause: error)
            state.withLock { state in
                state.phase = .unavailable(failure, since: .now)
                state.attempt = nil
            }
            if !retrying {
                logger.error(
                    "The cache folder cannot be used; reads of this layer miss and writes to it fail with 'unavailable' until it opens",
                    metadata: ["folder": "\(what)", "layer": "\(name)", "error": "\(error)"]
                )
            } else {
                logger.debug("The cache folder still cannot be used", metadata: ["folder": "\(what)", "layer": "\(name)", "error": "\(error)"])
            }
        }
    }

    /// The open store, or why there is none. Waits for the first attempt only; when the store is
    /// unavailable and ``retryInterval`` has passed, starts another attempt in the background.
    /// `remember` runs under the lock when the store is unavailable (to record a key).
    private func target(remember: (inout State) -> Void = { _ in }) async -> Target {
        await first.value
        return state.withLock { state -> Target in
            switch state.phase {
            case .open(let base):
                return .store(base)
            case .opening:
                // Not once the first attempt is over: it leaves the store open or unavailable.
                remember(&state)
                return .unavailable(StoreError(.unavailable, "The layer '\(name)' (\(what)) is being opened"))
            case .unavailable(let failure, let since):
                // While a retry runs the store stays unavailable: operations do not wait for it.
                remember(&state)
                if state.attempt == nil, ContinuousClock.now - since >= retryInterval {
                    // The attempt takes the lock only once this closure has released it.
                    let (box, executor, open, logger, what, name) = (self.state, executor, open, logger, what, name)
                    state.attempt = Task {
                        await Self.attempt(state: box, executor: executor, open: open, logger: logger, what: what, name: name, retrying: true)
                    }
                }
                return .unavailable(failure)
            }
        }
    }

    /// The store, once opened; `nil` while it is unavailable (after the first attempt).
    var base: Base? {
        get async {
            if case .store(let base) = await target() { return base }
            return nil
        }
    }

    /// Waits for the attempt to open the store that is running now, if any (tests).
    func waitForAttempt() async {
        await first.value
        await state.withLock { $0.attempt }?.value
    }

    func value(forKey key: Key) async throws -> Value? {
        guard case .store(let base) = await target() else { return nil }
        return try await base.value(forKey: key)
    }

    func value<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> Transformed? {
        guard case .store(let base) = await target() else { return nil }
        return try await base.value(forKey: key, transformedBy: transform)
    }

    func setValue(_ value: Value, forKey key: Key) async throws {
        try await base(remembering: key, "Could not write key \(Logger.describe(key))").setValue(value, forKey: key)
    }

    func removeValue(forKey key: Key) async throws {
        try await base(remembering: key, "Could not remove key \(Logger.describe(key))").removeValue(forKey: key)
    }

    func entry<Transformed: Sendable>(
        forKey key: Key,
        transformedBy transform: @escaping @Sendable (Value) throws -> Transformed
    ) async throws -> StoreEntry<Transformed>? {
        guard case .store(let base) = await target() else { return nil }
        return try await base.entry(forKey: key, transformedBy: transform)
    }

    func attributes(forKey key: Key) async throws -> EntryAttributes? {
        guard case .store(let base) = await target() else { return nil }
        return try await base.attributes(forKey: key)
    }

    func setEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws {
        try await base(remembering: key, "Could not write key \(Logger.describe(key))").setEntry(entry, forKey: key)
    }

    @discardableResult
    func setAttributes(_ attributes: EntryAttributes, forKey key: Key) async throws -> Bool {
        try await base(remembering: key, "Could not change the attributes of key \(Logger.describe(key))").setAttributes(attributes, forKey: key)
    }

    func addEntry(_ entry: StoreEntry<Value>, forKey key: Key) async throws -> AddResult<Value> {
        try await base(remembering: key, "Could not add key \(Logger.describe(key))").addEntry(entry, forKey: key)
    }

    /// The open store for a change of `key`, or the refusal (the key is remembered, to be removed
    /// from the store once it opens).
    private func base(remembering key: Key, _ what: String) async throws -> Base {
        switch await target(remember: { $0.stale.insert(key) }) {
        case .store(let base): return base
        case .unavailable(let failure): throw refusal(failure, what)
        }
    }

    func removeAll() async throws {
        switch await target(remember: { $0.staleAll = true }) {
        case .store(let base): try await base.removeAll()
        case .unavailable(let failure): throw refusal(failure, "Could not remove every value")
        }
    }

    private func refusal(_ failure: StoreError, _ what: String) -> StoreError {
        StoreError(.unavailable, "\(what) in layer '\(name)': \(failure.message); it will be removed from this layer when it opens", cause: failure.cause ?? failure)
    }

    /// The store's layers once it is open; until then one empty layer named ``name``.
    var layerStatistics: [LayerStatistics] {
        let base = state.withLock { state -> Base? in
            if case .open(let base) = state.phase { return base }
            return nil
        }
        return base?.layerStatistics ?? [LayerStatistics(name: name, statistics: StoreStatistics())]
    }
}
