import Foundation
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing

/// A fetcher that answers `"<generation>:<key>"`, counts its calls, fails when told to, and can
/// hold its calls until released (to show that readers do not wait for a refresh).
final class ScriptedFetcher: Fetcher {
    typealias Key = String
    typealias Value = String

    private struct State {
        var calls = 0
        var generation = 1
        var failing = false
        var holding = false
        var held: [CheckedContinuation<Void, Never>] = []
        var lifetime: Date?
    }

    private let state = Locked(State())

    var calls: Int { state.withLock { $0.calls } }

    func setGeneration(_ generation: Int) { state.withLock { $0.generation = generation } }
    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }
    func setLifetime(_ expiry: Date?) { state.withLock { $0.lifetime = expiry } }
    func hold() { state.withLock { $0.holding = true } }

    func release() {
        let held = state.withLock { state in
            state.holding = false
            defer { state.held = [] }
            return state.held
        }
        held.forEach { $0.resume() }
    }

    func fetch(_ key: String) async throws -> String {
        try await fetchEntry(key).value
    }

    func fetchEntry(_ key: String) async throws -> StoreEntry<String> {
        await withCheckedContinuation { continuation in
            let holding = state.withLock { state in
                state.calls += 1
                if state.holding { state.held.append(continuation) }
                return state.holding
            }
            if !holding { continuation.resume() }
        }
        let (generation, failing, lifetime) = state.withLock { ($0.generation, $0.failing, $0.lifetime) }
        if failing { throw StoreError(.unavailable, "the source is down") }
        return StoreEntry(value: "\(generation):\(key)", expiresAt: lifetime)
    }
}

