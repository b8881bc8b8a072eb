import Synchronization

/// Orders the writes a combinator makes to its layers, per key, and tells readers whether a key may
/// have changed while they read.
///
/// A write to several layers is not atomic: two writes of one key (a `setValue` and a fetch's
/// write-back, a removal and a promotion) could interleave layer by layer and leave the layers
/// disagreeing. So writes of one key take turns: a waiting writer suspends (no thread blocks), and
/// a conditional write (a promotion, a write-back, a preload) runs only if nothing changed the key
/// since its reader took a mark. Reads never wait.
///
/// Turns are per key (by the key's 64-bit hash: two keys share a turn only if their hashes collide,
/// which costs a wait, never a wrong value): a write of one key never waits for another key's
/// write, however slow its layers are (a Redis tier timing out). A change of every key (`removeAll`) waits for the turns
/// under way and holds new ones back until it is done. A waiter whose task is cancelled leaves the
/// queue at once: `change` throws `CancellationError`, a conditional write is skipped.
///
/// A change moves the key's mark when it starts and again when it ends: a reader that took its mark
/// while a change was under way may have read the layers half written, so its mark must not match
/// once the change is done. Marks are kept for 64 stripes of keys: a change of an unrelated key in
/// the same stripe only skips a promotion, never lets a stale one through.
@usableFromInline
package final class WriteGate: Sendable {
    private static var stripeCount: Int { 64 }

    /// Someone waiting for a turn; resumed with `true` when the turn is theirs, `false` when their
    /// task was cancelled.
    private struct Waiter: Sendable {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private enum EveryKey: Sendable {
        case none
        /// A change of every key waits for the turns under way; new turns wait behind it.
        case pending
        case held
    }

    private struct State: Sendable {
        var generations = [UInt64](repeating: 0, count: WriteGate.stripeCount)
        /// The keys (by hash) whose turn is taken, each with who waits for it, first come first served.
        var turns: [Int: [Waiter]] = [:]
        var everyKey = EveryKey.none
        var everyKeyWaiters: [Waiter] = []
        /// Turns of keys that wait for a change of every key to end.
        var heldBack: [(key: Int, waiter: Waiter)] = []
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())
    private let total = Atomic<UInt64>(0)

    /// Creates a gate with no writes.
    @usableFromInline
    package init() {}

    /// A mark of `key`: compare it with a later mark, or pass it to ``ifUnchanged(_:since:_:)``.
    @usableFromInline
    package func mark(for key: some Hashable) -> UInt64 {
        mark(forHash: key.hashValue)
    }

    /// ``mark(for:)`` of the key whose `hashValue` is `hash`: for a caller that hashes its key once
    /// for the mark and the turn that follows it (``takeTurnIfUnchanged(hash:since:)``).
    @usableFromInline
    package func mark(forHash hash: Int) -> UInt64 {
        let stripe = Self.stripe(of: hash)
        return state.withLock { $0.generations[stripe] }
    }

    /// How many changes of every key wait for their turn, and how many turns of single keys wait
    /// behind them: what a test waits for, as events, before it looks at the order of the turns.
    package var waiting: (everyKey: Int, heldBack: Int) {
        state.withLock { ($0.everyKeyWaiters.count, $0.heldBack.count) }
    }

    /// A mark of every change and fill; cheaper than a key's mark (no lock), moved by any key.
    @usableFromInline
    package var totalMark: UInt64 { total.load(ordering: .acquiring) }

    /// Records that the layers may hold new values without a change of any key (a completed fetch).
    @usableFromInline
    package func recordFill() {
        total.add(1, ordering: .releasing)
    }

    /// Runs a write of `key` in its turn, after marking the key changed.
    /// - Throws: What `body` throws; `CancellationError` when the task is cancelled while it waits
    ///   for its turn (`body` then does not run).
    @usableFromInline
    package func change<T>(_ key: some Hashable, _ body: () async throws -> T) async throws -> T {
        let key = key.hashValue
        guard await acquire(key) else { throw CancellationError() }
        bump(Self.stripe(of: key))
        defer {
            bump(Self.stripe(of: key))
            release(key)
        }
        return try await body()
    }

    /// Runs a write of every key (a `removeAll`), once every turn under way is over and holding new
    /// ones back.
    /// - Throws: What `body` throws; `CancellationError` when the task is cancelled while it waits.
    @usableFromInline
    package func changeEveryKey<T>(_ body: () async throws -> T) async throws -> T {
        guard await acquireEveryKey() else { throw CancellationError() }
        bumpEveryStripe()
        defer {
            bumpEveryStripe()
            releaseEveryKey()
        }
        return try await body()
    }

    /// Runs a write of `key` in its turn only if nothing changed the key since `mark`.
    /// - Returns: `body`'s result, or `nil` when the key changed (or the task was cancelled while it
    ///   waited for its turn) and `body` did not run.
    @usableFromInline
    package func ifUnchanged<T>(_ key: some Hashable, since mark: UInt64, _ body: () async throws -> T) async rethrows -> T? {
        let key = key.hashValue
        let stripe = Self.stripe(of: key)
        // The common case in one turn of the lock, without a continuation (a promotion on every
        // warm read): the key changed already (skip), or its turn is free (take it).
        switch takeTurnIfUnchanged(hash: key, since: mark) {
        case false?:
            return nil
        case true?:
            break
        case nil:
            guard await acquire(key) else { return nil }
            guard state.withLock({ $0.generations[stripe] }) == mark else {
                release(key)
                return nil
            }
        }
        defer { release(key) }
        return try await body()
    }

    /// The first step of ``ifUnchanged(_:since:_:)`` alone, for a caller that makes its write in
    /// its own frame (a chain's promotion, which stays specialized and inlined that way): takes the
    /// turn of the key whose `hashValue` is `hash` at once, if nothing changed the key since `mark`
    /// and its turn is free. One turn of the lock, no continuation.
    /// - Returns: `true` when the turn is the caller's: give it back with
    ///   ``releaseTurn(hash:)`` once the write is done (or failed); `false` when the key changed
    ///   (skip the write); `nil` when its turn is taken or a change of every key holds the turns
    ///   (wait for one with ``ifUnchanged(_:since:_:)``).
    @usableFromInline
    package func takeTurnIfUnchanged(hash: Int, since mark: UInt64) -> Bool? {
        let stripe = Self.stripe(of: hash)
        return state.withLock { state -> Bool? in
            guard state.generations[stripe] == mark else { return false }
            guard state.everyKey == .none, state.turns[hash] == nil else { return nil }
            state.turns[hash] = []
            return true
        }
    }

    /// Gives back a turn that ``takeTurnIfUnchanged(hash:since:)`` took.
    @usableFromInline
    package func releaseTurn(hash: Int) {
        release(hash)
    }

    // MARK: - Turns

    /// Takes `key`'s turn, waiting for it when it is taken or a change of every key holds them;
    /// `false` when the task was cancelled meanwhile.
    private func acquire(_ key: Int) async -> Bool {
        await wait { state, waiter in
            if state.everyKey == .none, state.turns[key] == nil {
                state.turns[key] = []
                return true
            }
            if state.everyKey != .none {
                state.heldBack.append((key, waiter))
            } else {
                state.turns[key]!.append(waiter)
            }
            return false
        }
    }

    private func release(_ key: Int) {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if var waiters = state.turns[key], !waiters.isEmpty {
                let next = waiters.removeFirst()
                state.turns[key] = waiters
                return next.continuation
            }
            state.turns[key] = nil
            return Self.startEveryKeyIfFree(&state)
        }
        next?.resume(returning: true)
    }

    private func acquireEveryKey() async -> Bool {
        await wait { state, waiter in
            if state.everyKey == .none, state.turns.isEmpty {
                state.everyKey = .held
                return true
            }
            state.everyKeyWaiters.append(waiter)
            if state.everyKey == .none { state.everyKey = .pending }
            return false
        }
    }

    private func releaseEveryKey() {
        let resumed = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.everyKey = state.everyKeyWaiters.isEmpty ? .none : .pending
            let granted = Self.grantHeldBack(&state)
            if let next = Self.startEveryKeyIfFree(&state) { return granted + [next] }
            return granted
        }
        for continuation in resumed { continuation.resume(returning: true) }
    }

    /// Gives the held-back turns their keys, in order (a key's later waiters queue behind the first).
    private static func grantHeldBack(_ state: inout State) -> [CheckedContinuation<Bool, Never>] {
        var granted: [CheckedContinuation<Bool, Never>] = []
        for (key, waiter) in state.heldBack {
            if state.turns[key] == nil {
                state.turns[key] = []
                granted.append(waiter.continuation)
            } else {
                state.turns[key]!.append(waiter)
            }
        }
        state.heldBack = []
        return granted
    }

    /// When a change of every key waits and no turn is taken, gives it the gate.
    private static func startEveryKeyIfFree(_ state: inout State) -> CheckedContinuation<Bool, Never>? {
        guard state.everyKey == .pending, state.turns.isEmpty, !state.everyKeyWaiters.isEmpty else { return nil }
        state.everyKey = .held
        return state.everyKeyWaiters.removeFirst().continuation
    }

    /// Takes a turn now (`take` returns `true`) or queues for it; leaves the queue when the task is
    /// cancelled. Returns whether the turn is the caller's.
    private func wait(_ take: @escaping @Sendable (inout State, Waiter) -> Bool) async -> Bool {
        let id = state.withLock { state in
            state.nextID &+= 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let outcome: Bool? = state.withLock { state in
                    // Checked under the lock that the cancellation handler takes too, so a
                    // cancellation before the waiter is queued is never missed.
                    if Task.isCancelled { return false }
                    return take(&state, Waiter(id: id, continuation: continuation)) ? true : nil
                }
                if let outcome { continuation.resume(returning: outcome) }
            }
        } onCancel: {
            let (cancelled, granted) = state.withLock { Self.remove(id, from: &$0) }
            cancelled?.resume(returning: false)
            for continuation in granted { continuation.resume(returning: true) }
        }
    }

    /// Takes waiter `id` out of whichever queue holds it; returns its continuation (`nil` when it
    /// already has its turn) and the turns that its leaving frees (a change of every key that no
    /// longer waits holds nothing back).
    private static func remove(_ id: UInt64, from state: inout State) -> (CheckedContinuation<Bool, Never>?, [CheckedContinuation<Bool, Never>]) {
        for (key, waiters) in state.turns {
            if let index = waiters.firstIndex(where: { $0.id == id }) {
                state.turns[key]!.remove(at: index)
                return (waiters[index].continuation, [])
            }
        }
        if let index = state.heldBack.firstIndex(where: { $0.waiter.id == id }) {
            return (state.heldBack.remove(at: index).waiter.continuation, [])
        }
        if let index = state.everyKeyWaiters.firstIndex(where: { $0.id == id }) {
            let cancelled = state.everyKeyWaiters.remove(at: index).continuation
            guard state.everyKey == .pending, state.everyKeyWaiters.isEmpty else { return (cancelled, []) }
            state.everyKey = .none
            return (cancelled, grantHeldBack(&state))
        }
        return (nil, [])
    }

    // MARK: - Marks

    private func bump(_ stripe: Int) {
        state.withLock { $0.generations[stripe] &+= 1 }
        total.add(1, ordering: .releasing)
    }

    private func bumpEveryStripe() {
        state.withLock { state in
            for stripe in state.generations.indices { state.generations[stripe] &+= 1 }
        }
        total.add(1, ordering: .releasing)
    }

    private static func stripe(of hash: Int) -> Int {
        Int(UInt(bitPattern: hash) % UInt(stripeCount))
    }
}
