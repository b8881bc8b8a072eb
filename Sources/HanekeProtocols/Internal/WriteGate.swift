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
/// A change moves the key's mark when it starts and again when it ends: a reader that took its mark
/// while a change was under way may have read the layers half written, so its mark must not match
/// once the change is done.
///
/// Keys map to 64 stripes: unrelated keys in one stripe only share turns, which costs a little
/// waiting or a skipped promotion, never a wrong value.
@usableFromInline
package final class WriteGate: Sendable {
    private static var stripeCount: Int { 64 }

    private struct Stripe {
        var generation: UInt64 = 0
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let stripes = Locked([Stripe](repeating: Stripe(), count: WriteGate.stripeCount))
    private let total = Atomic<UInt64>(0)

    /// Creates a gate with no writes.
    @usableFromInline
    package init() {}

    /// A mark of `key`: compare it with a later mark, or pass it to ``ifUnchanged(_:since:_:)``.
    @usableFromInline
    package func mark(for key: some Hashable) -> UInt64 {
        let stripe = Self.stripe(of: key)
        return stripes.withLock { $0[stripe].generation }
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
    @usableFromInline
    package func change<T>(_ key: some Hashable, _ body: () async throws -> T) async rethrows -> T {
        let stripe = Self.stripe(of: key)
        await acquire(stripe, bumping: true)
        defer { release(stripe, bumping: true) }
        return try await body()
    }

    /// Runs a write of every key (a `removeAll`), holding every turn.
    @usableFromInline
    package func changeEveryKey<T>(_ body: () async throws -> T) async rethrows -> T {
        for stripe in 0..<Self.stripeCount { await acquire(stripe, bumping: true) }
        defer { for stripe in 0..<Self.stripeCount { release(stripe, bumping: true) } }
        return try await body()
    }

    /// Runs a write of `key` in its turn only if nothing changed the key since `mark`.
    /// - Returns: `body`'s result, or `nil` when the key changed and `body` did not run.
    @usableFromInline
    package func ifUnchanged<T>(_ key: some Hashable, since mark: UInt64, _ body: () async throws -> T) async rethrows -> T? {
        let stripe = Self.stripe(of: key)
        await acquire(stripe, bumping: false)
        defer { release(stripe, bumping: false) }
        guard stripes.withLock({ $0[stripe].generation }) == mark else { return nil }
        return try await body()
    }

    private func acquire(_ stripe: Int, bumping: Bool) async {
        let acquired = stripes.withLock { stripes in
            guard !stripes[stripe].held else { return false }
            stripes[stripe].held = true
            if bumping { stripes[stripe].generation &+= 1 }
            return true
        }
        if !acquired {
            await withCheckedContinuation { continuation in
                let free = stripes.withLock { stripes in
                    guard !stripes[stripe].held else {
                        stripes[stripe].waiters.append(continuation)
                        return false
                    }
                    stripes[stripe].held = true
                    return true
                }
                if free { continuation.resume() }
            }
            // The turn was handed over (or taken) with `held` set; mark the change now.
            if bumping { stripes.withLock { $0[stripe].generation &+= 1 } }
        }
        if bumping { total.add(1, ordering: .releasing) }
    }

    private func release(_ stripe: Int, bumping: Bool) {
        let next = stripes.withLock { stripes -> CheckedContinuation<Void, Never>? in
            if bumping { stripes[stripe].generation &+= 1 }
            guard !stripes[stripe].waiters.isEmpty else {
                stripes[stripe].held = false
                return nil
            }
            return stripes[stripe].waiters.removeFirst()
        }
        if bumping { total.add(1, ordering: .releasing) }
        next?.resume()
    }

    private static func stripe(of key: some Hashable) -> Int {
        Int(UInt(bitPattern: key.hashValue) % UInt(stripeCount))
    }
}
