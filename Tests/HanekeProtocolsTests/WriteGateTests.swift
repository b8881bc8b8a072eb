@testable import HanekeProtocols
import Testing

/// The turns and marks behind every conditional write (promotions, write-backs, preloads).
struct WriteGateTests {
    @Test func aMarkTakenBeforeAChangeDoesNotMatchAfterIt() async throws {
        let gate = WriteGate()
        let mark = gate.mark(for: "k")
        try await gate.change("k") {}
        #expect(await gate.ifUnchanged("k", since: mark) { true } == nil)
    }

    /// A reader that took its mark while a change was under way may have read half of it (memory
    /// not yet written, disk already): its write-back must not run once the change is done.
    /// (Cache's "a value set during a fetch wins" test failed now and then on this.)
    @Test func aMarkTakenDuringAChangeDoesNotMatchAfterIt() async throws {
        let gate = WriteGate()
        let mark = try await gate.change("k") { gate.mark(for: "k") }
        #expect(await gate.ifUnchanged("k", since: mark) { true } == nil)
    }

    @Test func aMarkTakenAfterAChangeMatchesUntilTheNext() async throws {
        let gate = WriteGate()
        try await gate.change("k") {}
        let mark = gate.mark(for: "k")
        #expect(await gate.ifUnchanged("k", since: mark) { true } == true)
        #expect(await gate.ifUnchanged("k", since: mark) { true } == true, "a conditional write is not a change")
        try await gate.change("k") {}
        #expect(await gate.ifUnchanged("k", since: mark) { true } == nil)
    }

    @Test func aChangeMovesTheTotalMark() async throws {
        let gate = WriteGate()
        let before = gate.totalMark
        let during = try await gate.change("k") { gate.totalMark }
        #expect(during != before)
        #expect(gate.totalMark != during, "a reader that looked during the change reads again after it")
    }

    // MARK: - Turns

    /// A change that holds its key's turn until `release` is called: `started` yields once it runs.
    struct HeldChange {
        let started: AsyncStream<Void>
        let release: @Sendable () -> Void
        let task: Task<Void, any Error>

        init(_ gate: WriteGate, key: String? = nil) {
            let (started, startedSignal) = AsyncStream<Void>.makeStream()
            let (released, releaseSignal) = AsyncStream<Void>.makeStream()
            self.started = started
            self.release = { releaseSignal.finish() }
            task = Task {
                let body: () async throws -> Void = {
                    startedSignal.yield()
                    for await _ in released {}
                }
                if let key { try await gate.change(key, body) } else { try await gate.changeEveryKey(body) }
            }
        }

        func waitUntilStarted() async {
            for await _ in started { return }
        }
    }

    /// Another key's write never waits, however long a write holds its own key — also a key whose
    /// marks share a stripe.
    @Test func aWriteOfOneKeyNeverWaitsForAnother() async throws {
        let gate = WriteGate()
        let held = HeldChange(gate, key: "slow")
        await held.waitUntilStarted()
        for other in (0..<200).map({ "key-\($0)" }) {   // 200 keys: several share "slow"'s stripe
            try await gate.change(other) {}
        }
        held.release()
        try await held.task.value
    }

    /// A chain's promotion takes its turn without a continuation: it says "skip" once the key
    /// changed, "wait" while a change holds the turn, and otherwise holds the turn itself until it
    /// gives it back, so a change that comes meanwhile runs after the promotion, not during it.
    @Test func aTurnTakenAtOnceSaysSkipWaitOrTakenAndHoldsAChangeBack() async throws {
        let gate = WriteGate()
        let hash = "k".hashValue
        let before = gate.mark(forHash: hash)
        #expect(before == gate.mark(for: "k"))
        try await gate.change("k") {}
        #expect(gate.takeTurnIfUnchanged(hash: hash, since: before) == false)

        let held = HeldChange(gate, key: "k")
        await held.waitUntilStarted()
        #expect(gate.takeTurnIfUnchanged(hash: hash, since: gate.mark(for: "k")) == nil)
        held.release()
        try await held.task.value

        let mark = gate.mark(for: "k")
        #expect(gate.takeTurnIfUnchanged(hash: hash, since: mark) == true)
        let order = Locked<[String]>([])
        let (queued, queuedSignal) = AsyncStream<Void>.makeStream()
        let change = Task {
            queuedSignal.yield()
            try await gate.change("k") { order.withLock { $0.append("change") } }
        }
        for await _ in queued { break }
        // The change may not have queued yet; either way it cannot run before the turn is given back.
        await Task.yield()
        order.withLock { $0.append("promotion") }
        gate.releaseTurn(hash: hash)
        try await change.value
        #expect(order.withLock { $0 } == ["promotion", "change"])
        #expect(gate.takeTurnIfUnchanged(hash: hash, since: mark) == false, "the change moved the mark")
    }

    @Test func aWriterWaitingForItsTurnLeavesWhenCancelled() async throws {
        let gate = WriteGate()
        let held = HeldChange(gate, key: "k")
        await held.waitUntilStarted()
        let ran = Locked(false)
        let waiting = Task { try await gate.change("k") { ran.withLock { $0 = true } } }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ran.withLock { $0 } == false)
        // A conditional write that waits is skipped, not thrown, when cancelled.
        let conditional = Task { await gate.ifUnchanged("k", since: gate.mark(for: "k")) { true } }
        conditional.cancel()
        #expect(await conditional.value == nil)
        held.release()
        try await held.task.value
        try await gate.change("k") {}   // the turn is free again
    }

    @Test func aChangeOfEveryKeyWaitsForTheTurnsUnderWayAndHoldsNewOnesBack() async throws {
        let gate = WriteGate()
        let held = HeldChange(gate, key: "k")
        await held.waitUntilStarted()
        let order = Locked<[String]>([])
        let everyKey = Task { try await gate.changeEveryKey { order.withLock { $0.append("every key") } } }
        // Wait (without a clock) until the change of every key is queued, then until a new turn is
        // held back behind it; a gate that let either run would end the wait too.
        while gate.waiting.everyKey == 0, order.withLock({ $0 }).isEmpty { await Task.yield() }
        let later = Task { try await gate.change("other") { order.withLock { $0.append("other") } } }
        while gate.waiting.heldBack == 0, order.withLock({ $0 }).isEmpty { await Task.yield() }
        #expect(order.withLock { $0 }.isEmpty)
        held.release()
        try await held.task.value
        try await everyKey.value
        try await later.value
        #expect(order.withLock { $0 } == ["every key", "other"])
    }

    @Test func aCancelledChangeOfEveryKeyLetsTheHeldBackTurnsGo() async throws {
        let gate = WriteGate()
        let held = HeldChange(gate, key: "k")
        await held.waitUntilStarted()
        let ran = Locked<[String]>([])
        let everyKey = Task { try await gate.changeEveryKey { ran.withLock { $0.append("every key") } } }
        // Events, not a clock: each wait also ends if a broken gate let the turn run.
        while gate.waiting.everyKey == 0, ran.withLock({ $0 }).isEmpty { await Task.yield() }
        let other = Task { try await gate.change("other") { ran.withLock { $0.append("other") } } }
        while gate.waiting.heldBack == 0, ran.withLock({ $0 }).isEmpty { await Task.yield() }
        #expect(ran.withLock { $0 }.isEmpty, "both wait")
        everyKey.cancel()
        await #expect(throws: CancellationError.self) { try await everyKey.value }
        try await other.value   // no longer held back
        held.release()
        try await held.task.value
    }
}
