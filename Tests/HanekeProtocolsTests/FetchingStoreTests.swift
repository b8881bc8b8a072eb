import Foundation
import Formats
import HanekeProtocols
import HanekeTesting
import MemoryStore
import Testing
import TestSupport

@Suite(.timeLimit(.minutes(1)))
struct FetchingStoreTests {
    @Test func aFullMissAsksTheFetcherAndFillsEveryLayer() async throws {
        let top = MemoryStore<String, String>()
        let bottom = MemoryStore<String, String>()
        let fetcher = CountingFetcher()
        let store = top.chained(to: bottom).fetching(from: fetcher)

        #expect(try await store.fetch("k") == "fetched:k")
        #expect(top.value(forKey: "k") == "fetched:k")
        #expect(bottom.value(forKey: "k") == "fetched:k")
        #expect(try await store.fetch("k") == "fetched:k")
        #expect(fetcher.calls == 1)
        #expect(store.layerStatistics.map(\.name) == ["memory", "memory", "fetcher"])
        #expect(store.layerStatistics[2].statistics.hits == 1)
    }

    @Test func aThousandConcurrentFetchesOfOneKeyCallTheFetcherOnce() async throws {
        let fetcher = ControlledFetcher<String>()
        let store = MemoryStore<String, String>().fetching(from: fetcher)

        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<1_000 { group.addTask { try await store.fetch("k") } }
            await fetcher.waitForCalls(1)
            try await waitUntil { store.waiterCount(for: "k") == 1_000 }
            fetcher.release(with: .success("v"))
            var results = 0
            for try await value in group {
                #expect(value == "v")
                results += 1
            }
            #expect(results == 1_000)
        }
        #expect(fetcher.calls == ["k"])
        #expect(store.flightsInProgress == 0)
    }

    @Test func concurrentFetchesOfDifferentKeysEachCallTheFetcherOnce() async throws {
        let fetcher = CountingFetcher()
        let store = MemoryStore<String, String>().fetching(from: fetcher)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<1_000 {
                group.addTask {
                    let value = try await store.fetch("key-\(i % 10)")
                    #expect(value == "fetched:key-\(i % 10)")
                }
            }
            try await group.waitForAll()
        }
        #expect(fetcher.calls == 10)
    }

    @Test func aFailureReachesEveryWaiterAndIsNotCached() async throws {
        let fetcher = ControlledFetcher<String>()
        let store = MemoryStore<String, String>().fetching(from: fetcher)

        let outcomes = await withTaskGroup(of: Result<String, StoreError>.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do { return .success(try await store.fetch("k")) }
                    catch let error as StoreError { return .failure(error) }
                    catch { return .failure(StoreError(.io, "unexpected \(error)")) }
                }
            }
            await fetcher.waitForCalls(1)
            try? await waitUntil { store.waiterCount(for: "k") == 50 }
            fetcher.release(with: .failure(StoreError(.notFound, "no such user")))
            var outcomes: [Result<String, StoreError>] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        #expect(fetcher.calls.count == 1)
        #expect(outcomes.count == 50)
        for outcome in outcomes {
            guard case .failure(let error) = outcome else {
                Issue.record("a waiter got a value from a failed fetch")
                continue
            }
            #expect(error.code == .notFound)
        }

        // Not cached: the next fetch asks again and can succeed.
        fetcher.release(with: .success("found"))
        #expect(try await store.fetch("k") == "found")
        #expect(fetcher.calls.count == 2)
        #expect(store.layerStatistics.last?.statistics.errors == 1)
    }

    @Test func cancellingOneWaiterLeavesTheOthersRunning() async throws {
        let fetcher = ControlledFetcher<String>()
        let store = MemoryStore<String, String>().fetching(from: fetcher)

        let first = Task { try await store.fetch("k") }
        await fetcher.waitForCalls(1)
        let second = Task { try await store.fetch("k") }
        let third = Task { try await store.fetch("k") }
        try await waitUntil { store.waiterCount(for: "k") == 3 }

        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(fetcher.cancellations == 0)

        fetcher.release(with: .success("v"))
        #expect(try await first.value == "v")
        #expect(try await third.value == "v")
        #expect(fetcher.calls.count == 1)
    }

    @Test func cancellingEveryWaiterCancelsTheFetcherCall() async throws {
        let fetcher = ControlledFetcher<String>()
        let store = MemoryStore<String, String>().fetching(from: fetcher)

        let waiters = (0..<5).map { _ in Task { try await store.fetch("k") } }
        await fetcher.waitForCalls(1)
        try await waitUntil { store.waiterCount(for: "k") == 5 }
        for waiter in waiters { waiter.cancel() }
        for waiter in waiters {
            await #expect(throws: CancellationError.self) { try await waiter.value }
        }
        await fetcher.waitForCancellations(1)
        #expect(fetcher.cancellations == 1)
        #expect(store.flightsInProgress == 0)

        // A new fetch starts a new flight rather than joining the cancelled one.
        async let fresh = store.fetch("k")
        await fetcher.waitForCalls(2)
        fetcher.release(with: .success("v"))
        #expect(try await fresh == "v")
    }

    @Test(arguments: 0..<5)
    func everyFetchCompletesExactlyOnceUnderRandomCancellation(seed: Int) async throws {
        let fetcher = CountingFetcher { key in
            if key.hasSuffix("3") { throw StoreError(.notFound, "no \(key)") }
            return "fetched:\(key)"
        }
        let store = MemoryStore<String, String>(countLimit: 2).fetching(from: fetcher)
        var random = SeededRandomNumberGenerator(seed: UInt64(seed))

        // A third of the fetches are cancelled: half at once (most before they start), half by a
        // task of their own after it has given its turn away one to three times (most of them
        // started by then, waiting on a flight, or in one). Every suspension of the test waits
        // for each job queued before it, so on a busy machine its time grows with their number:
        // it yields only every 250 fetches, so that fetches start in a few waves rather than one
        // burst (whose flights would each wait behind all 10,000), and it waits once for every
        // fetch to end. With a yield before each of 300 late cancellations and a wait for each
        // fetch in turn, it ran past 60 s under load; with 20 yields a yield took 1.6 s.
        let outcomes = Locked([Int: Result<String, any Error>]())
        let endedTwice = Locked(0)
        let ended = Countdown(2_000)
        for i in 0..<2_000 {
            let key = "key-\(i % 7)"
            let task = Task {
                let outcome: Result<String, any Error>
                do { outcome = .success(try await store.fetch(key)) } catch { outcome = .failure(error) }
                if outcomes.withLock({ $0.updateValue(outcome, forKey: i) != nil }) { endedTwice.withLock { $0 += 1 } }
                ended.countDown()
            }
            if random.next() % 3 == 0 {
                if random.next() % 2 == 0 {
                    task.cancel()
                } else {
                    let turns = 1 + Int(random.next() % 3)
                    Task {
                        for _ in 0..<turns { await Task.yield() }
                        task.cancel()
                    }
                }
            }
            if i % 250 == 249 { await Task.yield() }
        }
        await ended.wait()
        var wrong = 0
        let ends = outcomes.withLock { $0 }
        #expect(ends.count == 2_000)
        #expect(endedTwice.withLock { $0 } == 0)
        var cancelled = 0, values = 0
        for (i, outcome) in ends {
            switch outcome {
            case .success(let value):
                values += 1
                if value != "fetched:key-\(i % 7)" { wrong += 1 }
            case .failure(let error):
                if error is CancellationError { cancelled += 1 }
                let expected = error is CancellationError || (error as? StoreError)?.code == .notFound
                if !expected { wrong += 1 }
            }
        }
        #expect(wrong == 0)
        // Both kinds of end happened (a run where no cancellation landed would prove nothing).
        #expect(cancelled > 0 && values > 0, "\(cancelled) cancelled, \(values) values")
        #expect(store.flightsInProgress == 0)
    }

    @Test func cancellingTheWaiterThatStartedTheFlightLeavesTheOthersRunning() async throws {
        let fetcher = ControlledFetcher<String>()
        let store = MemoryStore<String, String>().fetching(from: fetcher)

        let starter = Task { try await store.fetch("k") }
        await fetcher.waitForCalls(1)
        let other = Task { try await store.fetch("k") }
        try await waitUntil { store.waiterCount(for: "k") == 2 }

        starter.cancel()
        await #expect(throws: CancellationError.self) { try await starter.value }
        #expect(fetcher.cancellations == 0)
        fetcher.release(with: .success("v"))
        #expect(try await other.value == "v")
        #expect(fetcher.calls.count == 1)
    }

    @Test func aValueSetDuringAFetchIsNotOverwrittenByTheFetchedValue() async throws {
        let layer = MemoryStore<String, String>()
        let fetcher = ControlledFetcher<String>()
        let store = layer.fetching(from: fetcher)

        let fetch = Task { try await store.fetch("k") }
        await fetcher.waitForCalls(1)
        try await store.setValue("set by the user", forKey: "k")
        fetcher.release(with: .success("fetched"))

        #expect(try await fetch.value == "fetched")
        #expect(layer.value(forKey: "k") == "set by the user")
    }

    @Test func aValueSetBeforeTheFlightStartsIsFoundByItsRecheck() async throws {
        let gate = GatedStore<String>()
        let fetcher = CountingFetcher()
        let store = gate.fetching(from: fetcher)

        let fetch = Task { try await store.fetch("k") }
        try await waitUntil { gate.isHoldingARead }
        try await store.setValue("set by the user", forKey: "k")   // lands after the fetch's first read
        gate.open()

        #expect(try await fetch.value == "set by the user")
        #expect(fetcher.calls == 0)
    }

    @Test func bytesThatDoNotDecodeAreRemovedAndTheFetcherIsAsked() async throws {
        let bytes = MemoryStore<String, Data>()
        bytes.setValue(Data([0xFF, 0xFE]), forKey: "k")   // not UTF-8
        let fetcher = CountingFetcher()
        let store = bytes.coded(as: String.self).fetching(from: fetcher)

        #expect(try await store.fetch("k") == "fetched:k")
        #expect(fetcher.calls == 1)
        #expect(bytes.value(forKey: "k") == Data("fetched:k".utf8))
        #expect(store.layerStatistics[0].statistics.errors == 1)
    }

    @Test func aLayerThatFailsOnReadMeansTheFetcherIsAsked() async throws {
        let broken = FailingStore(wrapping: MemoryStore<String, String>(), failing: .read)
        let fetcher = CountingFetcher()
        let store = broken.fetching(from: fetcher)
        #expect(try await store.fetch("k") == "fetched:k")
        #expect(fetcher.calls == 1)
    }

    @Test func aValueThatCannotBeStoredIsStillReturned() async throws {
        let broken = FailingStore(wrapping: MemoryStore<String, String>(), failing: .write)
        let store = broken.fetching(from: CountingFetcher())
        #expect(try await store.fetch("k") == "fetched:k")
    }

    @Test func aClosureFetcherWorks() async throws {
        let store = MemoryStore<Int, String>().fetching { key in String(repeating: "x", count: key) }
        #expect(try await store.fetch(3) == "xxx")
        #expect(try await store.value(forKey: 3) == "xxx")
    }

    @Test func aFetchingStoreConformsAsAStore() async throws {
        try await StoreConformanceSuite {
            MemoryStore<String, Data>().fetching { _ in throw StoreError(.notFound, "no source") }
        }.run()
    }
}

/// Resumes one waiter when it has been counted down from its start to zero.
private final class Countdown: Sendable {
    private let state: Locked<(remaining: Int, waiter: CheckedContinuation<Void, Never>?)>

    init(_ count: Int) {
        state = Locked((count, nil))
    }

    /// Counts one down; the last resumes the waiter.
    func countDown() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Suspends until the count reaches zero.
    func wait() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.remaining <= 0 { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}
