@testable import HanekeProtocols
import Testing

/// The turns and marks behind every conditional write (promotions, write-backs, preloads).
struct WriteGateTests {
    @Test func aMarkTakenBeforeAChangeDoesNotMatchAfterIt() async {
        let gate = WriteGate()
        let mark = gate.mark(for: "k")
        await gate.change("k") {}
        #expect(await gate.ifUnchanged("k", since: mark) { true } == nil)
    }

    /// A reader that took its mark while a change was under way may have read half of it (memory
    /// not yet written, disk already): its write-back must not run once the change is done.
    /// (Cache's "a value set during a fetch wins" test failed now and then on this.)
    @Test func aMarkTakenDuringAChangeDoesNotMatchAfterIt() async {
        let gate = WriteGate()
        let mark = await gate.change("k") { gate.mark(for: "k") }
        #expect(await gate.ifUnchanged("k", since: mark) { true } == nil)
    }

    @Test func aMarkTakenAfterAChangeMatchesUntilTheNext() async {
        let gate = WriteGate()
        await gate.change("k") {}
        let mark = gate.mark(for: "k")
        #expect(await gate.ifUnchanged("k", since: mark) { true } == true)
        #expect(await gate.ifUnchanged("k", since: mark) { true } == true, "a conditional write is not a change")
        await gate.change("k") {}
        #expect(await gate.ifUnchanged("k", since: mark) { true } == nil)
    }

    @Test func aChangeMovesTheTotalMark() async {
        let gate = WriteGate()
        let before = gate.totalMark
        let during = await gate.change("k") { gate.totalMark }
        #expect(during != before)
        #expect(gate.totalMark != during, "a reader that looked during the change reads again after it")
    }
}