@Suite(.timeLimit(.minutes(1)))
struct FreshnessTests {
    @Test func aThousandReadersOfAValueDueForRefreshGetItAtOnceAndOneRefreshRuns() async throws {
        let clock = TestClock()
        let fetcher = ScriptedFetcher()
        let memory = MemoryStore<String, String>(clock: clock)
        let store = memory.fetching(from: fetcher, freshness: Freshness(timeToLive: .seconds(600), refreshAfter: .seconds(60)), clock: clock)
        #expect(try await store.fetch("k") == "1:k")
        clock.advance(by: .seconds(61))
        fetcher.setGeneration(2)
        fetcher.hold()
        // Every read returns the current value while the one refresh is held in the fetcher.
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1_000 { group.addTask { try await store.fetch("k") } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(values.count == 1_000)
        #expect(values.allSatisfy { $0 == "1:k" })
        fetcher.release()
        await store.waitForRefreshes()
        #expect(fetcher.calls == 2)   // the first fill and one refresh
        #expect(memory.value(forKey: "k") == "2:k")
        let statistics = store.freshnessStatistics
        #expect(statistics.refreshes == 1)
        #expect(statistics.staleHits == 1_000)
        // Refreshed: the next reads are fresh until the next window.
        #expect(try await store.fetch("k") == "2:k")
        #expect(store.freshnessStatistics.freshHits == 1)
        clock.advance(by: .seconds(61))
        #expect(try await store.fetch("k") == "2:k")
        await store.waitForRefreshes()
        #expect(fetcher.calls == 3)
    }

    @Test func aFailedRefreshKeepsTheValueAndIsNotRetriedInsideTheWindow() async throws {
        let clock = TestClock()
        let fetcher = ScriptedFetcher()
        let store = MemoryStore<String, String>(clock: clock)
            .fetching(from: fetcher, freshness: Freshness(refreshAfter: .seconds(60)), clock: clock)
        #expect(try await store.fetch("k") == "1:k")
        fetcher.setFailing(true)
        clock.advance(by: .seconds(61))
        for _ in 0..<10 {
            #expect(try await store.fetch("k") == "1:k")
            await store.waitForRefreshes()
        }
        #expect(fetcher.calls == 2)
        #expect(store.freshnessStatistics.refreshFailures == 1)
        clock.advance(by: .seconds(61))
        #expect(try await store.fetch("k") == "1:k")
        await store.waitForRefreshes()
        #expect(fetcher.calls == 3)
    }

    @Test func anExpiredValueIsServedInsideTheStaleWindowWhenTheFetcherFailsAndNotAfter() async throws {
        let clock = TestClock()
        let fetcher = ScriptedFetcher()
        let memory = MemoryStore<String, String>(clock: clock)
        let store = memory.fetching(from: fetcher, freshness: Freshness(timeToLive: .seconds(60), serveStaleFor: .seconds(300)), clock: clock)
        #expect(try await store.fetch("k") == "1:k")
        // Its own expiry is reported, not the stale window's.
        let expiry = try #require(try await store.attributes(forKey: "k")?.expiresAt)
        #expect(expiry == clock.now().addingTimeInterval(60))
        fetcher.setFailing(true)
        var served = 0
        for _ in 0..<40 {
            clock.advance(by: .seconds(10))
            guard clock.now() < expiry.addingTimeInterval(300) else { break }
            #expect(try await store.fetch("k") == "1:k")
            if clock.now() >= expiry {
                served += 1
                // A plain read does not serve the stale value.
                #expect(try await store.value(forKey: "k") == nil)
            }
        }
        #expect(served == 30)
        #expect(store.freshnessStatistics.staleServedOnError == 30)
        clock.set(to: expiry.addingTimeInterval(300))
        await #expect(throws: StoreError.self) { try await store.fetch("k") }
        // Once the source answers again, the value is fresh again.
        fetcher.setFailing(false)
        fetcher.setGeneration(2)
        #expect(try await store.fetch("k") == "2:k")
    }

    @Test func anExpiredValueIsRefetchedWhenTheFetcherAnswers() async throws {
        let clock = TestClock()
        let fetcher = ScriptedFetcher()
        let store = MemoryStore<String, String>(clock: clock)
            .fetching(from: fetcher, freshness: Freshness(timeToLive: .seconds(60), serveStaleFor: .seconds(300)), clock: clock)
        #expect(try await store.fetch("k") == "1:k")
        clock.advance(by: .seconds(61))
        fetcher.setGeneration(2)
        #expect(try await store.fetch("k") == "2:k")
        #expect(store.freshnessStatistics.staleServedOnError == 0)
    }

    @Test func aFetcherMayGiveItsValueALifetimeOfItsOwn() async throws {
        let clock = TestClock()
        let fetcher = ScriptedFetcher()
        fetcher.setLifetime(clock.now().addingTimeInterval(5))
        let memory = MemoryStore<String, String>(clock: clock)
        let store = memory.fetching(from: fetcher, freshness: Freshness(timeToLive: .seconds(600)), clock: clock)
        #expect(try await store.fetch("k") == "1:k")
        #expect(try await memory.attributes(forKey: "k")?.expiresAt == clock.now().addingTimeInterval(5))
        clock.advance(by: .seconds(6))
        #expect(memory.value(forKey: "k") == nil)
        fetcher.setLifetime(nil)
        #expect(try await store.fetch("k") == "1:k")
        #expect(try await memory.attributes(forKey: "k")?.expiresAt == clock.now().addingTimeInterval(600))
        #expect(fetcher.calls == 2)
    }

    /// The policy's lifetime is the longest a fetched value lives: a fetcher's longer one is cut
    /// to it (its shorter one wins, above).
    @Test func aFetchersLifetimeLongerThanThePolicysIsCutToIt() async throws {
        let clock = TestClock()
        let fetcher = ScriptedFetcher()
        fetcher.setLifetime(clock.now().addingTimeInterval(1_000))
        let memory = MemoryStore<String, String>(clock: clock)
        let store = memory.fetching(from: fetcher, freshness: Freshness(timeToLive: .seconds(600)), clock: clock)
        #expect(try await store.fetch("k") == "1:k")
        #expect(try await memory.attributes(forKey: "k")?.expiresAt == clock.now().addingTimeInterval(600))
        clock.advance(by: .seconds(601))
        #expect(try await store.fetch("k") == "1:k")
        #expect(fetcher.calls == 2)
    }

    /// A value set with a lifetime of its own keeps it, longer than the policy's or not; one set
    /// without gets the policy's.
    @Test func aSetsOwnLifetimeIsKeptAndTheRestGetThePolicys() async throws {
        let clock = TestClock()
        let memory = MemoryStore<String, String>(clock: clock)
        let store = memory.fetching(from: ScriptedFetcher(), freshness: Freshness(timeToLive: .seconds(600)), clock: clock)
        try await store.setEntry(StoreEntry(value: "long", expiresAt: clock.now().addingTimeInterval(1_000)), forKey: "long")
        try await store.setEntry(StoreEntry(value: "short", expiresAt: clock.now().addingTimeInterval(5)), forKey: "short")
        try await store.setValue("plain", forKey: "plain")
        #expect(try await memory.attributes(forKey: "long")?.expiresAt == clock.now().addingTimeInterval(1_000))
        #expect(try await memory.attributes(forKey: "short")?.expiresAt == clock.now().addingTimeInterval(5))
        #expect(try await memory.attributes(forKey: "plain")?.expiresAt == clock.now().addingTimeInterval(600))
    }

    @Test func aPromotedValueExpiresWhenTheOriginalWould() async throws {
        let clock = TestClock()
        let top = MemoryStore<String, String>(clock: clock)
        let bottom = MemoryStore<String, String>(clock: clock)
        let chain = top.chained(to: bottom)
        let expiry = clock.now().addingTimeInterval(100)
        try await bottom.setEntry(StoreEntry(value: "v", expiresAt: expiry, metadata: Data("m".utf8)), forKey: "k")
        clock.advance(by: .seconds(40))
        #expect(try await chain.value(forKey: "k") == "v")
        let promoted = try #require(try await top.attributes(forKey: "k"))
        #expect(promoted.expiresAt == expiry)
        #expect(promoted.metadata == Data("m".utf8))
        #expect(try await promoted.storedAt == bottom.attributes(forKey: "k")?.storedAt)
        clock.advance(by: .seconds(61))
        #expect(top.value(forKey: "k") == nil)
        #expect(try await chain.value(forKey: "k") == nil)
    }

    @Test func aStoreTimeToLiveBoundsAnEntrysOwnExpiry() async throws {
        let clock = TestClock()
        let memory = MemoryStore<String, String>(timeToLive: .seconds(10), clock: clock)
        try await memory.setEntry(StoreEntry(value: "long", expiresAt: clock.now().addingTimeInterval(100)), forKey: "long")
        try await memory.setEntry(StoreEntry(value: "short", expiresAt: clock.now().addingTimeInterval(5)), forKey: "short")
        clock.advance(by: .seconds(6))
        #expect(memory.value(forKey: "short") == nil)
        #expect(memory.value(forKey: "long") == "long")
        clock.advance(by: .seconds(5))
        #expect(memory.value(forKey: "long") == nil)
    }

    @Test func storesAndChainsConformWithLifetimesOnAMovingClock() async throws {
        let clock = TestClock()
        var memory = StoreConformanceSuite { MemoryStore<String, Data>(clock: clock) }
        memory.clock = clock
        try await memory.run()
        var chain = StoreConformanceSuite {
            MemoryStore<String, Data>(clock: clock).chained(to: MemoryStore<String, Data>(clock: clock))
        }
        chain.clock = clock
        try await chain.run()
        var fetching = StoreConformanceSuite {
            MemoryStore<String, Data>(clock: clock).fetching(freshness: Freshness(timeToLive: .seconds(3600), serveStaleFor: .seconds(60)), clock: clock) { _ in Data() }
        }
        fetching.clock = clock
        try await fetching.run()
    }

    @Test func aStoreThatKeepsNoAttributesRefusesThemLoudly() async throws {
        let plain = PlainValues()
        let error = await #expect(throws: StoreError.self) {
            try await plain.setValue("v", forKey: "k", expiresAt: Date())
        }
        #expect(error?.code == .unsupported)
        await #expect(throws: StoreError.self) { try await plain.addValue("v", forKey: "k") }
        try await plain.setEntry(StoreEntry(value: "v"), forKey: "k")
        #expect(try await plain.entry(forKey: "k")?.value == "v")
    }
}

/// A store of your own that implements only the four basic methods.
final class PlainValues: Store {
    private let values = Locked<[String: String]>([:])
    func value(forKey key: String) async throws -> String? { values.withLock { $0[key] } }
    func setValue(_ value: String, forKey key: String) async throws { values.withLock { $0[key] = value } }
    func removeValue(forKey key: String) async throws { _ = values.withLock { $0.removeValue(forKey: key) } }
    func removeAll() async throws { values.withLock { $0.removeAll() } }
}
