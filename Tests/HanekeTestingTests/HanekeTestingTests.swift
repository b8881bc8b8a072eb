import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing

struct HanekeTestingTests {
    @Test func theSuitePassesACorrectStore() async throws {
        try await StoreConformanceSuite { MemoryStore<String, Data>() }.run()
    }

    @Test(arguments: BrokenStore.Flaw.allCases)
    func theSuiteCatchesABrokenStore(flaw: BrokenStore.Flaw) async throws {
        let failure = await #expect(throws: ConformanceFailure.self) {
            try await StoreConformanceSuite { BrokenStore(flaw: flaw) }.run()
        }
        let failedChecks = failure?.failures.map(\.check) ?? []
        #expect(failedChecks.contains(flaw.expectedCheck), "failed: \(failedChecks)")
        #expect(failure?.description.contains("BrokenStore") == true)
    }

    @Test func theCheckNamesAreListed() {
        let names = StoreConformanceSuite<MemoryStore<String, Data>>.checkNames
        #expect(names.count == 18)
        #expect(Set(names).count == names.count)
    }

    @Test func aFailingStoreFailsOnlyTheChosenOperationsAndCanRecover() async throws {
        let store = FailingStore(wrapping: MemoryStore<String, String>(), failing: [.write])
        await #expect(throws: StoreError.self) { try await store.setValue("v", forKey: "k") }
        #expect(try await store.value(forKey: "k") == nil)

        store.failingOperations = [.read, .removeAll]
        try await store.setValue("v", forKey: "k")
        let error = await #expect(throws: StoreError.self) { try await store.value(forKey: "k") }
        #expect(error?.code == .unavailable)
        await #expect(throws: StoreError.self) { try await store.removeAll() }
        try await store.removeValue(forKey: "k")

        store.failingOperations = []
        store.error = StoreError(.io, "unused")
        #expect(try await store.value(forKey: "k") == nil)
        #expect(store.layerStatistics[0].statistics.errors == 3)
    }

    @Test func aFailingStoreThrowsTheGivenError() async {
        let store = FailingStore(wrapping: MemoryStore<String, String>(), error: StoreError(.timeout, "slow"))
        let error = await #expect(throws: StoreError.self) { try await store.removeValue(forKey: "k") }
        #expect(error?.code == .timeout)
    }

    @Test func aFailingStoreWithNoFaultsConforms() async throws {
        try await StoreConformanceSuite { FailingStore(wrapping: MemoryStore<String, Data>(), failing: []) }.run()
    }

    @Test func aRecordingStoreLogsEveryCallInOrder() async throws {
        let store = RecordingStore(wrapping: MemoryStore<String, Int>())
        try await store.setValue(1, forKey: "a")
        _ = try await store.value(forKey: "a")
        try await store.removeValue(forKey: "a")
        try await store.removeAll()
        #expect(store.calls == [.setValue(1, "a"), .value("a"), .removeValue("a"), .removeAll])
        #expect(store.calls.map(\.key) == ["a", "a", "a", nil])
        store.resetCalls()
        #expect(store.calls.isEmpty)
    }

    @Test func aRecordingStoreConforms() async throws {
        try await StoreConformanceSuite { RecordingStore(wrapping: MemoryStore<String, Data>()) }.run()
    }

    @Test func theTestClockMovesOnlyWhenTold() {
        let clock = TestClock(start: Date(timeIntervalSince1970: 100))
        #expect(clock.now() == Date(timeIntervalSince1970: 100))
        clock.advance(by: .milliseconds(1_500))
        #expect(clock.now() == Date(timeIntervalSince1970: 101.5))
        clock.set(to: Date(timeIntervalSince1970: 7))
        #expect(clock.now() == Date(timeIntervalSince1970: 7))
    }
}

/// A store with one deliberate flaw, to prove the conformance suite notices it.
final class BrokenStore: Store {
    enum Flaw: CaseIterable, Sendable {
        case ignoresOverwrites, removeDoesNothing, removeAllDoesNothing, forgetsBeyondTenKeys,
             throwsOnMissingKey, mixesUpKeys, losesEmptyValues, racesUnderConcurrency

        var expectedCheck: String {
            switch self {
            case .ignoresOverwrites: "setting again overwrites"
            case .removeDoesNothing: "a removed key reads as nil and others stay"
            case .removeAllDoesNothing: "removeAll empties the store and leaves it usable"
            case .forgetsBeyondTenKeys: "many keys are all kept"
            case .throwsOnMissingKey: "a missing key reads as nil"
            case .mixesUpKeys: "keys are independent"
            case .losesEmptyValues: "the first sample value (empty, for the built-in samples) is kept, not a miss"
            case .racesUnderConcurrency: "concurrent tasks each read their own last write"
            }
        }
    }

    let flaw: Flaw
    private let memory = MemoryStore<String, Data>()
    private let writes = Locked(0)

    init(flaw: Flaw) { self.flaw = flaw }

    func value(forKey key: String) async throws -> Data? {
        let value = memory.value(forKey: flaw == .mixesUpKeys ? String(key.prefix(1)) : key)
        if value == nil, flaw == .throwsOnMissingKey { throw StoreError(.notFound, key) }
        if flaw == .racesUnderConcurrency, key.hasPrefix("key-1"), writes.withLock({ $0 }) > 50 {
            return Data("stale".utf8)
        }
        return value
    }

    func setValue(_ value: Data, forKey key: String) async throws {
        writes.withLock { $0 += 1 }
        let key = flaw == .mixesUpKeys ? String(key.prefix(1)) : key
        if flaw == .ignoresOverwrites, memory.containsValue(forKey: key) { return }
        if flaw == .forgetsBeyondTenKeys, memory.count >= 10 { return }
        if flaw == .losesEmptyValues, value.isEmpty { return }
        memory.setValue(value, forKey: key)
    }

    func removeValue(forKey key: String) async throws {
        if flaw != .removeDoesNothing { memory.removeValue(forKey: key) }
    }

    func removeAll() async throws {
        if flaw != .removeAllDoesNothing { memory.removeAll() }
    }
}
